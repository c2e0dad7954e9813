"""Where bytes live: paths, ids, locks, SQLite files, migrations and index.db. Knows nothing of sessions."""
