"""docs/reference/retention.md §7 enumeration and expiry: ls, ttl, ephemeral, delete, purge, sweep; time travel both ways."""

import os
import subprocess
import sys

import pytest
from freezegun import freeze_time

from tests.helpers import faketime_env, hold_lock

pytestmark = pytest.mark.both_backends
CLOCK = "freezes the clock (freezegun/faketime), which cannot reach the Worker's clock"


def faketime(when, *args, env=None):
    """Run the real CLI in a process whose clock reads WHEN (Debian's libfaketime, preloaded directly:
    the `faketime` wrapper's semaphores, left in /dev/shm by killed runs, collide on pid reuse)."""
    full = dict(faketime_env(when), **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "durable_cli", *args], capture_output=True, text=True, env=full, timeout=60)
    return proc


@pytest.mark.local_only(CLOCK)  # and cross_object (ls)
def test_ls_order_filters_and_shape(durable):
    with freeze_time("2026-11-01"):
        durable("session", "create", "old")
    with freeze_time("2026-11-10"):
        durable("session", "prompt", "mid", "x")
    with freeze_time("2026-11-20"):
        durable("transcript", "append", "new", "--role", "user", "hello", "--tokens", "7")
    with freeze_time("2026-11-21"):
        durable("session", "create", "gone")
        durable("session", "archive", "gone")
        rows = durable("ls", "--json").json()
        assert [r["name"] for r in rows] == ["new", "mid", "old"]
        assert list(rows[0]) == ["name", "id", "scope", "owner", "title", "status", "created_at", "updated_at",
                                 "last_active_at", "turns", "tokens", "expires_at", "external_id", "tags", "cost_given_usd",
                                 "pending_requests"]
        assert rows[0]["external_id"] is None  # no adapter made it
        assert (rows[0]["turns"], rows[0]["tokens"]) == (1, 7)
        assert [r["name"] for r in durable("ls", "--all", "--json").json()] == ["gone", "new", "mid", "old"]
        assert [r["name"] for r in durable("ls", "--status", "archived", "--json").json()] == ["gone"]
        assert [r["name"] for r in durable("ls", "--status", "active", "--status", "created", "--json").json()] == ["new", "mid", "old"]
        assert [r["name"] for r in durable("ls", "--older-than", "5d", "--json").json()] == ["mid", "old"]
        assert [r["name"] for r in durable("ls", "--limit", "1", "--jsonl").lines()] == ["new"]
        assert durable("--as", "bob", "ls", "--json").json() == []
        assert [r["name"] for r in durable("--as", "bob", "ls", "--user", "alice", "--json").json()] == ["new", "mid", "old"]
        assert durable("ls", "--status", "bogus").status == 2
        plain = durable("ls").out.splitlines()
        assert plain[0].split("\t")[0] == "new" and len(plain[0].split("\t")) == 16


def test_ls_carries_the_recorded_cost_and_the_pending_questions(durable):
    durable("transcript", "append", "a", "--role", "user", "hi", "--meta", '{"cost_usd": 0.25}')
    durable("transcript", "append", "a", "--role", "assistant", "yo", "--meta", '{"cost_usd": 0.5, "usage": {"input_tokens": 5, "output_tokens": 2}}')
    durable("transcript", "append", "a", "--role", "assistant", "priced", "--meta", '{"model": "gpt-4o", "usage": {"input_tokens": 5, "output_tokens": 2}}')
    durable("session", "create", "b")
    asked = durable("elicit", "ask", "b", "--prompt", "ok?", "--choice", "yes")
    assert asked.status == 0, asked.err
    rows = {r["name"]: r for r in durable("ls", "--json").json()}
    assert (rows["a"]["cost_given_usd"], rows["a"]["pending_requests"]) == (0.75, 0)  # the given costs only: ls prices nothing
    assert (rows["b"]["cost_given_usd"], rows["b"]["pending_requests"]) == (0.0, 1)
    durable("elicit", "answer", "b", asked.out.strip(), "--choice", "yes")
    assert durable("ls", "--json").json()[0]["pending_requests"] == 0


@pytest.mark.local_only("hides the object files from ls")
def test_ls_never_opens_objects(durable, home):
    durable("session", "create", "a")
    for base, _, files in os.walk(home / "objects"):
        for f in files:
            os.chmod(os.path.join(base, f), 0)
    os.chmod(home / "objects", 0)  # root ignores modes; remove the files from view instead
    os.rename(home / "objects", home / "objects.hidden")
    try:
        assert [r["name"] for r in durable("ls", "--json").json()] == ["a"]
    finally:
        os.rename(home / "objects.hidden", home / "objects")


@pytest.mark.local_only(CLOCK)
def test_ttl_fires_on_wake_and_is_pushed_back_by_writes(durable):
    with freeze_time("2026-11-29 08:00:00"):
        durable("session", "create", "t", "--ttl", "1h")
        assert durable("ttl", "t", "--json").json() == {"name": "t", "ttl_seconds": 3600, "expires_at": "2026-11-29T09:00:00.000Z"}
    with freeze_time("2026-11-29 08:50:00"):
        durable("transcript", "append", "t", "--role", "user", "still here")
        assert durable("ttl", "t", "--json").json()["expires_at"] == "2026-11-29T09:50:00.000Z"
    with freeze_time("2026-11-29 09:40:00"):
        durable("session", "show", "t")  # reads do not push it back
    with freeze_time("2026-11-29 09:50:00"):
        assert [r["name"] for r in durable("ls", "--json").json()] == []  # hidden once past its TTL
        assert durable("session", "show", "t").status == 3
        assert durable("transcript", "show", "t").status == 3
    assert durable("ls", "--all", "--json").json() == []


def test_ttl_clear_and_invalid(durable):
    durable("session", "create", "t")
    assert durable("ttl", "t", "--json").json()["ttl_seconds"] is None
    durable("ttl", "t", "2d")
    assert durable("ttl", "t", "--json").json()["ttl_seconds"] == 172800
    assert durable("ttl", "t", "--clear", "--json").json() == {"name": "t", "ttl_seconds": None, "expires_at": None}
    assert durable("ttl", "t", "0").status == 2
    assert durable("ttl", "nope", "1d").status == 3
    assert "ttl.set" in [e["type"] for e in durable("session", "events", "t", "--json").json()]


@pytest.mark.local_only(CLOCK)  # and cross_object (sweep)
def test_ttl_fires_in_sweep_with_faketime(durable, home):
    assert faketime("2026-01-01 00:00:00", "session", "create", "e", "--ttl", "1h").returncode == 0
    assert faketime("2026-01-01 00:00:00", "session", "create", "keep").returncode == 0
    swept = faketime("2026-01-01 02:00:00", "sweep", "--json")
    assert swept.returncode == 0, swept.stderr
    import json

    doc = json.loads(swept.stdout)
    assert [d["name"] for d in doc["deleted"]] == ["e"] and doc["dry_run"] is False
    assert len(list((home / "objects").rglob("*.sqlite3"))) == 1


@pytest.mark.local_only(CLOCK)
def test_ephemeral_session_expires_after_24h(durable):
    with freeze_time("2026-11-29 08:00:00"):
        name = durable("session", "create", "--ephemeral").out.strip()
        assert durable("ls", "--json").json()[0]["expires_at"] == "2026-11-30T08:00:00.000Z"
    with freeze_time("2026-11-30 08:00:01"):
        assert durable("sweep", "--json").json()["deleted"][0]["name"] == name
        assert durable("session", "show", name).status == 3


@pytest.mark.local_only(CLOCK)  # and cross_object (sweep)
def test_draft_expiry_only_in_sweep(durable):
    with freeze_time("2026-11-29 08:00:00"):
        durable("session", "create", "draft")
        durable("session", "create", "retitled")
        durable("session", "prompt", "busy", "x")
    with freeze_time("2026-11-29 12:00:00"):
        durable("session", "title", "retitled", "touched since")
    with freeze_time("2026-11-29 17:00:00"):
        assert durable("session", "show", "draft", "--json").json()["status"] == "created"  # not on wake
        doc = durable("sweep", "--json").json()
        assert [c["name"] for c in doc["changed"]] == ["draft"]
        assert durable("session", "show", "draft", "--json").json()["status"] == "archived"
        assert durable("session", "show", "busy", "--json").json()["status"] == "active"
        assert durable("session", "show", "retitled", "--json").json()["status"] == "created"


@pytest.mark.local_only(CLOCK)  # and cross_object (sweep)
def test_lease_alarm_in_sweep(durable):
    with freeze_time("2026-11-29 08:00:00"):
        durable("session", "prompt", "l", "x")
        durable("session", "next", "l", "--lease", "5m")
    with freeze_time("2026-11-29 08:06:00"):
        doc = durable("sweep", "--json").json()
        assert [c["name"] for c in doc["changed"]] == ["l"]
        assert durable("ls", "--json").json()[0]["status"] == "failed"


def test_delete(durable, backend, home):
    durable("transcript", "append", "d", "--role", "user", "x")
    assert durable("delete", "d").status == 2  # no TTY, no --yes
    doc = durable("delete", "d", "--yes", "--json").json()
    assert [x["name"] for x in doc["deleted"]] == ["d"] and doc["skipped"] == [] and doc["dry_run"] is False
    assert list((home / "objects").rglob("*.*")) == []  # remote: nothing here in the first place
    assert durable("session", "show", "d").status == 3
    assert durable("delete", "d", "--yes").status == 3


@pytest.mark.cross_object
def test_a_deleted_object_leaves_ls(durable):
    durable("transcript", "append", "d", "--role", "user", "x")
    assert durable("delete", "d", "--yes").status == 0
    assert durable("ls", "--json").json() == []


def purge_setup(durable):
    with freeze_time("2026-01-01"):
        durable("session", "create", "a-old")
        durable("--as", "bob", "session", "create", "b-old")
        durable("memory", "set", "k", "v")  # the reserved object is never purged by age
    with freeze_time("2026-06-01"):
        durable("session", "create", "a-new")


@pytest.mark.local_only(CLOCK)  # and cross_object (purge)
def test_purge_selects_exactly_the_idle_objects(durable, home):
    purge_setup(durable)
    with freeze_time("2026-06-02"):
        assert durable("purge", "--older-than", "30d").status == 2  # needs --yes without a TTY
        dry = durable("purge", "--older-than", "30d", "--dry-run", "--json").json()
        assert sorted(d["name"] for d in dry["deleted"]) == ["a-old", "b-old"] and dry["dry_run"] is True
        assert len(list((home / "objects").rglob("*.sqlite3"))) == 4  # dry-run changed nothing
        only_bob = durable("purge", "--older-than", "30d", "--user", "bob", "--yes", "--json").json()
        assert [d["name"] for d in only_bob["deleted"]] == ["b-old"]
        doc = durable("purge", "--older-than", "30d", "--yes", "--json").json()
        assert [d["name"] for d in doc["deleted"]] == ["a-old"]
        assert [r["name"] for r in durable("ls", "--json").json()] == ["a-new"]
        assert durable("memory", "get", "k", "--all", "--json").json()["value"] == "v"
        assert durable("doctor").status == 0


@pytest.mark.local_only(CLOCK)  # and cross_object (purge)
def test_purge_with_faketime_processes(durable, home):
    assert faketime("2026-01-01 00:00:00", "session", "create", "x").returncode == 0
    assert faketime("2026-03-01 00:00:00", "session", "create", "y").returncode == 0
    r = faketime("2026-03-02 00:00:00", "purge", "--older-than", "30d", "--yes", "--json")
    assert r.returncode == 0 and '"name": "x"' in r.stdout.replace('":"', '": "')
    assert [row["name"] for row in durable("ls", "--json").json()] == ["y"]


@pytest.mark.local_only("holds an object's file lock")  # and cross_object (purge)
def test_purge_skips_busy_objects(durable):
    with freeze_time("2026-01-01"):
        durable("session", "create", "busy")
        durable("session", "create", "idle")
    holder = hold_lock("busy", 5)
    try:
        r = durable("--lock-timeout", "0", "purge", "--older-than", "1d", "--yes", "--json")
        assert r.status == 0
        doc = r.json()
        assert [d["name"] for d in doc["deleted"]] == ["idle"]
        assert [(s["name"], s["reason"]) for s in doc["skipped"]] == [("busy", "busy")]
    finally:
        holder.kill()
        holder.wait()
    assert durable("session", "show", "busy").status == 0


@pytest.mark.local_only("edits index.db with sqlite3")  # and cross_object (purge)
def test_purge_rechecks_under_the_lock(durable, home):
    """A stale index row (older activity than the object really has) does not get the object deleted."""
    import sqlite3

    with freeze_time("2026-01-01"):
        durable("session", "create", "x")
    with freeze_time("2026-06-01"):
        durable("session", "prompt", "x", "recent work")
        db = sqlite3.connect(home / "index.db")
        db.execute("UPDATE objects SET last_active_at = 0")
        db.commit()
        db.close()
        assert durable("purge", "--older-than", "30d", "--yes", "--json").json()["deleted"] == []
        assert durable("session", "show", "x").status == 0


KILLER = """
import os, signal, sys
from durable_cli.store import objects
real = objects.remove_files
def die(path, *rest):
    real(path, *rest)
    os.kill(os.getpid(), signal.SIGKILL)  # after the journal and the unlink, before the index row goes
objects.remove_files = die
from durable_cli.cli.app import main
sys.argv = ["durable", "purge", "--older-than", "1d", "--yes"]
main()
"""


@pytest.mark.local_only(CLOCK)  # and the intent journal of the file store
def test_purge_killed_after_journaling_is_finished_by_the_next(durable, home):
    with freeze_time("2026-01-01"):
        for name in ("p1", "p2", "p3"):
            durable("session", "create", name)
    proc = subprocess.run([sys.executable, "-c", KILLER], env=faketime_env("2026-02-01 00:00:00"), capture_output=True)
    assert proc.returncode != 0  # killed
    assert len(list((home / "objects").rglob("*.sqlite3"))) == 2
    doctor = durable("doctor", "--json")
    assert doctor.status == 7 and "unfinished_purge" in {p["kind"] for p in doctor.json()["problems"]}
    with freeze_time("2026-02-01"):
        assert durable("purge", "--older-than", "1d", "--yes").status == 0
    assert list((home / "objects").rglob("*.sqlite3")) == []
    assert list((home / "objects").rglob("*.lock")) == []
    assert durable("ls", "--all", "--json").json() == []
    assert durable("doctor").status == 0
