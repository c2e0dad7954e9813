"""SQLite connections as durable opens them: synchronous and secure_delete set, a read-only URI where the
directory cannot be written, every COMMIT inside the command line's guard, and SQLite failures as exit 7
naming the file and the way out. Shared by the objects (objects.py) and index.db (index.py)."""

import os
import sqlite3

from .. import guard as _guard
from ..errors import DurableError, storage


# Entered around every COMMIT of an object when set. The command line sets it for the length of one
# run (the library never does: signal handling is the program's), so that from the moment a commit
# may land SIGINT/SIGTERM wait for the exit: an interrupted run then always means nothing changed.
def commit(db: sqlite3.Connection, *, changed: bool = True) -> None:
    """COMMIT a change the user asked for (inside the command line's guard, when one is set and the
    transaction CHANGED something: committing a read changes nothing)."""
    guard = _guard.commit_guard
    if guard is None or not changed:
        db.execute("COMMIT")
    else:
        with guard():
            db.execute("COMMIT")


def sqlite_error(e: Exception, what: str) -> DurableError:
    """A storage error (exit 7) for a SQLite failure, naming the object or file and the way out."""
    text = str(e)
    low = text.lower()
    if "could not decode" in low:  # the text itself may be long or private: do not echo it
        return storage(f"{what} is corrupt (a text value is not valid UTF-8); run 'durable doctor' to see what can be repaired")
    if "full" in low:
        return storage(f"disk full while writing {what}; free some space and retry (nothing was changed)")
    if "readonly" in low or "read-only" in low or "unable to open" in low:
        return storage(f"cannot write {what}: the data directory is read-only or not accessible ({text}); nothing was changed")
    if "disk i/o" in low:
        return storage(f"disk I/O error on {what} ({text}); nothing was changed; check free space and file size limits")
    if low == "integer overflow":  # a 64-bit total would pass 2^63-1 (docs/reference/transcript.md §6: exit 7, never a float)
        return storage(f"a usage total of {what} would pass 2^63-1, which durable does not round; nothing was changed")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return storage(f"{what} is corrupt ({text}); run 'durable doctor' to see what can be repaired")
    return storage(f"storage error on {what}: {text}; run 'durable doctor' to check it")


def connect(path: str, what: str, *, synchronous: str = "FULL") -> sqlite3.Connection:
    """Open PATH; read-only (and never creating a file) when its directory cannot be written."""
    try:
        if os.access(os.path.dirname(path), os.W_OK):
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        else:
            db = sqlite3.connect(_read_only_uri(path, what), uri=True, isolation_level=None, check_same_thread=False, timeout=10)
    except sqlite3.Error as e:
        raise sqlite_error(e, what) from e
    try:
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("PRAGMA secure_delete=ON")
    except sqlite3.Error as e:
        db.close()
        raise sqlite_error(e, what) from e
    return db


def _read_only_uri(path: str, what: str) -> str:
    """A read-only URI for a file in a directory we cannot write (no -shm can be made there).

    With a non-empty WAL, its -shm must already exist (SQLite reads both); without one, nothing but
    durable writes the file and we hold its lock, so it is read as immutable (no -shm needed).
    """
    quoted = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    try:
        wal = os.lstat(path + "-wal").st_size
    except FileNotFoundError:
        wal = 0
    if wal and not os.path.exists(path + "-shm"):
        raise storage(f"{what} has writes in its WAL that cannot be read from a directory durable may not write "
                      "(its -shm file is missing); run any durable command on it where the data directory is writable")
    return f"file:{quoted}?mode=ro" + ("" if wal else "&immutable=1")
