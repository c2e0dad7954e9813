"""Summaries (docs/reference/transcript.md §6 `transcript summarize`, `compact`): plan under the object's lock, commit only if the
covered rows are unchanged; the summarizer command runs without the lock."""

import json

from ... import clock
from ...contract.messages import say
from ...errors import conflict, invalid, not_found
from .. import state
from .context import _call_ids, _pinned
from .row import (
    CALLS,
    CONTENT,
    FIRST,
    KIND,
    LAST,
    POS,
    ROLE,
    ROW_COLUMNS,
    SEQ,
    SUPERSEDED,
    TOKENS,
    _require,
    _row,
    check_content,
    check_text,
    estimate,
    refuse_rewrite_if_owned,
    row_json,
)


def _live_row(obj, seq: int):
    row = _row(obj, seq)
    if row is None or row[SUPERSEDED] is not None:
        raise not_found(say("not_live_row", seq=seq, what=obj.what, name=obj.name))
    return row


def _splits_a_call(obj, covered, through_pos) -> bool:
    """Would a summary of COVERED (live rows up to THROUGH_POS) separate a tool call from a result?"""
    ids = [i for r in covered if r[KIND] == "turn" for i in _call_ids(r)]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        if obj.db.execute(
            f"SELECT 1 FROM turns WHERE call_id IN ({','.join('?' * len(chunk))}) AND role = 'tool'"
            " AND superseded_by IS NULL AND pos > ? LIMIT 1", (*chunk, through_pos)
        ).fetchone():
            return True
    return False


def _covered_rows(obj, through: int):
    """The live rows a summary through SEQ stands for (pinned turns excepted); exit 3/4/2 as docs/reference/transcript.md §6."""
    row = _live_row(obj, through)
    pinned = _pinned(obj)
    boundary = pinned[-1][POS] if pinned else 0
    covered = obj.handle.rows(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos",
        (boundary, row[POS]),
    )
    if not covered:
        raise conflict(say("summary_pinned", through=through, what=obj.what))
    if _splits_a_call(obj, covered, row[POS]):
        raise invalid(say("summary_splits_tool_call", through=through, what=obj.what))
    return covered


class Plan:
    """What a summary will cover, read under the lock; checked again before it is committed."""

    def __init__(self, covered, high):
        self.covered = covered
        self.high = high  # the highest seq when the rows were read


def plan_summary(obj, *, through: int) -> Plan:
    meta = _require(obj)
    from ..lifecycle import check

    _live_row(obj, through)
    refuse_rewrite_if_owned(obj, meta, "be summarized")
    check(obj, "write", status=meta["status"])
    return _plan(obj, _covered_rows(obj, through))


def _plan(obj, covered) -> Plan:
    return Plan(covered, obj.db.execute("SELECT coalesce(max(seq), 0) FROM turns").fetchone()[0])


def summarize(obj, *, through: int, text=None, command=None, input_format="text", timeout=120) -> dict:
    """Summarize with TEXT under this lock. With a COMMAND, use `Store.summarize`, which releases the
    lock while the command runs (docs/reference/storage.md §3)."""
    if command is not None:
        raise invalid("a summarizer command runs without the object's lock: call Store.summarize(name, ..., command=CMD)")
    check_content(obj, text)
    return commit_summary(obj, plan_summary(obj, through=through), text)


def commit_summary(obj, plan: Plan, text: str) -> dict:
    """Insert the summary of PLAN, if every covered row is still live and unchanged and no `tool` row
    answering a covered call was appended meanwhile; otherwise exit 4 and nothing changes."""
    from ..lifecycle import check

    check_content(obj, text)
    meta = _require(obj)
    check(obj, "write", status=meta["status"])
    changed = conflict(say("summary_changed", what=obj.what))
    seqs = [r[SEQ] for r in plan.covered]
    now: dict = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start:start + 500]
        now.update((r[SEQ], r) for r in obj.db.execute(
            f"SELECT {ROW_COLUMNS} FROM turns WHERE seq IN ({','.join('?' * len(chunk))})", chunk))
    if any(now.get(r[SEQ]) != r for r in plan.covered):
        raise changed
    ids = [i for r in plan.covered if r[KIND] == "turn" for i in _call_ids(r)]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        if obj.db.execute(
            f"SELECT 1 FROM turns WHERE seq > ? AND role = 'tool' AND call_id IN ({','.join('?' * len(chunk))}) LIMIT 1",
            (plan.high, *chunk),
        ).fetchone():
            raise changed
    return _insert_summary(obj, plan.covered, text)


def _insert_summary(obj, covered, text) -> dict:
    first = min(r[FIRST] if r[KIND] == "summary" else r[SEQ] for r in covered)
    last = max((r[LAST] or r[FIRST]) if r[KIND] == "summary" else r[SEQ] for r in covered)  # forked: [seq, null]
    count = estimate(obj, text)
    with obj.handle.transaction():
        cur = obj.db.execute(
            "INSERT INTO turns (role, content, tokens, author, created_at, kind, covers_first, covers_last)"
            " VALUES ('system', ?, ?, ?, ?, 'summary', ?, ?)",
            (text, count, obj.actor, clock.now(), first, last),
        )
        seq = cur.lastrowid
        obj.handle.evict_search(merge=False)  # rows change shape (superseded), not text: indexed again at the next search
        obj.db.executemany("UPDATE turns SET superseded_by = ? WHERE seq = ?", [(seq, r[SEQ]) for r in covered])
        obj.db.execute(
            "UPDATE object SET live_turns = live_turns - ? + 1, live_tokens = live_tokens - ? + ?",
            (len(covered), sum(r[TOKENS] for r in covered), count),
        )
        state.event(obj, "transcript.summarized", {"seq": seq, "covers": [first, last], "superseded": len(covered)})
        state.touch(obj)
    return {"summary": row_json(_row(obj, seq)), "superseded": len(covered)}


def check_summary_request(config, text, command, input_format) -> None:
    """Input first, for either backend: exactly one of TEXT or COMMAND, the text's size, a known --input."""
    if (text is None) == (command is None):
        raise invalid("give exactly one of a summary text or a command")
    if text is not None:
        check_text(config, text, "summary")
    else:
        summarizer_input([], input_format)  # exit 2 for a bad --input before anything runs


def summarizer_input(rows, input_format: str) -> str:
    if input_format == "jsonl":
        return "".join(json.dumps(row_json(r), ensure_ascii=False) + "\n" for r in rows)
    if input_format == "text":
        out = []
        for r in rows:
            text = r[CONTENT]
            for call in json.loads(r[CALLS]) if r[CALLS] else ():
                text += ("\n" if text else "") + f"[calls {call['name']}({call['arguments']})]"
            out.append(f"{r[ROLE]}: {text}\n\n")
        return "".join(out)
    raise invalid(f"invalid --input {input_format!r}: use text or jsonl")


def run_summarizer(command: str, rows, input_format: str, timeout: float) -> str:
    """Run CMD through the shell in its own process group with ROWS on stdin; its stdout, stripped.

    A non-zero exit, empty output or the timeout (the whole group is killed) is exit 4 with CMD's
    stderr, and nothing changes. An interrupt (SIGINT/SIGTERM raised as Interrupted) kills and
    reaps the group before it propagates. Waiting polls with sleep and counts the time slept.
    """
    import contextlib
    import os
    import signal
    import subprocess
    import tempfile

    payload = summarizer_input(rows, input_format)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(payload.encode("utf-8", "surrogatepass"))
        stdin.seek(0)
        from ... import guard

        proc = None
        waited, delay = 0.0, 0.005
        try:
            # a SIGTERM while Popen starts the child waits until proc is set, so the group is killed below
            with (guard.signals_deferred or contextlib.nullcontext)():
                proc = subprocess.Popen(command, shell=True, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
            while proc.poll() is None:
                if waited >= timeout:
                    raise conflict(f"summarizer command timed out after {timeout:g}s and was killed; nothing was changed")
                clock.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.1)
        finally:
            if proc is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the whole group: what CMD started in the background too
                except (ProcessLookupError, PermissionError):
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


def plan_compact(obj, *, max_tokens: int, keep_tokens: int):
    """The rows `compact` would summarize, or None when nothing is to change (docs/reference/transcript.md §6).

    The cut falls just before a `user` turn (the newest such cut keeping >= KEEP tokens); failing
    that, before the newest non-`tool` row keeping >= KEEP; never between a tool call and a result.
    """
    if max_tokens < 0 or keep_tokens < 0:
        raise invalid(say("compact_negative"))
    if max_tokens < keep_tokens:
        raise invalid(say("compact_keep"))
    meta = _require(obj)
    from ..lifecycle import check

    refuse_rewrite_if_owned(obj, meta, "be compacted")
    check(obj, "write", status=meta["status"])
    if meta["live_tokens"] <= max_tokens:
        return None
    pinned = _pinned(obj)
    boundary = pinned[-1][POS] if pinned else 0
    live = obj.handle.rows(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos", (boundary,)
    )
    kept, fallback = 0, None
    for i in range(len(live) - 1, 0, -1):  # a cut before live[i] keeps live[i:] and covers live[:i]
        kept += live[i][TOKENS]
        if kept < keep_tokens or live[i][ROLE] == "tool":
            continue
        if _splits_a_call(obj, live[:i], live[i - 1][POS]):
            continue
        if live[i][ROLE] == "user" and live[i][KIND] == "turn":
            return _plan(obj, live[:i])
        if fallback is None:
            fallback = i
    if fallback is None:
        return None
    return _plan(obj, live[:fallback])


def compact(obj, *, max_tokens: int, keep_tokens: int, text=None, command=None, input_format="text", timeout=120) -> dict:
    """When the live total exceeds MAX, summarize the oldest rows, keeping the newest worth >= KEEP
    (with TEXT; a COMMAND goes through `Store.compact`, which releases the lock while it runs)."""
    if command is not None:
        raise invalid("a summarizer command runs without the object's lock: call Store.compact(name, ..., command=CMD)")
    check_content(obj, text)
    plan = plan_compact(obj, max_tokens=max_tokens, keep_tokens=keep_tokens)
    if plan is None:
        return {"summary": None, "superseded": 0}
    return commit_summary(obj, plan, text)
