"""Search side files (docs/reference/retention.md §7): one FTS5 index per owner (a user's own sessions, or one tenant's), so a
search reads one file per owner instead of opening every object.

A side file is a cache, rebuildable from the objects at any time (deleting it loses nothing):
- `search` brings it up to date before it answers: for each object whose index.db `seq_max` differs
  from the mark the side file recorded, the rows above that mark are read from the object (under the
  object's lock) and indexed; an object the side file does not know is indexed whole.
- Every change to an object's rows other than an append (pop, clear, prune, redact, summarize) and every
  removal of an object (delete, TTL, purge, forget, quarantine) EVICTS the object from its side file
  first, under the object's lock and before the change commits, so a crash in between leaves the object
  to be indexed again at the next search, never a removed token behind.
- An eviction that removed text merges the index into one segment (FTS5 'optimize') with
  `secure_delete` on and a rollback journal (no WAL to linger in), so no token of a removed row stays in
  any file. A command removing many objects (purge, forget) defers the merge to its end (`flush`); the
  file records that a merge is owed, so a crash before it is made good by the next open.
Path: search/<sid[:2]>/<sid>.sqlite3, sid an HMAC of (scope, owner) keyed like object ids: no user,
tenant or NAME appears in a path.
"""

import os
import sqlite3

from . import ids, schema
from . import paths as _paths

TOKENIZE = "unicode61 remove_diacritics 2"
_SCHEMA = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(content, arguments, tokenize='{TOKENIZE}')",
    # one row per indexed transcript row; rowid shared with fts
    "CREATE TABLE IF NOT EXISTS docs (rowid INTEGER PRIMARY KEY, object_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " role TEXT, created_at INTEGER, superseded INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS docs_by_object ON docs (object_id, seq)",
    # what of each object is indexed: its rows up to MARK (seq)
    "CREATE TABLE IF NOT EXISTS synced (object_id TEXT PRIMARY KEY, mark INTEGER NOT NULL) WITHOUT ROWID",
    # 1 while a deferred merge is owed (rows were evicted, their tokens still in older segments)
    "CREATE TABLE IF NOT EXISTS owed (one INTEGER PRIMARY KEY CHECK (one = 1))",
)
# What a row gives the index: the same text the per-object index holds (content; tool call arguments)
ROWS_ABOVE = (
    "SELECT seq, role, created_at, superseded_by IS NOT NULL, content, CASE WHEN tool_calls IS NULL THEN NULL ELSE"
    " (SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each(turns.tool_calls)) END"
    " FROM turns WHERE seq > ? ORDER BY seq"
)


def side_id(secret: bytes, id_scope: str, owner: str) -> str:
    return ids.hmac_sha256(secret, ids.encode_fields("search", id_scope, owner))


def directory(paths) -> str:
    return os.path.join(paths.home, "search")


def side_path(paths, sid: str) -> str:
    return os.path.join(directory(paths), sid[:2], sid + ".sqlite3")


def connect(path: str, *, create: bool, timeout: float = 10.0, synchronous: str = "FULL", settle: bool = True):
    """The side file at PATH (made if CREATE), or None when it does not exist. A side file that SQLite
    cannot read is removed and, with CREATE, started afresh: it is only a cache."""
    if not create and not os.path.exists(path):
        return None
    for attempt in (1, 2):
        if create:
            _paths.make_dir(os.path.dirname(os.path.dirname(path)))
            _paths.make_dir(os.path.dirname(path))
        try:
            if os.path.islink(path):
                raise sqlite3.DatabaseError("side file is a symlink")
            db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
            try:
                os.chmod(path, 0o600)
            except OSError:
                pass
            db.execute("PRAGMA secure_delete = ON")
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "delete":
                db.execute("PRAGMA journal_mode = DELETE")
            # evictions are durable before the removal they precede commits; catching up (search) needs no
            # fsync: a side file lost or torn by a power cut is only a cache, discarded and rebuilt
            db.execute(f"PRAGMA synchronous = {synchronous}")
            if db.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'owed'").fetchone()[0] == 0:
                db.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute("COMMIT")
            if settle and db.execute("SELECT 1 FROM owed").fetchone() is not None:
                merge_segments(db)
            return db
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise
            discard(path)
        except sqlite3.DatabaseError:
            discard(path)
        if not create or attempt == 2:
            return None
    return None


def discard(path: str) -> None:
    """Remove a side file and its journal (a cache: the next search rebuilds it)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        _paths.unlink_quiet(path + suffix)


def merge_segments(db) -> None:
    """Merge the index into one segment, so no token of an evicted row survives in an older one."""
    db.execute("BEGIN IMMEDIATE")
    try:
        schema.merge_fts_segments(db, "fts")
        db.execute("DELETE FROM owed")
        db.execute("COMMIT")  # secure_delete zeroed the pages the old segments held
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def drop_object(db, object_id: str) -> bool:
    """Inside a transaction: remove the object's rows and mark; True when it had rows."""
    rowids = [r for (r,) in db.execute("SELECT rowid FROM docs WHERE object_id = ?", (object_id,))]
    if rowids:
        for start in range(0, len(rowids), 500):
            part = rowids[start:start + 500]
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM fts WHERE rowid IN ({marks})", part)
            db.execute(f"DELETE FROM docs WHERE rowid IN ({marks})", part)
    db.execute("DELETE FROM synced WHERE object_id = ?", (object_id,))
    return bool(rowids)


def evict(paths, secret, id_scope: str, owner: str, object_ids, **kw) -> None:
    """Take the objects out of their owner's side file (a no-op when there is none)."""
    evict_at(side_path(paths, side_id(secret, id_scope, owner)), object_ids, **kw)


def evict_at(path: str, object_ids, *, deferred=None, merge: bool = True, timeout: float = 10.0, cache=None) -> None:
    """Take the objects (ids) out of the side file at PATH, in one transaction. The merge that drops their
    tokens runs now, or, when DEFERRED (a set) is given, is owed (recorded in the file) and PATH added to
    the set; MERGE false: the objects' text is still in them (it only changed shape), nothing to merge.
    CACHE (a dict): connections kept for the command's other evictions (closed by `close_all`)."""
    db = cache.get(path) if cache is not None else None
    if db is None:
        db = connect(path, create=False, timeout=timeout, settle=deferred is None)
        if db is None:
            return
        if cache is not None:
            cache[path] = db
    try:
        present = [i for i in object_ids if db.execute(
            "SELECT 1 FROM synced WHERE object_id = ? UNION ALL SELECT 1 FROM docs WHERE object_id = ? LIMIT 1",
            (i, i)).fetchone() is not None]
        if not present:
            return  # not indexed: nothing to take out (no write, no fsync)
        db.execute("BEGIN IMMEDIATE")
        try:
            removed = False
            for object_id in present:
                removed = drop_object(db, object_id) or removed
            removed = removed and merge
            if removed and deferred is not None:
                db.execute("INSERT OR IGNORE INTO owed (one) VALUES (1)")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        if removed:
            if deferred is None:
                merge_segments(db)
            else:
                deferred.add(path)
    finally:
        if cache is None:
            db.close()


def close_all(cache) -> None:
    for db in cache.values():
        db.close()
    cache.clear()


def flush(paths_set, timeout: float = 10.0) -> None:
    """The merges owed by deferred evictions."""
    for path in sorted(paths_set):
        db = connect(path, create=False, timeout=timeout)  # connect merges what is owed
        if db is not None:
            db.close()
    paths_set.clear()


def _files(paths):
    """(folder, name) of every file in the side files' shard folders (real directories only, sorted)."""
    top = directory(paths)
    if not _paths.real_dir(top):
        return
    for shard in sorted(os.listdir(top)):
        folder = os.path.join(top, shard)
        if _paths.real_dir(folder):
            for name in sorted(os.listdir(folder)):
                yield folder, name


def each_side_file(paths):
    """Every side file's path (for an eviction whose owner index.db no longer knows)."""
    for folder, name in _files(paths):
        if name.endswith(".sqlite3"):
            yield os.path.join(folder, name)


def leftovers(path: str, present) -> list:
    """What of removed objects the side file at PATH may still hold (docs/reference/storage.md §3 intents, §7 forget): an
    interrupted write (a rollback journal or WAL beside it, holding the pages it replaced), a merge owed by
    a deferred eviction, rows of objects whose file is gone (PRESENT: the ids of the object files there
    are). Read without writing; a file with a journal is not opened (opening it would roll it back)."""
    if any(os.path.lexists(path + suffix) for suffix in ("-journal", "-wal")):
        return ["an interrupted write"]
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0, isolation_level=None)
        try:
            owed = db.execute("SELECT 1 FROM owed").fetchone() is not None
            gone = _gone(db, present)
        finally:
            db.close()
    except sqlite3.Error:
        return []  # unreadable (discarded by its next open) or busy: nothing to say now
    return (["a merge owed"] if owed else []) + ([f"{len(gone)} removed object(s)"] if gone else [])


def _gone(db, present) -> list:
    return [i for (i,) in db.execute("SELECT object_id FROM synced UNION SELECT DISTINCT object_id FROM docs")
            if i not in present]


def settle(path: str, present, timeout: float = 10.0) -> bool:
    """Finish every erasure a killed command began in the side file at PATH: its rollback journal rolled
    back (connect), the merge it owes made, the rows of objects whose file is gone (not in PRESENT)
    evicted and merged away. True when there was something to finish."""
    found = bool(leftovers(path, present))
    db = connect(path, create=False, timeout=timeout, settle=False)  # a hot journal is rolled back here
    if db is None:
        return found  # unreadable: discarded (a cache)
    try:
        gone = _gone(db, present)
        if gone:
            db.execute("BEGIN IMMEDIATE")
            try:
                for object_id in gone:
                    drop_object(db, object_id)
                db.execute("INSERT OR IGNORE INTO owed (one) VALUES (1)")
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        if db.execute("SELECT 1 FROM owed").fetchone() is not None:
            found = True
            merge_segments(db)
        if os.path.lexists(path + "-journal"):
            # Not hot (a write killed before its journal's header was synced: the file itself was never
            # written), so SQLite leaves it, with the pages it copied. Under the exclusive lock nobody writes.
            db.execute("BEGIN EXCLUSIVE")
            try:
                _paths.unlink_quiet(path + "-journal")
            finally:
                db.execute("ROLLBACK")
    finally:
        db.close()
    return found


def strays(paths):
    """Journals and WALs left beside no side file (a discard killed between its unlinks): they may hold
    removed text, and no open of a side file will ever look at them."""
    for folder, name in _files(paths):
        for suffix in ("-journal", "-wal", "-shm"):
            if name.endswith(".sqlite3" + suffix) and not os.path.lexists(os.path.join(folder, name[:-len(suffix)])):
                yield os.path.join(folder, name)
