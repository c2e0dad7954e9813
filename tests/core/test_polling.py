"""docs/reference/storage.md §3: `session next --wait` / `elicit wait` take the lock for each poll; DUR bounds the whole wait,
waits for the lock included."""

import subprocess
import sys
import time

import pytest

from tests.helpers import hold_lock

pytestmark = pytest.mark.both_backends
LOCK = "holds the object's file lock; the Worker has no file lock (its input gate serializes)"

# Holds NAME's lock in a loop, letting go briefly between holds: a busy agent writing all the time.
BUSY = """
import sys, time
from durable_cli import Store
store = Store()
first = True
while True:
    with store.open(sys.argv[1]):
        if first:
            print("locked", flush=True)
            first = False
        time.sleep(0.5)
    time.sleep(0.05)
"""


def _busy(name):
    proc = subprocess.Popen([sys.executable, "-c", BUSY, name], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def _timed(durable, *args):
    started = time.monotonic()
    result = durable(*args)
    return result, time.monotonic() - started


@pytest.mark.local_only(LOCK)
def test_next_wait_counts_the_lock_waits(durable):
    durable("session", "create", "w")
    holder = _busy("w")
    try:
        result, elapsed = _timed(durable, "session", "next", "w", "--wait", "1s")
    finally:
        holder.kill()
        holder.wait()
    # nothing came (9), or the lock was never free while it looked (6); either way within the wait
    # (each poll waiting up to 0.5 s for the lock, uncounted, used to make this take 4 s or more)
    assert result.status in (6, 9), result
    assert elapsed < 1.0 + 1.5, elapsed


@pytest.mark.local_only(LOCK)
def test_elicit_wait_counts_the_lock_waits(durable):
    durable("session", "create", "e")
    durable("elicit", "ask", "e", "--prompt", "go?")
    holder = _busy("e")
    try:
        result, elapsed = _timed(durable, "elicit", "wait", "e", "1", "--wait", "1s")
    finally:
        holder.kill()
        holder.wait()
    assert result.status in (6, 9), result
    assert elapsed < 1.0 + 1.5, elapsed


@pytest.mark.local_only(LOCK)
def test_a_lock_held_throughout_ends_the_wait_as_busy(durable):
    """--wait 1s under the default 10 s lock timeout: the wait, not the lock timeout, bounds the run."""
    durable("session", "create", "h")
    holder = hold_lock("h", 60)
    try:
        result, elapsed = _timed(durable, "session", "next", "h", "--wait", "1s", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert result.status == 6 and '"busy"' in result.err and result.out == ""
    assert elapsed < 1.0 + 1.5, elapsed


@pytest.mark.local_only(LOCK)
def test_wait_zero_still_waits_for_the_lock(durable):
    """Without a wait, a poll is an ordinary command: it waits for the lock up to --lock-timeout."""
    durable("session", "create", "z")
    durable("session", "prompt", "z", "hi")
    holder = _busy("z")
    try:
        result = durable("session", "next", "z", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert result.status == 0 and result.json()["content"] == "hi"
