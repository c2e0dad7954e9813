"""The stale sidecar and lock clean-up (doctor --repair, forget_missing) at the edges: a symlink at each level
of the data directory, and a lock file swapped under a checker by its holder and a successor (real
processes)."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from durable_cli.store.lock import ObjectLock

CMD = [sys.executable, "-m", "durable_cli"]
GONE = "f" * 64  # an id with no object file


def make(durable, name="s"):
    assert durable("transcript", "append", name, "--role", "user", "hello").status == 0
    return durable("session", "show", name, "--json").json()["id"]


def bait(directory):
    """Files outside the data directory named as durable's leftovers would be."""
    directory.mkdir(parents=True, exist_ok=True)
    made = [directory / f"{GONE}.sqlite3-wal", directory / f"{GONE}.sqlite3-shm", directory / f"{GONE}.lock",
            directory / f"{'e' * 64}.lock"]
    for path in made:
        path.write_bytes(b"not durable's")
    return made


@pytest.mark.parametrize("level", ["objects", "shard"])
def test_doctor_repair_removes_nothing_through_a_symlinked_directory(home, durable, tmp_path, level):
    """A symlinked objects/ or shard is reported; --repair never follows it to remove "stale" locks and WALs
    in the directory it points to (it did: a WAL or lock file there beside no object file was unlinked)."""
    object_id = make(durable)
    outside = tmp_path / "outside"
    if level == "objects":
        shutil.move(home / "objects", outside)
        (home / "objects").symlink_to(outside)
        made = bait(outside / "zz")
    else:
        made = bait(outside)
        (home / "objects" / "zz").symlink_to(outside)
    for args in (("doctor",), ("doctor", "--repair")):
        r = durable(*args, "--json")
        assert r.status == 7
        kinds = {p["kind"] for p in r.json()["problems"]}
        assert "symlink" in kinds and not kinds & {"stale_lock", "stale_sidecar"}, r.out
    assert all(p.read_bytes() == b"not durable's" for p in made)
    if level == "objects":
        assert (outside / object_id[:2] / f"{object_id}.sqlite3").exists()


def test_doctor_repair_leaves_a_symlinked_sidecar_and_what_it_points_to(home, durable, tmp_path):
    """A WAL or lock file that is a symlink is reported as one, and neither it nor its target is removed."""
    make(durable)
    shard = next((home / "objects").iterdir())
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    links = [shard / f"{GONE}.sqlite3-wal", shard / f"{GONE}.lock", shard / f"{'d' * 64}.sqlite3-wal"]
    for link in links:
        link.symlink_to(target)
    r = durable("doctor", "--repair", "--json")
    assert r.status == 7
    assert {p["kind"] for p in r.json()["problems"]} == {"symlink"}, r.out
    assert all(link.is_symlink() for link in links) and target.read_bytes() == b"keep"


def test_doctor_never_unlinks_a_lock_file_its_holder_replaced_meanwhile(home, durable, tmp_path):
    """doctor opens a stale-looking lock file and, before its flock, the holder unlinks it and a creator locks
    a new one at the path (no object file yet): doctor's flock on the old file succeeds, and it unlinked
    the new one, the creator's live lock (a third process would then lock a fresh file beside the
    creator: two writers). The strace delay on doctor's flock(2) makes the window wide."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    make(durable)  # a data directory with its secret and index
    lock_path = home / "objects" / GONE[:2] / f"{GONE}.lock"
    lock_path.parent.mkdir(exist_ok=True)
    first = ObjectLock(str(lock_path), 0, "first")
    assert first.acquire(create=True)
    env = dict(os.environ)
    proc = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=flock",
                             "-e", "inject=flock:delay_enter=1500000", *CMD, "doctor", "--repair", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _opened_by_child(proc.pid, str(lock_path)):  # doctor has the old file open, its flock pending
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.005)
        first.unlink()
        first.release()
        creator = ObjectLock(str(lock_path), 0, "creator")
        assert creator.acquire(create=True)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert os.path.exists(lock_path) and os.stat(lock_path).st_ino == creator.ino[1], (out, err)
    creator.unlink()
    creator.release()


def _opened_by_child(pid, path) -> bool:
    """Whether a process under PID (strace's child) has PATH open."""
    for child in _descendants(pid):
        try:
            for fd in os.listdir(f"/proc/{child}/fd"):
                try:
                    if os.readlink(f"/proc/{child}/fd/{fd}") == path:
                        return True
                except OSError:
                    pass
        except OSError:
            pass
    return False


def _descendants(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                found.append(int(entry))
                found.extend(_descendants(int(entry)))
    return found


ADAPTER = """
import asyncio, sys
from durable_cli.integrations.openai_agents import DurableSession
s = DurableSession("s", home=sys.argv[1], user="alice")
asyncio.run(s.add_items([{"role": "user", "content": "unacknowledged words"}]))
print("ACK", flush=True)
"""


def test_an_adapter_create_killed_before_its_rename_leaves_nothing_after_doctor_repair(home, durable):
    """A kept-open store writes a new object whole beside its path and renames it into place; killed before
    the rename (kill -9 at its rename(2), strace), it left that file holding the text: doctor called the
    directory healthy and --repair kept it. Now it is a half-made create: reported, removed by --repair."""
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    make(durable, "other")  # the data directory and its index exist
    run = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "inject=rename:signal=KILL:when=1",
                          sys.executable, "-c", ADAPTER, str(home)], capture_output=True, text=True, timeout=60)
    assert "ACK" not in run.stdout and run.returncode != 0
    assert grep_home(home, b"unacknowledged")  # the unpublished file
    r = durable("doctor", "--json")
    assert r.status == 7 and "half_made" in {p["kind"] for p in r.json()["problems"]}, r.out
    assert durable("doctor", "--repair").status == 0
    assert grep_home(home, b"unacknowledged") == []
    assert durable("doctor").status == 0
    assert durable("transcript", "show", "s").status == 3
    assert [r["content"] for r in durable("transcript", "show", "other", "--json").json()] == ["hello"]


def test_doctor_leaves_an_unpublished_file_its_creator_is_still_writing(home, durable):
    """Under its lock the file is being written: doctor neither reports nor removes it."""
    make(durable)
    path = home / "objects" / GONE[:2] / f"{GONE}.sqlite3.new"
    path.parent.mkdir(exist_ok=True)
    creator = ObjectLock(str(path.parent / f"{GONE}.lock"), 0, "creator")
    assert creator.acquire(create=True)
    try:
        path.write_bytes(b"being written")
        for args in (("doctor", "--json"), ("doctor", "--repair", "--json")):
            r = durable(*args)
            assert "half_made" not in {p["kind"] for p in r.json()["problems"]}, r.out
        assert path.read_bytes() == b"being written"
    finally:
        creator.release()


def grep_home(home, word: bytes):
    return [os.path.join(b, f) for b, _, fs in os.walk(home) for f in fs if word in open(os.path.join(b, f), "rb").read()]


def test_a_directory_at_secret_key_is_a_storage_error_from_the_library_too(home, durable):
    """The CLI said exit 7 ("Is a directory"); the library raised IsADirectoryError, and since DurableSession
    opens the secret when made (Store.warm), so did the adapter's constructor, which should leave a failure
    to the first call."""
    import asyncio

    from durable_cli import DurableError, Store
    from durable_cli.integrations.openai_agents import DurableSession

    (home / "secret.key").mkdir(parents=True)
    assert durable("transcript", "show", "s").status == 7
    with pytest.raises(DurableError) as e:
        with Store(home=str(home), user="alice").open("s", create=True):
            pass
    assert e.value.code == "storage" and "secret" in e.value.message
    session = DurableSession("s", home=str(home), user="alice")
    with pytest.raises(DurableError):
        asyncio.run(session.get_items())
    session.close()
