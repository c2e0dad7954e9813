"""The step journal in a session's Durable Object on real workerd (docs/reference/sessions.md §5.2 "Remote"): a commit over
1 MiB not marked output_too_large is HTTP 400 (a body crafted with curl) and exit 2 through the client, and changes
nothing; a commit retried under its request id is applied once and answered from storage, so a redaction since
leaves no stdout in the remembered answer; abandonment by time is the object's."""

import base64
import json
import subprocess

from durable_cli import DurableError, Store
from tests.remote.conftest import post_call, token, unique
from tests.remote.proxy import Proxy

TOKEN = "0123456789abcdef" * 2


def started(url, prefix, prompt="charge the card"):
    """A new session of alice (through URL) with prompt 1 started: (store, name)."""
    store = Store(remote=url, token=token("alice"), user="alice")
    name = unique(prefix)
    store.create_session(name)
    with store.open(name) as s:
        s.prompt(prompt)
        s.next_prompt(lease_seconds=600)
    return store, name


def reserved(dev):
    """A session of alice with prompt 1 started and step `k` reserved under TOKEN: (store, name)."""
    store, name = started(dev.url, "steps")
    with store.open(name) as s:
        doc = s.step_begin(key="k", token=TOKEN)
    assert (doc["action"], doc["prompt"], doc["start"]) == ("run", 1, 1)
    return store, name


def commit_body(name, stdout: bytes, size=None):
    args = {"prompt_id": 1, "key": "k", "token": TOKEN, "start": 1, "exit_status": 0,
            "stdout_bytes": len(stdout) if size is None else size, "stdout": base64.b64encode(stdout).decode()}
    return {"op": "step_commit", "args": args, "scope": "user", "name": name, "actor": "alice"}


def test_a_commit_over_one_mib_not_marked_is_400_and_exit_2(remote_dev, tmp_path):
    store, name = reserved(remote_dev)
    body = tmp_path / "body.json"
    body.write_text(json.dumps(commit_body(name, b"x" * 1_048_577)))
    out = tmp_path / "answer.json"
    status = subprocess.run(["curl", "-sS", "-o", str(out), "-w", "%{http_code}", "-H", f"authorization: Bearer {token('alice')}",
                             "-H", "content-type: application/json", "--data-binary", f"@{body}", f"{remote_dev.url}/v1/call"],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    error = json.loads(out.read_text())["error"]
    assert status == "400" and error["code"] == "invalid_input", error
    assert "1048577 bytes, more than the 1 MiB a step keeps" in error["message"]
    with store.open(name) as s:  # through the client: exit 2, as the file backend
        try:
            s.step_commit(**commit_body(name, b"x" * 1_048_577)["args"])
        except DurableError as e:
            assert e.exit_status == 2
        else:
            raise AssertionError("a commit over 1 MiB was taken")
        [step] = s.steps()["rows"]
        assert (step["status"], step["exit_status"], step["stdout_bytes"]) == ("running", None, None)  # nothing changed
        marked = dict(commit_body(name, b"", size=1_048_577)["args"], stdout=None, output_too_large=True)
        done = s.step_commit(**marked)
    assert (done["status"], done["output_too_large"], done["stdout_bytes"], done["stdout_base64"]) == ("done", True, 1_048_577, None)


def test_a_retried_commit_is_applied_once_and_answered_from_storage(remote_dev):
    store, name = reserved(remote_dev)
    first_body = dict(commit_body(name, b"card-4242 charged\n"), request_id="commit-1")
    status, first = post_call(remote_dev.url, token("alice"), first_body)
    assert status == 200 and first["result"]["stdout"] == "card-4242 charged\n"
    status, again = post_call(remote_dev.url, token("alice"), first_body)  # the client's retry: the same request id
    assert (status, again) == (200, first)
    status, other = post_call(remote_dev.url, token("alice"), dict(first_body, request_id="commit-2"))
    assert status == 409 and "the start was lost while step 'k' ran" in other["error"]["message"]  # not a second commit
    with store.open(name) as s:
        [step] = s.steps()["rows"]
        assert (step["runs"], step["status"], step["ended_at"]) == (1, "done", first["result"]["ended_at"])
        s.redact(s.get_prompt(1)["turn_seq"])
    status, late = post_call(remote_dev.url, token("alice"), first_body)
    assert status == 200 and late["result"]["redacted"] is True and late["result"]["stdout"] is None
    assert "card-4242" not in json.dumps(late)  # the remembered answer held the step's key, not its stdout


def test_session_steps_answers_in_pages(remote_dev):
    """A page ends with the step that reaches 1 MiB of stdout (a request holds one page: docs/reference/remote.md §13);
    `session steps` follows the pages."""
    store, name = started(remote_dev.url, "pages", "three steps")
    big = b"\xff" * 1_048_576  # not UTF-8: stdout_base64 only
    for key, out in (("one", big), ("two", big), ("three", b"small\n")):
        store.step(name, key, lambda out=out: out, prompt=1)
    with store.open(name) as s:
        first = s.steps()
    assert [r["key"] for r in first["rows"]] == ["one"] and first["next"] == [1, 1]
    listed = store.steps(name)
    assert [(r["key"], r["stdout_bytes"]) for r in listed] == [("one", 1_048_576), ("two", 1_048_576), ("three", 6)]
    assert base64.b64decode(listed[1]["stdout_base64"]) == big and listed[2]["stdout"] == "small\n"


def test_a_commit_whose_answer_was_lost_is_retried_and_applied_once(remote_dev):
    """The client's own retry (the same request id) after the commit's answer was dropped: the step is recorded
    once, and fn ran once."""
    proxy = Proxy(remote_dev.url, "drop_nth", match=b'"op":"step_commit"')
    try:
        store, name = started(proxy.url, "retried", "pay")
        calls = []
        result = store.step(name, "pay", lambda: calls.append(1) or "paid\n", prompt=1)
        assert proxy.dropped == 1 and calls == [1] and (result.stdout, result.exit_status) == (b"paid\n", 0)
        [step] = store.steps(name)
        assert (step["status"], step["runs"], step["stdout"]) == ("done", 1, "paid\n")
        assert store.step(name, "pay", lambda: calls.append(2) or "again", prompt=1).replayed and calls == [1]
    finally:
        proxy.close()


def test_a_renewal_the_worker_did_not_answer_is_tried_again(remote_dev, tmp_path, monkeypatch):
    """A renewal lost on the way (remote.timeout ran out: outcome unknown) does not end the step: the next one
    goes through and CMD's result is recorded (renewals every 50 ms here; the product's: 10 s)."""
    from durable_cli import steps as runner
    from tests.conftest import run_inprocess

    monkeypatch.setattr(runner, "RENEW_EVERY", 0.05)
    config = tmp_path / "config.toml"
    config.write_text('[remote]\ntimeout = "1s"\n')
    monkeypatch.setenv("DURABLE_CONFIG", str(config))
    monkeypatch.setenv("DURABLE_TOKEN", token("alice"))
    name = unique("renewal")
    proxy = Proxy(remote_dev.url, "hold_nth", match=b'"op":"step_renew"')
    try:
        for args in (("session", "create", name), ("session", "prompt", name, "go"), ("session", "next", name)):
            assert run_inprocess("--remote", remote_dev.url, *args).status == 0
        r = run_inprocess("--remote", proxy.url, "step", name, "k", "--", "sh", "-c", "sleep 2; echo done")
        assert proxy.held.is_set() and (r.status, r.out) == (0, "done\n"), r.err
    finally:
        proxy.go.set()
        proxy.close()
