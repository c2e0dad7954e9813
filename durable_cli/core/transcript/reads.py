"""Reading rows: `transcript show` (live rows in logical order, or every row), `--follow`'s polls,
the library's `rows()`, and the adapters' narrow `stored_rows`."""

from ...contract.messages import say
from ...errors import invalid
from .row import CALLS, CONTENT, DATA, META, POS, ROW_COLUMNS, _require, row_json


def show(obj, *, all_rows: bool = False, since: int = 0, last=None):
    """Live rows in logical order, or (--all) every row ever written in seq order; LAST keeps the
    newest N live rows (read backwards through the live-position index). A generator."""
    _require(obj)
    if last is not None:
        if all_rows:
            raise invalid(say("last_with_all"))
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise invalid(say("last_negative"))
        tail = obj.handle.rows(
            f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos DESC LIMIT ?", (since, last)
        )
        return (row_json(r) for r in reversed(tail))
    if all_rows:
        sql = f"SELECT {ROW_COLUMNS} FROM turns WHERE seq > ? ORDER BY seq"
    else:
        sql = f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos"
    return (row_json(r) for r in obj.db.execute(sql, (since,)))


def follow_start(obj, *, all_rows: bool = False, since: int = 0, last=None):
    """`show --follow`'s first read: the rows `show` lists, the highest seq written so far (what
    follows must be newer) and the session's status."""
    first = list(show(obj, all_rows=all_rows, since=since, last=last))
    high = obj.db.execute("SELECT coalesce(max(seq), 0) FROM turns").fetchone()[0]
    return first, max([high, since or 0] + [r["seq"] for r in first]), obj.meta()["status"]


def rows_after(obj, seq: int):
    """Every row with a seq greater than SEQ, in seq order, and the session's status (one poll of `--follow`)."""
    _require(obj)
    found = [row_json(r) for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq > ? ORDER BY seq", (seq,))]
    return found, obj.meta()["status"]


UI_ROWS = 200  # the web view's page of rows (docs/reference/ui.md §16.3)
PAGE_BYTES = 524288  # ... read a request at a time up to this much text (worker/src/rules/transcript/reads.ts PAGE_BYTES)
IN_LIST = 90  # call ids per `IN (...)`: Cloudflare binds at most 100 parameters a statement (docs/reference/remote.md §13)


def rows_before(obj, *, before=None, superseded=False, limit=UI_ROWS) -> dict:
    """One page of the web view's transcript (docs/reference/ui.md §16.3): the live rows by position (SUPERSEDED: every
    row by seq) before BEFORE (None: the newest), newest first, each with its `key` (that position or seq); at
    most LIMIT rows, and no more once PAGE_BYTES of text are read (a request holds one page: docs/reference/remote.md
    §13), when `next` is the BEFORE to go on from (else None). `earlier`: whether rows lie before the oldest one
    given; `later` (BEFORE given): the BEFORE of the page of UI_ROWS rows after BEFORE's, None when that is the
    newest; `results`: the rows answering these rows' tool calls that are not among them, in seq order."""
    _require(obj)
    key, index = ("seq", 0) if superseded else ("pos", POS)
    live = "" if superseded else "superseded_by IS NULL AND "
    bound = before if before is not None else 2**63 - 1
    rows, size, going = [], 0, None
    for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE {live}{key} < ? ORDER BY {key} DESC LIMIT ?", (bound, limit)):
        row = row_json(r)
        row["key"] = r[index]
        rows.append(row)
        size += sum(len(x) for x in (r[CONTENT], r[CALLS], r[META], r[DATA]) if isinstance(x, str))
        if size >= PAGE_BYTES and len(rows) < limit:
            going = r[index]
            break
    low = rows[-1]["key"] if rows else bound
    earlier = obj.db.execute(f"SELECT 1 FROM turns WHERE {live}{key} < ? LIMIT 1", (low,)).fetchone() is not None
    later = None
    if before is not None:
        found = obj.db.execute(f"SELECT {key} FROM turns WHERE {live}{key} >= ? ORDER BY {key} LIMIT 1 OFFSET ?",
                               (before, UI_ROWS)).fetchone()
        later = found[0] if found is not None else None
    seqs = {r["seq"] for r in rows}
    calls = sorted({c["id"] for r in rows for c in (r["tool_calls"] or []) if isinstance(c, dict) and isinstance(c.get("id"), str)})
    results = []
    for i in range(0, len(calls), IN_LIST):
        chunk = calls[i:i + IN_LIST]
        results += [row_json(r) for r in obj.db.execute(
            f"SELECT {ROW_COLUMNS} FROM turns WHERE {live}call_id IN ({','.join('?' * len(chunk))}) ORDER BY seq", chunk)
            if r[0] not in seqs]
    results.sort(key=lambda r: r["seq"])
    return {"rows": rows, "next": going if earlier else None, "earlier": earlier, "later": later, "results": results}


def rows(obj, *, last=None, since: int = 0, all=False) -> list:  # noqa: A002 - the name docs/reference/library.md §9 gives
    """The library's `rows(last=N | since=SEQ | all=True)`: a list of row dicts."""
    return list(show(obj, all_rows=all, since=since or 0, last=last))


STORED_COLUMNS = "data, role, kind, content, call_id, tool_calls"


def stored_rows(obj, *, last=None) -> list:
    """The live rows in logical order (LAST: the newest N) as tuples of STORED_COLUMNS, `data` and
    `tool_calls` as the JSON text stored: for a reader that needs only these (an adapter rebuilding its
    framework's items), without making whole row dicts. Read backwards through the live-position index."""
    _require(obj)
    if last is None:
        return obj.handle.rows(f"SELECT {STORED_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos")
    if isinstance(last, bool) or not isinstance(last, int) or last < 0:
        raise invalid(say("stored_last_negative"))
    tail = obj.handle.rows(f"SELECT {STORED_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT ?", (last,))
    tail.reverse()
    return tail
