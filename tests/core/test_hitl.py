"""docs/reference/hitl.md §8: elicitation requests, remembered facts, rate limits."""

import json
import os
import subprocess
import sys

import pytest
from freezegun import freeze_time

from tests.core.test_retention import faketime
from tests.helpers import hold_lock
from tests.waiting import has_polled, lock_file, wait_until

pytestmark = pytest.mark.both_backends
CLOCK = "freezes the clock (freezegun/faketime), which cannot reach the Worker's clock"


def test_elicit_round_trip(durable):
    durable("session", "create", "d")
    assert durable("elicit", "ask", "d", "--prompt", "Deploy?", "--choice", "yes", "--choice", "no").out == "1\n"
    req = durable("elicit", "list", "d", "--pending", "--json").json()[0]
    assert set(req) >= {"id", "status", "prompt", "choices", "created_at", "expires_at", "answer", "comment", "answered_by", "answered_at"}
    assert (req["status"], req["choices"]) == ("pending", ["yes", "no"])
    assert durable("elicit", "wait", "d", "1", "--json").status == 9  # no answer yet, no wait
    before = durable("session", "events", "d", "--json").json()
    assert durable("elicit", "answer", "d", "1", "--choice", "maybe").status == 2
    assert durable("session", "events", "d", "--json").json() == before
    done = durable("--as", "alice", "elicit", "answer", "d", "1", "--choice", "yes", "--comment", "go", "--json").json()
    assert (done["status"], done["answer"], done["comment"], done["answered_by"]) == ("answered", "yes", "go", "alice")
    assert durable("elicit", "answer", "d", "1", "--choice", "no").status == 4
    assert durable("elicit", "answer", "d", "7", "--choice", "no").status == 3
    assert durable("elicit", "wait", "d", "1", "--json").json()["answer"] == "yes"
    assert durable("elicit", "list", "d", "--pending", "--json").json() == []
    types = [e["type"] for e in durable("session", "events", "d", "--json").json()]
    assert types.count("elicit.asked") == 1 and types.count("elicit.answered") == 1
    assert durable("elicit", "ask", "nope", "--prompt", "x").status == 3


@pytest.mark.local_only(CLOCK)
def test_elicit_expiry_with_faketime(durable):
    assert faketime("2026-01-01 00:00:00", "session", "create", "x").returncode == 0
    assert faketime("2026-01-01 00:00:00", "elicit", "ask", "x", "--prompt", "?", "--timeout", "10m").returncode == 0
    r = faketime("2026-01-01 00:11:00", "elicit", "list", "x", "--json")
    assert json.loads(r.stdout)[0]["status"] == "expired"
    r = faketime("2026-01-01 00:11:00", "elicit", "answer", "x", "1", "--choice", "ok")
    assert r.returncode == 4
    r = faketime("2026-01-01 00:12:00", "elicit", "wait", "x", "1", "--json")
    assert r.returncode == 9 and json.loads(r.stdout)["status"] == "expired"
    events = json.loads(faketime("2026-01-01 00:12:00", "session", "events", "x", "--json").stdout)
    assert "elicit.expired" in [e["type"] for e in events]


def test_elicit_wait_ends_when_the_request_expires(durable):
    """docs/reference/hitl.md §8: exit 9 within a poll of the request becoming `expired`, not at the end of --wait
    (a 2 s question waited on for 10 s returned after 10.5 s)."""
    import time

    durable("session", "create", "e")
    durable("elicit", "ask", "e", "--prompt", "quick?", "--timeout", "2s")
    start = time.monotonic()
    r = durable("elicit", "wait", "e", "1", "--wait", "10s", "--json")
    elapsed = time.monotonic() - start
    assert r.status == 9 and r.json()["status"] == "expired", (r.status, r.out, r.err)
    assert elapsed < 6, f"elicit wait returned {elapsed:.1f} s after the ask, not at the expiry (2 s)"
    start = time.monotonic()  # already expired: at once
    r = durable("elicit", "wait", "e", "1", "--wait", "10s", "--json")
    assert r.status == 9 and r.json()["status"] == "expired" and time.monotonic() - start < 3


@pytest.mark.local_only("sees its polls through the object's file lock (tests/waiting.py); remote: the test below")
def test_elicit_wait_sees_an_answer_from_another_process(durable):
    durable("session", "create", "w")
    durable("elicit", "ask", "w", "--prompt", "go?")
    holder = hold_lock("w", 60)
    waiter = subprocess.Popen([sys.executable, "-m", "durable_cli", "elicit", "wait", "w", "1", "--wait", "30s", "--json"],
                              stdout=subprocess.PIPE, text=True)
    has_polled(waiter, lock_file("w"), holder)  # it has looked once and found no answer
    assert durable("transcript", "append", "w", "--role", "user", "writes go on while it waits").status == 0
    assert durable("elicit", "answer", "w", "1", "--choice", "sure").status == 0
    out, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 0 and json.loads(out)["answer"] == "sure"


@pytest.mark.parametrize("backend", ["remote"])
def test_elicit_wait_sees_an_answer_from_another_process_remote(durable, backend, monkeypatch):
    """The remote form of the test above: the waiter's polls are seen passing through a proxy."""
    from tests.remote.proxy import Proxy

    durable("session", "create", "w")
    durable("elicit", "ask", "w", "--prompt", "go?")
    proxy = Proxy(os.environ["DURABLE_REMOTE"], "pass")
    try:
        waiter = subprocess.Popen([sys.executable, "-m", "durable_cli", "--remote", proxy.url, "elicit", "wait", "w", "1",
                                   "--wait", "30s", "--json"], stdout=subprocess.PIPE, text=True)
        wait_until(lambda: proxy.requests >= 2 or waiter.poll() is not None, "the waiter to poll twice")
        assert waiter.poll() is None  # it has looked (twice) and found no answer
        assert durable("transcript", "append", "w", "--role", "user", "writes go on while it waits").status == 0
        assert durable("elicit", "answer", "w", "1", "--choice", "sure").status == 0
        out, _ = waiter.communicate(timeout=30)
    finally:
        proxy.close()
    assert waiter.returncode == 0 and json.loads(out)["answer"] == "sure"


def test_elicit_ask_with_a_request_id_asks_once(durable):
    """`elicit ask --request-id ID` (what MCP's ask_human builds on, docs/reference/mcp.md §14): the same ID and question
    return the request it made, as it stands; another question under the ID is exit 4; a bad ID is exit 2
    before the session is looked for."""
    durable("session", "create", "d")
    first = durable("elicit", "ask", "d", "--prompt", "Ship?", "--choice", "yes", "--request-id", "ship-1", "--json").json()
    again = durable("elicit", "ask", "d", "--prompt", "Ship?", "--choice", "yes", "--request-id", "ship-1", "--json").json()
    assert again == first and len(durable("elicit", "list", "d", "--json").json()) == 1
    assert durable("elicit", "ask", "d", "--prompt", "Ship now?", "--request-id", "ship-1").status == 4
    durable("elicit", "answer", "d", str(first["id"]), "--choice", "yes")
    answered = durable("elicit", "ask", "d", "--prompt", "Ship?", "--choice", "yes", "--request-id", "ship-1", "--json").json()
    assert (answered["id"], answered["status"], answered["answer"]) == (first["id"], "answered", "yes")
    assert durable("elicit", "ask", "nope", "--prompt", "x", "--request-id", "").status == 2
    asked = [e for e in durable("session", "events", "d", "--json").json() if e["type"] == "elicit.asked"]
    assert len(asked) == 1


def test_elicit_ask_refuses_an_archived_session(durable):
    """Archived objects are read-only (docs/reference/sessions.md §5): elicit ask is exit 4 and stores nothing."""
    durable("session", "create", "old")
    assert durable("session", "archive", "old").status == 0
    before = durable("session", "events", "old", "--json").json()
    r = durable("elicit", "ask", "old", "--prompt", "still there?", "--json")
    assert r.status == 4 and r.out == "" and '"conflict"' in r.err and "unarchive" in r.err
    assert durable("elicit", "list", "old", "--json").json() == []
    assert durable("session", "events", "old", "--json").json() == before
    assert durable("session", "unarchive", "old").status == 0
    assert durable("elicit", "ask", "old", "--prompt", "still there?").out == "1\n"


def test_memory_provenance_and_confirmation(durable):
    assert durable("memory", "set", "tz", "UTC", "--source", "model", "--confirmed").status == 2
    fact = durable("memory", "set", "tz", "UTC", "--source", "model", "--json").json()
    assert (fact["source"], fact["confirmed"], fact["confirmed_at"]) == ("model", False, None)
    r = durable("memory", "get", "tz")
    assert r.status == 3 and "unconfirmed" in r.err and "durable memory confirm tz" in r.err and "--all" in r.err, r.err
    assert durable("memory", "get", "nope").status == 3 and "unconfirmed" not in durable("memory", "get", "nope").err
    assert durable("memory", "list", "--json").json() == []
    assert [f["key"] for f in durable("memory", "list", "--all", "--json").json()] == ["tz"]
    confirmed = durable("memory", "confirm", "tz", "--json").json()
    assert confirmed["confirmed"] is True and confirmed["confirmed_at"] is not None
    assert durable("memory", "get", "tz").out == "UTC\n"
    assert durable("memory", "set", "lang", "fr", "--source", "robot").status == 2
    assert durable("memory", "forget", "tz").status == 0
    assert durable("memory", "get", "tz", "--all").status == 3
    assert durable("memory", "confirm", "nope").status == 3


def test_an_expired_fact_is_not_confirmed(durable):
    """docs/reference/ui.md §16.4: `memory confirm` of an expired fact is 409 there, the CLI's conflict (4) here."""
    import time
    from datetime import datetime

    fact = durable("memory", "set", "soon", "v", "--source", "model", "--expires", "1s", "--json").json()
    ends = datetime.fromisoformat(fact["expires_at"].replace("Z", "+00:00")).timestamp()
    wait_until(lambda: time.time() > ends + 0.05, "the fact to expire")
    r = durable("memory", "confirm", "soon")
    assert r.status == 4 and r.err == ("durable: error: fact 'soon' has expired and can no longer be confirmed; "
                                       "'durable memory set soon VALUE' stores it anew\n"), r.err
    assert durable("memory", "get", "soon", "--all", "--json").json()["confirmed"] is False


@pytest.mark.cross_object
def test_the_memory_object_never_shows_in_ls(durable):
    assert durable("memory", "set", "tz", "UTC", "--confirmed").status == 0
    assert durable("ls", "--all", "--json").json() == []  # the reserved object never shows in ls


@pytest.mark.local_only(CLOCK)
def test_memory_expiry_with_faketime_and_freezegun(durable):
    assert faketime("2026-01-01 00:00:00", "memory", "set", "k", "v", "--confirmed", "--expires", "1h").returncode == 0
    assert faketime("2026-01-01 00:30:00", "memory", "get", "k").stdout == "v\n"
    assert faketime("2026-01-01 01:00:05", "memory", "get", "k").returncode == 3
    with freeze_time("2026-01-01 01:00:05"):
        assert durable("memory", "get", "k", "--all", "--json").json()["expires_at"].startswith("2026-01-01T01:00:0")
        assert durable("memory", "list", "--json").json() == []


def test_users_are_isolated(durable):
    durable("--as", "alice", "memory", "set", "k", "alice's", "--confirmed")
    durable("--as", "bob", "memory", "set", "k", "bob's", "--confirmed")
    assert durable("--as", "alice", "memory", "get", "k").out == "alice's\n"
    assert durable("--as", "bob", "memory", "get", "k").out == "bob's\n"
    for _ in range(2):
        durable("--as", "alice", "limit", "hit", "api", "--rate", "2/1h")
    assert durable("--as", "alice", "limit", "hit", "api", "--rate", "2/1h").status == 8
    assert durable("--as", "bob", "limit", "hit", "api", "--rate", "2/1h").status == 0


@pytest.mark.local_only(CLOCK)
def test_limit_refill_and_retry_after(durable):
    with freeze_time("2026-01-01 00:00:00"):
        assert durable("limit", "hit", "k", "--rate", "2/1m", "--json").json() == {"key": "k", "allowed": True, "remaining": 1, "retry_after": None}
        durable("limit", "hit", "k", "--rate", "2/1m")
        r = durable("limit", "hit", "k", "--rate", "2/1m", "--json")
        assert r.status == 8 and r.json() == {"key": "k", "allowed": False, "remaining": 0, "retry_after": 30}
    with freeze_time("2026-01-01 00:00:31"):
        assert durable("limit", "hit", "k", "--rate", "2/1m", "--json").json()["allowed"] is True
    with freeze_time("2026-01-01 00:10:00"):
        assert durable("limit", "hit", "b", "--rate", "1/1h", "--burst", "3", "--json").json()["remaining"] == 2
    for bad in ("5", "0/1h", "5/0s", "5/1x", "x/1h"):
        assert durable("limit", "hit", "k", "--rate", bad).status == 2
    assert durable("limit", "hit", "k", "--rate", "1/1h", "--burst", "0").status == 2


def test_twelve_concurrent_hits_five_allowed(durable):
    procs = [subprocess.Popen([sys.executable, "-m", "durable_cli", "limit", "hit", "burst", "--rate", "5/1h", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(12)]
    results = [(p.wait(timeout=60), p.stdout.read()) for p in procs]
    assert sorted(code for code, _ in results) == [0] * 5 + [8] * 7
    docs = [json.loads(out) for _, out in results]
    assert sum(d["allowed"] for d in docs) == 5
    assert sorted(d["remaining"] for d in docs if d["allowed"]) == [0, 1, 2, 3, 4]
    assert all(d["retry_after"] > 0 for d in docs if not d["allowed"])


def test_messages_quote_what_the_user_gave_as_python_does(durable):
    """The message catalog's {name!r}: a key or a request id with a quote reads the same on both backends
    (the Worker said 'it's'), and a rate limit names its rate canonically (the Worker echoed 1/60m)."""
    durable("memory", "set", "x", "v")
    r = durable("memory", "get", "it's")
    assert r.status == 3 and "no fact \"it's\"; 'durable memory list --all' shows every fact" in r.err, r.err
    durable("memory", "set", "it's", "v", "--source", "model")
    r = durable("memory", "get", "it's")
    assert r.status == 3 and "fact \"it's\" is unconfirmed; 'durable memory confirm it's' confirms it" in r.err, r.err
    assert durable("limit", "hit", "it's", "--rate", "1/60m").status == 0
    r = durable("limit", "hit", "it's", "--rate", "1/60m")
    assert r.status == 8 and "rate limit \"it's\" reached (1/1h); retry after " in r.err, r.err
    assert durable("session", "prompt", "q", "hi", "--request-id", "it's").status == 0
    r = durable("session", "prompt", "q", "other", "--request-id", "it's")
    assert r.status == 4 and "request id \"it's\" was already used with other content in session \"q\"" in r.err, r.err
