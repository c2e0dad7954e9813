"""index.db: one row per object, so objects can be listed, expired and purged without opening them.

It is a cache of the objects (each object stores its own scope, owner and NAME) and can always be
rebuilt from them; so it runs WAL with synchronous=NORMAL and a busy timeout for many writers.
"""

import json
import os
import sqlite3
import threading

from ..errors import DurableError
from . import ids, schema
from . import paths as _paths

COLUMNS = (
    "id", "scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
    "turns", "tokens", "expires_at", "next_alarm_at", "external_id", "seq_max", "pending_at",
    "pending_requests",
)
_UPSERT = (
    f"INSERT OR REPLACE INTO objects ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
)
USAGE_COLUMNS = ("day", "model", *schema.TOTAL_COLUMNS)


def _put_usage(db, row) -> None:
    """The object's usage totals (a row's "usage": tuples in USAGE_COLUMNS order) replace what index.db had."""
    if "usage" not in row:
        return
    db.execute("DELETE FROM usage WHERE object_id = ?", (row["id"],))
    db.executemany(f"INSERT INTO usage (object_id, {', '.join(USAGE_COLUMNS)}) VALUES (?{', ?' * len(USAGE_COLUMNS)})",
                   [(row["id"], *u) for u in row["usage"]])


def _put_tags(db, row) -> None:
    """The object's tags (a row's "tags": (key, value) pairs) replace what index.db had (docs/reference/storage.md §3)."""
    if "tags" not in row:
        return
    db.execute("DELETE FROM tags WHERE object_id = ?", (row["id"],))
    db.executemany("INSERT INTO tags (object_id, key, value) VALUES (?, ?, ?)", [(row["id"], k, v) for k, v in row["tags"]])


def _update(db, object_id, values, before) -> bool:
    """Update the columns of OBJECT_ID's row that differ from BEFORE (what we wrote last); False when the
    row is not there (then the caller writes it whole)."""
    changed = [i for i, (v, old) in enumerate(zip(values, before)) if v != old or type(v) is not type(old)]
    if not changed:
        return db.execute("SELECT 1 FROM objects WHERE id = ?", (object_id,)).fetchone() is not None
    key = tuple(changed)
    sql = _UPDATES.get(key)
    if sql is None:
        sql = _UPDATES[key] = f"UPDATE objects SET {', '.join(COLUMNS[i] + ' = ?' for i in changed)} WHERE id = ?"
    return db.execute(sql, [values[i] for i in changed] + [object_id]).rowcount == 1


_UPDATES: dict = {}  # the changed columns' positions -> their UPDATE (a few sets recur: each write moves the same ones)
_UPDATE_USAGE = (f"UPDATE usage SET {', '.join(c + ' = ?' for c in USAGE_COLUMNS[2:])}"
                 " WHERE object_id = ? AND day = ? AND model IS ?")


def _update_usage(db, object_id, usage, before) -> bool:
    """Update the usage rows that changed in place, when the (day, model) keys are those written last."""
    if before is None or [u[:2] for u in usage] != [u[:2] for u in before]:
        return False
    for new, old in zip(usage, before):
        if new != old:
            cur = db.execute(_UPDATE_USAGE, (*new[2:], object_id, new[0], new[1]))
            if cur.rowcount != 1:
                return False
    return True


class Index:
    def __init__(self, paths: "_paths.Paths", secret=lambda: None):
        self.paths = paths
        self.secret = secret  # () -> the installation secret or None, loaded only when needed
        self.db: sqlite3.Connection | None = None
        self._recorded = False
        self._guard = threading.RLock()  # one connection, shared by the threads of a Store: one transaction at a time
        # What this connection last wrote for each object (its row's values, members, usage), valid while no
        # other connection commits to index.db (PRAGMA data_version as it stood after our last commit): an
        # upsert then writes only what changed (a long-lived Store writes one object again and again).
        self._written: dict = {}
        self._version = None
        # Tombstones read (object id -> row or None), valid while index.db's PRAGMA data_version stays
        # _graves_version (no other connection committed) and this connection wrote no tombstone: the
        # LangGraph saver asks at every put whether the thread was deleted.
        self._graves: dict = {}
        self._graves_version = None

    def connect(self, *, create: bool) -> bool:
        """Open index.db (upgrading it); False when it does not exist and CREATE is false.

        CREATE (every write) also records the secret's check value in an index that has none yet.
        """
        if self.db is None:
            from .sqlite import _read_only_uri, sqlite_error

            what = f"the index {self.paths.index}"
            exists = self.paths.check_index()
            if not exists:
                if not create:
                    return False
                _paths.create_file(self.paths.index)
            try:
                if os.access(self.paths.home, os.W_OK):
                    db = sqlite3.connect(self.paths.index, isolation_level=None, check_same_thread=False, timeout=30)
                else:  # a data directory we may read but not write: no -shm can be made there
                    db = sqlite3.connect(_read_only_uri(self.paths.index, what), uri=True, isolation_level=None,
                                         check_same_thread=False, timeout=30)
                try:
                    db.execute("PRAGMA busy_timeout=30000")
                    db.execute("PRAGMA synchronous=NORMAL")
                    db.execute("PRAGMA secure_delete=ON")
                    schema.migrate(db, schema.INDEX_MIGRATIONS, what)
                except BaseException:
                    db.close()
                    raise
            except sqlite3.Error as e:
                raise sqlite_error(e, what) from e
            self.db = db
        if create and not self._recorded:
            self._run(self._record_check)
            self._recorded = True
        return True

    def _record_check(self, db) -> None:
        """Record the secret's check value once, unless the rows already there were made under another secret."""
        if db.execute("SELECT 1 FROM installation WHERE key = 'secret_check'").fetchone():
            return
        secret = self.secret()
        if secret is None or self._rows_match(db, secret) is False:
            return  # a mismatch is the caller's to report (secret_matches); never record the wrong secret
        db.execute("INSERT OR IGNORE INTO installation (key, value) VALUES ('secret_check', ?)", (ids.check_value(secret),))

    @staticmethod
    def _rows_match(db, secret):
        row = db.execute("SELECT id, scope, owner, name FROM objects LIMIT 1").fetchone()
        if row is None:
            return None
        return ids.object_id(secret, ids.id_scope(row[1]), row[2], row[3]) == row[0]

    def record_check(self) -> None:
        """Record the secret's check value now (after a rebuild from the objects), if rows agree with it."""
        self.connect(create=True)
        self._run(self._record_check)
        self._recorded = True

    def secret_matches(self, secret: bytes):
        """True/False when index.db can tell whether SECRET is this installation's; None when it cannot."""
        if not self.connect(create=False):
            return None

        def check(db):
            row = db.execute("SELECT value FROM installation WHERE key = 'secret_check'").fetchone()
            if row is not None:
                return row[0] == ids.check_value(secret)
            return self._rows_match(db, secret)  # an index from before the check value was recorded

        return self._run(check)

    def recreate(self) -> None:
        """Replace a damaged index.db by an empty one (to be rebuilt from the objects), keeping what the
        objects cannot give back -- the secret's check value, intents, tombstones -- as far as it reads."""
        kept = {}
        try:
            db = self.db if self.connect(create=False) else None
            if db is not None:
                tables = [r[0] for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('objects', 'members', 'usage', 'tags')"
                    " AND name NOT LIKE 'sqlite_%'")]
                for table in tables:
                    try:
                        cursor = db.execute(f'SELECT * FROM "{table}"')
                        kept[table] = ([c[0] for c in cursor.description], cursor.fetchall())
                    except sqlite3.Error:
                        continue
        except (DurableError, sqlite3.Error):
            pass
        self.close()
        _paths.unlink_quiet(self.paths.index)
        for suffix in _paths.SIDE_SUFFIXES:
            _paths.unlink_quiet(self.paths.index + suffix)
        self._recorded = True  # the check value comes back with the kept rows, or with replace_all's rows
        self._graves.clear()
        self.connect(create=True)

        def restore(db):
            db.execute("BEGIN IMMEDIATE")
            known = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table, (columns, rows) in kept.items():
                if table in known and rows:
                    db.executemany(
                        f'INSERT OR IGNORE INTO "{table}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})',
                        rows,
                    )
            db.execute("COMMIT")

        self._run(restore)

    def _run(self, fn):
        with self._guard:
            try:
                return fn(self.db)
            except sqlite3.Error as e:
                from .sqlite import sqlite_error

                try:
                    if self.db.in_transaction:
                        self.db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise sqlite_error(e, f"the index {self.paths.index}") from e

    def rows(self, sql: str, params=()):
        """Read-only query; [] when there is no index yet."""
        if not self.connect(create=False):
            return []
        def query(db):
            cursor = db.execute(sql, params)
            columns = [c[0] for c in cursor.description]
            return [dict(zip(columns, row)) for row in cursor.fetchall()]

        return self._run(query)

    def tuples(self, sql: str, params=()) -> list:
        """rows() as plain tuples (a report over many rows: no dict per row); [] when there is no index yet."""
        if not self.connect(create=False):
            return []
        return self._run(lambda db: db.execute(sql, params).fetchall())

    def execute_many(self, sql: str, params) -> None:
        """One write transaction of SQL over PARAMS (a no-op when there is no index yet)."""
        if not self.connect(create=False):
            return

        def work(db):
            db.execute("BEGIN IMMEDIATE")
            db.executemany(sql, params)
            db.execute("COMMIT")
            self._written.clear()  # what upsert remembers may no longer be what the rows hold
            self._graves.clear()

        self._run(work)

    def upsert(self, row: dict, members) -> None:
        object_id = row["id"]
        values = [row.get(c) for c in COLUMNS]
        members = [tuple(m) for m in members]
        usage = [tuple(u) for u in row["usage"]] if "usage" in row else None
        tags = [tuple(t) for t in row["tags"]] if "tags" in row else None

        def work(db):
            db.execute("BEGIN IMMEDIATE")
            before = self._written.pop(object_id, None)
            version = db.execute("PRAGMA data_version").fetchone()[0]  # read under the write lock: no commit slips by
            if before is not None and version != self._version:
                self._written.clear()  # another connection wrote index.db since: what we wrote may be gone
                before = None
            if before is None or not _update(db, object_id, values, before[0]):
                db.execute(_UPSERT, values)
            if before is None or usage != before[2]:
                if before is None or usage is None or not _update_usage(db, object_id, usage, before[2]):
                    _put_usage(db, row)
            if before is None or tags != before[3]:
                _put_tags(db, row)
            if before is None or members != before[1]:
                db.execute("DELETE FROM members WHERE object_id = ?", (object_id,))
                db.executemany("INSERT OR REPLACE INTO members (user, object_id, role) VALUES (?, ?, ?)",
                               [(user, object_id, role) for user, role in members])
            db.execute("COMMIT")
            self._version = version  # our own commit does not change it
            self._written[object_id] = (values, members, usage, tags)

        self.connect(create=True)
        self._run(work)

    def remove(self, object_id: str) -> None:
        self._written.pop(object_id, None)
        if not self.connect(create=False):
            return

        def work(db):
            self._written.pop(object_id, None)  # (under the guard: an upsert of another thread may have run)
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM objects WHERE id = ?", (object_id,))
            db.execute("DELETE FROM members WHERE object_id = ?", (object_id,))
            db.execute("DELETE FROM usage WHERE object_id = ?", (object_id,))
            db.execute("DELETE FROM tags WHERE object_id = ?", (object_id,))
            db.execute("DELETE FROM purge_journal WHERE id = ?", (object_id,))
            db.execute("COMMIT")

        self._run(work)

    def journal(self, object_id, identity, *, owner=None, name=None, created_at=None, started_at, action="delete") -> None:
        """Record the intent to remove this object before any of its files is unlinked, with the identity
        (dev, ino, size, mtime_ns, wal_size) of its file as durable left it."""
        def work(db):
            from .sqlite import commit

            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT OR REPLACE INTO purge_journal (id, owner, name, created_at, started_at, dev, ino, size, mtime_ns,"
                " wal_size, action) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (object_id, owner, name, created_at, started_at, *identity, action),
            )
            commit(db)  # from here the removal is as good as done (the journal finishes it)

        self.connect(create=True)
        self._run(work)

    def bury(self, object_id: str, owner: str, last_checkpoint, at: int, members=()) -> None:
        """Leave (or move forward) the tombstone of a deleted adapter thread; its readers are MEMBERS (the
        participants it had), joined with those of any thread buried at that id before."""
        self.connect(create=True)
        self._graves.clear()

        def work(db):
            had = db.execute("SELECT members FROM tombstones WHERE id = ?", (object_id,)).fetchone()
            readers = sorted(set(json.loads(had[0]) if had and had[0] else []) | set(members))
            db.execute(
                "INSERT INTO tombstones (id, owner, last_checkpoint, deleted_at, members) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET last_checkpoint = max(coalesce(last_checkpoint, ''), coalesce(excluded.last_checkpoint, '')),"
                " deleted_at = excluded.deleted_at, members = excluded.members",
                (object_id, owner, last_checkpoint, at, json.dumps(readers, separators=(",", ":"))))

        self._run(work)

    def tombstone(self, object_id: str, reader: str, *, user_scoped: bool):
        """OBJECT_ID's tombstone {id, owner, last_checkpoint, deleted_at} as READER may see it (docs/reference/integrations.md §12): only a
        participant the thread had when deleted reads it (one buried before they were kept: a user-scoped
        thread's owner); to anyone else None, exactly as for a thread never made."""
        grave = self._grave(object_id)
        if grave is None:
            return None
        readers = grave["members"]
        if reader in (json.loads(readers) if readers else []) or (readers is None and user_scoped and reader == grave["owner"]):
            return {k: grave[k] for k in ("id", "owner", "last_checkpoint", "deleted_at")}
        return None

    def _grave(self, object_id: str):
        """OBJECT_ID's tombstone row with its readers, or None (remembered while nobody else commits to
        index.db: one PRAGMA instead of a query)."""
        if not self.connect(create=False):
            return None

        def read(db):
            version = db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._graves_version:
                self._graves.clear()
                self._graves_version = version
            if object_id in self._graves:
                return self._graves[object_id]
            row = db.execute("SELECT id, owner, last_checkpoint, deleted_at, members FROM tombstones WHERE id = ?", (object_id,)).fetchone()
            found = None if row is None else dict(zip(("id", "owner", "last_checkpoint", "deleted_at", "members"), row))
            if len(self._graves) >= 4096:
                self._graves.clear()
            self._graves[object_id] = found
            return found

        return self._run(read)

    def erase_tombstones(self, owner: str) -> None:
        if self.connect(create=False):
            self._graves.clear()
            self._run(lambda db: db.execute("DELETE FROM tombstones WHERE owner = ?", (owner,)))

    def unjournal(self, object_id: str) -> None:
        self._run(lambda db: db.execute("DELETE FROM purge_journal WHERE id = ?", (object_id,)))

    def replace_all(self, rows_and_members) -> None:
        """Rebuild: every row from the objects, in one transaction (doctor --repair, backup)."""
        def work(db):
            self._written.clear()  # under the guard, so no upsert records a row this rewrites
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM objects")
            db.execute("DELETE FROM members")
            db.execute("DELETE FROM usage")
            db.execute("DELETE FROM tags")
            for row, members in rows_and_members:
                db.execute(_UPSERT, [row.get(c) for c in COLUMNS])
                _put_usage(db, row)
                _put_tags(db, row)
                db.executemany(
                    "INSERT OR REPLACE INTO members (user, object_id, role) VALUES (?, ?, ?)",
                    [(user, row["id"], role) for user, role in members],
                )
            self._record_check(db)  # checked against the rows just rebuilt from the objects
            db.execute("COMMIT")

        self.connect(create=True)
        self._run(work)

    def wipe_free_space(self) -> None:
        """After erasing rows: secure_delete has zeroed them; fold and truncate the WAL too."""
        if self.connect(create=False):
            self._run(lambda db: db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())

    def integrity(self):
        if not self.connect(create=False):
            return []
        return [r[0] for r in self._run(lambda db: db.execute("PRAGMA integrity_check").fetchall()) if r[0] != "ok"]

    def close(self) -> None:
        self._written.clear()
        self._graves.clear()
        if self.db is not None:
            self.db.close()
            self.db = None
