"""docs/reference/retention.md §7 data rights: forget, export/import, backup; and doctor's checks and repairs."""

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from durable_cli.core import rights
from tests.helpers import hold_lock

# every test here uses a command across objects: remote once part 2 lands (tests/conftest.py)
pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]

SECRET_WORDS = "zanzibar-quokka-7731"


def all_bytes(home):
    for base, _, files in os.walk(home):
        for f in files:
            with open(os.path.join(base, f), "rb") as fh:
                yield os.path.join(base, f), fh.read()


def seed_bob(durable):
    bob = ["--as", "bob"]
    durable(*bob, "session", "prompt", "bob-private", f"my {SECRET_WORDS} plan")
    durable(*bob, "transcript", "append", "bob-notes", "--role", "user", f"notes {SECRET_WORDS}")
    durable(*bob, "session", "create", "--ephemeral")
    durable(*bob, "memory", "set", "pet", SECRET_WORDS)
    durable(*bob, "limit", "hit", "api", "--rate", "5/1h")
    t = ["--tenant", "acme"]
    durable("--as", "alice", *t, "session", "create", "shared")
    durable("--as", "alice", *t, "session", "invite", "shared", "bob", "--role", "owner")
    durable(*bob, *t, "transcript", "append", "shared", "--role", "user", "bob was here")
    durable("--as", "alice", *t, "transcript", "append", "shared", "--role", "user", "alice too")
    durable(*bob, *t, "session", "create", "bob-tenant-only")
    durable("--as", "alice", "transcript", "append", "alice-own", "--role", "user", "untouched")


@pytest.mark.local_only("reads the bytes of the data directory")
def test_forget_erases_every_byte(durable, home):
    seed_bob(durable)
    assert any(SECRET_WORDS.encode() in data for _, data in all_bytes(home))
    assert durable("--as", "bob", "forget", "bob").status == 2  # needs --yes without a TTY
    r = durable("forget", "bob", "--yes", "--json")
    assert r.status == 0, r.err
    doc = r.json()
    assert len(doc["deleted"]) == 5  # 2 sessions, the ephemeral, the reserved object, the tenant object left empty
    assert [(c["name"], c["what"]) for c in doc["changed"]] == [("shared", "participant removed")]
    for path, data in all_bytes(home):
        assert SECRET_WORDS.encode() not in data, path
        assert b"bob-private" not in data and b"bob-notes" not in data, path
    assert durable("--as", "bob", "ls", "--all", "--json").json() == []
    assert durable("--as", "bob", "memory", "list", "--all", "--json").json() == []
    t = ["--tenant", "acme"]
    rows = durable("--as", "alice", *t, "transcript", "show", "shared", "--json").json()
    assert [(r["author"], r["content"]) for r in rows] == [(None, "bob was here"), ("alice", "alice too")]
    parts = durable("--as", "alice", *t, "session", "participants", "shared", "--json").json()
    assert [p["user"] for p in parts] == ["alice"]
    assert durable("--as", "alice", "transcript", "show", "alice-own", "--json").json()[0]["content"] == "untouched"
    assert durable("doctor").status == 0


@pytest.mark.local_only("removes index.db entries")
def test_forget_finds_objects_the_index_lost(durable, home):
    durable("--as", "bob", "transcript", "append", "hidden", "--role", "user", SECRET_WORDS)
    durable("--as", "bob", "--tenant", "t", "transcript", "append", "room", "--role", "user", "hi")
    durable("--as", "bob", "--tenant", "t", "session", "invite", "room", "carol")
    os.unlink(home / "index.db")  # as if every index update had been lost
    doc = durable("forget", "bob", "--yes", "--json").json()
    assert [d["name"] for d in doc["deleted"]] == ["hidden"]
    assert [c["name"] for c in doc["changed"]] == ["room"]
    for path, data in all_bytes(home):
        assert SECRET_WORDS.encode() not in data, path


@pytest.mark.local_only("holds an object's file lock")
def test_forget_promotes_an_owner_and_skips_busy(durable):
    t = ["--tenant", "acme"]
    durable("--as", "owner1", *t, "session", "create", "room")
    durable("--as", "owner1", *t, "session", "invite", "room", "m1")
    durable("--as", "owner1", *t, "session", "invite", "room", "m2")
    durable("--as", "owner1", "session", "create", "mine")
    holder = hold_lock("mine", 5, user="owner1")
    try:
        r = durable("--lock-timeout", "0", "forget", "owner1", "--yes", "--json")
        assert r.status == 6
        assert [s["name"] for s in r.json()["skipped"]] == ["mine"]
    finally:
        holder.kill()
        holder.wait()
    parts = durable("--as", "m1", *t, "session", "participants", "room", "--json").json()
    assert [(p["user"], p["role"]) for p in parts] == [("m1", "owner"), ("m2", "member")]
    assert durable("forget", "owner1", "--yes").status == 0


def rich_session(durable):
    durable("transcript", "append", "r", "--role", "system", "rules")
    durable("session", "prompt", "r", "question one", "--request-id", "q1")
    durable("session", "next", "r")
    durable("session", "finish", "r", "1", "--reply", "answer one")
    durable("transcript", "append", "r", "--role", "tool", "tool out", "--call-id", "c9")
    durable("transcript", "summarize", "r", "--through", "3", "--text", "summary")
    durable("session", "prompt", "r", "queued")
    durable("elicit", "ask", "r", "--prompt", "ok?", "--choice", "y", "--choice", "n")
    durable("ttl", "r", "30d")


def views(durable):
    return (durable("transcript", "show", "r", "--all", "--json").json(), durable("session", "show", "r", "--json").json(),
            durable("session", "queue", "r", "--json").json(), durable("session", "events", "r", "--json").json(),
            durable("elicit", "list", "r", "--json").json())


def test_export_delete_import_restores_exactly(durable, tmp_path):
    rich_session(durable)
    before = views(durable)
    out = tmp_path / "r.jsonl"
    assert durable("export", "r", "--output", out).status == 0
    assert oct(os.stat(out).st_mode & 0o777) == "0o600"
    record = json.loads(out.read_text().splitlines()[0])
    assert record["format"] == "durable-export" and record["version"] == rights.VERSION and record["name"] == "r"
    assert durable("import", out).status == 0  # exists identically: skipped as already imported
    durable("delete", "r", "--yes")
    doc = durable("import", out, "--json").json()
    assert [(c["name"], c["what"]) for c in doc["changed"]] == [("r", "imported")]
    assert views(durable) == before
    assert durable("transcript", "append", "r", "--role", "user", "next", "--json").json()["seq"] == before[0][-1]["seq"] + 1
    assert durable("import", out, "--replace").status == 0
    assert views(durable) == before


def test_export_user_and_all_and_stdin_import(durable, home, tmp_path, monkeypatch):
    durable("session", "create", "a1")
    durable("memory", "set", "k", "v", "--confirmed")
    durable("--as", "bob", "session", "create", "b1")
    mine = durable("export", "--user", "alice").out.splitlines()
    assert sorted(json.loads(line)["scope"] for line in mine) == ["reserved", "user"]
    everything = durable("export", "--all").out
    assert len(everything.splitlines()) == 3
    assert durable("export").status == 2 and durable("export", "a1", "--all").status == 2
    other = tmp_path / "other-home"
    monkeypatch.setenv("DURABLE_HOME", str(other))
    assert durable("import", "-", "--all-users", input=everything).status == 0  # bob's too: a restore
    assert durable("session", "show", "a1", "--json").json()["name"] == "a1"  # ids recomputed for this secret
    assert durable("memory", "get", "k").out == "v\n"
    assert durable("import", "-", input="not json\n").status == 2


@pytest.mark.local_only("backup has no remote meaning")
def test_backup_is_a_working_home(durable, home, tmp_path, monkeypatch):
    rich_session(durable)
    durable("--as", "bob", "memory", "set", "x", "y")
    dest = tmp_path / "backup"
    assert durable("backup", str(home / "inside")).status == 2
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    assert durable("backup", str(tmp_path / "full")).status == 2
    assert durable("backup", dest).status == 0
    before = views(durable)
    monkeypatch.setenv("DURABLE_HOME", str(dest))
    assert views(durable) == before
    assert durable("doctor").status == 0
    assert [r["name"] for r in durable("ls", "--json").json()] == ["r"]


APPENDER = """
import sys
from durable_cli.cli.app import run
for i in range(150):
    assert run(["transcript", "append", "busy", "--role", "user", f"n{i}"]) == 0
"""


@pytest.mark.local_only("backup has no remote meaning")
def test_backup_while_another_process_appends(durable, home, tmp_path, monkeypatch):
    durable("transcript", "append", "busy", "--role", "user", "start")
    writer = subprocess.Popen([sys.executable, "-c", APPENDER])
    dest = tmp_path / "b"
    assert durable("backup", dest).status == 0
    assert writer.wait(timeout=60) == 0
    monkeypatch.setenv("DURABLE_HOME", str(dest))
    rows = durable("transcript", "show", "busy", "--json").json()
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))  # a consistent prefix
    assert durable("session", "show", "busy", "--json").json()["turns"] == len(rows)
    assert durable("doctor").status == 0


def object_path(durable, home, name):
    object_id = durable("session", "show", name, "--json").json()["id"]
    return home / "objects" / object_id[:2] / f"{object_id}.sqlite3", object_id


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_finds_corruption_per_object(durable, home):
    for name in ("zeroed", "truncated", "garbage", "fine"):
        for i in range(40):
            durable("transcript", "append", name, "--role", "user", f"{name} {i} " + "x" * 200)
    paths = {n: object_path(durable, home, n) for n in ("zeroed", "truncated", "garbage", "fine")}
    with open(paths["zeroed"][0], "r+b") as f:
        f.write(b"\0" * 100)
    size = os.path.getsize(paths["truncated"][0])
    os.truncate(paths["truncated"][0], size // 2)
    with open(paths["garbage"][0], "r+b") as f:
        f.seek(4096 * 2)
        f.write(os.urandom(4096))
    r = durable("doctor", "--json")
    assert r.status == 7
    bad = {p["id"] for p in r.json()["problems"] if p["kind"] == "corrupt"}
    assert bad == {paths[n][1] for n in ("zeroed", "truncated", "garbage")}
    for name in ("zeroed", "truncated"):
        s = durable("transcript", "show", name)
        assert s.status == 7 and "corrupt" in s.err and "doctor" in s.err
    s = durable("transcript", "show", "garbage")  # only the pages a command reads are checked on the way
    assert s.status in (0, 7) and "Traceback" not in s.err
    assert durable("transcript", "show", "fine", "--json").status == 0
    assert durable("transcript", "append", "fine", "--role", "user", "ok").status == 0
    # --repair moves each corrupt object into quarantine/ (listed), so its name can be used again
    r = durable("doctor", "--repair", "--json")
    assert r.status == 0, r.err
    moved = {p["id"] for p in r.json()["problems"] if p["kind"] == "corrupt" and p["repaired"]}
    assert moved == bad
    assert len([n for n in os.listdir(home / "quarantine") if n.endswith(".sqlite3")]) == 3
    assert durable("doctor").status == 0
    assert durable("transcript", "append", "truncated", "--role", "user", "again").status == 0
    assert durable("transcript", "show", "fine", "--json").status == 0
    r = durable("doctor", "--purge-quarantine", "--json")
    assert r.status == 0 and {p["kind"] for p in r.json()["problems"]} == {"quarantined"}
    assert os.listdir(home / "quarantine") == []


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_rebuilds_a_deleted_index(durable, home):
    durable("session", "create", "a")
    durable("transcript", "append", "b", "--role", "user", "x")
    listing = durable("ls", "--json").json()
    os.unlink(home / "index.db")
    assert durable("ls", "--json").json() == []
    r = durable("doctor", "--json")
    assert r.status == 7 and {p["kind"] for p in r.json()["problems"]} == {"missing_index_row"}
    assert durable("doctor", "--repair").status == 0
    assert durable("ls", "--json").json() == listing
    assert durable("doctor").status == 0


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_stale_lock_modes_and_orphans(durable, home):
    durable("session", "create", "a")
    (home / "objects" / "ab").mkdir(mode=0o700)
    (home / "objects" / "ab" / ("ab" + "0" * 62 + ".lock")).write_bytes(b"")
    os.chmod(home / "secret.key", 0o644)
    db = sqlite3.connect(home / "index.db")
    db.execute("INSERT INTO objects (id, scope, owner, name) VALUES ('ff00', 'user', 'alice', 'ghost')")
    db.commit()
    db.close()
    r = durable("doctor", "--json")
    kinds = {p["kind"] for p in r.json()["problems"]}
    assert r.status == 7 and {"stale_lock", "mode", "orphan_index_row"} <= kinds
    assert durable("doctor", "--repair").status == 0
    assert durable("doctor", "--json").json() == {"healthy": True, "problems": []}
    assert oct(os.stat(home / "secret.key").st_mode & 0o777) == "0o600"


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_reports_stray_files_and_names_the_session(durable, home):
    """A plain file under objects/ is a stray file, not a shard with the wrong mode, and --repair leaves it
    as it is (it was made rwx); problems name the session index.db knows; a corrupt object's detail says
    what --repair does, not "run doctor" (doctor is running)."""
    durable("transcript", "append", "notes", "--role", "user", "x" * 5000)
    durable("transcript", "append", "fine", "--role", "user", "y")
    stray = home / "objects" / "README.txt"
    stray.write_text("mine")
    os.chmod(stray, 0o644)
    path, object_id = object_path(durable, home, "notes")
    os.truncate(path, os.path.getsize(path) // 2)
    r = durable("doctor", "--json")
    assert r.status == 7
    problems = r.json()["problems"]
    strays = [p for p in problems if p["kind"] == "stray_file"]
    assert len(strays) == 1 and "README.txt" in strays[0]["detail"] and not strays[0]["repaired"], problems
    assert not [p for p in problems if p["kind"] == "mode"], problems
    corrupt = [p for p in problems if p["kind"] == "corrupt"]
    assert [p["id"] for p in corrupt] == [object_id]
    assert 'session "notes"' in corrupt[0]["detail"] and "alice" in corrupt[0]["detail"], corrupt
    assert "run 'durable doctor'" not in corrupt[0]["detail"] and "--repair" in corrupt[0]["detail"], corrupt
    r = durable("doctor", "--repair", "--json")
    assert r.status == 7 and [p["kind"] for p in r.json()["problems"] if not p["repaired"]] == ["stray_file"]
    assert stray.read_text() == "mine" and oct(os.stat(stray).st_mode & 0o777) == "0o644"
    os.unlink(stray)
    assert durable("doctor").status == 0


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_rebuilds_a_corrupt_index(durable, home):
    durable("session", "create", "a")
    listing = durable("ls", "--json").json()
    with open(home / "index.db", "r+b") as f:
        f.write(b"\0" * 200)
    r = durable("ls")
    assert r.status == 7 and "index" in r.err
    assert durable("transcript", "append", "a", "--role", "user", "x").status == 0  # objects still work
    assert durable("doctor").status == 7
    assert durable("doctor", "--repair").status == 0
    assert [x["name"] for x in durable("ls", "--json").json()] == [x["name"] for x in listing]
    assert durable("doctor").status == 0


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_accepts_a_home_the_user_made(durable, home):
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    durable("session", "create", "a")
    assert durable("doctor", "--json").json() == {"healthy": True, "problems": []}
