"""One writer at a time, across real processes."""

import json
import subprocess
import sys
import time

from tests.helpers import hold_lock

WRITER = """
import sys
from durable_cli.cli.app import run
for i in range(int(sys.argv[2])):
    status = run(["transcript", "append", "shared", "--role", "user", f"{sys.argv[1]}-{i}"])
    if status != 0:
        sys.exit(status)
"""


def test_eight_processes_twenty_five_appends_each(durable):
    # each process runs the real CLI entry point 25 times (in-process loop keeps the test fast)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, f"w{n}", "25"]) for n in range(8)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    rows = durable("transcript", "show", "shared", "--json").json()
    assert [r["seq"] for r in rows] == list(range(1, 201))
    assert len({r["content"] for r in rows}) == 200
    for n in range(8):  # each writer's rows are in its own order
        mine = [int(r["content"].split("-")[1]) for r in rows if r["content"].startswith(f"w{n}-")]
        assert mine == list(range(25))
    assert durable("session", "show", "shared", "--json").json()["turns"] == 200


def test_real_cli_processes_append_concurrently(durable, durable_proc):
    procs = [subprocess.Popen([sys.executable, "-m", "durable_cli", "transcript", "append", "c", "--role", "user", f"m{n}"])
             for n in range(8)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 8
    assert sorted(r["seq"] for r in durable("transcript", "show", "c", "--json").json()) == list(range(1, 9))


def test_lock_timeout_zero_fails_at_once(durable, durable_proc):
    durable("session", "create", "x")
    holder = hold_lock("x", 5)
    try:
        started = time.monotonic()
        r = durable_proc("--lock-timeout", "0", "session", "prompt", "x", "hi")
        assert r.status == 6, r.err
        assert time.monotonic() - started < 2.5
        assert "busy" in r.err and "--lock-timeout" in r.err
        r = durable_proc("--lock-timeout", "0", "session", "show", "x", "--json")
        assert r.status == 6
        assert json.loads(r.err)["error"]["code"] == "busy" and json.loads(r.err)["error"]["exit_status"] == 6
    finally:
        holder.kill()
        holder.wait()
    assert durable("session", "queue", "x", "--json").json() == []  # the refused prompt left nothing


def test_waits_for_the_lock_then_succeeds(durable, durable_proc):
    durable("session", "create", "x")
    holder = hold_lock("x", 1.0)
    try:
        started = time.monotonic()
        r = durable_proc("--lock-timeout", "10s", "session", "prompt", "x", "hi")
        assert r.status == 0, r.err
        assert time.monotonic() - started >= 0.5
    finally:
        holder.wait()


def test_env_lock_timeout(durable, durable_proc):
    durable("session", "create", "x")
    holder = hold_lock("x", 5)
    try:
        r = durable_proc("session", "prompt", "x", "hi", env={"DURABLE_LOCK_TIMEOUT": "1s"})
        assert r.status == 6
    finally:
        holder.kill()
        holder.wait()


DELETER = """
import sys, time
from durable_cli import Store
from durable_cli.across.retention import erase
store = Store()
with store.open("x") as obj:
    print("locked", flush=True)
    time.sleep(1.0)
    erase(store, obj.handle, obj.meta())
"""


def test_delete_while_others_wait_reaches_the_new_object(durable):
    """A waiter whose object is deleted (and its lock file unlinked) while it waits locks the re-created file."""
    durable("transcript", "append", "x", "--role", "user", "old")
    deleter = subprocess.Popen([sys.executable, "-c", DELETER], stdout=subprocess.PIPE, text=True)
    assert deleter.stdout.readline().strip() == "locked"
    waiter = subprocess.Popen([sys.executable, "-m", "durable_cli", "transcript", "append", "x", "--role", "user", "new"])
    reader = subprocess.Popen([sys.executable, "-m", "durable_cli", "session", "show", "x"], stdout=subprocess.DEVNULL)
    assert deleter.wait(timeout=30) == 0
    assert waiter.wait(timeout=30) == 0
    assert reader.wait(timeout=30) in (0, 3)  # waited on the deleted object: the new one, or none yet
    rows = durable("transcript", "show", "x", "--json").json()
    assert [(r["seq"], r["content"]) for r in rows] == [(1, "new")]
