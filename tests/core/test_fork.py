"""durable session fork NAME NEW [--at SEQ] [--title T] (docs/reference/sessions.md §5)."""

import os
import subprocess
import sys

import pytest
from freezegun import freeze_time

pytestmark = pytest.mark.both_backends
CLOCK = "freezes the clock (freezegun/faketime), which cannot reach the Worker's clock"


def _conversation(durable, name="src"):
    """system, user, assistant calling a tool, its result, assistant: seqs 1-5."""
    for args in (
        ("--role", "system", "be brief"),
        ("--role", "user", "add 1 and 2", "--meta", '{"model": "m1"}'),
        ("--role", "assistant", "--tool-calls", '[{"id": "c1", "name": "add", "arguments": "{\\"a\\": 1}"}]',
         "--data", '{"sdk": "item"}'),
        ("--role", "tool", "3", "--call-id", "c1", "--name", "add"),
        ("--role", "assistant", "it is 3", "--tokens", "7"),
    ):
        assert durable("transcript", "append", name, *args).status == 0


def _rows(durable, name, *extra):
    r = durable("transcript", "show", name, "--json", *extra)
    assert r.status == 0, r.err
    return r.json()


@pytest.mark.local_only(CLOCK)
def test_fork_copies_the_live_rows_renumbered_and_leaves_the_source_alone(durable):
    with freeze_time("2026-01-01T10:00:00Z"):
        _conversation(durable)
        durable("session", "title", "src", "Adding")
    before = _rows(durable, "src", "--all")
    source = durable("session", "show", "src", "--json").json()
    with freeze_time("2026-01-02T09:00:00Z"):
        r = durable("--as", "alice", "session", "fork", "src", "copy", "--json")
    assert r.status == 0, r.err
    doc = r.json()
    assert (doc["name"], doc["status"], doc["title"], doc["scope"], doc["owner"]) == ("copy", "created", "Adding", "user", "alice")
    assert doc["turns"] == 5 and doc["tokens"] == source["tokens"]
    assert doc["last_active_at"] == doc["created_at"] == "2026-01-02T09:00:00.000Z"
    rows = _rows(durable, "copy")
    assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
    for new, old in zip(rows, before):
        for key in ("role", "content", "tool_calls", "call_id", "name", "meta", "data", "tokens", "created_at", "kind"):
            assert new[key] == old[key], key
        assert new["forked_from"] == source["id"] and old["forked_from"] is None
        assert new["author"] == "alice"
    assert _rows(durable, "src", "--all") == before  # NAME is not changed
    assert durable("session", "show", "src", "--json").json()["last_active_at"] == source["last_active_at"]
    events = durable("session", "events", "copy", "--json").json()
    assert events[-1]["type"] == "session.forked"
    assert events[-1]["data"] == {"name": "src", "id": source["id"], "seq": 5}
    assert "session.forked" not in [e["type"] for e in durable("session", "events", "src", "--json").json()]
    plain = durable("session", "fork", "src", "copy2", "--title", "Second try")
    assert plain.out == "copy2\n"
    assert durable("session", "show", "copy2", "--json").json()["title"] == "Second try"


def test_fork_at_a_seq_and_its_refusals(durable, backend, home):
    _conversation(durable)
    assert [r["content"] for r in _rows(durable, "src")][:2] == ["be brief", "add 1 and 2"]
    r = durable("session", "fork", "src", "early", "--at", "2", "--json")
    assert r.status == 0 and r.json()["turns"] == 2
    assert [x["content"] for x in _rows(durable, "early")] == ["be brief", "add 1 and 2"]
    assert durable("session", "show", "early", "--json").json()["turns"] == 2
    assert durable("session", "events", "early", "--json").json()[-1]["data"]["seq"] == 2
    files = sorted(os.listdir(home / "objects")) if backend == "local" else None

    split = durable("session", "fork", "src", "split", "--at", "3")  # the call without its result
    assert split.status == 2 and "tool call" in split.err
    assert durable("session", "fork", "src", "ghost", "--at", "99").status == 3
    assert durable("session", "fork", "missing", "other").status == 3
    assert durable("session", "fork", "src", "early").status == 4  # NEW exists
    assert durable("session", "fork", "src", "src").status == 4
    assert durable("session", "fork", "src", "bad\tname").status == 2
    assert durable("session", "fork", "src", "x", "--title", " ").status == 2
    assert durable("session", "fork", "src", "x", "--at", "0").status == 2
    if backend == "local":
        assert sorted(os.listdir(home / "objects")) == files  # nothing made by a refused fork
    for name in ("ghost", "other", "bad\tname", "x"):
        assert durable("session", "show", name).status in (2, 3)
    assert durable("session", "show", "split").status == 3


def test_a_summary_stays_a_summary_covering_nothing(durable):
    _conversation(durable)
    durable("transcript", "summarize", "src", "--through", "4", "--text", "added numbers")
    summary = _rows(durable, "src")[1]
    assert summary["kind"] == "summary" and summary["seq"] == 6
    assert durable("session", "fork", "src", "f", "--at", "6").status == 0
    rows = _rows(durable, "f")
    assert [(r["seq"], r["kind"], r["covers"], r["superseded_by"]) for r in rows] == [
        (1, "turn", None, None), (2, "summary", None, None)]
    assert _rows(durable, "f", "--all") == rows  # the rows it stood for in NAME are not copied
    durable("transcript", "append", "f", "--role", "user", "more")
    assert [r["seq"] for r in _rows(durable, "f")] == [1, 2, 3]
    # a summary over the copied summary covers it like any row
    s = durable("transcript", "summarize", "f", "--through", "3", "--text", "all of it", "--json").json()
    assert s["summary"]["covers"] == [2, 3] and s["superseded"] == 2
    durable("transcript", "pop", "f")  # the new summary: the copied one comes back
    popped = durable("transcript", "pop", "f", "--count", "2", "--json").json()
    assert [p["seq"] for p in popped] == [3, 2]
    assert [r["seq"] for r in _rows(durable, "f")] == [1]  # popping it restored nothing


def test_fork_works_on_archived_and_tenant_sources_into_your_own_scope(durable):
    _conversation(durable)
    durable("session", "archive", "src")
    assert durable("session", "fork", "src", "revived").status == 0
    assert durable("session", "show", "revived", "--json").json()["status"] == "created"
    assert durable("transcript", "append", "revived", "--role", "user", "go on").status == 0
    durable("--tenant", "acme", "transcript", "append", "shared", "--role", "user", "team note")
    r = durable("--tenant", "acme", "session", "fork", "shared", "mine", "--json")
    assert r.status == 0 and r.json()["scope"] == "user" and r.json()["owner"] == "alice"
    assert [x["content"] for x in _rows(durable, "mine")] == ["team note"]
    assert durable("--as", "bob", "--tenant", "acme", "session", "fork", "shared", "theirs").status == 3
    assert durable("--as", "bob", "session", "fork", "src", "x").status == 3  # alice's NAME is not bob's


@pytest.mark.cross_object
def test_fork_export_import_round_trip(durable, tmp_path):
    _conversation(durable)
    durable("transcript", "summarize", "src", "--through", "2", "--text", "s")
    durable("session", "fork", "src", "f")
    before = _rows(durable, "f", "--all")
    dump = tmp_path / "f.jsonl"
    assert durable("export", "f", "--output", dump).status == 0
    assert durable("delete", "f", "--yes").status == 0
    r = durable("import", str(dump), "--json")
    assert r.status == 0, r.err
    assert _rows(durable, "f", "--all") == before


FORKER = """
import sys
from durable_cli import Store
store = Store()
a, b = sys.argv[1:3]
for i in range(int(sys.argv[3])):
    store.fork(a, f"{b}-{i}")
store.close()
print("done", flush=True)
"""


def test_forks_in_both_directions_at_once_do_not_deadlock(durable):
    """Each fork holds one lock at a time, so a->b and b->a forks running together both finish."""
    durable("transcript", "append", "a", "--role", "user", "from a")
    durable("transcript", "append", "b", "--role", "user", "from b")
    env = dict(os.environ, DURABLE_LOCK_TIMEOUT="30s")
    procs = [subprocess.Popen([sys.executable, "-c", FORKER, x, y, "8"], stdout=subprocess.PIPE, text=True, env=env)
             for x, y in (("a", "b"), ("b", "a"))]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done"
    for i in range(8):  # every fork made (named one by one: `ls` is not remote yet)
        assert durable("session", "show", f"a-{i}").status == durable("session", "show", f"b-{i}").status == 0
