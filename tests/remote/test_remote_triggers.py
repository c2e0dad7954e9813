"""docs/reference/remote.md §13 "The features of §5.3 … remotely": schedules and hooks on a real workerd. A schedule made with
--remote fires from the Durable Object's one alarm (nothing else wakes the object: `ls` reads the index shards); a
finish is delivered from the alarm with fetch after the commit, signed per Standard Webhooks (checked with the
reference library, `standardwebhooks`, by a real local HTTP receiver); a down receiver's attempts are recorded on
the Standard Webhooks schedule, the alarm never failing for it; a crafted body is HTTP 400 -> exit 2, nothing
stored; a Worker without DURABLE_HOOK_ALLOW_HOSTS refuses a loopback receiver."""

import socket

import pytest

from durable_cli import __version__
from durable_cli.core.schedules import parse_time
from tests.conftest import run_inprocess as durable_run
from tests.remote.conftest import Fleet, post_call, require_workerd, token
from tests.waiting import wait_until

standardwebhooks = pytest.importorskip("standardwebhooks")
from tests.core.test_hooks import BODY_DATA_KEYS, deliveries_span_pages, verified  # noqa: E402 (after the skip)
from tests.helpers import Receiver  # noqa: E402

pytestmark = pytest.mark.parametrize("backend", ["remote"])


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _deliveries(durable, name="s"):
    return durable("session", "deliveries", name, "--json").json()


def _run_prompt(durable, name, text, *finish_args):
    assert durable("session", "prompt", name, text).status == 0
    taken = durable("session", "next", name, "--json").json()
    return durable("session", "finish", name, str(taken["id"]), *finish_args)


def test_a_schedule_made_remotely_fires_from_the_objects_alarm(durable, receiver):
    durable("session", "create", "s")
    secret = durable("session", "hook", "s", "--url", receiver.url, "--json").json()["secret"]
    made = durable("session", "prompt", "s", "tick", "--in", "1s", "--source", "nightly", "--json").json()
    assert (made["kind"], made["fired"], made["author"], made["source"]) == ("at", 0, "alice", "nightly")
    assert durable("session", "show", "s", "--json").json()["status"] == "created"  # nothing queued, status unchanged

    # nothing wakes the object from here: `ls` reads the index shards, which the alarm's commit brings up to date
    def listed_status():
        [row] = [r for r in durable("ls", "--json").json() if r["name"] == "s"]
        return row["status"] == "active"

    wait_until(listed_status, "the object's alarm to fire the schedule (the index row turns active)", timeout=30, step=0.1)
    [p] = durable("session", "queue", "s", "--json").json()
    assert (p["content"], p["author"], p["source"], p["schedule_id"]) == ("tick", "alice", "nightly", made["id"])
    assert p["request_id"] == f"schedule:{made['id']}:{made['next_at']}"
    assert durable("session", "schedules", "s", "--json").json() == []  # a one-shot is deleted when it fires
    fired = [e["data"] for e in durable("session", "events", "s", "--json").json() if e["type"] == "schedule.fired"]
    assert fired == [{"schedule_id": made["id"], "prompt_id": p["id"], "due_at": made["next_at"], "missed": 0}]
    # `work` takes the scheduled prompt like any other; its outcome's delivery names the schedule
    assert durable("work", "s", "--once", "--command", "echo done", "--wait", "0").status == 0
    wait_until(lambda: receiver.requests, "the outcome of the scheduled prompt delivered", timeout=30, step=0.02)
    [body] = verified(receiver, secret)
    assert (body["type"], body["data"]["schedule_id"], body["data"]["source"], body["data"]["request_id"]) == (
        "prompt.completed", made["id"], "nightly", p["request_id"])


def test_cron_and_every_schedules_are_planned_by_the_worker_as_by_the_client(durable):
    from durable_cli import clock
    from durable_cli.core import schedules

    durable("session", "create", "s")
    before = clock.now()
    cron = durable("session", "prompt", "s", "standup", "--cron", "30 2 * * *", "--tz", "Europe/Paris", "--json").json()
    after = clock.now()
    zone = schedules.valid_tz("Europe/Paris")
    assert cron["next_at"] in {clock.iso(schedules.cron_next("30 2 * * *", zone, t)) for t in (before, after)}
    assert (cron["kind"], cron["cron"], cron["tz"], cron["at"]) == ("cron", "30 2 * * *", "Europe/Paris", None)
    every = durable("session", "prompt", "s", "poll", "--every", "1h", "--at", "2099-01-01T00:00:00+01:00", "--json").json()
    assert (every["kind"], every["every"], every["at"], every["next_at"]) == ("every", 3600, "2098-12-31T23:00:00.000Z",
                                                                            "2098-12-31T23:00:00.000Z")
    again = durable("session", "prompt", "s", "poll", "--every", "1h", "--request-id", "r1", "--json").json()
    assert durable("session", "prompt", "s", "poll", "--every", "1h", "--request-id", "r1", "--json").json()["id"] == again["id"]
    assert durable("session", "prompt", "s", "other", "--every", "1h", "--request-id", "r1").status == 4
    assert [s["id"] for s in durable("session", "schedules", "s", "--json").json()] == [cron["id"], every["id"], again["id"]]
    assert durable("session", "unschedule", "s", str(cron["id"])).status == 0
    assert durable("session", "unschedule", "s", str(cron["id"])).status == 3
    durable("session", "archive", "s")
    assert durable("session", "prompt", "s", "x", "--in", "1h").status == 4  # archived: nothing stored
    made = durable("session", "prompt", "fresh", "later", "--in", "1h", "--json").json()  # a schedule creates its object
    assert made["kind"] == "at" and durable("session", "show", "fresh", "--json").json()["status"] == "created"
    assert durable("session", "prompt", "absent", "later", "--in", "1h", "--no-create").status == 3


def test_a_finish_is_delivered_signed_from_the_alarm(durable, receiver):
    durable("session", "create", "s")
    hook = durable("session", "hook", "s", "--url", receiver.url, "--include-reply", "--json").json()
    assert list(hook) == ["id", "url", "events", "include_reply", "secret", "author", "created_at"]
    assert hook["events"] == ["completed", "failed", "cancelled"] and hook["secret"].startswith("whsec_")
    assert _run_prompt(durable, "s", "do it", "--reply", "all done").status == 0
    wait_until(lambda: receiver.requests, "the alarm to deliver the outcome", timeout=30, step=0.02)
    [body] = verified(receiver, hook["secret"])  # the reference library checks the signature
    headers = receiver.requests[0][0]
    assert headers["user-agent"] == f"durable/{__version__}" and headers["content-type"] == "application/json"
    assert headers["webhook-id"].startswith("msg_") and len(headers["webhook-id"]) == 36
    assert body["type"] == "prompt.completed" and body["timestamp"] == body["data"]["completed_at"]
    assert list(body["data"]) == BODY_DATA_KEYS
    assert (body["data"]["session"], body["data"]["owner"], body["data"]["prompt_id"], body["data"]["reply"]) == ("s", "alice", 1, "all done")
    wait_until(lambda: _deliveries(durable)[0]["status"] == "delivered", "the delivery recorded", timeout=30, step=0.02)
    [d] = _deliveries(durable)
    assert (d["attempts"], d["last_response"], d["next_attempt_at"], d["webhook_id"]) == (1, 204, None, headers["webhook-id"])

    durable("session", "prompt", "s", "never taken")
    assert durable("session", "cancel", "s").status == 0  # a cancel is an outcome too: prompt.cancelled
    wait_until(lambda: len(receiver.requests) == 2, "the cancel's delivery", timeout=30, step=0.02)
    second = verified(receiver, hook["secret"])[1]
    assert (second["type"], second["data"]["prompt_id"], second["data"]["error"], second["data"]["reply"]) == (
        "prompt.cancelled", 2, "cancelled", None)


def _down_receiver_first_attempt(durable):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", f"http://127.0.0.1:{port}/down")
    assert _run_prompt(durable, "s", "do it", "--reply", "ok").status == 0  # the receiver never holds the finish
    first = wait_until(lambda: [d for d in _deliveries(durable) if d["last_error"]], "the first attempt recorded", timeout=30, step=0.02)[0]
    assert (first["status"], first["attempts"], first["last_response"]) == ("pending", 1, None)
    assert parse_time(first["next_attempt_at"]) - parse_time(first["last_attempt_at"]) == 5000  # then 5 s
    assert durable("session", "show", "s", "--json").json()["status"] == "completed"
    return first


def test_a_down_receiver_is_recorded_and_retried_on_schedule(durable):
    _down_receiver_first_attempt(durable)


@pytest.mark.soak
def test_a_down_receivers_second_attempt_comes_5_s_later_from_the_alarm(durable):
    first = _down_receiver_first_attempt(durable)
    second = wait_until(lambda: [d for d in _deliveries(durable) if d["attempts"] == 2 and d["last_error"]],
                        "the second attempt, 5 s later, from the alarm", timeout=30, step=0.1)[0]
    assert second["status"] == "pending" and second["webhook_id"] == first["webhook_id"]
    assert parse_time(second["next_attempt_at"]) - parse_time(second["last_attempt_at"]) == 300000  # then 5 m


CRAFTED = [
    ("schedule", {"content": "x", "cron": "0 9 * * * *"}),
    ("schedule", {"content": "x", "cron": "0 9 * * *", "tz": "Mars/Olympus"}),
    ("schedule", {"content": "x", "cron": "0 0 30 2 *"}),
    ("schedule", {"content": "x", "at": "2020-01-01T00:00:00Z"}),
    ("schedule", {"content": "x", "at": "2099-01-01T00:00:00"}),
    ("schedule", {"content": "x", "every": "30s"}),
    ("schedule", {"content": "x", "after": "1h", "every": "1h"}),
    ("schedule", {"content": "x", "at": "2099-01-01T00:00:00Z", "tz": "UTC"}),
    ("schedule", {"content": "x", "after": "1h", "request_id": "schedule:1:2099-01-01T00:00:00.000Z"}),
    ("schedule", {"content": "", "after": "1h"}),
    ("hook", {"url": "http://10.0.0.1/x"}),
    ("hook", {"url": "http://0xa.1/x"}),  # 10.0.0.1 after WHATWG host parsing
    ("hook", {"url": "http://[::ffff:192.168.0.1]/x"}),
    ("hook", {"url": "http://db.internal/x"}),
    ("hook", {"url": "ftp://example.com/x"}),
    ("hook", {"url": "https://user:pw@example.com/x"}),
    ("hook", {"url": "https://example.com/x", "events": "done"}),
    ("hook", {"url": "https://example.com/x", "secret": "whsec_c2hvcnQ="}),
    ("deliveries", {"status": "lost"}),
]


def test_a_crafted_schedule_or_hook_is_400_and_stores_nothing(durable, request):
    durable("session", "create", "s")
    slot = request.node.remote_dev
    for op, args in CRAFTED:
        status, doc = post_call(slot.url, slot.admin_token, {"op": op, "scope": "user", "name": "s", "actor": "alice", "args": args})
        assert status == 400 and doc["error"]["code"] == "invalid_input", (op, args, status, doc)
    shown = durable("session", "show", "s", "--json").json()
    assert (shown["schedules"], shown["hooks"]) == (0, 0)
    # through the client the same refusal is exit 2 (the Worker's own rule: the client lets any host through)
    refused = durable("session", "hook", "s", "--url", "http://169.254.169.254/latest")
    assert refused.status == 2 and "local or private" in refused.err, refused.err


def test_a_worker_without_the_allow_list_refuses_loopback_receivers(tmp_path, monkeypatch, backend):
    require_workerd()
    fleet = Fleet(tmp_path, 1, variables={"DURABLE_HOOK_ALLOW_HOSTS": None})  # a deployment's default: no list
    try:
        fleet.wait_ready()
        slot = fleet.free.pop()
        monkeypatch.setenv("DURABLE_REMOTE", slot.url)
        monkeypatch.setenv("DURABLE_TOKEN", token("alice"))
        durable_run("session", "create", "s")
        refused = durable_run("session", "hook", "s", "--url", "http://127.0.0.1:9/x")
        assert refused.status == 2 and "DURABLE_HOOK_ALLOW_HOSTS" in refused.err, refused.err
        assert durable_run("session", "hook", "s", "--url", "https://hooks.example.com/x").status == 0
    finally:
        fleet.stop()


def test_forget_user_deletes_the_schedules_and_hooks_they_made_in_tenant_sessions_that_stay(durable, monkeypatch):
    monkeypatch.setenv("DURABLE_TENANT", "acme")
    durable("session", "create", "t")
    durable("session", "invite", "t", "bob", "--role", "owner")
    monkeypatch.setenv("DURABLE_USER", "bob")
    durable("session", "prompt", "t", "secret plan of bob", "--every", "1h")
    assert durable("session", "hook", "t", "--url", "https://bob.example.com/hook").status == 0
    monkeypatch.setenv("DURABLE_USER", "alice")
    durable("session", "prompt", "t", "alice's", "--every", "1h")
    monkeypatch.delenv("DURABLE_TENANT")
    r = durable("forget", "bob", "--yes", "--json")
    assert r.status == 0, r.err
    assert [c["what"] for c in r.json()["changed"]] == ["participant removed, schedules, hooks"]
    monkeypatch.setenv("DURABLE_TENANT", "acme")
    assert [s["content"] for s in durable("session", "schedules", "t", "--json").json()] == ["alice's"]
    assert durable("session", "hooks", "t", "--json").json() == []


def test_more_deliveries_than_one_alarm_sends_are_all_sent_by_the_next_ones(durable, receiver):
    # 5 hooks x 3 prompts cancelled in one commit: 15 deliveries, more than one alarm invocation's 10
    durable("session", "create", "s")
    for _ in range(5):
        assert durable("session", "hook", "s", "--url", receiver.url).status == 0
    for i in range(3):
        durable("session", "prompt", "s", f"p{i}")
    assert durable("session", "cancel", "s").status == 0
    wait_until(lambda: len(receiver.requests) >= 15, "15 deliveries (the alarm set again for the rest)", timeout=60, step=0.05)
    wait_until(lambda: all(d["status"] == "delivered" for d in _deliveries(durable)), "every delivery recorded", timeout=30, step=0.05)
    assert len(_deliveries(durable)) == 15 and len({h["webhook-id"] for h, _ in receiver.requests}) == 15


@pytest.mark.soak
def test_a_receiver_slower_than_5_s_is_a_timeout_recorded_by_the_alarm(durable, receiver):
    import threading

    gate = threading.Event()
    receiver.on_request = lambda: gate.wait(20)  # answers long after the attempt's 5 s
    try:
        durable("session", "create", "s")
        durable("session", "hook", "s", "--url", receiver.url)
        assert _run_prompt(durable, "s", "do it", "--reply", "ok").status == 0
        [d] = wait_until(lambda: [d for d in _deliveries(durable) if d["last_error"]], "the attempt's timeout", timeout=30, step=0.1)
        # (the next attempt is due 5 s after this one started, so at once: it may be under way already)
        assert (d["status"], d["last_response"], d["last_error"]) == ("pending", None, "timeout") and d["attempts"] >= 1
    finally:
        gate.set()


def test_deliveries_are_listed_whole_across_pages_remotely(durable):
    deliveries_span_pages(durable)  # each page one request to the object (docs/reference/remote.md §13)


@pytest.mark.soak
def test_a_removed_reply_is_not_sent_by_the_alarms_next_attempt(durable, receiver):
    """docs/reference/sessions.md §5.3 Body: a redaction of the reply's row nulls `reply` in a pending delivery (the
    Worker's twin of tests/core/test_hooks.py::test_a_removed_reply_is_not_sent_by_a_pending_delivery)."""
    receiver.status = 503
    durable("session", "create", "s")
    durable("session", "hook", "s", "--url", receiver.url, "--include-reply")
    assert _run_prompt(durable, "s", "do it", "--reply", "the secret answer").status == 0
    wait_until(lambda: [d for d in _deliveries(durable) if d["last_error"]], "the first attempt recorded", timeout=30, step=0.02)
    assert durable("transcript", "redact", "s", "2").status == 0
    receiver.status = 204
    wait_until(lambda: _deliveries(durable)[0]["status"] == "delivered", "the second attempt, 5 s later", timeout=30, step=0.1)
    import json

    assert [json.loads(b)["data"]["reply"] for _, b in receiver.requests] == ["the secret answer", None]
