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
from ..errors import invalid, not_found, storage
from ..prices import cost as _cost
from . import retention

GROUPINGS = ("session", "day", "model")
# a group's fields (docs/reference/json.md §10), in plain output's order: the old ones, then the new ones
FIELDS = ("sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens",
          "cache_write_tokens", "cost_given_usd", "cost_computed_usd", "priced_turns", "unpriced_turns")
# the sums read per group (in _SUMS's order): the counts, then the given cost (cost_usd of the totals)
COUNTS = (*FIELDS[:5], *FIELDS[6:8])
_SUMMED = (*COUNTS, "cost_given_usd")
_SUMS = ("count(DISTINCT u.object_id), sum(u.turns), sum(u.tokens), sum(u.input_tokens), sum(u.output_tokens),"
         " sum(u.cache_read_tokens), sum(u.cache_write_tokens), sum(u.cost_usd)")
# what is priced, per group and model: rows with meta.usage and no cost_usd, and their token sums
_PRICED = "sum(u.uncosted_rows), sum(u.uncosted_base), sum(u.uncosted_cache_read), sum(u.uncosted_cache_write), sum(u.uncosted_output)"


def usage(store, *, user=None, everyone=False, session=None, newer_than=None, by="session", tags=(), prices=None) -> dict:
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
    where, params = retention.ls_where(store, all_objects=True, user=user, everyone=everyone, tags=tags)
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
    # one scan, per group and model: the sums, and those of the rows without a given cost (priced per model)
    column = {"session": "u.object_id", "day": "u.day", "model": "u.model"}[by]
    head = "u.object_id, o.name, o.owner, max(o.last_active_at)" if by == "session" else f"{column} AS g"
    rows = _tuples(index, f"SELECT {head}, u.model AS m, {_SUMS}, {_PRICED} {source} GROUP BY {column}, u.model", params)
    width, n = (4 if by == "session" else 1), len(_SUMMED)
    keyed: dict = {}
    priced = []
    for row in rows:
        key = row[0]
        group = keyed.get(key)
        if group is None:
            group = keyed[key] = [row, [0] * n]
        sums = group[1]
        for i, value in enumerate(row[width + 1:width + 1 + n]):
            sums[i] += value or 0
        if row[width + 1 + n]:
            priced.append((key, row[width], row[width + 1 + n:]))
    groups, totals = [], [0] * n
    for key, (first, sums) in keyed.items():
        group = {"key": key, **dict(zip(_SUMMED, sums))}
        if by == "session":
            group.update(name=first[1], owner=first[2], last_active_at=first[3], sessions=1)
        keyed[key] = group
        groups.append(group)
        for i, value in enumerate(sums):
            totals[i] += value
    if any(v > 2**63 - 1 for v in totals[1:-1]):  # the counts (sums of non-negative counts: the total is the largest)
        raise storage("a usage total is past 2^63-1 and cannot be counted exactly; narrow it with --user, --session"
                      " or --newer-than")
    total = dict(zip(_SUMMED, totals))
    if by == "session":
        groups.sort(key=lambda g: (-(g.pop("last_active_at") or 0), g["key"]))
        total["sessions"] = len(groups)
    else:
        groups.sort(key=lambda g: (g["key"] is None, g["key"] or ""))
        if by == "day":  # a session counts once a day, whatever its models
            for key, count in _tuples(index, f"SELECT u.day, count(DISTINCT u.object_id) {source} GROUP BY u.day", params):
                keyed[key]["sessions"] = count
        total["sessions"] = _tuples(index, f"SELECT count(DISTINCT u.object_id) {source}", params)[0][0] if groups else 0
    return finish(groups, total, [(keyed[key], model, sums) for key, model, sums in priced], prices, by)


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
    return index.tuples(sql, params)


def _fields(group) -> dict:
    given = float(group.get("cost_given_usd") or 0)
    computed = float(group.get("cost_computed_usd") or 0)
    costs = {"cost_usd": round(given + computed, 10), "cost_given_usd": round(given, 10), "cost_computed_usd": round(computed, 10)}
    return {k: costs[k] if k in costs else group.get(k) or 0 for k in FIELDS}


def by_day_and_model(store, days: int, prices=None) -> dict:
    """`durable ui`'s usage page (docs/reference/ui.md §16.3): the acting user's figures per UTC day and model over
    the last DAYS UTC days (today included), costs priced as `usage` prices them (PRICES: the table in force by
    default), and their total (equal to `usage --newer-than DAYSd`'s)."""
    if prices is None:
        from .. import prices as _prices

        prices = _prices.load(store.config)
    where, params = retention.ls_where(store, all_objects=True)
    where.append("u.day >= ?")
    params.append(clock.iso(clock.now() - days * 86400 * 1000)[:10])
    refresh_stale(store)
    source = f"FROM usage u JOIN objects o ON o.id = u.object_id WHERE {' AND '.join(where)}"
    index = store.objects.index(create=False)
    n = len(_SUMMED)
    groups, priced, totals = [], [], [0] * n
    for r in _tuples(index, f"SELECT u.day, u.model, {_SUMS}, {_PRICED} {source} GROUP BY u.day, u.model"
                            " ORDER BY u.day, u.model IS NULL, u.model", params):
        group: dict = {"key": (r[0], r[1]), **{k: v or 0 for k, v in zip(_SUMMED, r[2:2 + n])}}
        groups.append(group)
        if r[2 + n]:
            priced.append((group, r[1], r[2 + n:]))
        for i, k in enumerate(_SUMMED):
            totals[i] += group[k]
    total = dict(zip(_SUMMED, totals))
    total["sessions"] = _tuples(index, f"SELECT count(DISTINCT u.object_id) {source}", params)[0][0] if groups else 0
    doc = finish(groups, total, priced, prices, "day")
    rows = [{"day": g["key"][0], "model": g["key"][1], **{k: v for k, v in g.items() if k != "key"}} for g in doc["groups"]]
    return {"rows": rows, "total": doc["total"], "prices": doc["prices"]}
