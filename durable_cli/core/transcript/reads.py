"""Reading rows: `transcript show` (live rows in logical order, or every row), `--follow`'s polls,
the library's `rows()`, and the adapters' narrow `stored_rows`."""

from ...contract.messages import say
from ...errors import invalid
from .row import ROW_COLUMNS, _require, row_json


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
