"""The op table of durable_cli/contract/contract.json: the Worker's OPS and argument checks are generated from it,
both backends' plain ops are one dispatcher that checks a call against it (durable_cli/seam.py), and both
backends' Session methods agree with it."""

import importlib
import importlib.util
import inspect
import os

import pytest

from durable_cli.contract.ops import ops
from durable_cli.contract.protocol import SessionOps
from durable_cli.library import Session
from durable_cli.remote.backend import RemoteSession
from tests.conftest import ROOT


def test_worker_ops_handlers_and_session_rules_are_generated_from_the_contract():
    spec = importlib.util.spec_from_file_location("gen_worker_ops", os.path.join(ROOT, "scripts", "gen_worker_ops.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for path, render in module.FILES.items():
        with open(path, encoding="utf-8") as f:
            assert f.read() == render(), f"{os.path.relpath(path, ROOT)} is stale: run python scripts/gen_worker_ops.py"


@pytest.mark.parametrize("name", sorted(n for n, s in ops()["object"].items() if "rule" in s))
def test_an_ops_rule_is_what_the_library_session_runs(name, monkeypatch):
    """The contract's "rule" names the core function library.Session runs for the op (the Worker's twin is
    checked by tsc over worker/src/generated/handlers.ts): a plain op's method is the seam's dispatcher,
    which runs that rule (looked up at each call: a replaced rule is the one that runs); another op's
    method is the rule itself."""
    module, _, function = ops()["object"][name]["rule"].rpartition(".")
    home = importlib.import_module(f"durable_cli.core.{module}")
    rule = getattr(home, function, None)
    assert callable(rule), f"{name}: durable_cli/core/{module} has no {function}"
    if not ops()["object"][name].get("plain"):
        assert getattr(Session, name) is rule
        return
    ran = []
    monkeypatch.setattr(home, function, lambda obj, **args: ran.append((obj, args)) or "ran")
    session = object.__new__(Session)
    required = {a: _sample(s) for a, s in ops()["object"][name]["args"].items() if s.get("required")}
    assert session.run(name, dict(required)) == "ran" and ran == [(session, required)]


def _sample(arg):
    return {"integer": 1, "string": "x", "boolean": True, "array": [], "object": {}, "json": None}.get(arg["type"],
                                                                                                    (arg.get("values") or ["x"])[0])


def test_a_session_method_imports_its_rule_module_when_first_run():
    """Start-up is a feature: opening the library loads no rule module (nor the op table) a command does not run."""
    import subprocess
    import sys

    probe = ("import sys, durable_cli.library as l; before = [m in sys.modules for m in ('durable_cli.core.memory', "
             "'durable_cli.contract.optable')]; l.Session.forget_fact; print(*before, 'durable_cli.core.memory' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "False"]


def _params(method):
    return [(p.name, p.kind, p.default) for p in list(inspect.signature(method).parameters.values())[1:]]


@pytest.mark.parametrize("name", sorted(ops()["object"]))
def test_both_backends_answer_the_ops_session_protocol(name):
    """One Session protocol: each op both backends' Session classes offer has one signature, and a plain op's
    method takes exactly the contract's arguments with its defaults."""
    spec = ops()["object"][name]
    local, remote = getattr(Session, name, None), getattr(RemoteSession, name, None)
    if spec.get("plain"):
        assert local is not None and remote is not None, f"{name}: a plain op is a Session method on both backends"
        assert [p[0] for p in _params(remote)] == list(spec["args"])
        for pname, _kind, default in _params(remote):
            assert default == spec["args"][pname].get("default", inspect.Parameter.empty), (name, pname)
    if local is None or remote is None:
        return
    if any(kind == inspect.Parameter.VAR_KEYWORD for _, kind, _ in _params(local)):
        return  # the LangGraph adapter's methods pass their keywords on (core/checkpoints.py)
    assert _params(local) == _params(remote), name


def test_a_plain_method_sends_its_op():
    sent = []

    class Fake(RemoteSession):
        def __init__(self):
            pass

        def _send_op(self, op, args, write):
            sent.append((op, ops()["object"][op]["write"] if write is None else write, args))

    Fake().queue(pending_only=True)
    Fake().answer(7, "yes")
    Fake().pop()
    with pytest.raises(TypeError):
        Fake().queue(True)  # keyword-only, as the file backend's
    assert sent == [("queue", False, {"pending_only": True}),
                    ("answer", True, {"request_id": 7, "choice": "yes", "comment": None}),
                    ("pop", True, {"count": 1})]


def test_the_session_protocol_is_the_plain_ops_and_both_backends_answer_it():
    """durable_cli/contract/protocol.py (generated from the op table) is a typing.Protocol both Session classes
    satisfy: the same method names, and for each the same parameters, kinds and defaults."""
    plain = sorted(n for n, s in ops()["object"].items() if s.get("plain"))
    declared = sorted(n for n, v in vars(SessionOps).items() if callable(v) and not n.startswith("_"))
    assert declared == plain
    assert issubclass(Session, SessionOps) and issubclass(RemoteSession, SessionOps)
    for name in plain:
        want = _params(getattr(SessionOps, name))
        assert _params(getattr(Session, name)) == want, name
        assert _params(getattr(RemoteSession, name)) == want, name


@pytest.mark.parametrize("remote", [False, True], ids=["files", "remote"])
def test_either_backend_refuses_an_argument_against_the_contract_before_anything_is_opened_or_sent(tmp_path, remote):
    """The seam checks a call once, as the Worker's generated checks do (the same words: rules/args.ts), and the
    check an argument names (its own message): on files before NAME is looked for (it does not exist here), on
    a remote before a request is sent (nothing listens at this URL: a request would be a connection error)."""
    from durable_cli.errors import DurableError
    from durable_cli.library import Store

    store = Store(home=str(tmp_path), user="alice", remote="http://127.0.0.1:9" if remote else None, token="t")
    refused = [
        ("pop", ("3",), {}, "invalid argument count of pop: '3' is not an integer from -9223372036854775808 to 9223372036854775807"),
        ("renew", (1,), {"lease_seconds": 0}, "invalid argument lease_seconds of renew: 0 is not an integer from 1 to 3153600000"),
        ("queue", (), {"pending_only": "yes"}, "invalid argument pending_only of queue: 'yes' is not true or false"),
        ("invite", ("bob", "king"), {}, "invalid role 'king': use owner or member"),
        ("set_title", ("",), {}, None),  # the title's own message (checks.title)
    ]
    for op, args, kw, message in refused:
        with pytest.raises(DurableError) as e:
            store.run("missing", op, *args, **kw)
        assert e.value.code == "invalid_input", (op, e.value.message)
        if message is not None:
            assert e.value.message == message
    with pytest.raises(TypeError):
        store.run("missing", "queue", True)  # keyword-only, as the method's
    if remote:  # an op with client logic of its own (pages) is checked by the seam too before its request is sent
        with pytest.raises(DurableError) as e, store.open("missing") as session:
            session.show_transcript(last="3")
        assert e.value.message == ("invalid argument last of show_transcript: '3' is not an integer from "
                                   "-9223372036854775808 to 9223372036854775807")


def _hand_written_remote_ops() -> list:
    """The contract's object ops written by hand in remote/ (issue 35 counts them): each method (or class
    attribute) of a class of durable_cli/remote/ that is a Session of the seam (it derives from Ops) and has
    an op's name. A plain op is the seam's dispatcher and a shaped one remote/shapes.py's data: neither counts."""
    import ast

    names = set(ops()["object"])
    found = []
    folder = os.path.join(ROOT, "durable_cli", "remote")
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".py"):
            continue
        with open(os.path.join(folder, file), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if not any(isinstance(b, ast.Name) and b.id in ("Ops", "RemoteSession") for b in cls.bases):
                continue
            for item in cls.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defined = [item.name]
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    defined = [t.id for t in targets if isinstance(t, ast.Name)]
                else:
                    continue
                found += [f"{file}:{cls.name}.{n}" for n in defined if n in names]
    return found


def test_at_most_8_object_ops_are_written_by_hand_in_remote():
    """A ratchet (issue 35): the ops the remote client writes by hand are those that follow pages; an op whose
    client logic is only shaping is declared in remote/shapes.py, a plain one is the seam's dispatcher."""
    found = _hand_written_remote_ops()
    assert len(found) <= 8, f"{len(found)} object ops written by hand in remote/ (at most 8): {found}"


def test_a_shaped_op_is_an_op_with_a_rule_and_its_remote_method_takes_the_rules_arguments():
    from durable_cli.remote import shapes

    table = ops()["object"]
    for op, shape in shapes.SHAPES.items():
        assert op in table and not table[op].get("plain"), op
        assert set(shape) <= {"refuse", "before", "args", "rename", "after", "absent"}, op
        assert all(t in shapes.ARGS for t in shape.get("args", {}).values()), op
        assert shape.get("before", "lease_policy") in shapes.BEFORE and shape.get("after", "window_in_format") in shapes.AFTER
        assert not isinstance(vars(RemoteSession)[op], type(lambda: 0)), f"{op}: shaped, and written by hand too"


def test_a_shaped_method_sends_the_workers_arguments_and_shapes_its_answer():
    """What the declared transforms do, request by request (nothing listens: _send_op is the Worker here)."""
    from durable_cli.config import Config
    from durable_cli.errors import DurableError

    sent, answers = [], []

    class Fake(RemoteSession):
        def __init__(self):
            self.store = type("S", (), {"config": Config()})()

        def _send_op(self, op, args, write):
            sent.append((op, args))
            answer = answers.pop(0)
            if isinstance(answer, DurableError):
                raise answer
            return answer

    answers += [{"ok": True}, {"allowed": True}, {"id": 1, "window": {"turns": [{"role": "user", "content": "hi"}]}}]
    Fake().put_checkpoint(external_id=None, ns="", checkpoint_id="c1", parent_id=None, type_="msgpack", blob=b"\x00\x01",
                          metadata={"step": 1}, mirror=[("m1", lambda: None)])
    answers.insert(0, DurableError("no such object", "not_found"))
    assert Fake().meta() is None
    Fake().hit("k", rate="5/1m")
    doc = Fake().next_prompt(lease_seconds=30, context=100, format="messages")
    assert [op for op, _ in sent] == ["put_checkpoint", "meta", "hit", "next_prompt"]
    assert sent[0][1] == {"external_id": None, "ns": "", "checkpoint_id": "c1", "parent_id": None, "type": "msgpack",
                          "blob": "AAE=", "metadata": {"step": 1}, "mirror": [], "keep": None}
    assert sent[2][1] == {"key": "k", "rate": "5/1m", "n": 5, "per": 60, "burst": None}
    assert sent[3][1]["on_expiry"] == "fail" and "format" not in sent[3][1]  # the config's default, sent
    assert doc["window"] == [{"role": "user", "content": "hi"}]
    with pytest.raises(DurableError) as e:
        Fake().summarize(through=3, command="sum")
    assert "call Store.summarize(name, ..., command=CMD)" in e.value.message and len(sent) == 4
    with pytest.raises(TypeError):
        Fake().hit("k", "5/1m")  # keyword-only, as the rule's
