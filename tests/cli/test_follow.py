"""durable transcript show NAME --follow (docs/reference/transcript.md §6), with real processes: the follower runs as the
console script would, rows are appended from this process, and we wait for each on its stdout."""

import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time

import pytest

from durable_cli import Store

pytestmark = pytest.mark.both_backends

LATENCIES = []


def _follower(*args):
    return subprocess.Popen([sys.executable, "-m", "durable_cli", "transcript", "show", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))


def _line(proc, timeout=30.0) -> bytes:
    """The next line on PROC's stdout (a bound, not a guess: fails after TIMEOUT)."""
    buffer = b""
    deadline = time.monotonic() + timeout
    while not buffer.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no line from the follower within {timeout}s (got {buffer!r})"
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 1)
            assert chunk, f"the follower ended (exit {proc.wait()}): {proc.stderr.read().decode()}"
            buffer += chunk
    return buffer


def _append(content, role="user", name="chat"):
    store = Store()
    try:
        with store.open(name, create=True) as s:
            return s.append(content, role=role)["seq"]
    finally:
        store.close()


def _stop(proc, sig=signal.SIGINT):
    if proc.poll() is None:
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def test_follow_prints_new_rows_within_a_quarter_second(durable):
    _append("first")
    proc = _follower("chat", "--follow", "--jsonl")
    try:
        assert json.loads(_line(proc))["content"] == "first"
        for i in range(12):
            committed = time.monotonic()
            seq = _append(f"row {i}", role="assistant" if i % 2 else "user")
            row = json.loads(_line(proc))
            LATENCIES.append(time.monotonic() - committed)
            assert (row["seq"], row["content"]) == (seq, f"row {i}")
    finally:
        status, _, err = _stop(proc)
    assert status == 130 and b"Traceback" not in err  # Ctrl-C
    print(f"follow latency over {len(LATENCIES)} appends: median {statistics.median(LATENCIES) * 1000:.0f} ms,"
          f" max {max(LATENCIES) * 1000:.0f} ms")
    assert statistics.median(LATENCIES) < 0.25


def test_follow_never_holds_the_lock_between_polls(durable):
    """While a follower runs, another process takes the object's lock again and again, each time
    within a lock timeout far shorter than the follower's life."""
    _append("first")
    proc = _follower("chat", "-f")
    try:
        assert _line(proc).split(b"\t")[1] == b"user"
        store = Store(lock_timeout="1s")
        try:
            for i in range(20):
                with store.open("chat") as s:
                    s.append(f"locked {i}", role="user")
        finally:
            store.close()
        seen = [_line(proc).split(b"\t")[2] for _ in range(20)]
        assert seen == [f"locked {i}".encode() for i in range(20)]
    finally:
        _stop(proc)


@pytest.mark.parametrize("ending", [("session", "archive", "chat"), ("session", "cancel", "chat"), ("delete", "chat", "--yes")])
def test_follow_ends_with_exit_0_when_the_session_ends(durable, ending):
    _append("first")
    proc = _follower("chat", "--follow")
    try:
        _line(proc)
        seq = _append("last words", role="assistant")
        assert durable(*ending).status == 0
        status, out, err = _stop_when_done(proc)
        assert status == 0, err
        if ending[0] != "delete":
            assert out.decode().splitlines()[-1].split("\t")[:3] == [str(seq), "assistant", "last words"]
    finally:
        if proc.poll() is None:
            proc.kill()


def _stop_when_done(proc):
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def test_follow_rules(durable):
    _append("first")
    r = durable("transcript", "show", "chat", "--follow", "--json")
    assert r.status == 2 and "--follow" in r.err
    assert durable("transcript", "show", "nope", "--follow").status == 3
    durable("session", "archive", "chat")
    done = durable("transcript", "show", "chat", "--follow", "--jsonl")  # already archived: prints, then ends
    assert done.status == 0 and [x["content"] for x in done.lines()] == ["first"]


def test_follow_after_last_prints_only_newer_rows(durable):
    for i in range(5):
        _append(f"old {i}")
    proc = _follower("chat", "--follow", "--jsonl", "--last", "1")
    try:
        assert json.loads(_line(proc))["content"] == "old 4"
        _append("new")
        assert json.loads(_line(proc))["content"] == "new"
    finally:
        _stop(proc, signal.SIGTERM)
