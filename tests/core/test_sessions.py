"""docs/reference/sessions.md §5 from the CLI: every command against every status, and the queue rules."""

import pytest
from freezegun import freeze_time

pytestmark = pytest.mark.both_backends
CLOCK = "freezes the clock with freezegun, which cannot reach the Worker's clock"

STATUSES = ["created", "active", "completed", "failed", "cancelled", "archived"]


def make(durable, name, status):
    """A session NAME in STATUS, built through the CLI."""
    if status == "created":
        assert durable("session", "create", name).status == 0
    elif status == "active":
        assert durable("session", "prompt", name, "first").status == 0
    elif status in ("completed", "failed"):
        durable("session", "prompt", name, "first")
        durable("session", "next", name)
        args = ["--failed"] if status == "failed" else []
        assert durable("session", "finish", name, "1", "--reply", "done", *args).status == 0
    elif status == "cancelled":
        durable("session", "create", name)
        assert durable("session", "cancel", name).status == 0
    elif status == "archived":
        durable("session", "create", name)
        assert durable("session", "archive", name).status == 0
    assert durable("session", "show", name, "--json").json()["status"] == status
    return name


def snapshot(durable, name):
    show = durable("session", "show", name, "--json").json()
    return (
        show["status"], show["title"],
        [(e["type"], e["data"]) for e in durable("session", "events", name, "--json").json()],
        durable("session", "queue", name, "--json").json(),
        durable("transcript", "show", name, "--all", "--json").json(),
    )


# command -> {status: (exit status, status afterwards or None for unchanged)}
MATRIX = {
    ("session", "prompt", "{n}", "more"): {
        "created": (0, "active"), "active": (0, "active"), "completed": (0, "active"), "failed": (0, "active"),
        "cancelled": (0, "active"), "archived": (4, None)},
    ("session", "next", "{n}"): {
        "created": (9, None), "active": (0, "active"), "completed": (9, None), "failed": (9, None),
        "cancelled": (4, None), "archived": (4, None)},
    ("session", "cancel", "{n}"): {
        "created": (0, "cancelled"), "active": (0, "cancelled"), "completed": (4, None), "failed": (4, None),
        "cancelled": (4, None), "archived": (4, None)},
    ("session", "archive", "{n}"): {
        "created": (0, "archived"), "active": (4, None), "completed": (0, "archived"), "failed": (0, "archived"),
        "cancelled": (4, None), "archived": (0, None)},
    ("session", "unarchive", "{n}"): {
        "created": (4, None), "active": (4, None), "completed": (4, None), "failed": (4, None),
        "cancelled": (4, None), "archived": (0, "active")},
    ("session", "stop", "{n}"): {s: (0, None) for s in STATUSES},
    ("session", "title", "{n}", "New title"): {s: (0, None) for s in STATUSES},
    ("transcript", "append", "{n}", "--role", "user", "hi"): {
        **{s: (0, None) for s in STATUSES}, "archived": (4, None)},
    ("transcript", "summarize", "{n}", "--through", "1", "--text", "sum"): {
        "created": (3, None), "active": (3, None), "completed": (0, None), "failed": (0, None),
        "cancelled": (3, None), "archived": (3, None)},
    ("session", "finish", "{n}", "1"): {
        "created": (3, None), "active": (4, None), "completed": (4, None), "failed": (4, None),
        "cancelled": (3, None), "archived": (3, None)},
    ("session", "dequeue", "{n}", "1"): {
        "created": (3, None), "active": (0, "created"), "completed": (4, None), "failed": (4, None),
        "cancelled": (3, None), "archived": (3, None)},
}


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("command", list(MATRIX), ids=lambda c: " ".join(c[:2]))
def test_matrix(durable, command, status):
    name = make(durable, "m", status)
    before = snapshot(durable, name)
    expected_exit, expected_status = MATRIX[command][status]
    r = durable(*[a.format(n=name) for a in command])
    assert r.status == expected_exit, (command, status, r.err)
    after = snapshot(durable, name)
    if expected_exit != 0:
        assert after == before, "a refused command changed the object"
        assert r.err.startswith("durable: error: ") and len(r.err.strip().splitlines()) == 1
    elif expected_status is not None:
        assert after[0] == expected_status
    if command[1] in ("archive",) and status == "archived":
        assert after == before  # a no-op writes nothing


def test_archived_message_names_the_way_out(durable):
    make(durable, "fix-login", "archived")
    r = durable("session", "prompt", "fix-login", "x")
    assert r.err.strip() == "durable: error: session \"fix-login\" is archived; run 'durable session unarchive fix-login' first"


def test_worker_round_trip_orders_the_transcript(durable):
    durable("session", "prompt", "w", "u1")
    durable("session", "prompt", "w", "u2")
    first = durable("session", "next", "w", "--json").json()
    assert first["content"] == "u1" and first["status"] == "processing" and first["turn_seq"] == 1
    assert durable("session", "next", "w").status == 4  # one processing at a time
    durable("session", "finish", "w", str(first["id"]), "--reply", "a1")
    second = durable("session", "next", "w", "--json").json()
    assert second["content"] == "u2"
    durable("session", "finish", "w", str(second["id"]), "--reply", "-", input="a2")
    rows = durable("transcript", "show", "w", "--json").json()
    assert [(r["role"], r["content"]) for r in rows] == [("user", "u1"), ("assistant", "a1"), ("user", "u2"), ("assistant", "a2")]
    assert durable("session", "show", "w", "--json").json()["status"] == "completed"
    assert durable("session", "next", "w", "--json").out.strip() == "null"


def test_positions_and_dequeue_never_reach_the_transcript(durable):
    for text in ("a", "b", "c"):
        durable("session", "prompt", "q", text)
    queue = durable("session", "queue", "q", "--json").json()
    assert [p["position"] for p in queue] == [1, 2, 3]
    after = durable("session", "dequeue", "q", "2", "--json").json()
    assert (after["name"], after["status"], after["queue"]) == ("q", "active", {"pending": 2, "processing": 0})
    assert [p["position"] for p in durable("session", "queue", "q", "--pending", "--json").json()] == [1, 2]
    durable("session", "cancel", "q")
    assert durable("transcript", "show", "q", "--json").json() == []
    assert {p["error"] for p in durable("session", "queue", "q", "--json").json()} == {"cancelled"}


def test_request_id_is_idempotent(durable):
    first = durable("session", "prompt", "r", "hello", "--request-id", "abc", "--json").json()
    again = durable("session", "prompt", "r", "hello", "--request-id", "abc", "--json").json()
    assert first == again
    assert len(durable("session", "queue", "r", "--json").json()) == 1
    assert durable("session", "prompt", "r", "other", "--request-id", "abc").status == 4
    durable("session", "next", "r")
    durable("session", "finish", "r", "1")
    durable("session", "archive", "r")
    # replaying a request that changes nothing is exit 0 even on an archived session
    assert durable("session", "prompt", "r", "hello", "--request-id", "abc").status == 0
    assert durable("session", "prompt", "r", "x", "--request-id", "x" * 129).status == 2


def test_queue_cap(durable):
    durable("config", "set", "queue.max_unfinished", "3")
    for i in range(3):
        assert durable("session", "prompt", "c", f"p{i}").status == 0
    r = durable("session", "prompt", "c", "one more")
    assert r.status == 4 and "full" in r.err
    assert "--wait" in r.err and "durable config set queue.max_unfinished" in r.err  # how to get past it
    r = durable("session", "prompt", "c", "one more", "--wait", "1s")
    assert r.status == 4 and "durable config set queue.max_unfinished" in r.err
    assert len(durable("session", "queue", "c", "--json").json()) == 3


@pytest.mark.local_only(CLOCK)
def test_lease_expiry_fails_the_prompt_on_next_wake(durable):
    with freeze_time("2026-11-29 08:00:00"):
        durable("session", "prompt", "l", "work")
        taken = durable("session", "next", "l", "--lease", "10m", "--json").json()
        assert taken["lease_expires_at"] == "2026-11-29T08:10:00.000Z"
    with freeze_time("2026-11-29 08:09:00"):
        assert durable("session", "renew", "l", "1", "--lease", "10m", "--json").json()["lease_expires_at"] == "2026-11-29T08:19:00.000Z"
    with freeze_time("2026-11-29 08:18:59"):
        assert durable("session", "queue", "l", "--json").json()[0]["status"] == "processing"
    with freeze_time("2026-11-29 08:19:00"):
        prompt = durable("session", "queue", "l", "--json").json()[0]
        assert (prompt["status"], prompt["error"]) == ("failed", "timed out")
        assert durable("session", "show", "l", "--json").json()["status"] == "failed"
        assert "prompt.lease_expired" in [e["type"] for e in durable("session", "events", "l", "--json").json()]
        durable("session", "prompt", "l", "again")
        assert durable("session", "next", "l", "--json").json()["content"] == "again"


def test_stop_keeps_pending(durable):
    durable("session", "prompt", "s", "a")
    durable("session", "prompt", "s", "b")
    durable("session", "next", "s")
    durable("session", "stop", "s")
    queue = durable("session", "queue", "s", "--json").json()
    assert [(p["status"], p["error"]) for p in queue] == [("failed", "stopped"), ("pending", None)]
    assert durable("session", "show", "s", "--json").json()["status"] == "active"


def test_create_twice_and_bad_names(durable):
    assert durable("session", "create", "x").status == 0
    assert durable("session", "create", "x").status == 4
    for bad in (" x", "x ", "", "a\tb", "x" * 201, "new\nline"):
        r = durable("session", "create", bad)
        assert r.status == 2, repr(bad)
    assert durable("session", "create", "ü" * 200).status == 0
    assert durable("session", "title", "x", "  ").status == 2


def test_ephemeral(durable):
    r = durable("session", "create", "--ephemeral")
    name = r.out.strip()
    assert len(name) == 32 and int(name, 16) >= 0
    show = durable("session", "show", name, "--json").json()
    assert show["scope"] == "session" and show["expires_at"] is not None
    assert durable("session", "create", "n", "--ephemeral").status == 2


def test_tenant_scope_isolation_and_roles(durable):
    t = ["--tenant", "acme"]
    assert durable("--as", "alice", *t, "session", "create", "inc").status == 0
    assert durable("--as", "bob", *t, "session", "show", "inc").status == 3
    assert durable("--as", "bob", *t, "session", "prompt", "inc", "hi").status == 4  # the NAME is taken
    assert durable("--as", "alice", *t, "session", "invite", "inc", " bob").status == 2
    assert durable("--as", "alice", *t, "session", "invite", "inc", "bob", "--role", "boss").status == 2
    assert durable("--as", "alice", *t, "session", "invite", "inc", "bob").status == 0
    assert durable("--as", "bob", *t, "session", "prompt", "inc", "hi").status == 0
    assert durable("--as", "bob", *t, "session", "invite", "inc", "carol").status == 5
    durable("--as", "alice", *t, "session", "next", "inc")
    durable("--as", "alice", *t, "session", "finish", "inc", "1")
    before = durable("--as", "alice", *t, "session", "events", "inc", "--json").json()
    assert durable("--as", "bob", *t, "session", "archive", "inc").status == 5
    assert durable("--as", "alice", *t, "session", "events", "inc", "--json").json() == before
    assert durable("--as", "alice", *t, "session", "archive", "inc").status == 0
    assert durable("--as", "bob", *t, "session", "unarchive", "inc").status == 0
    # same NAME in user scope is another object
    assert durable("--as", "alice", "session", "show", "inc").status == 3
    assert durable("--as", "alice", "session", "create", "inc").status == 0
    ids = {durable("--as", "alice", *t, "session", "show", "inc", "--json").json()["id"],
           durable("--as", "alice", "session", "show", "inc", "--json").json()["id"]}
    assert len(ids) == 2
    # user scope takes no participants
    assert durable("--as", "alice", "session", "invite", "inc", "bob").status == 4
    parts = durable("--as", "alice", *t, "session", "participants", "inc", "--json").json()
    assert [(p["user"], p["role"]) for p in parts] == [("alice", "owner"), ("bob", "member")]


def test_other_user_cannot_see_a_user_session(durable):
    durable("--as", "alice", "session", "create", "mine")
    assert durable("--as", "mallory", "session", "show", "mine").status == 3
    assert durable("--as", "mallory", "transcript", "show", "mine").status == 3


def test_events_since_and_types(durable):
    durable("session", "create", "e", "--title", "T")
    durable("session", "title", "e", "T2")
    durable("session", "prompt", "e", "x")
    events = durable("session", "events", "e", "--json").json()
    assert [e["type"] for e in events] == ["session.created", "session.title", "prompt.queued", "session.status"]
    assert events[3]["data"] == {"from": "created", "to": "active"}
    assert [e["seq"] for e in durable("session", "events", "e", "--since", "2", "--json").json()] == [3, 4]


def test_library_object_id_is_the_id_session_show_prints(durable):
    """Session.object_id() (the op object_id: its rule in core/state.py and rules/state.ts), on both backends;
    a tenant object's id to a participant only."""
    from durable_cli import DurableError, Store

    shown = durable("session", "create", "oid", "--json").json()["id"]
    with Store().open("oid") as session:
        assert session.object_id() == {"id": shown}
    assert durable("--as", "alice", "--tenant", "acme", "session", "create", "team").status == 0
    with pytest.raises(DurableError) as refused, Store(tenant="acme", user="mallory").open("team") as session:
        session.object_id()
    assert refused.value.code == "not_found"
