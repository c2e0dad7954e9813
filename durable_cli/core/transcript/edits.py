"""Edits that remove or rewrite rows (docs/reference/transcript.md §6 `pop`, `clear`, `prune`, `redact`; the Agents SDK's
`replace_tail`): each leaves no token of what went in the search index, the file or its WAL."""

import json

from ... import clock
from ...contract.messages import say
from ...errors import conflict, invalid, not_found
from .. import state
from .appends import insert_rows
from .context import _pinned
from .row import (
    CALLS,
    KIND,
    PRUNED,
    REDACTED,
    ROW_COLUMNS,
    SEQ,
    SUPERSEDED,
    TOKENS,
    _dumps,
    _require,
    _row,
    _settings,
    estimate,
    prepare,
    refuse_rewrite_if_owned,
    row_json,
)


def _forget_turns(obj, seqs) -> None:
    """The prompts whose turns are deleted keep their text, with turn_seq null (inside a transaction)."""
    obj.db.executemany("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", [(s,) for s in seqs])


def pop(obj, count: int = 1) -> list:
    """Remove the newest live row in logical order, COUNT times (a summary counts as one, and popping
    it brings back the rows it covered); returns the removed rows, newest first."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise invalid(say("pop_count"))
    meta = _require(obj)
    from ..lifecycle import check

    refuse_rewrite_if_owned(obj, meta, "be popped")
    check(obj, "write", status=meta["status"])
    if obj.db.execute("SELECT 1 FROM turns WHERE superseded_by IS NULL LIMIT 1").fetchone() is None:
        raise conflict(say("pop_empty", what=obj.what))
    removed = []
    with obj.handle.transaction():
        for _ in range(count):
            r = obj.db.execute(
                f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1").fetchone()
            if r is None:
                break
            obj.db.execute("DELETE FROM turns WHERE seq = ?", (r[SEQ],))
            restored = (0, 0)
            if r[KIND] == "summary":
                restored = obj.db.execute(
                    "SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by = ?", (r[SEQ],)).fetchone()
                obj.db.execute("UPDATE turns SET superseded_by = NULL WHERE superseded_by = ?", (r[SEQ],))
            else:
                _forget_turns(obj, [r[SEQ]])
            obj.db.execute("UPDATE object SET live_turns = live_turns - 1 + ?, live_tokens = live_tokens - ? + ?",
                           (restored[0], r[TOKENS], restored[1]))
            removed.append(row_json(r))
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.popped", {"seqs": [r["seq"] for r in removed]})
        state.touch(obj)
    obj.handle.checkpoint()
    return removed


def replace_tail(obj, expected, rows, *, origin=None) -> bool:
    """Replace the newest live rows by ROWS in one transaction, if they are still EXPECTED (their seqs, in
    logical order): the Agents SDK's compaction of a suffix (DurableSession). False, and nothing changed,
    when another writer has added, popped or rewritten rows since they were read, or one is a summary."""
    from ..lifecycle import check

    settings = _settings(obj.config)
    rows = [prepare(obj.config, r, where=f"item {i}: ", _settings=settings) for i, r in enumerate(rows, 1)]
    meta = _require(obj)
    refuse_rewrite_if_owned(obj, meta, "be compacted")
    check(obj, "write", status=meta["status"])
    expected = list(expected)
    if not expected:
        return False
    with obj.handle.transaction():
        tail = obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT ?",
                              (len(expected),)).fetchall()[::-1]
        if [r[SEQ] for r in tail] != expected or any(r[KIND] != "turn" for r in tail):
            return False
        obj.db.executemany("DELETE FROM turns WHERE seq = ?", [(r[SEQ],) for r in tail])
        _forget_turns(obj, expected)
        obj.db.execute("UPDATE object SET live_turns = live_turns - ?, live_tokens = live_tokens - ?",
                       (len(tail), sum(r[TOKENS] for r in tail)))
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.popped", {"seqs": expected[::-1]})
        if origin is not None and meta["external_id"] is None:
            obj.db.execute("UPDATE object SET external_id = ?, adapter = ?", origin)
        if rows:
            insert_rows(obj, rows, author=obj.actor)
        state.touch(obj)
    obj.handle.checkpoint()
    return True


def clear(obj) -> dict:
    """Delete every row (pinned ones too); the session, queue, events and participants stay."""
    meta = _require(obj)
    refuse_rewrite_if_owned(obj, meta, "be cleared")
    n = obj.db.execute("SELECT count(*) FROM turns").fetchone()[0]
    if n == 0:
        return {"deleted": 0}
    from ..lifecycle import check

    check(obj, "write", status=meta["status"])
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM turns")
        obj.db.execute("UPDATE prompts SET turn_seq = NULL WHERE turn_seq IS NOT NULL")
        obj.db.execute("UPDATE object SET live_turns = 0, live_tokens = 0")
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.cleared", {"deleted": n})
        state.touch(obj)
    obj.handle.checkpoint()
    return {"deleted": n}


def prune(obj, *, older_than: int, dry_run: bool = False) -> dict:
    """Delete turns and summaries created before the cutoff (never pinned turns), the rows superseded
    by a deleted summary, and the text of the prompts whose turns went ([pruned], turn_seq null);
    secure_delete plus a truncated WAL, so the text does not linger."""
    refuse_rewrite_if_owned(obj, _require(obj), "be pruned")
    cutoff = clock.now() - older_than * 1000
    pinned = {r[SEQ] for r in _pinned(obj)}
    doomed = {seq for (seq,) in obj.db.execute("SELECT seq FROM turns WHERE created_at < ?", (cutoff,))} - pinned
    frontier = [s for (s,) in obj.db.execute("SELECT seq FROM turns WHERE kind = 'summary' AND created_at < ?", (cutoff,))]
    frontier = [s for s in frontier if s in doomed]
    while frontier:
        marks = ",".join("?" * len(frontier))
        more = {s for (s,) in obj.db.execute(f"SELECT seq FROM turns WHERE superseded_by IN ({marks})", frontier)} - doomed
        doomed |= more
        frontier = [s for (s,) in obj.db.execute(
            f"SELECT seq FROM turns WHERE kind = 'summary' AND seq IN ({','.join('?' * len(more))})", list(more))] if more else []
    if dry_run or not doomed:
        return {"deleted": len(doomed), "dry_run": dry_run}
    with obj.handle.transaction():
        gone = sorted(doomed)
        # docs/reference/sessions.md §5.2: the steps of the finished prompts whose text goes, all of a prompt's steps at once
        obj.db.executemany("DELETE FROM steps WHERE prompt_id IN (SELECT id FROM prompts WHERE turn_seq = ?"
                           " AND status NOT IN ('pending', 'processing'))", [(s,) for s in gone])
        obj.db.executemany("DELETE FROM turns WHERE seq = ?", [(s,) for s in gone])
        obj.db.executemany("UPDATE prompts SET content = ?, turn_seq = NULL WHERE turn_seq = ?", [(PRUNED, s) for s in gone])
        live = obj.db.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL").fetchone()
        obj.db.execute("UPDATE object SET live_turns = ?, live_tokens = ?", live)
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.pruned", {"deleted": len(doomed), "older_than_seconds": older_than})
        state.touch(obj, active=False)
    obj.handle.checkpoint()
    return {"deleted": len(doomed), "dry_run": False}


def redact(obj, seq: int) -> dict:
    """Replace one row's content (and its prompt's) with [redacted], its tool call arguments with {}
    and its data with null; works on archived objects too."""
    meta = _require(obj)
    row = _row(obj, seq)
    if row is None:
        raise not_found(say("row_not_found", seq=seq, what=obj.what, name=obj.name))
    refuse_rewrite_if_owned(obj, meta, "be redacted")
    calls = [dict(c, arguments="{}") for c in json.loads(row[CALLS])] if row[CALLS] else None
    parts = [REDACTED]
    for call in calls or ():
        parts += [call["name"], call["arguments"]]
    count = estimate(obj, "\n".join(parts))
    with obj.handle.transaction():
        obj.db.execute("UPDATE turns SET content = ?, tokens = ?, tool_calls = ?, data = NULL WHERE seq = ?",
                       (REDACTED, count, _dumps(calls) if calls else None, seq))
        if row[SUPERSEDED] is None:
            obj.db.execute("UPDATE object SET live_tokens = live_tokens - ? + ?", (row[TOKENS], count))
        obj.db.execute("UPDATE prompts SET content = ? WHERE turn_seq = ?", (REDACTED, seq))
        # docs/reference/sessions.md §5.2: a prompt's user turn redacted redacts its steps' stdout (key, status, exit status stay)
        obj.db.execute("UPDATE steps SET stdout = NULL, redacted = 1 WHERE prompt_id IN (SELECT id FROM prompts WHERE turn_seq = ?)",
                       (seq,))
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.redacted", {"seq": seq})
        state.touch(obj)  # a redaction is activity (docs/reference/storage.md §3)
    obj.handle.checkpoint()
    return row_json(_row(obj, seq))


def _drop_removed_tokens(obj) -> None:
    """Removals (pop, clear, prune, redact) take the object out of its owner's search side file first, so
    no index keeps a token of what was removed (the side file is merged with secure_delete; the object
    itself keeps no search index, and secure_delete zeroes the rows' freed pages). A pending delivery's `reply`
    whose row was removed becomes null (docs/reference/sessions.md §5.3)."""
    from ..hooks import drop_removed_replies

    drop_removed_replies(obj)
    obj.handle.evict_search()
