"""kill -9 at random moments of next/finish, summarize, purge, forget and import.

After every kill the store is healthy (or `doctor --repair` makes it so, losing nothing), every
command that exited 0 is fully present, and none is half-present. CI runs 20 kills per command;
`pytest -m soak` runs 200.
"""

import collections
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from freezegun import freeze_time

from tests.reliability.stats import count
from tests.reliability.test_crash import check_healthy

CMD = [sys.executable, "-m", "durable_cli"]
SHORT, SOAK = 20, 200


def killed(args, rng, upto=0.2, env=None):
    """Run durable ARGS and SIGKILL it after a random delay; the exit status, or None when killed."""
    proc = subprocess.Popen(CMD + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    time.sleep(rng.uniform(0, upto))
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    count(" ".join(args[:2]) if args[0] in ("session", "transcript") else args[0],
          "killed mid-run" if proc.returncode < 0 else f"finished first (exit {proc.returncode})")
    return (proc.returncode if proc.returncode >= 0 else None), out


def next_finish(durable, rounds):
    rng = random.Random(3)
    durable("config", "set", "queue.max_unfinished", str(rounds + 1))
    for i in range(rounds):
        durable("session", "prompt", "q", f"p{i}")
    finished = set()
    for _ in range(rounds):
        code, out = killed(["session", "next", "q", "--json"], rng)
        queue = durable("session", "queue", "q", "--json").json()
        busy = [p for p in queue if p["status"] == "processing"]
        if code == 0:
            assert busy and busy[0]["id"] == json.loads(out)["id"]
        if busy:
            pid = busy[0]["id"]
            code, _ = killed(["session", "finish", "q", str(pid), "--reply", f"a{pid}"], rng)
            if code == 0:
                finished.add(pid)
            else:
                durable("session", "finish", "q", str(pid), "--reply", f"a{pid}")  # a clean retry
                if durable("session", "queue", "q", "--json").json()[pid - 1]["status"] == "completed":
                    finished.add(pid)
    check_healthy(durable)
    queue = durable("session", "queue", "q", "--json").json()
    rows = durable("transcript", "show", "q", "--json").json()
    assert sum(p["status"] == "processing" for p in queue) <= 1
    started = [p for p in queue if p["turn_seq"] is not None]
    users = [r for r in rows if r["role"] == "user"]
    assert [r["content"] for r in users] == [p["content"] for p in started], "a started prompt's user turn is missing or doubled"
    for p in started:
        assert rows[[r["seq"] for r in rows].index(p["turn_seq"])]["content"] == p["content"]
    replies = [r["content"] for r in rows if r["role"] == "assistant"]
    assert replies == [f"a{p['id']}" for p in queue if p["status"] == "completed"]
    assert finished <= {p["id"] for p in queue if p["status"] == "completed"}


def summarize(durable, rounds):
    rng = random.Random(5)
    acknowledged = 0
    for i in range(rounds):
        durable("transcript", "append", "s", "--role", "user", f"t{i}")
        live = durable("transcript", "show", "s", "--json").json()
        code, _ = killed(["transcript", "summarize", "s", "--through", str(live[-1]["seq"]), "--command", "sleep 0.05; echo sum"], rng, 0.3)
        acknowledged += code == 0
    check_healthy(durable)
    rows = durable("transcript", "show", "s", "--all", "--json").json()
    seqs = {r["seq"] for r in rows}
    summaries = [r for r in rows if r["kind"] == "summary"]
    assert len(summaries) >= acknowledged
    assert all(r["superseded_by"] in seqs for r in rows if r["superseded_by"] is not None)
    live = durable("transcript", "show", "s", "--json").json()
    show = durable("session", "show", "s", "--json").json()
    assert (show["turns"], show["tokens"]) == (len(live), sum(r["tokens"] for r in live))
    for s in summaries:  # a summary covers exactly the rows that point at it
        assert any(r["superseded_by"] == s["seq"] for r in rows)


def killed_at_unlink(args, n, home, env=None):
    """Run durable ARGS and SIGKILL it at its Nth unlink(2) (strace), so the kill lands inside the window
    between a journaled intent and the removal, not only during start-up. Returns "finished first",
    "before any intent" or "after its intent was journaled" (an intent left in index.db)."""
    log = home.parent / "strace.log"
    subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e", "trace=unlink", "-e", f"inject=unlink:signal=KILL:when={n}",
                    *CMD, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    if "killed by SIGKILL" not in log.read_text():
        return "finished first"
    db = sqlite3.connect(home / "index.db")
    try:
        pending = db.execute("SELECT count(*) FROM purge_journal").fetchone()[0]
    finally:
        db.close()
    return "after its intent was journaled" if pending else "before any intent"


def purge(durable, home, rounds):
    outcomes = collections.Counter()
    for r in range(rounds):
        with freeze_time("2026-01-01"):  # fresh idle objects every round, so every purge has work to do
            for i in range(6):
                durable("transcript", "append", f"o{r}-{i}", "--role", "user", "old")
        # Each object costs purge about 7 unlink calls (SQLite's WAL/SHM at close, the file and its
        # sides, the lock): N walks through all six objects' windows.
        outcome = killed_at_unlink(["purge", "--older-than", "30d", "--yes"], 1 + (r * 5) % 44, home)
        outcomes[outcome] += 1
        count("purge killed at an unlink", outcome)
        check_healthy(durable)
        files = {p.name[:-8] for p in (home / "objects").rglob("*.sqlite3")}
        assert {r["id"] for r in durable("ls", "--all", "--json").json()} == files
    assert outcomes["after its intent was journaled"] >= rounds // 4, outcomes
    with freeze_time("2026-06-01"):
        assert durable("purge", "--older-than", "30d", "--yes").status == 0
    assert list((home / "objects").rglob("*.sqlite3")) == []
    assert durable("doctor").status == 0


def forget(durable, home, rounds):
    outcomes = collections.Counter()
    for r in range(rounds):
        for i in range(3):
            durable("--as", "victim", "transcript", "append", f"v{r}-{i}", "--role", "user", "victim-secret-words")
        durable("--as", "victim", "memory", "set", "k", "victim-secret-words")
        outcome = killed_at_unlink(["forget", "victim", "--yes"], 1 + (r * 3) % 28, home)
        outcomes[outcome] += 1
        count("forget killed at an unlink", outcome)
        check_healthy(durable)
    assert outcomes["after its intent was journaled"] >= 1, outcomes
    assert durable("forget", "victim", "--yes").status == 0
    for base, _, names in os.walk(home):
        for n in names:
            with open(os.path.join(base, n), "rb") as f:
                assert b"victim-secret-words" not in f.read()


def import_(durable, home, tmp_path, rounds):
    rng = random.Random(17)
    for i in range(6):
        for j in range(20):
            durable("transcript", "append", f"i{i}", "--role", "user", f"row {j}")
    dump = tmp_path / "all.jsonl"
    durable("export", "--all", "--output", dump)
    expected = {f"i{i}": durable("transcript", "show", f"i{i}", "--all", "--json").json() for i in range(6)}
    for _ in range(rounds):
        for i in range(6):
            durable("delete", f"i{i}", "--yes")
        killed(["import", str(dump)], rng, 0.4)
        check_healthy(durable)
        for name, rows in expected.items():
            r = durable("transcript", "show", name, "--all", "--json")
            assert r.status == 3 or r.json() == rows, "an object was half imported"
    for i in range(6):
        durable("delete", f"i{i}", "--yes")
    assert durable("import", str(dump)).status == 0


def test_kill_next_finish(durable):
    next_finish(durable, SHORT)


def test_kill_summarize(durable):
    summarize(durable, SHORT)


def test_kill_purge(durable, home):
    purge(durable, home, SHORT // 2)  # unlinks 1, 6, ..., 46: every object's window


def test_kill_forget(durable, home):
    forget(durable, home, SHORT // 2)


def test_kill_import(durable, home, tmp_path):
    import_(durable, home, tmp_path, SHORT // 2)


@pytest.mark.soak
@pytest.mark.parametrize("phase", ["next_finish", "summarize", "purge", "forget", "import"])
def test_kill_soak(durable, home, tmp_path, phase):
    {"next_finish": lambda: next_finish(durable, SOAK), "summarize": lambda: summarize(durable, SOAK),
     "purge": lambda: purge(durable, home, SOAK), "forget": lambda: forget(durable, home, SOAK // 4),
     "import": lambda: import_(durable, home, tmp_path, SOAK)}[phase]()
