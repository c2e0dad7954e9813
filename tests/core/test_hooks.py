"""docs/reference/sessions.md §5.3 hooks and the outbox: each outcome is written as a pending delivery in the outcome's own
transaction, sent after the commit without the lock, signed per Standard Webhooks (checked here with the reference
library, `standardwebhooks`), retried on its schedule, then marked failed."""

import base64
import json
import os
import threading

import pytest
from freezegun import freeze_time

from tests.conftest import run_inprocess as durable
from tests.helpers import Receiver

standardwebhooks = pytest.importorskip("standardwebhooks")

BODY_DATA_KEYS = ["hook_id", "session", "session_id", "scope", "owner", "prompt_id", "request_id", "source",
                  "schedule_id", "status", "error", "attempts", "turn_seq", "created_at", "started_at", "completed_at",
                  "reply"]


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def verified(receiver, secret):
    """Each request's body as the reference library verifies it (it raises on a bad signature)."""
    wh = standardwebhooks.Webhook(secret)
    return [wh.verify(body, headers) for headers, body in receiver.requests]


def run_prompt(name, *finish_args):
    durable("session", "prompt", name, "do it")
    taken = durable("session", "next", name, "--json").json()
    return durable("session", "finish", name, str(taken["id"]), *finish_args)


def test_a_finish_delivers_a_signed_outcome_after_its_commit(home, receiver):
    hook = durable("session", "hook", "s", "--url", receiver.url, "--include-reply", "--json")
    assert hook.status == 3  # no such session yet: a hook never creates one
    durable("session", "create", "s")
    hook = durable("session", "hook", "s", "--url", receiver.url, "--include-reply", "--json").json()
    assert list(hook) == ["id", "url", "events", "include_reply", "secret", "author", "created_at"]
    assert hook["events"] == ["completed", "failed", "cancelled"] and hook["secret"].startswith("whsec_")
    assert len(base64.b64decode(hook["secret"][6:])) == 32
    r = run_prompt("s", "--reply", "all done")
    assert r.status == 0 and r.out.startswith("1")
    [body] = verified(receiver, hook["secret"])
    assert body["type"] == "prompt.completed" and body["timestamp"] == body["data"]["completed_at"]
    assert list(body["data"]) == BODY_DATA_KEYS
    assert (body["data"]["session"], body["data"]["prompt_id"], body["data"]["reply"]) == ("s", 1, "all done")
    headers = receiver.requests[0][0]
    assert headers["webhook-id"].startswith("msg_") and len(headers["webhook-id"]) == 36
    assert headers["content-type"] == "application/json" and headers["user-agent"].startswith("durable/")
    [d] = durable("session", "deliveries", "s", "--json").json()
    assert (d["status"], d["attempts"], d["last_response"], d["next_attempt_at"], d["webhook_id"]) == (
        "delivered", 1, 204, None, headers["webhook-id"])
    created = [e["data"] for e in durable("session", "events", "s", "--json").json() if e["type"] == "hook.created"]
    assert created == [{"hook_id": 1, "events": ["completed", "failed", "cancelled"]}]  # never the URL or secret


def test_failures_and_cancels_are_told_to_the_hooks_that_subscribe(home, receiver, tmp_path):
    durable("session", "create", "s")
    secret_file = tmp_path / "secret"
    secret = "whsec_" + base64.b64encode(b"k" * 24).decode()
    secret_file.write_text(secret + "\n")
    assert durable("session", "hook", "s", "--url", receiver.url, "--events", "failed,cancelled",
                   "--secret-file", secret_file).out == "1\n"
    run_prompt("s", "--reply", "fine")  # completed: not subscribed
    run_prompt("s", "--failed", "--error", "boom")
    durable("session", "prompt", "s", "a")
    durable("session", "next", "s")
    durable("session", "stop", "s")
    durable("session", "prompt", "s", "b")
    durable("session", "cancel", "s")
    got = [(b["type"], b["data"]["prompt_id"], b["data"]["error"], b["data"]["reply"]) for b in verified(receiver, secret)]
    assert got == [("prompt.failed", 2, "boom", None), ("prompt.cancelled", 3, "stopped", None),
                   ("prompt.cancelled", 4, "cancelled", None)]


@pytest.mark.parametrize("bad", [["--url", "ftp://x/y"], ["--url", "http://user:pw@h/"], ["--url", "http:///nohost"],
                                 ["--url", "http://h/", "--events", "done"], ["--url", "http://h/", "--events", ""]])
def test_bad_hooks_are_exit_2(home, bad):
    durable("session", "create", "s")
    r = durable("session", "hook", "s", *bad)
    assert r.status == 2, r.err
    assert durable("session", "show", "s", "--json").json()["hooks"] == 0


def test_only_owners_and_at_most_five(home, monkeypatch, receiver):
    monkeypatch.setenv("DURABLE_TENANT", "acme")
    durable("session", "create", "t")
    durable("session", "invite", "t", "bob")
    monkeypatch.setenv("DURABLE_USER", "bob")
    assert durable("session", "hook", "t", "--url", receiver.url).status == 5
    assert durable("session", "hooks", "t").status == 5
    monkeypatch.setenv("DURABLE_USER", "alice")
    for _ in range(5):
        assert durable("session", "hook", "t", "--url", receiver.url).status == 0
    r = durable("session", "hook", "t", "--url", receiver.url)
    assert r.status == 4 and "too many hooks" in r.err
    assert durable("session", "unhook", "t", "9").status == 3
    assert durable("session", "unhook", "t", "1").status == 0
    assert [h["id"] for h in durable("session", "hooks", "t", "--json").json()] == [2, 3, 4, 5]


def test_retries_on_the_standard_webhooks_schedule_then_fail(home, receiver):
    receiver.status = 503
    with freeze_time("2026-12-05T10:00:00Z") as clock:
        durable("session", "create", "s")
        durable("session", "hook", "s", "--url", receiver.url)
        run_prompt("s", "--reply", "x")
        [d] = durable("session", "deliveries", "s", "--json").json()
        assert (d["status"], d["attempts"], d["last_response"], d["last_error"]) == ("pending", 1, 503, "HTTP 503")
        assert d["next_attempt_at"] == "2026-12-05T10:00:05.000Z"
        for delay in (5, 300, 1800, 7200, 18000, 36000, 36000):
            clock.tick(delay)
            assert durable("sweep").status == 0  # a failed delivery never changes sweep's status
        [d] = durable("session", "deliveries", "s", "--json").json()
        assert (d["status"], d["attempts"], d["next_attempt_at"]) == ("failed", 8, None)
        failed = [e["data"] for e in durable("session", "events", "s", "--json").json() if e["type"] == "delivery.failed"]
        assert failed == [{"delivery_id": 1, "hook_id": 1, "prompt_id": 1, "attempts": 8, "error": "HTTP 503"}]
    ids = {h["webhook-id"] for h, _ in receiver.requests}
    bodies = {b for _, b in receiver.requests}
    assert len(receiver.requests) == 8 and len(ids) == 1 and len(bodies) == 1  # one id, one body, every attempt


def finished_unsent(receiver):
    """Session s with a hook to RECEIVER and prompt 1 finished by a library block that sends nothing: one pending
    delivery, written by the finish's own commit."""
    from durable_cli import Store

    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", receiver.url)
    with Store().open("s", deliver=False) as s:  # its commit writes the delivery; this block sends nothing
        s.prompt("x")
        s.next_prompt(lease_seconds=60)
        s.finish(1, reply="ok")


def test_a_commit_whose_process_sent_nothing_is_sent_later_once(home, receiver):
    finished_unsent(receiver)
    assert receiver.requests == []
    durable("sweep")
    assert len(receiver.requests) == 1
    durable("sweep")
    assert durable("session", "deliveries", "s", "--json").json()[0]["status"] == "delivered"
    assert len(receiver.requests) == 1  # once
    assert json.loads(receiver.requests[0][1])["data"]["reply"] is None  # no --include-reply


def test_a_slow_receiver_holds_the_command_at_most_the_bound(home, receiver):
    import time

    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", receiver.url)
    durable("session", "prompt", "s", "x")
    durable("session", "next", "s")
    gate = threading.Event()
    handler = receiver.server.RequestHandlerClass
    original = handler.do_POST

    def slow(self):
        gate.wait(30)  # answers only when the test is done
        original(self)

    handler.do_POST = slow
    try:
        started = time.monotonic()
        r = durable("session", "finish", "s", "1", "--reply", "done")
        took = time.monotonic() - started
    finally:
        gate.set()
    assert r.status == 0 and r.out.startswith("1")  # the output and status never depend on a delivery
    assert took < 4.5, took  # 2 s of sending at most (an attempt's own timeout is 5 s)
    [d] = durable("session", "deliveries", "s", "--json").json()
    assert (d["status"], d["attempts"], d["last_error"]) == ("pending", 1, "timeout")


def test_a_process_killed_while_it_sends_leaves_the_delivery_to_a_later_sweep(home, receiver):
    import os
    import signal
    import subprocess
    import sys
    from datetime import datetime, timedelta, timezone

    durable("session", "create", "s")
    secret = durable("session", "hook", "s", "--url", receiver.url, "--json").json()["secret"]
    durable("session", "prompt", "s", "x")
    durable("session", "next", "s")
    arrived, gate = threading.Event(), threading.Event()
    handler = receiver.server.RequestHandlerClass
    original = handler.do_POST

    def held(self):
        arrived.set()
        gate.wait(30)  # the first attempt never gets an answer: its process is killed meanwhile

    handler.do_POST = held
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "session", "finish", "s", "1", "--reply", "ok"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        assert arrived.wait(60), "the finish never sent its delivery"
        assert proc.stdout.readline().startswith(b"1\tcompleted")  # its stdout came before the delivery
        os.kill(proc.pid, signal.SIGKILL)  # after the commit and the claim, before the result is recorded
        proc.wait(30)
    finally:
        gate.set()
        proc.stdout.close()
        proc.stderr.close()
    handler.do_POST = original
    [d] = durable("session", "deliveries", "s", "--json").json()
    assert (d["status"], d["attempts"]) == ("pending", 1)  # claimed, never recorded
    with freeze_time(datetime.now(timezone.utc) + timedelta(seconds=11)):  # past the claim's hold
        durable("sweep")
    [d] = durable("session", "deliveries", "s", "--json").json()
    assert (d["status"], d["attempts"]) == ("delivered", 2)
    [body] = verified(receiver, secret)
    assert body["data"]["prompt_id"] == 1 and body["type"] == "prompt.completed"


def test_unhook_drops_its_pending_deliveries_unsent(home, receiver):
    receiver.status = 503
    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", receiver.url)
    run_prompt("s", "--reply", "x")
    assert len(receiver.requests) == 1
    assert [d["status"] for d in durable("session", "deliveries", "s", "--hook", "1", "--json").json()] == ["pending"]
    assert durable("session", "deliveries", "s", "--hook", "2").status == 3
    assert durable("session", "deliveries", "s", "--status", "lost").status == 2
    assert durable("session", "unhook", "s", "1").status == 0
    assert durable("session", "deliveries", "s", "--json").json() == []
    receiver.status = 204
    from datetime import datetime, timedelta, timezone

    with freeze_time(datetime.now(timezone.utc) + timedelta(hours=1)):
        durable("sweep")
    assert len(receiver.requests) == 1  # never sent again
    assert [e["data"] for e in durable("session", "events", "s", "--json").json() if e["type"] == "hook.deleted"] == [
        {"hook_id": 1}]


def closed_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/hook"


def deliveries_span_pages(durable):
    """Five hooks and 41 finishes: 205 deliveries, past one page of `session deliveries` (200): every one listed
    once, oldest first, across the pages; a filter holds across them too."""
    durable("session", "create", "paged")
    url = closed_port_url()  # nobody listens: each stays pending (or fails), none is lost from the list
    for _ in range(5):
        assert durable("session", "hook", "paged", "--url", url).status == 0
    from durable_cli import Store

    store = Store(user="alice") if os.environ.get("DURABLE_REMOTE") else Store()  # the backend the CLI runs on
    with store.open("paged", deliver=False) as session:  # one block: the library's own sends left out
        for i in range(41):
            session.prompt(f"job {i}")
            taken = session.next_prompt(lease_seconds=60)
            session.finish(taken["id"], reply="ok")
    first = store.run("paged", "deliveries")
    assert len(first["rows"]) == 200 and first["next"] == first["rows"][-1]["id"]  # one request holds one page
    store.close()
    listed = durable("session", "deliveries", "paged", "--json").json()
    assert len(listed) == 205 and [d["id"] for d in listed] == sorted({d["id"] for d in listed})
    assert [d["prompt_id"] for d in listed if d["hook_id"] == 1] == list(range(1, 42))
    assert len(durable("session", "deliveries", "paged", "--hook", "3", "--json").json()) == 41


def test_deliveries_are_listed_whole_across_pages(home):
    deliveries_span_pages(durable)


# -- found by the black-box audit of §5.3 against the contract ------------------------------------------------------

def test_unhook_json_is_the_deleted_id(home, receiver):
    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", receiver.url)
    assert durable("session", "unhook", "s", "1", "--json").json() == {"deleted": 1}


def test_input_before_existence_and_existence_before_permission(home, receiver, monkeypatch):
    """docs/reference/output.md §4's order: a bad --status is 2 even for a missing or invisible session; an unknown
    hook is 3 even for a participant who is not an owner."""
    assert durable("session", "deliveries", "nosuch", "--status", "bogus").status == 2
    monkeypatch.setenv("DURABLE_TENANT", "acme")
    durable("session", "create", "t")
    durable("session", "invite", "t", "bob")
    durable("session", "hook", "t", "--url", receiver.url)
    monkeypatch.setenv("DURABLE_USER", "carol")  # not a participant: t answers as missing
    assert durable("session", "deliveries", "t", "--status", "bogus").status == 2
    assert durable("session", "deliveries", "t").status == 3
    monkeypatch.setenv("DURABLE_USER", "bob")  # a member, not an owner
    assert durable("session", "unhook", "t", "9").status == 3
    assert durable("session", "deliveries", "t", "--hook", "9").status == 3
    assert durable("session", "unhook", "t", "1").status == 5
    assert durable("session", "deliveries", "t", "--hook", "1").status == 5


def test_sweep_lists_the_deliveries_it_attempted(home, receiver):
    finished_unsent(receiver)
    receipt = durable("sweep", "--json").json()
    assert [(c["name"], c["what"]) for c in receipt["changed"]] == [("s", "deliveries: 1 delivered, 0 pending, 0 failed")]
    assert len(receiver.requests) == 1
    assert durable("sweep", "--json").json()["changed"] == []  # nothing left to attempt


@pytest.mark.parametrize("field,value,says", [
    ("url", "ftp://example.com/", "hooks[0].url is not valid"),
    ("secret", "whsec_abc", "hooks[0].secret is not valid"),
    ("events", '["bogus"]', "hooks[0].events is not valid"),
    ("events", "[]", "hooks[0].events must be a non-empty array"),
    ("events", '["failed", "completed"]', "hooks[0].events must be a non-empty array"),
])
def test_import_holds_hooks_to_the_rules_that_made_them(home, tmp_path, receiver, field, value, says):
    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", receiver.url)
    durable("export", "s", "--output", str(tmp_path / "s.jsonl"))
    record = json.loads((tmp_path / "s.jsonl").read_text())
    record["hooks"][0][field] = value
    (tmp_path / "bad.jsonl").write_text(json.dumps(record) + "\n")
    r = durable("import", str(tmp_path / "bad.jsonl"), "--replace")
    assert r.status == 2 and says in r.err, r.err
    many = json.loads((tmp_path / "s.jsonl").read_text())
    many["hooks"] = [dict(many["hooks"][0], id=i) for i in range(1, 7)]
    (tmp_path / "bad.jsonl").write_text(json.dumps(many) + "\n")
    r = durable("import", str(tmp_path / "bad.jsonl"), "--replace")
    assert r.status == 2 and "hooks holds 6 hooks" in r.err, r.err


@pytest.mark.parametrize("removal", [["transcript", "redact", "s", "2"], ["transcript", "pop", "s"],
                                     ["transcript", "clear", "s", "--yes"], ["transcript", "prune", "s", "--older-than", "1m"]])
def test_a_removed_reply_is_not_sent_by_a_pending_delivery(home, receiver, removal):
    receiver.status = 503
    with freeze_time("2026-12-05T10:00:00Z") as clock:
        durable("session", "create", "s")
        durable("session", "hook", "s", "--url", receiver.url, "--include-reply")
        run_prompt("s", "--reply", "the secret answer")
        assert json.loads(receiver.requests[0][1])["data"]["reply"] == "the secret answer"
        clock.tick(120)
        receiver.status = 204
        assert durable(*removal).status == 0, removal  # it sends the due delivery after its own commit
        assert durable("session", "deliveries", "s", "--json").json()[0]["status"] == "delivered"
    assert json.loads(receiver.requests[-1][1])["data"]["reply"] is None
    assert len({h["webhook-id"] for h, _ in receiver.requests}) == 1


def test_a_reply_still_in_the_transcript_is_kept(home, receiver):
    receiver.status = 503
    with freeze_time("2026-12-05T10:00:00Z") as clock:
        durable("session", "create", "s")
        durable("session", "hook", "s", "--url", receiver.url, "--include-reply")
        run_prompt("s", "--reply", "kept")
        durable("transcript", "redact", "s", "1")  # the user turn, not the reply
        receiver.status = 204
        clock.tick(5)
        durable("sweep")
    assert json.loads(receiver.requests[-1][1])["data"]["reply"] == "kept"


def test_a_deliverys_bookkeeping_moves_updated_at_not_last_active_at(home, receiver):
    """docs/reference/storage.md §3: a delivery's claim and record are commits (updated_at, in the object and index.db),
    not activity (last_active_at)."""
    receiver.status = 503
    with freeze_time("2026-12-05T10:00:00Z") as clock:
        durable("session", "create", "s")
        durable("session", "hook", "s", "--url", receiver.url)
        run_prompt("s", "--reply", "x")
        before = durable("session", "show", "s", "--json").json()
        clock.tick(10)
        durable("sweep")
        after = durable("session", "show", "s", "--json").json()
        assert after["updated_at"] == "2026-12-05T10:00:10.000Z" and after["last_active_at"] == before["last_active_at"]
        assert durable("ls", "--json").json()[0]["updated_at"] == after["updated_at"]
