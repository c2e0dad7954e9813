"""`session fork` (docs/reference/sessions.md §5): a new session whose transcript is a copy of another's live rows.

Two objects take part, never locked at once: the source is read under its lock and released, then
NEW is created under its own, so two forks running against each other cannot deadlock. The copy is
NAME's live rows up to SEQ's position, in logical order, renumbered from 1; each keeps its content,
tool calls, meta, data and created_at, is authored by the forking user and names the source in
`forked_from`. A copied summary stands at its own new seq and covers nothing (covers null): its
`covers_first` holds its own seq, which is its position, and `covers_last` is null.
"""

from .. import clock
from ..contract.messages import say
from ..errors import conflict
from . import state
from . import transcript as t
from .transcript.summaries import _live_row, _splits_a_call

_COPY = (
    "INSERT INTO turns (seq, role, content, tokens, author, created_at, kind, covers_first, covers_last, call_id,"
    " tool_calls, name, meta, data, forked_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)"
)


def check_request(new, title, at):
    """`session fork`'s input, checked before anything is read: NEW's name, the title and AT (a seq)."""
    from ..config import valid_name
    from ..errors import invalid
    from .sessions import valid_title

    new = valid_name(new)
    if title is not None:
        title = valid_title(title)
    if at is not None and (isinstance(at, bool) or not isinstance(at, int) or not 1 <= at <= 2**63 - 1):
        raise invalid("--at must be a positive seq")
    return new, title


def read_source(obj, at=None) -> dict:
    """Under the source's lock: its id, NAME, title and the live rows to copy (exit 3 for a SEQ that is
    not a live row, 2 for one that would separate a tool call from its results)."""
    from .sessions import require_session

    meta = require_session(obj)
    obj.require_visible()
    if at is None:
        rows = obj.handle.rows(f"SELECT {t.ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos")
        seq = rows[-1][t.SEQ] if rows else None
    else:
        cut = _live_row(obj, at)
        rows = obj.handle.rows(
            f"SELECT {t.ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos <= ? ORDER BY pos", (cut[t.POS],))
        if _splits_a_call(obj, rows, cut[t.POS]):
            from ..errors import invalid

            raise invalid(say("fork_splits_tool_call", at=at, what=obj.what))
        seq = at
    return {"id": obj.id, "name": obj.name, "title": meta["title"], "seq": seq, "rows": rows}


def write_fork(obj, source: dict, *, title=None) -> dict:
    """Under NEW's lock: create it (`created`, the acting user its owner) holding SOURCE's rows; NEW
    that exists already is exit 4."""
    with obj.handle.transaction():
        if obj.meta() is not None:
            obj.require_visible()
            raise conflict(say("fork_exists", what=obj.what))
        state.create_object(obj, "created", title=title if title is not None else source["title"])
        copies = []
        for new_seq, r in enumerate(source["rows"], 1):
            summary = r[t.KIND] == "summary"
            copies.append((new_seq, r[t.ROLE], r[t.CONTENT], r[t.TOKENS], obj.actor, r[t.CREATED], r[t.KIND],
                           new_seq if summary else None, r[t.CALL_ID], r[t.CALLS], r[t.NAME], r[t.META], r[t.DATA],
                           source["id"]))
        obj.db.executemany(_COPY, copies)
        now = clock.now()
        obj.db.execute("UPDATE object SET live_turns = ?, live_tokens = ?, updated_at = ?, last_active_at = ?",
                       (len(copies), sum(c[3] for c in copies), now, now))
        state.event(obj, "session.forked", {"name": source["name"], "id": source["id"], "seq": source["seq"]})
    return state.session_json(obj)
