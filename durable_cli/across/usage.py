"""Usage and cost accounting (docs/reference/retention.md §7 `durable usage`), answered from index.db alone.

Each object keeps its own totals per UTC day and model (`usage_totals`, brought up to date before each write's
COMMIT, `schema.catch_up`: rows that exist, superseded ones included, rows copied by `fork` left
out); each write's sleep copies them into index.db's `usage` table beside the object's index row.
So a report over 10,000 sessions is a few aggregate queries, and no object is opened.

Cost: a row's `meta.cost_usd` is given; the rows with `meta.usage` and no cost are priced when `usage` answers,
with the price table in force (durable_cli/prices.py), from token sums the totals keep per day and model for
those rows alone (schema.PRICED_COLUMNS): a changed table changes every past report.
"""

from .. import clock
from ..contract.messages import say
from ..errors import invalid, not_found
from ..prices import cost as _cost
from . import retention

GROUPINGS = ("session", "day", "model")
# a group's fields (docs/reference/json.md §10), in plain output's order: the old ones, then the new ones
FIELDS = ("sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens",
          "cache_write_tokens", "cost_given_usd", "cost_computed_usd", "priced_turns", "unpriced_turns")
COST_FIELDS = ("cost_usd", "cost_given_usd", "cost_computed_usd")
# the sums read per group (in _SUMS's order): the counts, then the given cost (cost_usd of the totals)
COUNTS = (*FIELDS[:5], *FIELDS[6:8])
_SUMMED = (*COUNTS, "cost_given_usd")
_SUMS = ("count(DISTINCT u.object_id), sum(u.turns), sum(u.tokens), sum(u.input_tokens), sum(u.output_tokens),"
         " sum(u.cache_read_tokens), sum(u.cache_write_tokens), sum(u.cost_usd)")
# what is priced, per group and model: rows with meta.usage and no cost_usd, and their token sums
_PRICED = "sum(u.uncosted_rows), sum(u.uncosted_base), sum(u.uncosted_cache_read), sum(u.uncosted_cache_write), sum(u.uncosted_output)"


def usage(store, *, user=None, everyone=False, session=None, newer_than=None, by="session", prices=None) -> dict:
    """`{"groups": [...], "total": {...}, "prices": [...]}` of docs/reference/json.md §10 over the sessions `ls --all` lists
    for USER (the acting user by default; EVERYONE: the installation). NEWER_THAN counts whole UTC days. PRICES:
    the price table in force (prices.Table; default: the one the store's config names)."""
    if by not in GROUPINGS:
        raise invalid(f"invalid --by {by!r}: use one of {', '.join(GROUPINGS)}")
    if everyone and user is not None:
        raise invalid("give either --user U or --all, not both")
    if prices is None:
        from .. import prices as _prices

        prices = _prices.load(store.config)
    where, params = retention.ls_where(store, all_objects=True, user=user, everyone=everyone)
    if session is not None:
        where.append("o.name = ?")
        params.append(session)
        if not store.objects.index(create=False).rows(f"SELECT 1 FROM objects o WHERE {' AND '.join(where)}", params):
            raise not_found(say("search_session_not_found", session=session))
    if newer_than is not None:
        where.append("u.day >= ?")
        params.append(clock.iso(clock.now() - newer_than * 1000)[:10])
    refresh_stale(store)
    source = f"FROM usage u JOIN objects o ON o.id = u.object_id WHERE {' AND '.join(where)}"
    index = store.objects.index(create=False)
    if by == "session":
        column = "u.object_id"
        sql = (f"SELECT u.object_id, o.name, o.owner, {_SUMS} {source} GROUP BY u.object_id"
               " ORDER BY max(o.last_active_at) DESC, u.object_id")
    else:
        column = "u.day" if by == "day" else "u.model"
        sql = f"SELECT {column}, {_SUMS} {source} GROUP BY {column} ORDER BY {column} IS NULL, {column}"
    groups, keyed = [], {}
    for row in _tuples(index, sql, params):
        if by == "session":
            group = {"key": row[0], "name": row[1], "owner": row[2], **dict(zip(_SUMMED, row[3:]))}
        else:
            group = {"key": row[0], **dict(zip(_SUMMED, row[1:]))}
        groups.append(group)
        keyed[group["key"]] = group
    total = dict(zip(_SUMMED, (_tuples(index, f"SELECT {_SUMS} {source}", params) or [(0,) * len(_SUMMED)])[0]))
    priced = _tuples(index, f"SELECT {column} AS g, u.model AS m, {_PRICED} {source} AND u.uncosted_rows > 0"
                     f" GROUP BY {column}, u.model", params)
    return finish(groups, total, [(keyed[r[0]], r[1], r[2:]) for r in priced if r[0] in keyed], prices, by)


def finish(groups, total, priced, prices, by) -> dict:
    """The §10 document from the groups' sums (_SUMMED) and PRICED: (group, model, (rows, base, cache_read,
    cache_write, output)) of the rows without a given cost, priced with the table PRICES (the remote backend's
    pages end here too)."""
    for group in [*groups, total]:
        group["cost_computed_usd"] = 0.0
        group["priced_turns"] = group["unpriced_turns"] = 0
    for group, model, (rows, base, cache_read, cache_write, output) in priced:
        rows = rows or 0
        if not rows:
            continue
        found = prices.find(model)
        if found is None:
            group["unpriced_turns"] += rows
            total["unpriced_turns"] += rows
            continue
        cost = _cost(found[1], base or 0, cache_read or 0, cache_write or 0, output or 0)
        for into in (group, total):
            into["cost_computed_usd"] += cost
            into["priced_turns"] += rows
    out = []
    for group in groups:
        head = {k: group[k] for k in ("key", "name", "owner") if k in group}
        doc = {**head, **_fields(group)}
        if by == "model":
            doc["price"] = _price(prices, group["key"])
        out.append(doc)
    return {"groups": out, "total": _fields(total), "prices": prices.sources}


def refresh_stale(store) -> None:
    """The objects whose index.db totals were copied before the step "usage priced at answer time" (their new
    sums null) are read once, as `doctor --repair` does, and their totals copied again; a busy or unreadable
    one is left for the next `usage` (counted meanwhile without cache and priced sums)."""
    index = store.objects.index(create=False)
    stale = [r["object_id"] for r in index.rows("SELECT DISTINCT object_id FROM usage INDEXED BY usage_stale WHERE uncosted_rows IS NULL")]
    if not stale:
        return
    from ..core import state
    from ..errors import DurableError

    for object_id in stale:
        try:
            with store.objects.open(object_id, create=False, what=f"object {object_id}") as handle:
                found = state.index_row(handle.db)
                if found is not None:
                    store.objects.index().upsert(*found)
        except DurableError:
            continue


def _price(prices, model):
    """A --by model group's price: the entry its model matched, or null."""
    found = prices.find(model)
    if found is None:
        return None
    key, entry = found
    return {"match": key, "source": entry["source"], "input": entry["input"], "output": entry["output"],
            "cache_read": entry["cache_read"], "cache_write": entry["cache_write"], "as_of": entry["as_of"]}


def _tuples(index, sql, params):
    return [tuple(r.values()) for r in index.rows(sql, params)]


def _fields(group) -> dict:
    given = float(group.get("cost_given_usd") or 0)
    computed = float(group.get("cost_computed_usd") or 0)
    costs = {"cost_usd": round(given + computed, 10), "cost_given_usd": round(given, 10), "cost_computed_usd": round(computed, 10)}
    return {k: costs[k] if k in costs else group.get(k) or 0 for k in FIELDS}
