"""Waits on observable events instead of timing guesses: a file, a row, a process's open files."""

import os
import time


def wait_until(predicate, what: str, timeout: float = 60.0, step: float = 0.002):
    """Poll PREDICATE until it is true; fail naming WHAT if TIMEOUT (a bound, not a guess) passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def has_open(pid: int, path: str) -> bool:
    """PID has PATH open right now (Linux /proc)."""
    target = os.path.realpath(path)
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:
            continue
    return False


def lock_file(name: str, *, user: str = "alice", tenant=None) -> str:
    """The lock file of NAME in the current DURABLE_HOME."""
    from durable_cli import Store

    store = Store(user=user, tenant=tenant)
    try:
        scope, owner = ("tenant", tenant) if tenant else ("user", user)
        return store.objects.paths.lock_file(store.objects.object_id(scope, owner, name))
    finally:
        store.close()


def has_polled(proc, lock: str, holder) -> None:
    """With HOLDER holding LOCK, wait until PROC waits for it; release it; wait until PROC has taken
    and released it once (it is then between polls, having looked at least once)."""
    wait_until(lambda: has_open(proc.pid, lock) or proc.poll() is not None, "the process to wait for the lock")
    assert proc.poll() is None, "the process ended before it waited"
    holder.kill()
    holder.wait()
    wait_until(lambda: not has_open(proc.pid, lock), "the process to finish its first poll")
