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
