"""The object file's schema as an ordered list of named migrations, recorded in PRAGMA user_version.

A new column is a new step; an old step is never edited. A file newer than the last step is refused.
"""

MIGRATIONS = [
    (
        "initial",
        """
        CREATE TABLE IF NOT EXISTS object (
            one INTEGER PRIMARY KEY CHECK (one = 1),
            id TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL,
            title TEXT, status TEXT NOT NULL,
            created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_active_at INTEGER NOT NULL,
            ttl_seconds INTEGER, expires_at INTEGER,
            live_turns INTEGER NOT NULL DEFAULT 0, live_tokens INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS participants (
            user TEXT PRIMARY KEY, role TEXT NOT NULL, joined_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS prompts (
            id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT NOT NULL, content TEXT NOT NULL,
            author TEXT, source TEXT, request_id TEXT UNIQUE, turn_seq INTEGER,
            created_at INTEGER NOT NULL, started_at INTEGER, lease_expires_at INTEGER,
            completed_at INTEGER, error TEXT
        );
        CREATE INDEX IF NOT EXISTS prompts_by_status ON prompts (status, id);
        CREATE TABLE IF NOT EXISTS turns (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT NOT NULL, content TEXT NOT NULL,
            tokens INTEGER NOT NULL, author TEXT, created_at INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT 'turn', superseded_by INTEGER,
            covers_first INTEGER, covers_last INTEGER, call_id TEXT, request_id TEXT UNIQUE,
            pos INTEGER AS (CASE WHEN kind = 'summary' THEN covers_first ELSE seq END) VIRTUAL
        );
        CREATE INDEX IF NOT EXISTS turns_live_by_pos ON turns (pos) WHERE superseded_by IS NULL;
        CREATE INDEX IF NOT EXISTS turns_by_created ON turns (created_at);
        CREATE TABLE IF NOT EXISTS events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, actor TEXT,
            data TEXT NOT NULL, at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS requests (
            id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT NOT NULL, prompt TEXT NOT NULL,
            choices TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER,
            answer TEXT, comment TEXT, answered_by TEXT, answered_at INTEGER
        );
        CREATE TABLE IF NOT EXISTS facts (
            key TEXT PRIMARY KEY, value TEXT NOT NULL, source TEXT NOT NULL,
            confirmed INTEGER NOT NULL, created_at INTEGER NOT NULL,
            confirmed_at INTEGER, expires_at INTEGER
        );
        CREATE TABLE IF NOT EXISTS buckets (
            key TEXT PRIMARY KEY, tokens REAL NOT NULL, updated_at INTEGER NOT NULL
        );
        """,
    ),
]

VERSION = len(MIGRATIONS)

INDEX_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    id TEXT PRIMARY KEY, scope TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL, title TEXT,
    status TEXT, created_at INTEGER, updated_at INTEGER, last_active_at INTEGER,
    turns INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0,
    expires_at INTEGER, next_alarm_at INTEGER
);
CREATE INDEX IF NOT EXISTS objects_by_activity ON objects (last_active_at, id);
CREATE INDEX IF NOT EXISTS objects_by_alarm ON objects (next_alarm_at) WHERE next_alarm_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS objects_by_owner ON objects (owner, scope);
CREATE TABLE IF NOT EXISTS members (
    user TEXT NOT NULL, object_id TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (user, object_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS members_by_object ON members (object_id);
CREATE TABLE IF NOT EXISTS purge_journal (
    id TEXT PRIMARY KEY, owner TEXT, name TEXT, created_at INTEGER, started_at INTEGER NOT NULL
);
"""
INDEX_VERSION = 1
