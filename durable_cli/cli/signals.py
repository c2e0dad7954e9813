"""Signals and the commit guard: SIGINT/SIGTERM end a run with 130/143 only while nothing was committed
(docs/reference/output.md §4); once a COMMIT has started, a signal waits for the run's own exit status."""

import os
import sys
from contextlib import contextmanager

from ..errors import Interrupted


class Deferral:
    """SIGINT/SIGTERM while a run may have committed wait for its exit (docs/reference/storage.md §3: 130/143 = nothing changed)."""

    committing = False  # a COMMIT has started: from here the run ends with its own status, not 130/143
    exiting = False  # the run is done: a signal now only has to wait for os._exit
    pending = None  # the status of a signal that came while deferred
    requested = None  # the status of a signal raised as Interrupted (even one swallowed in a __del__)
    starting = False  # a child is being started (signals_deferred): a signal waits until the caller holds it


D = Deferral()


@contextmanager
def commit_guard():
    """Entered around each COMMIT (durable_cli.guard.commit_guard). A failed COMMIT changed nothing, so a
    signal that came meanwhile is delivered then; after a successful one signals wait for the exit."""
    already = D.committing
    if not already and D.requested is not None:  # its Interrupted was swallowed (raised inside a __del__)
        raise Interrupted(D.requested)
    D.committing = True
    try:
        yield
    except BaseException:
        if not already:
            D.committing = False
            if D.pending is not None:
                raise Interrupted(D.pending) from None
        raise


def poll_settled(result) -> None:
    """guard.poll_settled: when a remote wait's poll answered nothing (RESULT None, or STOPPED), its guarded
    write changed nothing: the run is interruptible again, and a signal that came during the poll ends it
    now with 130/143. A poll that took or stored something keeps its answer (printed, exit 0)."""
    if D.exiting or not (result is None or result is STOPPED):
        return
    D.committing = False
    if D.pending is not None:
        D.requested, D.pending = D.pending, None
        raise Interrupted(D.requested)


@contextmanager
def signals_deferred():
    """guard.signals_deferred: a signal that comes while a child process is started is raised once the block
    ends, when the caller holds the child (and kills its group), never halfway through Popen."""
    D.starting = True
    try:
        yield
    finally:
        D.starting = False
    if D.pending is not None and not (D.committing or D.exiting):
        D.requested, D.pending = D.pending, None
        raise Interrupted(D.requested)


def taken_before():
    """guard.signal_before: the status of a signal deferred (D.pending) or raised and swallowed (D.requested) so far,
    now the caller's to act on (the pending one is cleared)."""
    status, D.pending = D.pending or D.requested, None
    return status


def interrupt(signum, _frame):
    if D.committing or D.exiting or D.starting:
        D.pending = D.pending or 128 + signum
        return
    D.requested = 128 + signum
    raise Interrupted(128 + signum)


def unraisable(hook_args) -> None:
    """An Interrupted raised where Python cannot propagate it (a finalizer) is not a traceback: the run
    still ends 130/143 (D.requested), and no commit happens after it."""
    if not isinstance(hook_args.exc_value, Interrupted):
        sys.__unraisablehook__(hook_args)


STOPPED = object()


def unless_interrupted(result):
    """What a waiting command's poll returns: STOPPED instead of "nothing yet" once a signal came after
    the run committed (an alarm fired at wake), so the wait ends with its own status, not 130/143."""
    return STOPPED if result is None and D.pending is not None else result


def reserve_std_fds() -> None:
    """A closed stdin/stdout/stderr (`durable ls >&-`) reads as empty and writes nowhere; it also keeps
    fds 0-2 from being reused by a lock or object file, where a stray print would land."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))
