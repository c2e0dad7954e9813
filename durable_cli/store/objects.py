"""Objects: one SQLite file per named object, woken, worked on and put to sleep by each run.

The cycle, and what it guarantees:
- wake: take the object's exclusive lock (held for the whole run), open the file, create or upgrade
  its schema idempotently (ordered migrations in PRAGMA user_version; a newer file is refused);
- work: every change inside one explicit transaction (BEGIN IMMEDIATE ... COMMIT);
- sleep: commit (synchronous=FULL, WAL: fsync'd before the command exits 0), update the object's
  index.db row while still holding the lock (lock order: object, then index), close, unlock.
A run that fails, is interrupted or killed rolls back: it changes nothing. Nothing survives in memory.
"""

import os
import sqlite3
import stat
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .. import clock as _clock
from .. import guard as _guard
from ..errors import DurableError, not_found, storage
from . import ids, schema
from . import paths as _paths
from .lock import ObjectLock

if TYPE_CHECKING:
    from .index import Index
from .sqlite import _read_only_uri, commit, connect, sqlite_error  # noqa: F401 - also this module's API


def _connect_read_only(path: str):
    """An immutable read-only connection to PATH (we hold its lock, so nothing writes it meanwhile), or
    None when its WAL holds writes or its schema is not this durable's (the caller opens it as usual)."""
    try:
        if os.lstat(path + "-wal").st_size:
            return None
    except FileNotFoundError:
        pass
    quoted = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    try:
        db = sqlite3.connect(f"file:{quoted}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        if db.execute("PRAGMA user_version").fetchone()[0] == schema.VERSION:
            return db
        db.close()
    except sqlite3.Error:
        pass  # the usual open reports it
    return None


_template = None
# A new object's page size. Every table and index of an object takes at least one page, and a session's
# object has ~34 of them, most holding a few rows: at 4 KB a 20-row session was 139 KB on disk, at 1 KB it
# is ~40 KB (docs/benchmarks.md "Object size"). Rows larger than a page go to overflow pages as before.
PAGE_SIZE = 1024


def template() -> bytes:
    """An empty object as the migrations make it (every step applied to an empty database), built once
    per process: a new object starts as a copy of it, not by running every step."""
    global _template
    if _template is None:
        db = sqlite3.connect(":memory:", isolation_level=None)
        try:
            db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            schema.migrate(db, schema.MIGRATIONS, "a new object")
            db.execute("VACUUM")  # without the pages of what later steps dropped (the first search index)
            _template = db.serialize()
        finally:
            db.close()
    return _template


def file_image(db: sqlite3.Connection) -> bytearray:
    """The file of an object made in memory: its pages, marked as in WAL mode (what PRAGMA journal_mode=WAL
    records in the header), as every object file is. (Not copied once more into bytes: it is written once.)"""
    image = bytearray(db.serialize())
    image[18] = image[19] = 2
    return image


_template_file = None


def template_file() -> bytes:
    """file_image of the template: a new object's file before its first write."""
    global _template_file
    if _template_file is None:
        db = sqlite3.connect(":memory:")
        try:
            db.deserialize(template())
            _template_file = bytes(file_image(db))
        finally:
            db.close()
    return _template_file


def _new_in_memory(what: str) -> sqlite3.Connection:
    """A new object, in memory until its run ends well (ObjectStore.open writes it then, in one go)."""
    try:
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.deserialize(template())
        db.execute("PRAGMA secure_delete=ON")
    except sqlite3.Error as e:
        raise sqlite_error(e, what) from e
    return db


# The WAL a kept-open store (an adapter) makes before it opens the connection it will keep, when the object has
# none: SQLite reuses the file from its start after each checkpoint and never shrinks it, so the commits that
# write inside it overwrite blocks the file already has, and their fsync need not also journal the file's
# growth (about half an fsync's cost on ext4: docs/benchmarks.md). Zeros are no WAL header, which SQLite
# reads as an empty WAL; the file goes when the last connection closes, as any WAL does.
WAL_AHEAD = 256 * 1024


def preallocate_wal(path: str) -> None:
    """Make PATH's WAL file, WAL_AHEAD bytes of zeros, unless one exists (best effort: a failure only
    leaves SQLite to make and grow it as usual)."""
    try:
        fd = os.open(path + "-wal", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _paths.FILE_MODE)
    except OSError:
        return
    try:
        os.write(fd, bytes(WAL_AHEAD))
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_schema(db: sqlite3.Connection, what: str) -> None:
    """Apply the migrations this file has not seen yet, in order, in one transaction (exit 7 if newer)."""
    try:
        schema.migrate(db, schema.MIGRATIONS, what)
    except sqlite3.Error as e:
        raise sqlite_error(e, what) from e


class _NothingMade(Exception):
    """A run that would have made an object ended without committing anything to it."""


class ObjectHandle:
    """An object woken for this run: its connection, its lock and the way to change it."""

    def __init__(self, store: "ObjectStore", object_id: str, what: str, lock_timeout=None, where=None):
        self.store = store
        self.id = object_id
        self.what = what
        self.path = where[0] if where is not None else store.paths.object_file(object_id)
        lock_path = where[1] if where is not None else store.paths.lock_file(object_id)
        self.lock = ObjectLock(lock_path, store.lock_timeout if lock_timeout is None else lock_timeout, what)
        self.db: sqlite3.Connection = None  # type: ignore[assignment]  # None only outside a run (closed)
        self.on_sleep = None  # set by the layer above: brings the index row in step at sleep
        self.dirty = False  # a transaction committed since the object woke
        self.deleted = False
        self.created = False  # this run made the object (an empty file is then a create, not lost data)
        self.in_memory = False  # ... in memory: written to its path when the run ends well (ObjectStore.keep_open)
        self.kept_key = None  # (st_dev, st_ino) of the file a kept connection (ObjectStore.keep_open) has open
        self.kept_version = None  # its PRAGMA data_version when this run took it
        # KNOWN: what the last run of this store on the object learnt (schema and identity checked, and the
        # layer above's facts, e.g. its next alarm), when its kept connection shows no commit by any other
        # connection since (PRAGMA data_version unchanged): still true now. None otherwise.
        self.known = None
        self.known_changes = None  # the kept connection's total_changes when KNOWN was taken: this run changed nothing while equal
        self.on_keep = None  # set by the layer above: (handle) -> the facts a kept connection carries to the next run
        self.facts = None  # the layer above's facts as of its last commit (on_keep may answer with them)
        self.wrote = False  # a transaction committed in this run (dirty is reset at each sleep)
        # CARRY: what an operation keeps for this store's next run on the object (the LangGraph saver's mirrored
        # message ids), trusted, as KNOWN is, only while no other connection commits; None when not known.
        self.carry = None
        # BEFORE_COMMIT: set by the layer above for a kept-open store (an adapter, one transaction a run): what
        # its on_sleep reads, read inside the write transaction just before COMMIT (one WAL read lock and no
        # transaction of its own after it). AHEAD: (that, db.total_changes after the commit): used at sleep
        # only while nothing has changed since.
        self.before_commit = None
        self.ahead = None
        self.commit_seconds = 0.0  # COMMITs and the index update at sleep (an operation span's, §15.6)
        self.alarms_fired = 0  # what core/alarms.py fired in this wake (an operation span's, §15.6)

    def row(self, sql: str, params=()):
        try:
            return self.db.execute(sql, params).fetchone()
        except sqlite3.DatabaseError as e:
            raise sqlite_error(e, self.what) from e

    def evict_search(self, *, merge: bool = True) -> None:
        """Before a change to this object's rows other than an append commits (under its lock): take it out
        of its owner's search side file (store/side_index.py), merging the tokens away when MERGE."""
        found = self.row("SELECT scope, owner FROM object")
        if found is not None:
            self.store.evict_search(self.id, ids.id_scope(found[0]), found[1], merge=merge)

    def rows(self, sql: str, params=()):
        try:
            return self.db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as e:
            raise sqlite_error(e, self.what) from e

    @contextmanager
    def transaction(self):
        """One explicit write transaction. The index row follows at sleep, still under the object's lock."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise sqlite_error(e, self.what) from e
        try:
            start = db.total_changes
            yield db
            changed = db.total_changes != start
            ahead = None
            if changed:
                schema.catch_up(db)  # the search index and usage totals, once per transaction
                if self.before_commit is not None:
                    ahead = self.before_commit(db)
            began = time.perf_counter()
            commit(db, changed=changed)
            self.commit_seconds += time.perf_counter() - began
            self.ahead = None if ahead is None else (ahead, db.total_changes)
        except sqlite3.Error as e:
            _rollback(db)
            raise sqlite_error(e, self.what) from e
        except BaseException:
            _rollback(db)
            raise
        self.dirty = True
        self.wrote = True

    def checkpoint(self) -> None:
        """Fold the WAL into the file and truncate it, so removed text does not linger in the WAL."""
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as e:
            raise sqlite_error(e, self.what) from e

    def delete(self, *, owner=None, name=None, created_at=None) -> None:
        """Remove the object through the intent journal (docs/reference/storage.md §3 "Intents"): close our connection (its
        WAL folded in first), record the file's identity with the intent, then unlink the file, WAL/SHM,
        index row and lock file (we hold the lock)."""
        if self.db is not None:
            try:
                self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # a corrupt object is deleted all the same
        self.close_db()
        self.store.remove_locked(self.id, self.lock, owner=owner, name=name, created_at=created_at)
        self.deleted = True

    def sleep(self) -> None:
        """Update the index after the last commit, while still holding the object's lock.

        The object is the source of truth and its work is already committed: an index that cannot be
        updated (disk full, read-only) is a warning for `doctor --repair`, not a failure of the command.
        """
        if self.dirty and not self.deleted and self.on_sleep is not None and self.db is not None:
            began = time.perf_counter()
            try:
                self.on_sleep(self)
            except DurableError as e:
                self.store.warnings.append(f"{self.what} was saved, but index.db was not updated ({e.message}); "
                                           "run 'durable doctor --repair'")
            self.commit_seconds += time.perf_counter() - began
        self.dirty = False

    def close_db(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None  # type: ignore[assignment]  # closed: see __init__


def _rollback(db) -> None:
    try:
        if db.in_transaction:
            db.execute("ROLLBACK")
    except sqlite3.Error:
        pass


_INHERITED: list = []  # what stores opened before this process was forked from theirs (ObjectStore._after_fork)
KEPT_MISS = object()  # ObjectStore.read_kept: not read that way


def _present(where) -> bool:
    """Paths.check_object(sidecars=False) over paths computed once: exit 7 for a symlink on the way,
    True when the object's file exists."""
    for directory in where[2]:
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                _paths.real_dir(directory)  # raises: a symlink or not a directory
        except FileNotFoundError:
            return False
    return _paths.refuse_symlink(where[0])


def file_identity(path: str):
    """(dev, ino, size, mtime_ns, wal_size) of an object file as it stands, None when it is gone; the WAL's
    size is -1 when there is none. A write after this changes at least one of them."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    try:
        wal = os.stat(path + "-wal", follow_symlinks=False).st_size
    except FileNotFoundError:
        wal = -1
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, wal)


def quarantine_files(path: str, dest: str) -> None:
    """Move an object's file (and WAL/journal, its evidence) to DEST; its SHM is only a cache."""
    for suffix in ("",) + _paths.SIDE_SUFFIXES:
        if suffix == "-shm":
            _paths.unlink_quiet(path + suffix)
            continue
        try:
            os.rename(path + suffix, dest + suffix)
        except FileNotFoundError:
            pass
    _paths.fsync_dir(os.path.dirname(dest))
    _paths.fsync_dir(os.path.dirname(path))


def _remove_stale_sidecars(path: str) -> None:
    """Before a new object's file appears at PATH (its lock held, no file there): a WAL (or journal) left
    beside no file, by a removal killed between its unlinks, would be read into the new file by SQLite
    and bring the old object's pages back; it goes first."""
    for suffix in _paths.SIDE_SUFFIXES:
        _paths.unlink_quiet(path + suffix)


def remove_files(path: str, sync_dir=_paths.fsync_dir) -> None:
    _paths.unlink_quiet(path)
    for suffix in _paths.SIDE_SUFFIXES:
        _paths.unlink_quiet(path + suffix)
    sync_dir(os.path.dirname(path))


class ObjectStore:
    """The data directory: resolves names to ids, wakes objects under their lock, owns index.db."""

    def __init__(self, home: str, lock_timeout: float = 10.0, *, keep_open: bool = False):
        self.paths = _paths.Paths(home)
        self.lock_timeout = lock_timeout
        self._secret = None
        self._index: Index | None = None  # imported when first used
        self._dirs_to_sync = None  # set by deferred_dir_sync: directories whose removals await one fsync
        self.warnings: list[str] = []  # things the caller should tell the user, e.g. an index that fell behind
        # KEEP_OPEN (a long-lived process such as an adapter): a run's connection is kept open when the run
        # ends, idle (no transaction, no lock held), for the next run of this store on the object. The next
        # run still takes the object's lock first and uses it only if the file at the path is still the one
        # it has open (same device and inode); else it opens the file afresh. Closing a run's connection
        # would also fold the WAL into the file and delete it (two extra fsyncs and a directory fsync).
        self.keep_open = keep_open
        self._kept: dict = {}  # object id -> ((st_dev, st_ino), idle connection); a connection in use is not here
        # ... and the descriptor of its lock file (fd, (st_dev, st_ino)), unlocked: the next run locks it
        # again and uses it only if the lock file at the path is still that one (ObjectLock.acquire_kept)
        self._kept_locks: dict = {}
        self._where: dict = {}  # object id -> (file, lock file, (home, objects/, shard)): paths a kept-open store reuses
        self._side_owed: set = set()  # search side files whose merge was deferred to close (side_index.evict)
        self._side_dbs: dict = {}  # side files kept open for a command's many deferred evictions
        import threading

        self._kept_guard = threading.Lock()
        self._ids: dict = {}  # (scope, owner, NAME) -> id under the loaded secret (an HMAC per open saved)
        self._pid = os.getpid()  # the process whose connections and descriptors these are (_after_fork)

    def __del__(self):
        """A store dropped without close() (a DurableSession made per request): its kept lock descriptors are
        closed with it, as its kept connections are (an fd is not closed by the garbage collector)."""
        try:
            if self._pid != os.getpid():
                self._after_fork()  # a parent's connections are not the child's to close
            for fd, _key in list(self._kept_locks.values()):
                os.close(fd)
            self._kept_locks.clear()
        except Exception:  # noqa: BLE001 - at interpreter exit os may be gone; nothing to report
            pass

    def _checkout(self, handle):
        """The connection a former run of this store left open on this object, if the file at its path is
        still the one it has open (we hold the object's lock, so it stays that one until we release it);
        else None (a stale connection, to a file deleted or replaced meanwhile, is closed: SQLite neither
        checkpoints nor deletes anything by name for a file that has moved)."""
        with self._kept_guard:
            kept = self._kept.pop(handle.id, None)
        if kept is None:
            return None
        key, db, facts = kept
        try:
            st = os.stat(handle.path, follow_symlinks=False)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != key:
            db.close()
            return None
        try:
            handle.kept_version = db.execute("PRAGMA data_version").fetchone()[0]
            if handle.kept_version == facts["data_version"]:
                handle.known = facts  # nobody else committed since: what the last run checked still holds
                handle.known_changes = db.total_changes
                handle.carry = facts.get("carry")
            elif db.execute("PRAGMA user_version").fetchone()[0] != schema.VERSION:
                raise sqlite3.Error("another schema")  # migrated afresh: DDL is checked against a fresh parse
        except sqlite3.Error:
            db.close()
            return None
        handle.kept_key = key
        return db

    def _checkin(self, handle) -> None:
        """Keep the connection of a run that ended cleanly (no transaction open) for the next run, with
        what this run knows (trusted by the next one only if no other connection commits meanwhile)."""
        db = handle.db
        key = handle.kept_key
        try:
            if key is None:
                st = os.stat(handle.path, follow_symlinks=False)
                key = (st.st_dev, st.st_ino)
            if db.in_transaction:
                raise sqlite3.Error("a transaction is open")
            if handle.known is not None and not handle.wrote:
                facts = handle.known  # nothing changed: what the run was told still holds
            else:
                facts = dict(handle.on_keep(handle) if handle.on_keep is not None else {})
            # as read when the run began (our own commits do not change it; no other durable process commits
            # while we hold the lock), else read now
            version = handle.kept_version
            facts["data_version"] = version if version is not None else db.execute("PRAGMA data_version").fetchone()[0]
            facts["carry"] = handle.carry
        except (OSError, sqlite3.Error, DurableError):
            return  # closed as usual
        handle.db = None
        with self._kept_guard:
            old = self._kept.pop(handle.id, None)
            self._kept[handle.id] = (key, db, facts)
        if old is not None:
            old[1].close()

    def _drop_kept(self, object_id: str) -> None:
        with self._kept_guard:
            kept = self._kept.pop(object_id, None)
            kept_lock = self._kept_locks.pop(object_id, None)
        if kept is not None:
            kept[1].close()
        if kept_lock is not None:
            os.close(kept_lock[0])

    def secret(self, *, create: bool):
        if self._secret is None:
            self._secret = ids.load_secret(self.paths, create=create)
        return self._secret

    def object_id(self, scope: str, owner: str, name: str, *, create: bool = False):
        """The id for (scope, owner, NAME), or None when the installation has no secret yet."""
        secret = self.secret(create=create)
        if secret is None:
            return None
        key = (scope, owner, name)
        found = self._ids.get(key)
        if found is None:
            if len(self._ids) >= 4096:
                self._ids.clear()
            found = self._ids[key] = ids.object_id(secret, scope, owner, name)
        return found

    def _after_fork(self) -> None:
        """In a child forked after this store opened things (a pre-forking server that made an adapter, or
        warmed a Store, before forking): SQLite's connections must not cross a fork (closing one here could
        take the parent's WAL), and a kept lock descriptor shares its flock with the parent's (both would
        hold the object's lock at once). What the parent opened is set aside untouched for the child's life
        and everything is opened afresh."""
        if self._pid == os.getpid():
            return
        import threading

        _INHERITED.append((self._kept, self._index, self._side_dbs))  # never used, never closed here
        for fd, _key in self._kept_locks.values():
            os.close(fd)  # (the parent's open file description, and its lock, stay the parent's)
        self._kept, self._kept_locks, self._side_dbs, self._index = {}, {}, {}, None
        self._side_owed = set()
        self._kept_guard = threading.Lock()
        self._pid = os.getpid()

    def index(self, *, create: bool = True):
        if self._pid != os.getpid():
            self._after_fork()
        if self._index is None:
            from .index import Index

            self._index = Index(self.paths, lambda: self.secret(create=False))
        if create:
            self._index.connect(create=True)
        return self._index

    def check_secret(self) -> None:
        """Exit 7 when index.db knows another secret.key: a wrong secret would answer every NAME as
        missing and create a second object beside each one (docs/reference/storage.md §3, the secret must match the data)."""
        secret = self.secret(create=False)
        if secret is not None and self.index(create=False).secret_matches(secret) is False:
            raise storage(
                f"the installation secret {self.paths.secret} does not match this data directory "
                "(index.db recorded another one: replaced by hand or restored from another backup); "
                "restore the secret.key that goes with these objects. Nothing was read or created"
            )

    def check_identity(self, handle: "ObjectHandle") -> None:
        """Exit 7 for an object whose stored scope, owner and NAME do not hash to its file's id."""
        row = handle.row("SELECT id, scope, owner, name FROM object")
        if row is None:
            return  # a half-made file: nothing claimed yet
        secret = self.secret(create=False)
        if row[0] != handle.id or secret is None or ids.object_id(secret, ids.id_scope(row[1]), row[2], row[3]) != handle.id:
            raise storage(
                f"{handle.what} does not belong under this id: its stored scope, owner and name do not hash to "
                f"{handle.id} with this installation's secret.key (a file copied in, or secret.key replaced); "
                "run 'durable doctor'"
            )

    @contextmanager
    def open(self, object_id: str, *, create: bool, what: str, missing=None, lock_timeout=None, read_only=False):
        """Wake the object with this id: lock, open, schema. Exit 3 (MISSING) when it is absent and CREATE is false.

        Nothing is created for a missing object unless CREATE (not even a lock file); nothing is read or
        written through a symlink; a missing object is first checked against index.db's record of the
        secret (a wrong secret.key is exit 7, not "not found" or a second object). Any SQLite failure
        while the object is open becomes exit 7 naming it. LOCK_TIMEOUT overrides the store's for this
        one wait (a polling command spends its own deadline). READ_ONLY (a reader over many objects, e.g.
        search): a file whose WAL is empty is read as immutable under the lock (no -wal/-shm made and
        removed per object); one that needs a migration or has WAL content is opened as usual.
        """
        missing = missing or f"{what} not found"
        if self._pid != os.getpid():
            self._after_fork()
        began = time.perf_counter()
        handle = self._wake_kept(object_id, what, lock_timeout) if self._kept_locks and not read_only else None
        if handle is None:
            handle = self._wake(object_id, create=create, what=what, missing=missing, lock_timeout=lock_timeout)
        locked = woken = done = time.perf_counter()
        in_work = 0.0
        try:
            if handle.db is None and self._kept and not read_only:
                handle.db = self._checkout(handle)  # the file it has open is the one at the path: it exists
            exists = handle.db is not None or self.paths.check_object(object_id)
            if not exists:
                if self._kept:
                    self._drop_kept(object_id)
                if not create:
                    handle.lock.unlink()  # the object went away while we waited; leave nothing behind
                    raise not_found(missing)
                if self.keep_open:
                    # An adapter's new object is made in memory and its file written when the run ends
                    # well: one file write and two fsyncs (file, directory) instead of a file, a WAL made,
                    # synced and committed; a run that fails or is killed leaves no file. (Only here: what
                    # an adapter writes in one run is small; an import or a fork may not fit in memory.)
                    handle.db = _new_in_memory(what)
                    handle.in_memory = True
                else:
                    _remove_stale_sidecars(handle.path)
                    _paths.create_file(handle.path, template_file())  # fsync'd before any commit lands in its WAL
                handle.created = True
            if read_only and not handle.created:
                handle.db = _connect_read_only(handle.path)
            if handle.db is None:
                if self.keep_open and not read_only:
                    preallocate_wal(handle.path)  # the connection is kept: its commits then overwrite, not grow
                handle.db = connect(handle.path, what)
            if handle.known is None:  # else checked by this store's last run, and nobody committed since
                ensure_schema(handle.db, what)  # one PRAGMA when up to date (another process may have migrated it)
                self.check_identity(handle)
            woken = time.perf_counter()
            try:
                yield handle
            except BaseException as e:
                done, in_work = time.perf_counter(), handle.commit_seconds
                if not handle.in_memory:
                    try:
                        handle.sleep()  # what committed before the failure still reaches the index
                    except Exception:  # noqa: BLE001 - the original failure is the one to report
                        pass
                if isinstance(e, sqlite3.Error):
                    raise sqlite_error(e, what) from e
                raise
            if handle.in_memory:
                if not handle.dirty:
                    raise _NothingMade()
                self._write_new(handle)
            done, in_work = time.perf_counter(), handle.commit_seconds
            handle.sleep()
        except _NothingMade:
            self._abandon(handle)  # a create that committed nothing leaves nothing behind
        except BaseException:
            if handle.in_memory:
                if not os.path.lexists(handle.path):  # else renamed into place: committed, whatever came after
                    self._abandon(handle)  # a create that failed leaves nothing behind
            elif handle.created and not handle.dirty:
                self._abandon(handle)  # a create that failed before its first commit leaves nothing behind
            raise
        else:
            if self.keep_open and handle.db is not None and not read_only and not handle.in_memory:
                self._checkin(handle)
        finally:
            handle.close_db()
            if self.keep_open and not handle.deleted:
                self._keep_lock(object_id, handle.lock.release_kept())
            else:
                handle.lock.release()
            if _guard.wakes is not None:  # docs/reference/traces.md §15.6: lock wait, wake, work, commit
                seen = _guard.wakes.setdefault(object_id, [None, 0, 0.0, 0.0, 0.0, 0.0, 0])
                seen[0] = None if handle.deleted else handle.path
                seen[1] += 1
                seen[2] += locked - began
                seen[3] += max(0.0, woken - locked)
                seen[4] += max(0.0, done - woken - in_work)
                seen[5] += handle.commit_seconds
                seen[6] += handle.alarms_fired

    def read_kept(self, object_id: str, what: str, read):
        """READ(db) in one read transaction on the connection a former run of this kept-open store left open
        on the object, when nothing needs doing first: its lock taken through the kept descriptor of its lock
        file, the file at the path still the one the connection has open, no other connection committed
        since that run (PRAGMA data_version, read inside the same transaction as READ), the object's row
        present and no alarm due. Else KEPT_MISS, nothing held: the caller reads through open(), which
        does all of that work. For a reader called once per step (the LangGraph saver's get_tuple): one
        read lock on the file, no session layer."""
        if self._pid != os.getpid():
            self._after_fork()
        with self._kept_guard:
            kept = self._kept.pop(object_id, None)
            kept_lock = self._kept_locks.pop(object_id, None) if kept is not None else None
            if kept is not None and kept_lock is None:
                self._kept[object_id] = kept
                return KEPT_MISS
        if kept is None or kept_lock is None:
            return KEPT_MISS
        key, db, facts = kept
        where = self._paths_of(object_id)
        lock = ObjectLock(where[1], self.lock_timeout, what)
        if not lock.acquire_kept(*kept_lock):
            self._put_back(object_id, kept, None)
            return KEPT_MISS
        result = KEPT_MISS
        try:
            try:
                st = os.stat(where[0], follow_symlinks=False)
            except OSError:
                st = None
            if st is None or (st.st_dev, st.st_ino) != key:
                db.close()  # deleted or replaced since: open() finds out what happened
                kept = None
                return KEPT_MISS
            due = facts.get("due")
            if not facts.get("present") or (due is not None and due <= _clock.now()):
                return KEPT_MISS
            try:
                db.execute("BEGIN")
                try:
                    if db.execute("PRAGMA data_version").fetchone()[0] == facts["data_version"]:
                        result = read(db)
                finally:
                    db.execute("COMMIT")
            except sqlite3.Error as e:
                db.close()
                kept = None
                raise sqlite_error(e, what) from e
            return result
        finally:
            self._put_back(object_id, kept, lock.release_kept())

    def _put_back(self, object_id: str, kept, kept_lock) -> None:
        """Return a kept connection and lock descriptor (either may be None) that read_kept took."""
        with self._kept_guard:
            old = self._kept.pop(object_id, None) if kept is not None else None
            if kept is not None:
                self._kept[object_id] = kept
            old_lock = self._kept_locks.pop(object_id, None) if kept_lock is not None else None
            if kept_lock is not None:
                self._kept_locks[object_id] = kept_lock
        if old is not None:
            old[1].close()
        if old_lock is not None:
            os.close(old_lock[0])

    def _wake_kept(self, object_id: str, what: str, lock_timeout):
        """The quick way to wake an object a former run of this kept-open store left open: its lock taken
        through the kept descriptor of its lock file (still the file at the path), its kept connection
        checked out (still the file at the path). The symlink checks on the way were made when both were
        first opened; the run reads and writes through them, so it reaches those files and no other.
        None (nothing held) when either is missing or stale: the caller wakes the object the usual way."""
        if self._index is None or self._index.db is None:
            return None  # index.db is checked up front until this store has it open (see open)
        with self._kept_guard:
            if object_id not in self._kept:
                return None
            kept_lock = self._kept_locks.pop(object_id, None)
        if kept_lock is None:
            return None
        handle = ObjectHandle(self, object_id, what, lock_timeout, self._paths_of(object_id))
        if not handle.lock.acquire_kept(*kept_lock):
            return None
        handle.db = self._checkout(handle)
        if handle.db is None:
            handle.lock.release()
            return None
        return handle

    def _wake(self, object_id: str, *, create: bool, what: str, missing: str, lock_timeout):
        """Check the object's paths and take its lock (exit 3 when it is absent and not CREATE)."""
        where = self._paths_of(object_id) if self.keep_open else None
        handle = ObjectHandle(self, object_id, what, lock_timeout, where)
        if not (self.keep_open and self._index is not None and self._index.db is not None):
            # refused up front: the index is written at sleep, after the object's commit (a kept-open
            # store's index connection already has its files open: nothing is opened by path again)
            self.paths.check_index()
        present = _present(where) if where is not None else self.paths.check_object(object_id, sidecars=False)
        if not present:  # the full check follows, under the lock
            self.check_secret()
            if self._kept:
                self._drop_kept(object_id)  # deleted by another process since this store's last run
            if not create:
                raise not_found(missing)
            _paths.make_dir(self.paths.objects)  # durable never removes a shard: an existing file has both
            _paths.make_dir(os.path.dirname(handle.path))
        kept_lock = self._kept_locks.pop(object_id, None) if self._kept_locks else None
        if kept_lock is None or not handle.lock.acquire_kept(*kept_lock):
            handle.lock.acquire(create=True)
        return handle

    def _paths_of(self, object_id: str):
        """(file, lock file, (home, objects/, shard)) of an object, computed once per kept-open store."""
        where = self._where.get(object_id)
        if where is None:
            if len(self._where) >= 4096:
                self._where.clear()
            path = self.paths.object_file(object_id)
            where = self._where[object_id] = (path, self.paths.lock_file(object_id),
                                               (self.paths.home, self.paths.objects, os.path.dirname(path)))
        return where

    def _keep_lock(self, object_id: str, kept) -> None:
        if kept is None:
            return
        with self._kept_guard:
            old = self._kept_locks.pop(object_id, None)
            self._kept_locks[object_id] = kept
        if old is not None:
            os.close(old[0])

    def _write_new(self, handle) -> None:
        """Write the object this run made in memory to its path: a temporary file beside it, fsync'd, renamed
        into place, the directory fsync'd (the rename is the commit: before it there is no file)."""
        path = handle.path
        temporary = path + _paths.UNPUBLISHED
        try:
            image = file_image(handle.db)
        except sqlite3.Error as e:
            raise sqlite_error(e, handle.what) from e
        _paths.unlink_quiet(temporary)  # left by a run killed before its rename
        _remove_stale_sidecars(path)
        try:
            _paths.create_file(temporary, image)
        except BaseException:
            _paths.unlink_quiet(temporary)
            raise
        try:
            guard = _guard.commit_guard
            if guard is None:
                os.rename(temporary, path)
            else:
                with guard():
                    os.rename(temporary, path)
        except OSError as e:
            _paths.unlink_quiet(temporary)
            raise _paths.os_error(e, path) from e
        _paths.fsync_dir(os.path.dirname(path))

    def _abandon(self, handle) -> None:
        """Remove the file this run made for an object that never committed (we hold its lock): a rejected
        or failed create leaves no file, not even a lock file (docs/reference/storage.md §3). Nothing was acknowledged."""
        handle.close_db()
        with self._kept_guard:
            kept = self._kept.pop(handle.id, None)
        if kept is not None:
            kept[1].close()
        remove_files(handle.path)
        handle.lock.unlink()

    def remove_locked(self, object_id, lock, *, owner=None, name=None, created_at=None, quarantine=None) -> None:
        """Remove (or, with QUARANTINE, move there) an object whose lock we hold and whose connections are
        closed: journal the intent with the file's identity, then unlink, then drop the index row (and
        the intent) and the lock file. A crash between the two is finished by finish_intent."""
        from .. import clock

        path = self.paths.object_file(object_id)
        self._drop_kept(object_id)
        self.evict_search(object_id, deferred=True)  # first: a crash after it leaves the object to be indexed again
        identity = file_identity(path)
        if identity is not None:
            self.index().journal(object_id, identity, owner=owner, name=name, created_at=created_at,
                                 started_at=clock.now(), action="delete" if quarantine is None else quarantine)
            self._carry_out(path, quarantine)
        self.index().remove(object_id)
        lock.unlink()

    @contextmanager
    def deferred_dir_sync(self):
        """Many removals in one run (purge): each object directory is fsync'd once, when the run's block
        ends and before it reports anything, instead of once per removed object. The unlinks themselves
        are done at once as before (a killed run leaves nothing for a reader); only what a power loss could
        bring back waits, and nothing is acknowledged until it no longer can. The per-object fsync was
        most of a purge's time per object, and what grew with the size of the home (docs/benchmarks.md)."""
        outer = self._dirs_to_sync is None
        if outer:
            self._dirs_to_sync = set()
        try:
            yield
        finally:
            if outer:
                dirs, self._dirs_to_sync = self._dirs_to_sync, None
                for directory in sorted(dirs):
                    _paths.fsync_dir(directory)

    def _sync_dir(self, directory) -> None:
        if self._dirs_to_sync is None:
            _paths.fsync_dir(directory)
        else:
            self._dirs_to_sync.add(directory)

    def _carry_out(self, path, action) -> None:
        if action is None or action == "delete":
            remove_files(path, self._sync_dir)
            return
        _paths.make_dir(self.paths.quarantine)  # action is "quarantine/<file name>"
        quarantine_files(path, os.path.join(self.paths.home, action))

    @contextmanager
    def locked(self, object_id: str, what: str):
        """Hold the object's lock without opening it (deleting never needs to read the object)."""
        if not self.paths.check_object(object_id, sidecars=False):
            raise not_found(f"{what} not found")
        lock = ObjectLock(self.paths.lock_file(object_id), self.lock_timeout, what)
        lock.acquire(create=True)
        try:
            if not self.paths.check_object(object_id):
                lock.unlink()
                self.index().remove(object_id)
                raise not_found(f"{what} not found")
            yield lock
        finally:
            lock.release()

    def remove(self, object_id: str, what: str, **info) -> None:
        """Remove this object under its lock via the intent journal, without reading it (a corrupt
        object goes like any other). Exit 3 when it is absent, 6 when busy. For `delete`, `forget`,
        `import --replace`."""
        with self.locked(object_id, what) as lock:
            self.remove_locked(object_id, lock, **info)

    def finish_intent(self, row) -> str:
        """Finish one journaled intent under the object's lock: "finished" when the file is still the one
        durable left (same identity), "dropped" when it was written (or re-created) since: a crash never
        costs a write acknowledged after it; "gone" when the file had already been removed."""
        object_id = row["id"]
        path = self.paths.object_file(object_id)
        if not self.paths.check_object(object_id, sidecars=False):
            self.forget_missing(object_id)
            return "gone"
        with self.locked(object_id, f"object {object_id}") as lock:
            recorded = tuple(row.get(k) for k in ("dev", "ino", "size", "mtime_ns", "wal_size"))
            if None in recorded or file_identity(path) != recorded:
                self.index().unjournal(object_id)
                return "dropped"
            self._carry_out(path, row.get("action"))
            self.index().remove(object_id)
            lock.unlink()
            return "finished"

    def forget_missing(self, object_id: str) -> None:
        """An object whose file is already gone: drop its index row and, if nobody holds it, its lock file and
        what a removal killed between its unlinks left beside no file (a WAL keeps the text it held)."""
        from .lock import try_lock

        lock_path = self.paths.lock_file(object_id)
        fd = try_lock(lock_path)
        if fd is not None:
            path = self.paths.object_file(object_id)
            if not os.path.lexists(path):  # (under the lock: no run is making it now)
                _remove_stale_sidecars(path)
            _paths.unlink_quiet(lock_path)
            os.close(fd)
        self.evict_search(object_id, deferred=True)
        self.index().remove(object_id)

    def evict_search(self, object_id: str, id_scope=None, owner=None, *, merge: bool = True, deferred: bool = False) -> None:
        """Take OBJECT_ID out of its owner's search side file (docs/reference/retention.md §7: what is removed leaves no token in
        any file). Without ID_SCOPE/OWNER they come from index.db, else every side file is looked at.
        DEFERRED (many removals in one command): the merge that drops the tokens runs at close."""
        if id_scope is None:
            found = self.index().rows("SELECT scope, owner FROM objects WHERE id = ?", (object_id,))
            if found:
                id_scope, owner = ids.id_scope(found[0]["scope"]), found[0]["owner"]
        self.evict_search_many([(object_id, id_scope, owner)], merge=merge, deferred=deferred)

    def evict_search_many(self, objects, *, merge: bool = True, deferred: bool = False) -> None:
        """evict_search for many (id, id_scope, owner), one transaction per side file (purge, forget:
        taken out before their objects go, so each removal then finds nothing to take; an object a
        search indexes again meanwhile is taken out again under its lock)."""
        from . import side_index

        if not _paths.real_dir(side_index.directory(self.paths)):
            return  # no search ever ran here
        secret = self.secret(create=False)
        if secret is None:
            return
        owed = self._side_owed if deferred else None
        cache = self._side_dbs if deferred else None
        by_owner: dict = {}
        unknown: list = []
        for object_id, id_scope, owner in objects:
            if id_scope is None:
                unknown.append(object_id)
            else:
                by_owner.setdefault((id_scope, owner), []).append(object_id)
        for (id_scope, owner), object_ids in by_owner.items():
            side_index.evict(self.paths, secret, id_scope, owner, object_ids, deferred=owed, merge=merge,
                             timeout=self.lock_timeout, cache=cache)
        if unknown:
            for path in side_index.each_side_file(self.paths):
                side_index.evict_at(path, unknown, deferred=owed, merge=merge, timeout=self.lock_timeout, cache=cache)

    def search_leftovers(self) -> list:
        """(side file id, what it still holds of removed objects) for each search side file an erasure is
        unfinished in, read without writing (settle_search finishes them)."""
        from . import side_index

        if not _paths.real_dir(side_index.directory(self.paths)):
            return []
        present = set(self.paths.iter_object_ids(skip_symlinks=True))
        found = [(os.path.basename(p)[:-len(".sqlite3")], ", ".join(why)) for p in side_index.each_side_file(self.paths)
                 for why in [side_index.leftovers(p, present)] if why]
        return found + [(os.path.basename(p).split(".")[0], "a journal beside no side file") for p in side_index.strays(self.paths)]

    def settle_search(self) -> tuple:
        """Finish every erasure a killed command began in the search side files (docs/reference/storage.md §3 intents, §7 forget):
        first the merges this run owes, then in every side file a rollback journal rolled back, a merge owed
        made, the rows of objects whose file is gone evicted; journals beside no side file unlinked.
        Returns (the side files' ids where something was finished, the ids of those that were busy)."""
        from . import side_index

        if not _paths.real_dir(side_index.directory(self.paths)):
            return [], []
        side_index.close_all(self._side_dbs)
        owed, self._side_owed = self._side_owed, set()
        present = set(self.paths.iter_object_ids(skip_symlinks=True))
        done, busy = [], []
        for path in sorted(owed) + [p for p in side_index.each_side_file(self.paths) if p not in owed]:
            sid = os.path.basename(path)[:-len(".sqlite3")]
            try:
                if side_index.settle(path, present, timeout=self.lock_timeout) and path not in owed:
                    done.append(sid)
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                busy.append(sid)
        for path in side_index.strays(self.paths):
            _paths.unlink_quiet(path)
            done.append(os.path.basename(path).split(".")[0])
        return sorted(set(done)), busy

    def close(self) -> None:
        if self._pid != os.getpid():
            self._after_fork()
        if self._side_dbs or self._side_owed:
            from . import side_index

            side_index.close_all(self._side_dbs)
            try:
                side_index.flush(self._side_owed, timeout=self.lock_timeout)
            except sqlite3.Error:
                self._side_owed.clear()  # owed in the file: the next open of it merges
        for object_id in list(self._kept) + list(self._kept_locks):
            self._drop_kept(object_id)
        if self._index is not None:
            self._index.close()
            self._index = None
