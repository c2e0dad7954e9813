"""The transcript and its context window (SPEC §6).

Logical order: live rows (not superseded) by position, where a turn stands at its seq and a summary
at the first seq it covers. The leading `system` turns of that order are pinned. Summaries are an
overlay: a `summary` row plus `superseded_by` on the rows it stands for; nothing is deleted.
The window is read backwards from the tail through a partial index on live positions, so its cost
grows with the window, never with the transcript.
"""

import json

from .. import clock
from ..errors import conflict, invalid, not_found
from . import state, tokens as _tokens

ROLES = ("system", "user", "assistant", "tool")
ROW_COLUMNS = "seq, role, content, tokens, author, created_at, kind, superseded_by, covers_first, covers_last, call_id, pos"
REDACTED = "[redacted]"

_estimators = {}


def estimate(obj, text: str) -> int:
    name = obj.config.get("transcript.tokenizer")
    if name not in _estimators:
        _estimators[name] = _tokens.estimator(name)
    return _estimators[name](text)


def check_content(obj, content: str) -> None:
    """Empty content or content over transcript.max_turn_bytes is exit 2: never truncated silently."""
    if not isinstance(content, str) or content == "":
        raise invalid("empty content: give TEXT, or - to read it from stdin")
    limit = obj.config.get("transcript.max_turn_bytes")
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise invalid(f"content is {size} bytes, over the limit of {limit} (transcript.max_turn_bytes); nothing was stored")


def row_json(r) -> dict:
    return {
        "seq": r[0], "role": r[1], "content": r[2], "tokens": r[3], "author": r[4],
        "created_at": clock.iso(r[5]), "kind": r[6], "superseded_by": r[7],
        "covers": [r[8], r[9]] if r[6] == "summary" else None, "call_id": r[10],
    }


def insert_turn(obj, role, content, *, author, tokens=None, call_id=None, request_id=None) -> dict:
    """Append one live turn (inside the caller's transaction), keep the live counters and record the
    activity (last_active_at, TTL) in the same statement; returns the new row."""
    count = estimate(obj, content) if tokens is None else tokens
    now = clock.now()
    cur = obj.db.execute(
        "INSERT INTO turns (role, content, tokens, author, created_at, kind, call_id, request_id)"
        " VALUES (?, ?, ?, ?, ?, 'turn', ?, ?)",
        (role, content, count, author, now, call_id, request_id),
    )
    obj.db.execute(
        "UPDATE object SET live_turns = live_turns + 1, live_tokens = live_tokens + ?, updated_at = ?, last_active_at = ?,"
        " expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END",
        (count, now, now, now),
    )
    return row_json((cur.lastrowid, role, content, count, author, now, "turn", None, None, None, call_id))


def _row(obj, seq):
    return obj.handle.row(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq = ?", (seq,))


def _require(obj):
    from .sessions import require_session

    meta = require_session(obj)
    obj.require_visible()
    return meta


def append(obj, content: str, *, role: str, tokens=None, call_id=None, request_id=None, create=True) -> dict:
    if role not in ROLES:
        raise invalid(f"invalid role {role!r}: use one of {', '.join(ROLES)}")
    if tokens is not None and tokens < 0:
        raise invalid("--tokens must be a non-negative integer")
    check_content(obj, content)
    from .sessions import check, valid_request_id

    valid_request_id(request_id)
    with obj.handle.transaction():
        meta = obj.meta()
        if meta is None:
            if not create:
                raise not_found(obj.address.missing)
            state.create_object(obj, "active")
            meta = obj.meta()
        else:
            obj.require_visible()
        if request_id is not None:
            found = obj.db.execute(f"SELECT {ROW_COLUMNS}, request_id FROM turns WHERE request_id = ?", (request_id,)).fetchone()
            if found is not None:
                if found[2] != content or found[1] != role:
                    raise conflict(f"request id {request_id!r} was already used with other content in {obj.what}")
                return row_json(found)
        check(obj, "write", status=meta["status"])
        return insert_turn(obj, role, content, author=obj.actor, tokens=tokens, call_id=call_id, request_id=request_id)


def show(obj, *, all_rows: bool = False, since: int = 0):
    """Live rows in logical order, or (--all) every row ever written in seq order. A generator."""
    _require(obj)
    if all_rows:
        sql = f"SELECT {ROW_COLUMNS} FROM turns WHERE seq > ? ORDER BY seq"
    else:
        sql = f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos"
    return (row_json(r) for r in obj.db.execute(sql, (since,)))


def _pinned(obj):
    """The leading system turns of the logical order (read forwards until the first other row)."""
    pinned = []
    for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos"):
        if r[1] == "system" and r[6] == "turn":
            pinned.append(r)
        else:
            break
    return pinned


def context_window(obj, *, budget=None, limit=None) -> dict:
    """Pinned system turns, then the longest suffix of the other live rows within BUDGET and LIMIT.

    The suffix never starts with a `tool` turn; when the pinned rows alone exceed the budget the
    window is empty.
    """
    if budget is None:
        budget = obj.config.get("transcript.token_budget")
    if budget < 0 or (limit is not None and limit < 0):
        raise invalid("--tokens and --limit must be non-negative")
    _require(obj)
    pinned = _pinned(obj)
    total = sum(r[3] for r in pinned)
    if total > budget:
        return {"turns": [], "tokens": 0, "budget": budget}
    boundary = pinned[-1][11] if pinned else 0
    tail = []
    if limit is None or limit > 0:
        for r in obj.db.execute(
            f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC", (boundary,)
        ):
            if total + r[3] > budget:
                break
            tail.append(r)
            total += r[3]
            if limit is not None and len(tail) >= limit:
                break
    tail.reverse()
    while tail and tail[0][1] == "tool":
        total -= tail.pop(0)[3]
    return {"turns": [row_json(r) for r in pinned + tail], "tokens": total, "budget": budget}


def as_messages(turns) -> list:
    """Chat-API messages: a summary is a system message; a tool turn with a call id carries tool_call_id."""
    out = []
    for t in turns:
        message = {"role": "system" if t["kind"] == "summary" else t["role"], "content": t["content"]}
        if t["role"] == "tool" and t["call_id"] is not None:
            message["tool_call_id"] = t["call_id"]
        out.append(message)
    return out


def _live_row(obj, seq: int):
    row = _row(obj, seq)
    if row is None or row[7] is not None:
        raise not_found(f"row {seq} of {obj.what} is not a live row; see 'durable transcript show {obj.name}'")
    return row


def _covered_rows(obj, through: int):
    """The live rows a summary through SEQ stands for (pinned turns excepted); exit 3/4 as SPEC §6."""
    row = _live_row(obj, through)
    pinned = _pinned(obj)
    boundary = pinned[-1][11] if pinned else 0
    covered = obj.handle.rows(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos",
        (boundary, row[11]),
    )
    if not covered:
        raise conflict(f"nothing to summarize through row {through} of {obj.what}: it is a pinned system turn")
    return covered


def summarize(obj, *, through: int, text=None, command=None, input_format="text", timeout=120) -> dict:
    meta = _require(obj)
    from .sessions import check

    _live_row(obj, through)
    check(obj, "write", status=meta["status"])
    covered = _covered_rows(obj, through)
    if text is None:
        text = run_summarizer(command, covered, input_format, timeout)
    check_content(obj, text)
    return _insert_summary(obj, covered, text)


def _insert_summary(obj, covered, text) -> dict:
    first = min(r[8] if r[6] == "summary" else r[0] for r in covered)
    last = max(r[9] if r[6] == "summary" else r[0] for r in covered)
    count = estimate(obj, text)
    with obj.handle.transaction():
        cur = obj.db.execute(
            "INSERT INTO turns (role, content, tokens, author, created_at, kind, covers_first, covers_last)"
            " VALUES ('system', ?, ?, ?, ?, 'summary', ?, ?)",
            (text, count, obj.actor, clock.now(), first, last),
        )
        seq = cur.lastrowid
        obj.db.executemany("UPDATE turns SET superseded_by = ? WHERE seq = ?", [(seq, r[0]) for r in covered])
        obj.db.execute(
            "UPDATE object SET live_turns = live_turns - ? + 1, live_tokens = live_tokens - ? + ?",
            (len(covered), sum(r[3] for r in covered), count),
        )
        state.event(obj, "transcript.summarized", {"seq": seq, "covers": [first, last], "superseded": len(covered)})
        state.touch(obj)
    return {"summary": row_json(_row(obj, seq)), "superseded": len(covered)}


def run_summarizer(command: str, rows, input_format: str, timeout: float) -> str:
    """Run CMD through the shell in its own process group with ROWS on stdin; its stdout, stripped.

    A non-zero exit, empty output or the timeout (the whole group is killed) is exit 4 with CMD's
    stderr, and nothing changes. Waiting polls with sleep and counts the time slept (no timed waits).
    """
    import os
    import signal
    import subprocess
    import tempfile

    if input_format == "jsonl":
        payload = "".join(json.dumps(row_json(r), ensure_ascii=False) + "\n" for r in rows)
    elif input_format == "text":
        payload = "".join(f"{r[1]}: {r[2]}\n\n" for r in rows)
    else:
        raise invalid(f"invalid --input {input_format!r}: use text or jsonl")
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(payload.encode("utf-8"))
        stdin.seek(0)
        proc = subprocess.Popen(command, shell=True, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        waited, delay = 0.0, 0.005
        try:
            while proc.poll() is None:
                if waited >= timeout:
                    raise conflict(f"summarizer command timed out after {timeout:g}s and was killed; nothing was changed")
                clock.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.1)
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        stdout.seek(0)
        stderr.seek(0)
        out = stdout.read().decode("utf-8", "replace").rstrip()
        err = stderr.read().decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        raise conflict(f"summarizer command exited {proc.returncode}: {err.splitlines()[-1] if err else '(no stderr)'}; nothing was changed")
    if not out:
        raise conflict(f"summarizer command printed nothing{': ' + err.splitlines()[-1] if err else ''}; nothing was changed")
    return out


def compact(obj, *, max_tokens: int, keep_tokens: int, text=None, command=None, input_format="text", timeout=120) -> dict:
    """When the live total exceeds MAX, summarize the oldest rows, keeping the newest worth >= KEEP."""
    if max_tokens < 0 or keep_tokens < 0:
        raise invalid("--max-tokens and --keep-tokens must be non-negative")
    meta = _require(obj)
    from .sessions import check

    check(obj, "write", status=meta["status"])
    if meta["live_tokens"] <= max_tokens:
        return {"summary": None, "superseded": 0}
    pinned = _pinned(obj)
    boundary = pinned[-1][11] if pinned else 0
    kept, through = 0, None
    for seq, tok in obj.db.execute(
        "SELECT seq, tokens FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC", (boundary,)
    ):
        if kept >= keep_tokens:
            through = seq
            break
        kept += tok
    if through is None:
        return {"summary": None, "superseded": 0}
    covered = _covered_rows(obj, through)
    if text is None:
        text = run_summarizer(command, covered, input_format, timeout)
    check_content(obj, text)
    return _insert_summary(obj, covered, text)


def prune(obj, *, older_than: int, dry_run: bool = False) -> dict:
    """Delete turns and summaries created before the cutoff (never pinned system turns), and the rows
    superseded by a deleted summary; secure_delete plus a truncated WAL, so the text does not linger."""
    _require(obj)
    cutoff = clock.now() - older_than * 1000
    pinned = {r[0] for r in _pinned(obj)}
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
        obj.db.executemany("DELETE FROM turns WHERE seq = ?", [(s,) for s in sorted(doomed)])
        live = obj.db.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL").fetchone()
        obj.db.execute("UPDATE object SET live_turns = ?, live_tokens = ?", live)
        state.event(obj, "transcript.pruned", {"deleted": len(doomed), "older_than_seconds": older_than})
        state.touch(obj, active=False)
    obj.handle.checkpoint()
    return {"deleted": len(doomed), "dry_run": False}


def redact(obj, seq: int) -> dict:
    """Replace one row's content (and its prompt's) with [redacted]; works on archived objects too."""
    _require(obj)
    row = _row(obj, seq)
    if row is None:
        raise not_found(f"row {seq} not found in {obj.what}; see 'durable transcript show {obj.name} --all'")
    count = estimate(obj, REDACTED)
    with obj.handle.transaction():
        obj.db.execute("UPDATE turns SET content = ?, tokens = ? WHERE seq = ?", (REDACTED, count, seq))
        if row[7] is None:
            obj.db.execute("UPDATE object SET live_tokens = live_tokens - ? + ?", (row[3], count))
        obj.db.execute("UPDATE prompts SET content = ? WHERE turn_seq = ?", (REDACTED, seq))
        state.event(obj, "transcript.redacted", {"seq": seq})
        state.touch(obj, active=False)
    obj.handle.checkpoint()
    return row_json(_row(obj, seq))
