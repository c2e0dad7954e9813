"""index.db: one row per object, so objects can be listed, expired and purged without opening them.

It is a cache of the objects (each object stores its own scope, owner and NAME) and can always be
rebuilt from them; so it runs WAL with synchronous=NORMAL and a busy timeout for many writers.
"""

import sqlite3

from . import paths as _paths, schema

COLUMNS = (
    "id", "scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
    "turns", "tokens", "expires_at", "next_alarm_at",
)
_UPSERT = (
    f"INSERT OR REPLACE INTO objects ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
)


class Index:
    def __init__(self, paths: "_paths.Paths"):
        self.paths = paths
        self.db = None

    def connect(self, *, create: bool) -> bool:
        """Open index.db; False when it does not exist and CREATE is false."""
        if self.db is not None:
            return True
        from .objects import sqlite_error

        exists = _paths.refuse_symlink(self.paths.index)
        if not exists:
            if not create:
                return False
            _paths.create_file(self.paths.index)
        try:
            db = sqlite3.connect(self.paths.index, isolation_level=None, check_same_thread=False, timeout=30)
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA secure_delete=ON")
            if db.execute("PRAGMA user_version").fetchone()[0] != schema.INDEX_VERSION:
                if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                db.executescript(f"BEGIN IMMEDIATE; {schema.INDEX_SCHEMA}; PRAGMA user_version={schema.INDEX_VERSION}; COMMIT;")
        except sqlite3.Error as e:
            raise sqlite_error(e, f"the index {self.paths.index}")
        self.db = db
        return True

    def _run(self, fn):
        from .objects import sqlite_error

        try:
            return fn(self.db)
        except sqlite3.Error as e:
            try:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise sqlite_error(e, f"the index {self.paths.index}")

    def rows(self, sql: str, params=()):
        """Read-only query; [] when there is no index yet."""
        if not self.connect(create=False):
            return []
        def query(db):
            cursor = db.execute(sql, params)
            columns = [c[0] for c in cursor.description]
            return [dict(zip(columns, row)) for row in cursor.fetchall()]

        return self._run(query)

    def upsert(self, row: dict, members) -> None:
        def work(db):
            db.execute("BEGIN IMMEDIATE")
            db.execute(_UPSERT, [row.get(c) for c in COLUMNS])
            db.execute("DELETE FROM members WHERE object_id = ?", (row["id"],))
            db.executemany(
                "INSERT OR REPLACE INTO members (user, object_id, role) VALUES (?, ?, ?)",
                [(user, row["id"], role) for user, role in members],
            )
            db.execute("COMMIT")

        self.connect(create=True)
        self._run(work)

    def remove(self, object_id: str) -> None:
        if not self.connect(create=False):
            return

        def work(db):
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM objects WHERE id = ?", (object_id,))
            db.execute("DELETE FROM members WHERE object_id = ?", (object_id,))
            db.execute("DELETE FROM purge_journal WHERE id = ?", (object_id,))
            db.execute("COMMIT")

        self._run(work)

    def journal(self, entries) -> None:
        """Record the intent to delete these objects before any file is unlinked."""
        def work(db):
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT OR REPLACE INTO purge_journal (id, owner, name, created_at, started_at) VALUES (?, ?, ?, ?, ?)",
                entries,
            )
            db.execute("COMMIT")

        self.connect(create=True)
        self._run(work)

    def unjournal(self, object_id: str) -> None:
        self._run(lambda db: db.execute("DELETE FROM purge_journal WHERE id = ?", (object_id,)))

    def replace_all(self, rows_and_members) -> None:
        """Rebuild: every row from the objects, in one transaction (doctor --repair, backup)."""
        def work(db):
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM objects")
            db.execute("DELETE FROM members")
            for row, members in rows_and_members:
                db.execute(_UPSERT, [row.get(c) for c in COLUMNS])
                db.executemany(
                    "INSERT OR REPLACE INTO members (user, object_id, role) VALUES (?, ?, ?)",
                    [(user, row["id"], role) for user, role in members],
                )
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
        if self.db is not None:
            self.db.close()
            self.db = None
