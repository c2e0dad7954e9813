"""docs/reference/retention.md §7 "One corrupt object never affects another", and the finder forget and export share: commands
over many objects go on past a corrupt or busy object, report it, finish the rest and exit 7 or 6;
objects the index does not know (or knows with stale participants) are still found."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from freezegun import freeze_time

from tests.helpers import copy_home, home_made_once
from tests.reliability.stats import count

CMD = [sys.executable, "-m", "durable_cli"]

HOLD_UNTIL_TOLD = """
import sys
from durable_cli import Store
with Store().open(sys.argv[1]) as obj:
    print("locked", flush=True)
    sys.stdin.readline()
"""


class Holder:
    """A process holding NAME's lock until released (an observable event, not a timer)."""

    def __init__(self, name):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD_UNTIL_TOLD, name], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def object_file(durable, home, name, *flags):
    object_id = durable(*flags, "session", "show", name, "--json").json()["id"]
    return home / "objects" / object_id[:2] / f"{object_id}.sqlite3", object_id


def truncate(path):
    os.truncate(path, os.path.getsize(path) // 2)


def killed_after_commit(home, *args):
    """Run durable ARGS and SIGKILL it at its first write into index.db's WAL: after the object's
    commit, before the index update lands (the window in which the index falls behind). index.db may
    be opened (read) before the commit -- the secret and visibility checks -- but is written only at
    sleep. True when the kill landed there."""
    log = home.parent / "strace-index.log"
    subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-P", str(home / "index.db-wal"), "-e", "trace=pwrite64",
                    "-e", "inject=pwrite64:signal=KILL:when=1", *CMD, *args],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    landed = "killed by SIGKILL" in log.read_text()
    words = [a for i, a in enumerate(args) if not a.startswith("-") and not (i and args[i - 1].startswith("--"))]
    count(f"{' '.join(words[:2])} killed at its index update", "killed after commit" if landed else "not killed")
    return landed


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to inject the kill")


@pytest.fixture
def one_corrupt(_one_corrupt, home):
    """alice owns `bad` (truncated), `good1` and `good2`, all idle since January: the module's data directory
    (90 appends, made once), copied to this test's. The id of `bad`."""
    made, bad_id = _one_corrupt
    copy_home(made, home)
    return bad_id


@pytest.fixture(scope="module")
def _one_corrupt(tmp_path_factory):
    from tests.conftest import run_inprocess

    return home_made_once(tmp_path_factory, lambda home: _make_one_corrupt(run_inprocess, home))


def _make_one_corrupt(durable, home):
    with freeze_time("2026-01-01"):
        for name in ("bad", "good1", "good2"):
            for i in range(30):
                durable("transcript", "append", name, "--role", "user", f"{name} {i} " + "x" * 300)
    path, bad_id = object_file(durable, home, "bad")
    truncate(path)
    return bad_id


def test_delete_removes_a_corrupt_object(durable, home, one_corrupt):
    assert durable("transcript", "show", "bad").status == 7
    r = durable("delete", "bad", "--yes", "--json")
    assert r.status == 0, r.err
    assert [d["id"] for d in r.json()["deleted"]] == [one_corrupt]
    assert not (home / "objects" / one_corrupt[:2] / f"{one_corrupt}.sqlite3").exists()
    assert durable("transcript", "append", "bad", "--role", "user", "the name is free again").status == 0
    assert durable("doctor").status == 0


def test_purge_finishes_the_rest_and_reports_the_corrupt_one(durable, home, one_corrupt):
    r = durable("purge", "--older-than", "30d", "--yes", "--json")
    assert r.status == 7
    doc = r.json()
    assert sorted(d["name"] for d in doc["deleted"]) == ["good1", "good2"]
    assert [(s["id"], "corrupt" in s["reason"]) for s in doc["skipped"]] == [(one_corrupt, True)]


def test_forget_erases_a_corrupt_object_known_to_be_the_users(durable, home, one_corrupt):
    durable("--as", "bob", "transcript", "append", "keep", "--role", "user", "bob's")
    r = durable("forget", "alice", "--yes", "--json")
    assert r.status == 0, r.err
    assert sorted(d["name"] for d in r.json()["deleted"]) == ["bad", "good1", "good2"]
    assert [p.name for p in (home / "objects").rglob("*.sqlite3")] == [object_file(durable, home, "keep", "--as", "bob")[0].name]


def test_forget_lists_a_corrupt_object_whose_owner_cannot_be_read(durable, home):
    durable("transcript", "append", "mine", "--role", "user", "x")
    durable("--as", "bob", "transcript", "append", "other", "--role", "user", "x" * 5000)
    path, other = object_file(durable, home, "other", "--as", "bob")
    truncate(path)
    db = sqlite3.connect(home / "index.db")
    db.execute("DELETE FROM objects WHERE id = ?", (other,))  # and the index does not know it
    db.commit()
    db.close()
    r = durable("forget", "alice", "--yes", "--json")
    assert r.status == 7
    assert [d["name"] for d in r.json()["deleted"]] == ["mine"]
    assert [s["id"] for s in r.json()["skipped"]] == [other]


def test_export_writes_the_others_then_exits_7(durable, home, tmp_path, one_corrupt):
    r = durable("export", "--all")
    assert r.status == 7
    assert sorted(rec["name"] for rec in r.lines()) == ["good1", "good2"]
    assert one_corrupt in r.err and "Traceback" not in r.err
    out = tmp_path / "all.jsonl"
    r = durable("export", "--user", "alice", "--output", out)
    assert r.status == 7 and one_corrupt in r.err
    assert sorted(json.loads(line)["name"] for line in out.read_text().splitlines()) == ["good1", "good2"]


def test_backup_publishes_the_others_and_lists_the_corrupt_one(durable, home, tmp_path, one_corrupt):
    dest = tmp_path / "backup"
    r = durable("backup", dest, "--json")
    assert r.status == 7
    assert [s["id"] for s in r.json()["skipped"]] == [one_corrupt]
    assert sorted(x["name"] for x in durable("--home", dest, "ls", "--json").json()) == ["good1", "good2"]
    assert durable("--home", dest, "transcript", "show", "good1", "--json").status == 0
    assert durable("--home", dest, "doctor").status == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_backup_of_a_busy_object_lists_it_and_publishes_the_rest(durable, home, tmp_path):
    for name in ("a", "b"):
        durable("transcript", "append", name, "--role", "user", name)
    holder = Holder("b")
    try:
        r = durable("--lock-timeout", "0", "backup", tmp_path / "d1", "--json")
        assert r.status == 6
        assert [(s["name"], s["reason"]) for s in r.json()["skipped"]] == [("b", "busy")]
        assert [x["name"] for x in durable("--home", tmp_path / "d1", "ls", "--json").json()] == ["a"]
        # A busy object is retried until --lock-timeout: freed meanwhile, it is copied.
        proc = subprocess.Popen(CMD + ["--lock-timeout", "60s", "backup", str(tmp_path / "d2")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        building = wait_for(lambda: [p for p in tmp_path.iterdir() if p.name.startswith(".d2.")])
        assert building and not (tmp_path / "d2").exists()
    finally:
        holder.release()
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert sorted(x["name"] for x in durable("--home", tmp_path / "d2", "ls", "--json").json()) == ["a", "b"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_backup_leaves_no_dest_and_no_temporary_directory(durable, home, tmp_path, sig):
    for name in ("a", "b"):
        durable("transcript", "append", name, "--role", "user", name)
    dest = tmp_path / "dest"
    holder = Holder("b")
    try:
        proc = subprocess.Popen(CMD + ["--lock-timeout", "60s", "backup", str(dest)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: [p for p in tmp_path.iterdir() if p.name.startswith(".dest.")])  # mid-backup
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 128 + sig
    finally:
        holder.release()
    assert not dest.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".dest.")]
    assert durable("backup", dest).status == 0  # a retry is not refused as "not empty"
    assert durable("--home", dest, "doctor").status == 0


def wait_for(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.01)
    pytest.fail("the awaited event did not happen")


@needs_strace
def test_export_and_forget_find_objects_the_index_does_not_know(durable, home):
    durable("transcript", "append", "known", "--role", "user", "x")
    assert killed_after_commit(home, "transcript", "append", "unknown", "--role", "user", "committed")
    assert [x["name"] for x in durable("ls", "--json").json()] == ["known"]  # the index fell behind
    assert sorted(r["name"] for r in durable("export", "--all").lines()) == ["known", "unknown"]
    assert sorted(r["name"] for r in durable("export", "--user", "alice").lines()) == ["known", "unknown"]
    r = durable("forget", "alice", "--yes", "--json")
    assert r.status == 0 and sorted(d["name"] for d in r.json()["deleted"]) == ["known", "unknown"]
    assert list((home / "objects").rglob("*.sqlite3")) == []


@needs_strace
def test_forget_finds_a_membership_the_index_missed(durable, home):
    acme = ("--tenant", "acme")
    durable(*acme, "session", "create", "t")
    durable(*acme, "transcript", "append", "t", "--role", "user", "hello")
    assert killed_after_commit(home, *acme, "session", "invite", "t", "mallory")
    assert durable("--as", "mallory", "ls", "--json").json() == []  # the index does not list mallory
    assert "mallory" in [p["user"] for p in durable(*acme, "session", "show", "t", "--json").json()["participants"]]
    r = durable("forget", "mallory", "--yes", "--json")
    assert r.status == 0, r.err
    assert [c["name"] for c in r.json()["changed"]] == ["t"]
    assert "mallory" not in [p["user"] for p in durable(*acme, "session", "show", "t", "--json").json()["participants"]]
    path, _ = object_file(durable, home, "t", *acme)
    assert b"mallory" not in path.read_bytes()


@needs_strace
@pytest.mark.parametrize("last, kill", [(False, "index"), (True, "index"), (True, "unlink")],
                         ids=["member", "last-participant", "last-participant-unlinked"])
def test_a_forget_killed_after_leaving_a_tenant_session_is_finished_by_the_next(durable, home, last, kill):
    """Killed after its commit removed the user from a tenant object, before index.db changed (the
    object ahead of the index): the next forget finished nothing ("nothing matched") and index.db kept
    the user, so `usage` still showed them the session and their name stayed on disk. Now it finishes:
    the index forgets them (or, when they were its last participant, the object goes). Killed after
    unlinking that object, before its index row went (the index ahead of the object): the next forget
    finishes the removal and reports it (it said "nothing matched")."""
    acme, gone = ("--tenant", "acme"), "zed-quokka"
    if last:
        durable(*acme, "--as", gone, "transcript", "append", "t", "--role", "user", "alone here")
    else:
        durable(*acme, "session", "create", "t")
        durable(*acme, "session", "invite", "t", gone)
        durable(*acme, "--as", gone, "transcript", "append", "t", "--role", "user", "hello")
    if kill == "index":
        assert killed_after_commit(home, "forget", gone, "--yes")
    else:
        path, _ = object_file(durable, home, "t", *acme, "--as", gone)
        assert killed_at_unlink_of(home, str(path) + "-journal", "forget", gone, "--yes")
        assert not path.exists()
    r = durable("forget", gone, "--yes", "--json")
    assert r.status == 0 and "nothing matched" not in r.err, r.err
    assert [x["name"] for x in r.json()["deleted" if last else "changed"]] == ["t"], r.out
    for flags in ((), acme):
        assert durable(*flags, "--as", gone, "ls", "--all", "--json").json() == []
        assert durable(*flags, "--as", gone, "usage", "--json").json()["groups"] == [], "usage still shows them"
    assert durable(*acme, "ls", "--all", "--json").json() == ([] if last else durable(*acme, "ls", "--json").json())
    for base, _, names in os.walk(home):
        for n in names:
            with open(os.path.join(base, n), "rb") as f:
                assert gone.encode() not in f.read(), f"their name is still in {n}"
    assert durable("doctor").status == 0


def killed_at_unlink_of(home, path, *args):
    """Run durable ARGS and SIGKILL it as it unlinks PATH (strace -P): for an object's "-journal", after
    the object file itself was unlinked, before its index row is dropped. True when the kill landed."""
    log = home.parent / "strace-unlink.log"
    subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-P", path, "-e", "trace=unlink",
                    "-e", "inject=unlink:signal=KILL:when=1", *CMD, *args],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    return "killed by SIGKILL" in log.read_text()


def has_open(pid, path):
    """True once process PID has PATH open (it is waiting on, or holds, that lock)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_doctor_reports_a_busy_object_as_busy_not_damage(durable, home, one_corrupt):
    holder = Holder("good1")
    try:
        r = durable("--lock-timeout", "0", "doctor", "--json")
        assert r.status == 7  # the corrupt one
        kinds = {p["id"]: p["kind"] for p in r.json()["problems"]}
        assert kinds[one_corrupt] == "corrupt" and "busy" in kinds.values()
        assert durable("delete", "bad", "--yes").status == 0
        r = durable("--lock-timeout", "0", "doctor", "--json")
        assert r.status == 6, r.out  # only busy objects: 6, not damage
        assert [p["kind"] for p in r.json()["problems"]] == ["busy"] and r.json()["healthy"] is False
        r = durable("--lock-timeout", "0", "doctor", "--repair", "--json")
        assert r.status == 6 and [p["kind"] for p in r.json()["problems"]] == ["busy"]
    finally:
        holder.release()
    assert sorted(x["name"] for x in durable("ls", "--json").json()) == ["good1", "good2"]  # its row was kept
    assert durable("doctor").status == 0


def test_doctor_repair_keeps_the_rows_of_objects_written_meanwhile(durable, home):
    for name in ("a", "b"):
        durable("transcript", "append", name, "--role", "user", name)
    lock = object_file(durable, home, "b")[0].with_suffix(".lock")
    holder = Holder("b")
    try:
        proc = subprocess.Popen(CMD + ["--lock-timeout", "60s", "doctor", "--repair", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: has_open(proc.pid, lock))  # doctor is under way, waiting on b
        assert durable("transcript", "append", "c", "--role", "user", "created during the repair").status == 0
        assert durable("transcript", "append", "a", "--role", "user", "written during the repair").status == 0
    finally:
        holder.release()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    rows = {x["name"]: x for x in durable("ls", "--json").json()}
    assert sorted(rows) == ["a", "b", "c"]
    assert rows["a"]["turns"] == 2
    assert durable("doctor").status == 0


def test_export_holds_no_lock_while_the_consumer_reads(durable, home):
    for i in range(8):
        durable("transcript", "append", "big", "--role", "user", f"{i} " + "y" * 200_000)
    proc = subprocess.Popen(CMD + ["export", "big"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.read(1) == b"{"  # export is writing; the rest (1.6 MB) fills the pipe: it blocks
        r = durable("--lock-timeout", "2s", "transcript", "append", "big", "--role", "user", "while exporting")
        assert r.status == 0, r.err
        rest = proc.stdout.read()
    finally:
        proc.stdout.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0
    assert len(json.loads(b"{" + rest)["turns"]) == 8
