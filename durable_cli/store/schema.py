"""Schemas of the object files and of index.db: ordered lists of named steps, recorded in PRAGMA user_version.

A new column is a new step appended to its list; an old step is never edited. One mechanism, `migrate`,
upgrades both kinds of file in one transaction, and refuses a file newer than the last step it knows.
Steps are plain SQL; statements are split where SQLite says a statement is complete, so a trigger's
body (`BEGIN ...; ...; END`) stays one statement.
"""

import sqlite3

from ..errors import storage

# What the search index reads of a row's tool calls: their arguments, one a line (ROW is turns, NEW or OLD).
_ARGUMENTS = ("(SELECT group_concat(json_extract(value, '$.arguments'), char(10)) FROM json_each({row}.tool_calls))")
# One row's share of usage_totals, added (SIGN +) or taken away (SIGN -): keyed by UTC day and model.
_USAGE_ROW = (
    "strftime('%Y-%m-%d', {row}.created_at / 1000.0, 'unixepoch') AS day, json_extract({row}.meta, '$.model') AS model,"
    " {row}.kind = 'turn' AS turns, {row}.tokens AS tokens,"
    " coalesce(json_extract({row}.meta, '$.usage.input_tokens'), 0) AS input_tokens,"
    " coalesce(json_extract({row}.meta, '$.usage.output_tokens'), 0) AS output_tokens,"
    " coalesce(json_extract({row}.meta, '$.cost_usd'), 0) AS cost_usd"
)
_USAGE_ADD = (
    "INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd)"
    " SELECT day || coalesce('=' || model, ''), day, model, {sign}1, {sign}turns, {sign}tokens, {sign}input_tokens,"
    " {sign}output_tokens, {sign}cost_usd FROM (SELECT " + _USAGE_ROW + ") WHERE true"
    " ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns,"
    " tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens,"
    " output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd;"
)
# usage_totals recomputed from the rows (the migration's backfill; doctor compares and repairs with it)
USAGE_FROM_ROWS = (
    "SELECT day || coalesce('=' || model, '') AS key, day, model, count(*) AS rows, sum(turns) AS turns,"
    " sum(tokens) AS tokens, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,"
    " sum(cost_usd) AS cost_usd FROM (SELECT " + _USAGE_ROW.format(row="turns") + " FROM turns"
    " WHERE forked_from IS NULL) GROUP BY day, model"
)
_USAGE_BACKFILL = (
    "INSERT OR REPLACE INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) "
    + USAGE_FROM_ROWS + ";"
)

# Since the step "derived tables caught up at commit": turns_fts and usage_totals hold every row up to
# turns_mark.mark; each write transaction brings them up to date once, just before its COMMIT (`catch_up`),
# instead of a trigger per inserted row. A row above the mark is not indexed or counted yet, so deleting
# or changing it takes nothing away; a table emptied (`clear`, `import --replace`) starts over at mark 0.
_COUNTED = "{row}.seq <= (SELECT mark FROM turns_mark)"
_USAGE_ADD_COUNTED = (
    "INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd)"
    " SELECT day || coalesce('=' || model, ''), day, model, {sign}1, {sign}turns, {sign}tokens, {sign}input_tokens,"
    " {sign}output_tokens, {sign}cost_usd FROM (SELECT " + _USAGE_ROW + ") WHERE " + _COUNTED +
    " ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns,"
    " tokens = tokens + excluded.tokens, input_tokens = input_tokens + excluded.input_tokens,"
    " output_tokens = output_tokens + excluded.output_tokens, cost_usd = cost_usd + excluded.cost_usd;"
)
# A usage count's new total, exact: SQLite's `+` turns an overflowing sum into a float, so past 2^63-1 the statement
# fails instead (abs() of the smallest integer is SQLite's "integer overflow" error, as sum() gives): exit 7 (docs/reference/transcript.md §6).
_EXACT = ("CASE WHEN typeof({0} + excluded.{0}) = 'integer' THEN {0} + excluded.{0}"
          " ELSE abs(-9223372036854775807 - 1) END")
# Since the step "usage totals priced at answer time" (docs/reference/retention.md §7 usage, Cost): the totals also
# keep the cache reads and writes of every row, and, for the rows with `meta.usage` but no `meta.cost_usd`
# (those `usage` prices with the table in force when it answers), their count and their token sums as
# priced: base = max(0, input - cache reads - cache writes), cache reads, cache writes, output.
PRICED_COLUMNS = ("cache_read_tokens", "cache_write_tokens", "uncosted_rows", "uncosted_base", "uncosted_cache_read",
                  "uncosted_cache_write", "uncosted_output")
TOTAL_COLUMNS = ("rows", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", *PRICED_COLUMNS)
_PRICED_ROW = (
    _USAGE_ROW + ","
    " coalesce(json_extract({row}.meta, '$.usage.cache_read_tokens'), 0) AS cache_read_tokens,"
    " coalesce(json_extract({row}.meta, '$.usage.cache_write_tokens'), 0) AS cache_write_tokens,"
    " coalesce(json_type({row}.meta, '$.usage') = 'object' AND json_type({row}.meta, '$.cost_usd') IS NULL, 0) AS uncosted"
)
# one row's values in TOTAL_COLUMNS order (after key, day, model), from the row select above
_PRICED_VALUES = (
    "{sign}1, {sign}turns, {sign}tokens, {sign}input_tokens, {sign}output_tokens, {sign}cost_usd,"
    " {sign}cache_read_tokens, {sign}cache_write_tokens, {sign}uncosted,"
    " {sign}(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)), {sign}(uncosted * cache_read_tokens),"
    " {sign}(uncosted * cache_write_tokens), {sign}(uncosted * output_tokens)"
)
_TOTALS_INSERT = "INSERT INTO usage_totals (key, day, model, " + ", ".join(TOTAL_COLUMNS) + ")"
_TOTALS_ADD = " ON CONFLICT (key) DO UPDATE SET " + ", ".join(
    f"{c} = {c} + excluded.{c}" for c in TOTAL_COLUMNS)
_TOTALS_ADD_EXACT = " ON CONFLICT (key) DO UPDATE SET " + ", ".join(
    f"{c} = {c} + excluded.{c}" if c in ("rows", "turns", "tokens", "cost_usd", "uncosted_rows") else f"{c} = " + _EXACT.format(c)
    for c in TOTAL_COLUMNS)
_PRICED_ADD_COUNTED = (
    _TOTALS_INSERT + " SELECT day || coalesce('=' || model, ''), day, model, " + _PRICED_VALUES +
    " FROM (SELECT " + _PRICED_ROW + ") WHERE " + _COUNTED + _TOTALS_ADD + ";"
)
# usage_totals recomputed from the rows (the step's backfill; doctor compares and repairs with it), in TOTAL_COLUMNS order
_SUMMED = ("count(*) AS rows, sum(turns) AS turns, sum(tokens) AS tokens, sum(input_tokens) AS input_tokens,"
           " sum(output_tokens) AS output_tokens, sum(cost_usd) AS cost_usd, sum(cache_read_tokens) AS cache_read_tokens,"
           " sum(cache_write_tokens) AS cache_write_tokens, sum(uncosted) AS uncosted_rows,"
           " sum(uncosted * max(0, input_tokens - cache_read_tokens - cache_write_tokens)) AS uncosted_base,"
           " sum(uncosted * cache_read_tokens) AS uncosted_cache_read, sum(uncosted * cache_write_tokens) AS uncosted_cache_write,"
           " sum(uncosted * output_tokens) AS uncosted_output")
PRICED_FROM_ROWS = (
    "SELECT day || coalesce('=' || model, '') AS key, day, model, " + _SUMMED + " FROM (SELECT "
    + _PRICED_ROW.format(row="turns") + " FROM turns WHERE forked_from IS NULL) GROUP BY day, model"
)
_PRICED_CATCH_UP = (
    _TOTALS_INSERT + " SELECT day || coalesce('=' || model, ''), day, model, " + _SUMMED
    + " FROM (SELECT " + _PRICED_ROW.format(row="turns") + " FROM turns WHERE seq > ?1 AND forked_from IS NULL)"
    " WHERE true GROUP BY day, model" + _TOTALS_ADD_EXACT
)
# The catch-up: the rows above the mark (bound as ?1) into the search index, then into the totals, one
# upsert per (day, model); then the mark moves to the last row (?2).
_CATCH_UP_CHECK = "SELECT mark, (SELECT max(seq) FROM turns) FROM turns_mark"
# A row's indexed arguments (what catch_up writes, and what FTS5's 'delete' must be given back)
_INDEXED_ARGUMENTS = "CASE WHEN {row}.tool_calls IS NULL THEN NULL ELSE " + _ARGUMENTS + " END"
_CATCH_UP = (
    "INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, CASE WHEN tool_calls IS NULL THEN NULL"
    " ELSE " + _ARGUMENTS.format(row="turns") + " END FROM turns WHERE seq > ?1",
    _PRICED_CATCH_UP,
    "UPDATE turns_mark SET mark = ?2",
)
# The common case without a sort: every new row of one UTC day and without meta (no model, no usage
# figures), as a batch written at one instant is; inserts nothing (HAVING) otherwise.
_DAY = "strftime('%Y-%m-%d', {} / 1000.0, 'unixepoch')"
_CATCH_UP_ONE_GROUP = (
    "INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd)"
    f" SELECT {_DAY.format('min(created_at)')}, {_DAY.format('min(created_at)')}, NULL, count(*),"
    " sum(kind = 'turn'), sum(tokens), 0, 0, 0 FROM turns WHERE seq > ?1 AND forked_from IS NULL"
    f" HAVING count(*) > 0 AND count(meta) = 0 AND {_DAY.format('min(created_at)')} = {_DAY.format('max(created_at)')}"
    " ON CONFLICT (key) DO UPDATE SET rows = rows + excluded.rows, turns = turns + excluded.turns,"
    " tokens = tokens + excluded.tokens"
)
# The same catch-up for the Worker (scripts/gen_worker_schema.py): check, then with (mark) the index and
# the totals (the general upsert only), then with (mark, last) the mark.
CATCH_UP_STATEMENTS = (_CATCH_UP_CHECK, *_CATCH_UP)


def catch_up(db: sqlite3.Connection) -> None:
    """Bring usage_totals up to the last row (inside the caller's write transaction, just before its COMMIT):
    every path that inserts rows commits through here. (A local object keeps no FTS5 index of its own since
    the step "search index in the side files only": the Worker's catch-up, CATCH_UP_STATEMENTS, still
    fills its turns_fts first.)"""
    mark, last = db.execute(_CATCH_UP_CHECK).fetchone()
    if last is not None and last > mark:
        if db.execute(_CATCH_UP_ONE_GROUP, (mark,)).rowcount <= 0:
            db.execute(_CATCH_UP[1], (mark,))
        db.execute(_CATCH_UP[-1], (mark, last))


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
    (
        "rows hold what agents write",  # docs/reference/transcript.md §6: tool calls, tool name, meta, data, fork origin; batch request ids
        """
        ALTER TABLE turns ADD COLUMN tool_calls TEXT;
        ALTER TABLE turns ADD COLUMN name TEXT;
        ALTER TABLE turns ADD COLUMN meta TEXT;
        ALTER TABLE turns ADD COLUMN data TEXT;
        ALTER TABLE turns ADD COLUMN forked_from TEXT;
        ALTER TABLE turns ADD COLUMN request_hash TEXT;
        ALTER TABLE turns ADD COLUMN request_last INTEGER;
        CREATE INDEX IF NOT EXISTS turns_by_call ON turns (call_id) WHERE call_id IS NOT NULL;
        CREATE INDEX IF NOT EXISTS prompts_by_turn ON prompts (turn_seq) WHERE turn_seq IS NOT NULL;
        """,
    ),
    (
        "adapters keep the framework's id",  # docs/reference/integrations.md §12: the framework's session/thread id; which adapter owns it
        """
        ALTER TABLE object ADD COLUMN external_id TEXT;
        ALTER TABLE object ADD COLUMN adapter TEXT;
        """,
    ),
    (
        "langgraph checkpoints",  # docs/reference/integrations.md §12: a LangGraph thread's checkpoints and pending writes, and what was mirrored
        """
        CREATE TABLE IF NOT EXISTS lg_checkpoints (
            checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT,
            type TEXT, checkpoint BLOB, metadata TEXT NOT NULL,
            PRIMARY KEY (checkpoint_ns, checkpoint_id)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS lg_writes (
            checkpoint_ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
            task_path TEXT NOT NULL DEFAULT '', idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB,
            PRIMARY KEY (checkpoint_ns, checkpoint_id, task_id, idx)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS lg_mirrored (message_id TEXT PRIMARY KEY, seq INTEGER) WITHOUT ROWID;
        """,
    ),
    (
        "full-text search index",  # docs/reference/retention.md §7 search: FTS5 over content and tool call arguments, kept by triggers
        f"""
        CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5(
            content, arguments, tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER IF NOT EXISTS turns_fts_insert AFTER INSERT ON turns BEGIN
            INSERT INTO turns_fts (rowid, content, arguments) VALUES (NEW.seq, NEW.content, {_ARGUMENTS.format(row="NEW")});
        END;
        CREATE TRIGGER IF NOT EXISTS turns_fts_delete AFTER DELETE ON turns BEGIN
            DELETE FROM turns_fts WHERE rowid = OLD.seq;
        END;
        CREATE TRIGGER IF NOT EXISTS turns_fts_update AFTER UPDATE OF content, tool_calls ON turns BEGIN
            UPDATE turns_fts SET content = NEW.content, arguments = {_ARGUMENTS.format(row="NEW")} WHERE rowid = NEW.seq;
        END;
        INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, {_ARGUMENTS.format(row="turns")} FROM turns;
        """,
    ),
    (
        "usage totals per day and model",  # docs/reference/retention.md §7 usage: kept by triggers over the rows that exist, fork copies excluded
        f"""
        CREATE TABLE IF NOT EXISTS usage_totals (
            key TEXT PRIMARY KEY, day TEXT NOT NULL, model TEXT,
            rows INTEGER NOT NULL, turns INTEGER NOT NULL, tokens INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL
        );
        CREATE TRIGGER IF NOT EXISTS usage_insert AFTER INSERT ON turns WHEN NEW.forked_from IS NULL BEGIN
            {_USAGE_ADD.format(row="NEW", sign="+")}
        END;
        CREATE TRIGGER IF NOT EXISTS usage_delete AFTER DELETE ON turns WHEN OLD.forked_from IS NULL BEGIN
            {_USAGE_ADD.format(row="OLD", sign="-")}
            DELETE FROM usage_totals WHERE rows <= 0;
        END;
        CREATE TRIGGER IF NOT EXISTS usage_update_old AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns
        WHEN OLD.forked_from IS NULL BEGIN
            {_USAGE_ADD.format(row="OLD", sign="-")}
            DELETE FROM usage_totals WHERE rows <= 0;
        END;
        CREATE TRIGGER IF NOT EXISTS usage_update_new AFTER UPDATE OF tokens, meta, created_at, kind, forked_from ON turns
        WHEN NEW.forked_from IS NULL BEGIN
            {_USAGE_ADD.format(row="NEW", sign="+")}
        END;
        {_USAGE_BACKFILL}
        """,
    ),
    (
        "derived tables caught up at commit",  # search index and usage totals filled once per write, not per row
        f"""
        DROP TRIGGER IF EXISTS turns_fts_insert;
        DROP TRIGGER IF EXISTS usage_insert;
        DROP TRIGGER IF EXISTS usage_delete;
        DROP TRIGGER IF EXISTS usage_update_old;
        DROP TRIGGER IF EXISTS usage_update_new;
        CREATE TABLE IF NOT EXISTS turns_mark (one INTEGER PRIMARY KEY CHECK (one = 1), mark INTEGER NOT NULL);
        INSERT OR REPLACE INTO turns_mark (one, mark) SELECT 1, coalesce(max(seq), 0) FROM turns;
        CREATE TRIGGER IF NOT EXISTS usage_delete_counted AFTER DELETE ON turns
        WHEN OLD.forked_from IS NULL AND {_COUNTED.format(row="OLD")} BEGIN
            {_USAGE_ADD_COUNTED.format(row="OLD", sign="-")}
            DELETE FROM usage_totals WHERE rows <= 0;
        END;
        CREATE TRIGGER IF NOT EXISTS turns_emptied AFTER DELETE ON turns WHEN NOT EXISTS (SELECT 1 FROM turns) BEGIN
            UPDATE turns_mark SET mark = 0;
            DELETE FROM usage_totals;
        END;
        CREATE TRIGGER IF NOT EXISTS usage_update_old_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from
        ON turns WHEN OLD.forked_from IS NULL AND {_COUNTED.format(row="OLD")} BEGIN
            {_USAGE_ADD_COUNTED.format(row="OLD", sign="-")}
            DELETE FROM usage_totals WHERE rows <= 0;
        END;
        CREATE TRIGGER IF NOT EXISTS usage_update_new_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from
        ON turns WHEN NEW.forked_from IS NULL AND {_COUNTED.format(row="NEW")} BEGIN
            {_USAGE_ADD_COUNTED.format(row="NEW", sign="+")}
        END;
        """,
    ),    (
        "search index without a copy of the text",  # turns_fts reads content and arguments from the rows
        # (external content, through the view turns_fts_source): indexing stops writing each text twice.
        # Rebuilt once here from the rows up to the mark; a row leaves the index by FTS5's 'delete' with the
        # values it was indexed with, before it goes (BEFORE DELETE: `turns_emptied` may zero the mark after).
        f"""
        DROP TRIGGER IF EXISTS turns_fts_delete;
        DROP TRIGGER IF EXISTS turns_fts_update;
        DROP TABLE IF EXISTS turns_fts;
        CREATE VIEW IF NOT EXISTS turns_fts_source AS SELECT seq, content, {_INDEXED_ARGUMENTS.format(row="turns")} AS arguments
            FROM turns;
        CREATE VIRTUAL TABLE turns_fts USING fts5(
            content, arguments, content='turns_fts_source', content_rowid='seq',
            tokenize='unicode61 remove_diacritics 2'
        );
        INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, arguments FROM turns_fts_source
            WHERE {_COUNTED.format(row="turns_fts_source")};
        CREATE TRIGGER IF NOT EXISTS turns_fts_forget BEFORE DELETE ON turns WHEN {_COUNTED.format(row="OLD")} BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, content, arguments)
                VALUES ('delete', OLD.seq, OLD.content, {_INDEXED_ARGUMENTS.format(row="OLD")});
        END;
        CREATE TRIGGER IF NOT EXISTS turns_fts_rewrite AFTER UPDATE OF content, tool_calls ON turns
        WHEN {_COUNTED.format(row="OLD")} BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, content, arguments)
                VALUES ('delete', OLD.seq, OLD.content, {_INDEXED_ARGUMENTS.format(row="OLD")});
            INSERT INTO turns_fts (rowid, content, arguments) VALUES (NEW.seq, NEW.content, {_INDEXED_ARGUMENTS.format(row="NEW")});
        END;
        """,
    ),
    (
        "prompt attempts and hand-backs",  # docs/reference/sessions.md §5: starts counted; release/retry order and delay; the start's policy
        # attempts: starts so far; handed_back: the order of release/retry (those stand ahead of the rest);
        # not_before: a release's delay (ms); on_expiry/max_attempts: the lease policy of the current start
        """
        ALTER TABLE prompts ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE prompts ADD COLUMN handed_back INTEGER;
        ALTER TABLE prompts ADD COLUMN not_before INTEGER;
        ALTER TABLE prompts ADD COLUMN on_expiry TEXT;
        ALTER TABLE prompts ADD COLUMN max_attempts INTEGER;
        UPDATE prompts SET attempts = 1 WHERE started_at IS NOT NULL;
        """,
    ),
    (
        "search index in the side files only",  # docs/reference/retention.md §7: a local search reads its owner's side file
        # (store/side_index.py), which indexes the rows themselves; the object's own FTS5 index was kept up
        # to date at every write (four more pages per commit) and merged at every removal, and read by no
        # one. Its pages are freed (secure_delete zeroes them). The Worker keeps its per-object index
        # (remote search reads it): see LOCAL_ONLY.
        """
        DROP TRIGGER IF EXISTS turns_fts_forget;
        DROP TRIGGER IF EXISTS turns_fts_rewrite;
        DROP TABLE IF EXISTS turns_fts;
        DROP VIEW IF EXISTS turns_fts_source;
        """,
    ),
    (
        "prompt start numbers",  # docs/reference/sessions.md §5: each start gets the next start number, never lowered or reused (a
        # release --not-an-attempt lowers attempts, not this); --attempt N names a start by it. A prompt
        # started before this step keeps its attempts as its start number (what its holder was told).
        """
        ALTER TABLE prompts ADD COLUMN start INTEGER NOT NULL DEFAULT 0;
        UPDATE prompts SET start = attempts;
        """,
    ),
    (
        "step journal and bound requests",  # docs/reference/sessions.md §5.2: one row per (prompt, KEY); requests bound to a call
        # status running|done|abandoned (a running row reads abandoned once its start ended or it was not
        # renewed for 30 s); token: the reservation's; attempt: the start that holds or committed it; seq: the
        # order in which the prompt's KEYs were first reserved. requests: the call a request approves (call_id,
        # args as JSON text, args_sha256), its approve set and approvers (JSON arrays).
        """
        CREATE TABLE IF NOT EXISTS steps (
            prompt_id INTEGER NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
            attempt INTEGER NOT NULL, token TEXT, renewed_at INTEGER,
            runs INTEGER NOT NULL DEFAULT 0, replays INTEGER NOT NULL DEFAULT 0, last_replay_attempt INTEGER,
            exit_status INTEGER, stdout BLOB, stdout_bytes INTEGER, output_too_large INTEGER NOT NULL DEFAULT 0,
            redacted INTEGER NOT NULL DEFAULT 0, call_id TEXT, args_sha256 TEXT, approval INTEGER,
            started_at INTEGER NOT NULL, ended_at INTEGER,
            PRIMARY KEY (prompt_id, key)
        );
        ALTER TABLE requests ADD COLUMN call_id TEXT;
        ALTER TABLE requests ADD COLUMN args TEXT;
        ALTER TABLE requests ADD COLUMN args_sha256 TEXT;
        ALTER TABLE requests ADD COLUMN approve TEXT;
        ALTER TABLE requests ADD COLUMN approvers TEXT;
        """,
    ),
    (
        "tags",  # docs/reference/sessions.md §5 Tags: KEY -> VALUE, the object's own labels (index.db keeps a copy)
        "CREATE TABLE IF NOT EXISTS tags (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;",
    ),
    (
        "usage totals priced at answer time",  # docs/reference/retention.md §7 usage, Cost: cache reads and writes, and the sums
        # `usage` prices with the table in force (PRICED_COLUMNS); the counted triggers take them away too. The totals
        # are recomputed from the rows counted so far (up to the mark).
        "".join(f"ALTER TABLE usage_totals ADD COLUMN {c} INTEGER NOT NULL DEFAULT 0;\n" for c in PRICED_COLUMNS) + f"""
        DROP TRIGGER IF EXISTS usage_delete_counted;
        DROP TRIGGER IF EXISTS usage_update_old_counted;
        DROP TRIGGER IF EXISTS usage_update_new_counted;
        CREATE TRIGGER IF NOT EXISTS usage_delete_counted AFTER DELETE ON turns
        WHEN OLD.forked_from IS NULL AND {_COUNTED.format(row="OLD")} BEGIN
            {_PRICED_ADD_COUNTED.format(row="OLD", sign="-")}
            DELETE FROM usage_totals WHERE rows <= 0;
        END;
        CREATE TRIGGER IF NOT EXISTS usage_update_old_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from
        ON turns WHEN OLD.forked_from IS NULL AND {_COUNTED.format(row="OLD")} BEGIN
            {_PRICED_ADD_COUNTED.format(row="OLD", sign="-")}
            DELETE FROM usage_totals WHERE rows <= 0;
        END;
        CREATE TRIGGER IF NOT EXISTS usage_update_new_counted AFTER UPDATE OF tokens, meta, created_at, kind, forked_from
        ON turns WHEN NEW.forked_from IS NULL AND {_COUNTED.format(row="NEW")} BEGIN
            {_PRICED_ADD_COUNTED.format(row="NEW", sign="+")}
        END;
        DELETE FROM usage_totals;
        {_TOTALS_INSERT} SELECT key, day, model, {", ".join(TOTAL_COLUMNS)} FROM ({PRICED_FROM_ROWS.replace(
            "WHERE forked_from IS NULL", "WHERE forked_from IS NULL AND seq <= (SELECT mark FROM turns_mark)")});
        """,
    ),
    (
        "schedules, hooks and deliveries",  # docs/reference/sessions.md §5.3: prompts that enqueue themselves later, URLs told of
        # each outcome, and the outbox of those outcomes (a delivery written in the outcome's own transaction).
        # Times in ms; schedules.every in seconds; request_hash: the creating request's, for --request-id.
        """
        CREATE TABLE IF NOT EXISTS schedules (
            id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, content TEXT NOT NULL, source TEXT,
            author TEXT, at INTEGER, every INTEGER, cron TEXT, tz TEXT, next_at INTEGER NOT NULL,
            last_fired_at INTEGER, last_prompt_id INTEGER, fired INTEGER NOT NULL DEFAULT 0,
            missed INTEGER NOT NULL DEFAULT 0, request_id TEXT UNIQUE, request_hash TEXT, created_at INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS schedules_by_next ON schedules (next_at);
        ALTER TABLE prompts ADD COLUMN schedule_id INTEGER;
        CREATE TABLE IF NOT EXISTS hooks (
            id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, events TEXT NOT NULL,
            include_reply INTEGER NOT NULL DEFAULT 0, secret TEXT NOT NULL, author TEXT, created_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS deliveries (
            id INTEGER PRIMARY KEY AUTOINCREMENT, hook_id INTEGER NOT NULL, webhook_id TEXT NOT NULL,
            type TEXT NOT NULL, prompt_id INTEGER NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, last_attempt_at INTEGER,
            next_attempt_at INTEGER, delivered_at INTEGER, last_response INTEGER, last_error TEXT
        );
        CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';
        CREATE INDEX IF NOT EXISTS deliveries_by_hook ON deliveries (hook_id, id);
        """,
    ),
]
# Steps the Worker's objects do not take (scripts/gen_worker_schema.py leaves them out): remote search reads
# each object's own FTS5 index, which a local object no longer keeps.
LOCAL_ONLY = frozenset({"search index in the side files only"})

VERSION = len(MIGRATIONS)

# FTS5's structure record (rowid 10 of TABLE_data) as SQLite 3.40 grows it by ~4 bytes at each 'optimize'
# of an index that already is one segment; past ~4,000 bytes (about 1,000 optimizes: a session popped a
# row at a time 1,000 times) the table can no longer be opened ("vtable constructor failed"). A 'rebuild'
# starts the structure afresh, so it replaces the merge once the record has grown past this.
_FTS_STRUCTURE_LIMIT = 2048


def merge_fts_segments(db, table: str) -> None:
    """Merge TABLE's FTS5 index (a table holding its own text: a search side file's) into one segment (no
    token of a deleted row left in an older one), by 'optimize', or, once the structure record has grown
    near the size 3.40 cannot read back, by starting the index afresh ('rebuild')."""
    found = db.execute(f"SELECT length(block) FROM {table}_data WHERE id = 10").fetchone()
    if found is None or (found[0] or 0) <= _FTS_STRUCTURE_LIMIT:
        db.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    else:
        db.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")

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
# index.db: step 1 is what every index held before steps were named; later steps append.
INDEX_MIGRATIONS = [
    ("initial", INDEX_SCHEMA),
    (
        "installation",
        # facts about the installation that cannot be derived from the objects (the secret's check value)
        "CREATE TABLE IF NOT EXISTS installation (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    ),
    (
        "intent_identity",
        # intents record the object file's identity as durable left it (docs/reference/storage.md §3 "Intents")
        "ALTER TABLE purge_journal ADD COLUMN dev INTEGER; ALTER TABLE purge_journal ADD COLUMN ino INTEGER;"
        " ALTER TABLE purge_journal ADD COLUMN size INTEGER; ALTER TABLE purge_journal ADD COLUMN mtime_ns INTEGER;"
        " ALTER TABLE purge_journal ADD COLUMN wal_size INTEGER; ALTER TABLE purge_journal ADD COLUMN action TEXT;",
    ),
    (
        "external_id",
        # docs/reference/json.md §10/§12: `ls` shows the id an adapter was given (null for sessions no adapter made)
        "ALTER TABLE objects ADD COLUMN external_id TEXT;",
    ),
    (
        "tombstones",
        # docs/reference/integrations.md §12: a deleted LangGraph thread stays deleted (no user data: the object id, its owner for
        # `forget`, the newest checkpoint id it had, when)
        "CREATE TABLE IF NOT EXISTS tombstones (id TEXT PRIMARY KEY, owner TEXT NOT NULL, last_checkpoint TEXT,"
        " deleted_at INTEGER NOT NULL);",
    ),
    (
        "usage",
        # docs/reference/retention.md §7 usage: each object's totals per UTC day and model, copied from the object at each write's sleep
        "CREATE TABLE IF NOT EXISTS usage (object_id TEXT NOT NULL, day TEXT NOT NULL, model TEXT,"
        " rows INTEGER NOT NULL, turns INTEGER NOT NULL, tokens INTEGER NOT NULL, input_tokens INTEGER NOT NULL,"
        " output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL);"
        " CREATE INDEX IF NOT EXISTS usage_by_object ON usage (object_id);",
    ),
    (
        "seq_max",
        # docs/reference/retention.md §7 search side files: the object's newest row seq, so a search knows what to index without
        # opening objects that did not change (null: not known yet, the object is read)
        "ALTER TABLE objects ADD COLUMN seq_max INTEGER;",
    ),
    (
        "pending_at",
        # docs/reference/sessions.md §5.1 `work --all`: when the object's oldest startable pending prompt could start (null: none,
        # or one is processing), so the oldest prompt across sessions is found without opening idle objects
        "ALTER TABLE objects ADD COLUMN pending_at INTEGER;"
        " CREATE INDEX IF NOT EXISTS objects_by_pending ON objects (pending_at) WHERE pending_at IS NOT NULL;",
    ),
    (
        "tombstone_members",
        # docs/reference/integrations.md §12: a tombstone answers only the participants the thread had when deleted (JSON array of user
        # names; null: buried before they were kept, answered to a user-scoped thread's owner only)
        "ALTER TABLE tombstones ADD COLUMN members TEXT;",
    ),
    (
        "pending_requests",
        # docs/reference/ui.md §16.3: the sessions list's "N questions waiting" badge, from index.db alone (the
        # object's pending human-in-the-loop requests, counted at each write's sleep; 0 until the object is written)
        "ALTER TABLE objects ADD COLUMN pending_requests INTEGER NOT NULL DEFAULT 0;",
    ),
    (
        "tags",
        # docs/reference/storage.md §3: each object's tags, one row per tag, copied from the object at each write's sleep;
        # `ls --tag` and `usage --tag` find the tagged objects through (key, value) without opening them
        "CREATE TABLE IF NOT EXISTS tags (object_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
        " PRIMARY KEY (object_id, key)) WITHOUT ROWID;"
        " CREATE INDEX IF NOT EXISTS tags_by_key ON tags (key, value);",
    ),
    (
        "usage priced at answer time",
        # docs/reference/retention.md §7 usage, Cost: each object's cache reads and writes and the sums `usage` prices
        # (PRICED_COLUMNS), copied with the rest at each write's sleep. Null until the object's totals are copied
        # again: `usage` then reads those objects once (across/usage.py refresh_stale).
        "".join(f"ALTER TABLE usage ADD COLUMN {c} INTEGER;" for c in PRICED_COLUMNS)
        + " CREATE INDEX IF NOT EXISTS usage_stale ON usage (object_id) WHERE uncosted_rows IS NULL;",
    ),
]
INDEX_VERSION = len(INDEX_MIGRATIONS)


def statements(sql: str):
    """The statements of SQL, split at the semicolons that end one (not those inside a trigger or a string)."""
    out, buffer = [], ""
    for piece in sql.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                out.append(buffer.strip())
            buffer = ""
    if buffer.strip(" \t\r\n;"):
        raise ValueError(f"incomplete SQL statement in a migration step: {buffer.strip()[:80]}")
    return out


def migrate(db: sqlite3.Connection, steps, what: str) -> None:
    """Apply the steps DB has not seen yet, in order, in one transaction; exit 7 for a newer file.

    sqlite3.Error propagates to the caller, which names the file. The file is left unchanged on any failure.
    """
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == len(steps):
        return
    _refuse_newer(version, steps, what)
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        db.execute("PRAGMA journal_mode=WAL")
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may have migrated meanwhile
        _refuse_newer(version, steps, what)
        for number, (_name, sql) in enumerate(steps[version:], start=version + 1):
            for statement in statements(sql):
                db.execute(statement)
            db.execute(f"PRAGMA user_version={number}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _refuse_newer(version: int, steps, what: str) -> None:
    if version > len(steps):
        raise storage(
            f"{what} was written by a newer durable (schema {version}, this one knows {len(steps)}); "
            "upgrade durable (nothing was changed)"
        )
