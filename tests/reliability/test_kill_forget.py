"""docs/reference/storage.md §3 intents, §7 forget (issue 33 item 1): a `forget` SIGKILLed at any fsync, fdatasync, unlink or
rename (strace fault injection) is finished by the next `forget` of the user, and by `doctor --repair`:
no byte of the erased text is left in any file under the data directory, search side files and their
rollback journals included, and no merge is left owed."""

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from tests.reliability.stats import count

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to inject the kill")

SECRET = b"zqxbobsecret"  # lower case: the side files' FTS5 tokens hold it as written
CALLS = ("fsync", "fdatasync", "unlink", "rename")


def holding(home):
    """The files under HOME that hold the erased text."""
    return sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and SECRET in p.read_bytes())


def finish(root, how):
    """The next `forget bob` (HOW "forget") or `doctor --repair` (HOW "doctor") on ROOT's home, in this process
    (what the command runs, without an interpreter's start-up per kill); then `doctor`'s verdict."""
    from durable_cli import Store

    store = Store(str(root / "home"), user="alice")
    try:
        done = store.forget("bob") if how == "forget" else store.doctor(repair=True)
    finally:
        store.close()
    store = Store(str(root / "home"), user="alice")
    try:
        return done, store.doctor()
    finally:
        store.close()


def under_strace(root, log, *extra):
    env = dict(os.environ, DURABLE_HOME=str(root / "home"), DURABLE_CONFIG=str(root / "config.toml"))
    return subprocess.run(["strace", "-f", "-qq", "-o", str(log), *extra, sys.executable, "-m", "durable_cli",
                           "forget", "bob", "--yes"], env=env, capture_output=True, text=True, timeout=120)


def side_state(home):
    """Per side file: (owes a merge, its rollback journal exists)."""
    found = {}
    for path in sorted((home / "search").rglob("*.sqlite3")):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            found[path.name] = (db.execute("SELECT count(*) FROM owed").fetchone()[0] > 0,
                                os.path.exists(f"{path}-journal"))
        finally:
            db.close()
    return found


@pytest.fixture
def seeded(durable, home, tmp_path):
    """Bob's own session, a tenant session bob is the only participant of, alice's session; every
    side file built by a search. Copied whole (config included) for each kill."""
    for i in range(1):
        assert durable("--as", "bob", "transcript", "append", f"b{i}", "--role", "user", f"{SECRET.decode()} number {i} words").status == 0
    assert durable("--as", "bob", "--tenant", "acme", "transcript", "append", "team", "--role", "user",
                   f"{SECRET.decode()} in the tenant's words").status == 0
    assert durable("transcript", "append", "a0", "--role", "user", "alice words").status == 0
    for who in (["--as", "bob"], ["--as", "bob", "--tenant", "acme"], []):
        assert durable(*who, "search", "words").status == 0
    assert any(p.startswith("search/") for p in holding(home)), holding(home)
    template = tmp_path / "template"
    template.mkdir()
    shutil.copytree(home, template / "home")
    config = home.parent / "config.toml"
    if config.exists():
        shutil.copy(config, template / "config.toml")
    return template


def test_a_killed_forget_is_finished_by_forget_and_by_doctor_repair(seeded, tmp_path):
    """Every third kill point of each call, the first and the last among them (the whole walk is the soak below)."""
    walk(seeded, tmp_path, stride=3)


@pytest.mark.soak
def test_soak_a_forget_killed_at_every_sync_unlink_and_rename(seeded, tmp_path):
    walk(seeded, tmp_path, stride=1)


def walk(seeded, tmp_path, stride):
    counting = tmp_path / "counting"
    shutil.copytree(seeded, counting)
    log = tmp_path / "trace"
    r = under_strace(counting, log, "-e", "trace=" + ",".join(CALLS))
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    counts = {c: sum(f" {c}(" in line for line in lines) for c in CALLS}
    assert counts["fdatasync"] + counts["fsync"] >= 10 and counts["unlink"] >= 10, counts
    assert holding(counting / "home") == []  # a forget that ran to its end
    walked = 0
    for call, n in counts.items():
        for when in sorted(set(range(1, n + 1, stride)) | {n}):
            root = tmp_path / f"{call}-{when}"
            shutil.copytree(seeded, root)
            r = under_strace(root, "/dev/null", "-e", f"inject={call}:signal=KILL:when={when}")
            if r.returncode not in (-9, 128 + 9):
                count("forget killed at a sync, unlink or rename", "finished first")
                continue
            walked += 1
            repaired = tmp_path / f"{call}-{when}-doctor"
            shutil.copytree(root, repaired)
            # the next forget finishes what the killed one began: no byte of bob's text in any file
            _receipt, verdict = finish(root, "forget")
            home = root / "home"
            assert holding(home) == [], (call, when, holding(home))
            assert side_state(home) == {k: (False, False) for k in side_state(home)}, (call, when)
            assert not [p for p in verdict["problems"] if p["kind"] in ("search_leftover", "unfinished_purge")], verdict
            # doctor --repair finishes it too; what is left of bob is only in objects the killed forget had not
            # reached (no intent journaled for them yet) and the side files' rows of those objects
            repair, verdict = finish(repaired, "doctor")
            home = repaired / "home"
            assert repair["healthy"] and verdict["healthy"], (call, when, repair, verdict)
            assert not [p for p in holding(home) if p.endswith(("-journal", "-wal"))], (call, when, holding(home))
            assert side_state(home) == {k: (False, False) for k in side_state(home)}, (call, when)
            if not any(p.startswith("objects/") for p in holding(home)):
                assert holding(home) == [], (call, when, holding(home))  # every object of bob gone: no text anywhere
            count("forget killed at a sync, unlink or rename", "finished by forget and by doctor --repair")
            shutil.rmtree(root)
            shutil.rmtree(repaired)
    assert walked >= 20 // stride, walked
