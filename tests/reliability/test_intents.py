"""Intents (docs/reference/storage.md §3): a delete, purge or forget killed after journaling its intent never costs a write
acknowledged after it. The kill is injected at a chosen unlink(2) with strace, so it lands inside the
window between the journaled intent and the removal, not at start-up."""

import shutil
import sqlite3
import subprocess
import sys

import pytest
from freezegun import freeze_time

from tests.reliability.stats import count

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to inject the kill")


def killed_at_unlink(args, n, tmp_path):
    """Run durable ARGS and SIGKILL it at its Nth unlink(2); True when the kill landed."""
    log = tmp_path / f"strace-{n}.log"
    subprocess.run(
        ["strace", "-f", "-qq", "-o", str(log), "-e", "trace=unlink", "-e", f"inject=unlink:signal=KILL:when={n}",
         sys.executable, "-m", "durable_cli", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
    )
    return "killed by SIGKILL" in log.read_text()


def intents(home):
    db = sqlite3.connect(home / "index.db")
    try:
        return [r[0] for r in db.execute("SELECT id FROM purge_journal")]
    finally:
        db.close()


def old_session(durable, name, user="alice"):
    with freeze_time("2026-01-01"):
        assert durable("--as", user, "transcript", "append", name, "--role", "user", "before").status == 0


@pytest.mark.parametrize("finisher", [["purge", "--older-than", "5000w", "--yes"], ["doctor", "--repair"]])
@pytest.mark.parametrize("command", [["purge", "--older-than", "30d", "--yes"], ["delete", "s", "--yes"],
                                     ["forget", "alice", "--yes"]])
def test_a_killed_removal_never_costs_a_later_acknowledged_write(durable, home, tmp_path, command, finisher):
    journaled = 0
    for n in range(1, 5):
        old_session(durable, "s")
        if not killed_at_unlink(command, n, tmp_path):
            count(f"{command[0]} killed at unlink", "finished first")
            continue
        had_intent = bool(intents(home))
        journaled += had_intent
        count(f"{command[0]} killed at unlink", "after its intent was journaled" if had_intent else "before the intent")
        # The write acknowledged after the crash (exit 0) ...
        assert durable("transcript", "append", "s", "--role", "user", f"after kill {n}").status == 0
        # ... survives whatever finishes the crashed intent next.
        assert durable(*finisher).status == 0
        shown = durable("transcript", "show", "s", "--json")
        assert shown.status == 0, (command, n, shown.err)
        assert f"after kill {n}" in [t["content"] for t in shown.json()], (command, n)
        assert intents(home) == []
        assert durable("delete", "s", "--yes").status == 0
    assert journaled >= 1, "no kill landed between the journaled intent and the unlink"


def test_an_intent_left_by_a_kill_is_finished_when_nothing_wrote_since(durable, home, tmp_path):
    for finisher in (["purge", "--older-than", "5000w", "--yes"], ["doctor", "--repair"]):
        old_session(durable, "s")
        for n in range(1, 6):
            if killed_at_unlink(["delete", "s", "--yes"], n, tmp_path) and intents(home):
                break
            old_session(durable, "s")
        else:
            pytest.fail("no kill landed after the intent")
        assert durable(*finisher).status == 0
        assert intents(home) == []
        assert durable("transcript", "show", "s").status == 3
        assert list((home / "objects").rglob("*.sqlite3")) == []
        assert durable("doctor").status == 0


def test_purge_syncs_each_directory_once_after_its_unlinks_and_before_it_answers(home, tmp_path):
    """A purge of many objects fsyncs each objects/XX directory once, after the last unlink there and
    before the receipt reaches stdout (was one fsync per object: most of a purge's time per object)."""
    from durable_cli import Store

    with freeze_time("2026-01-01"):
        store = Store(str(home), user="alice")
        for i in range(60):
            with store.open(f"s{i}", create=True) as s:
                s.append_many([{"role": "user", "content": "old"}], seqs_only=True)
        store.close()
    log = tmp_path / "strace.log"
    subprocess.run(["strace", "-f", "-qq", "-y", "-o", str(log), "-e", "trace=unlink,fsync,write",
                    sys.executable, "-m", "durable_cli", "purge", "--older-than", "30d", "--yes", "--json"],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    objects = str(home / "objects") + "/"
    events = []  # ("unlink"|"fsync", directory) and ("answer", None), in order
    for line in log.read_text().splitlines():
        call = line.split(None, 1)[1] if line[:1].isdigit() else line
        if call.startswith("unlink(") and objects in call and ".sqlite3\"" in call:
            events.append(("unlink", call.split('"')[1].rsplit("/", 1)[0]))
        elif call.startswith("fsync(") and "<" + objects in call:
            events.append(("fsync", call.split("<", 1)[1].split(">", 1)[0].rstrip("/")))
        elif call.startswith("write(1"):
            events.append(("answer", None))
    unlinked = [d for kind, d in events if kind == "unlink"]
    synced = [d for kind, d in events if kind == "fsync"]
    assert len(unlinked) == 60
    assert len(set(unlinked)) < 60  # 60 random ids share some of the 256 directories
    assert sorted(synced) == sorted(set(unlinked))  # each directory once, none missed
    answer = events.index(("answer", None))
    for directory in set(unlinked):
        last_unlink = max(i for i, e in enumerate(events) if e == ("unlink", directory))
        assert last_unlink < events.index(("fsync", directory)) < answer
    assert not (home / "objects").exists() or not list((home / "objects").rglob("*.sqlite3"))
