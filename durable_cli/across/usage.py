"""Usage and cost accounting (docs/reference/retention.md §7 `durable usage`), answered from index.db alone.

Each object keeps its own totals per UTC day and model (`usage_totals`, brought up to date before each write's
COMMIT, `schema.catch_up`: rows that exist, superseded ones included, rows copied by `fork` left
out); each write's sleep copies them into index.db's `usage` table beside the object's index row.
So a report over 10,000 sessions is one aggregate query, and no object is opened.
"""

from .. import clock
from ..contract.messages import say
from ..errors import invalid, not_found
from . import retention

GROUPINGS = ("session", "day", "model")
FIELDS = ("sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd")
_SUMS = ("count(DISTINCT u.object_id), sum(u.turns), sum(u.tokens), sum(u.input_tokens), sum(u.output_tokens),"
         " sum(u.cost_usd)")


def usage(store, *, user=None, everyone=False, session=None, newer_than=None, by="session") -> dict:
    """`{"groups": [...], "total": {...}}` of docs/reference/json.md §10 over the sessions `ls --all` lists for USER (the
    acting user by default; EVERYONE: the installation). NEWER_THAN counts whole UTC days."""
    if by not in GROUPINGS:
        raise invalid(f"invalid --by {by!r}: use one of {', '.join(GROUPINGS)}")
    if everyone and user is not None:
        raise invalid("give either --user U or --all, not both")
    where, params = retention.ls_where(store, all_objects=True, user=user, everyone=everyone)
    if session is not None:
        where.append("o.name = ?")
        params.append(session)
        if not store.objects.index(create=False).rows(f"SELECT 1 FROM objects o WHERE {' AND '.join(where)}", params):
            raise not_found(say("search_session_not_found", session=session))
    if newer_than is not None:
        where.append("u.day >= ?")
        params.append(clock.iso(clock.now() - newer_than * 1000)[:10])
    source = f"FROM usage u JOIN objects o ON o.id = u.object_id WHERE {' AND '.join(where)}"
    index = store.objects.index(create=False)
    if by == "session":
        sql = (f"SELECT u.object_id, o.name, o.owner, {_SUMS} {source} GROUP BY u.object_id"
               " ORDER BY max(o.last_active_at) DESC, u.object_id")
    else:
        column = "u.day" if by == "day" else "u.model"
        sql = f"SELECT {column}, {_SUMS} {source} GROUP BY {column} ORDER BY {column} IS NULL, {column}"
    groups = []
    for row in _tuples(index, sql, params):
        if by == "session":
            groups.append({"key": row[0], "name": row[1], "owner": row[2], **_fields(row[3:])})
        else:
            groups.append({"key": row[0], **_fields(row[1:])})
    total = _tuples(index, f"SELECT {_SUMS} {source}", params)
    return {"groups": groups, "total": _fields(total[0] if total else (0,) * len(FIELDS))}


def _tuples(index, sql, params):
    return [tuple(r.values()) for r in index.rows(sql, params)]


def _fields(values) -> dict:
    out = dict(zip(FIELDS, (v or 0 for v in values)))
    out["cost_usd"] = round(float(out["cost_usd"]), 10)
    return out


def by_day_and_model(store, days: int) -> dict:
    """`durable ui`'s usage page (docs/reference/ui.md §16.3): the acting user's figures per UTC day and model over
    the last DAYS UTC days (today included), and their total (equal to `usage --newer-than DAYSd`'s)."""
    where, params = retention.ls_where(store, all_objects=True)
    where.append("u.day >= ?")
    params.append(clock.iso(clock.now() - days * 86400 * 1000)[:10])
    source = f"FROM usage u JOIN objects o ON o.id = u.object_id WHERE {' AND '.join(where)}"
    index = store.objects.index(create=False)
    rows = [{"day": r[0], "model": r[1], **_fields(r[2:])} for r in _tuples(
        index, f"SELECT u.day, u.model, {_SUMS} {source} GROUP BY u.day, u.model ORDER BY u.day, u.model IS NULL, u.model", params)]
    total = _tuples(index, f"SELECT {_SUMS} {source}", params)
    return {"rows": rows, "total": _fields(total[0] if total else (0,) * len(FIELDS))}
