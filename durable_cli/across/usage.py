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
_TOTALS = ("sum(u.turns), sum(u.tokens), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens),"
           " sum(u.cache_write_tokens), sum(u.cost_usd)")
_SUMS = f"count(DISTINCT u.object_id), {_TOTALS}"
# the usage rows of the objects listed: the objects the outer loop (each one's rows found through usage_by_object;
# grouped by o.id, in that index's order), ~30% less than scanning usage and looking up each row's object
_JOINED = "FROM objects o CROSS JOIN usage u ON u.object_id = o.id"
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
    source = f"{_JOINED} WHERE {' AND '.join(where)}"
    index = store.objects.index(create=False)
    column = {"session": "o.id", "day": "u.day", "model": "u.model"}[by]
    if by == "session":  # newest activity first
        head, order = "o.id, o.name, o.owner, 1", "coalesce(max(o.last_active_at), 0) DESC, o.id"
    else:
        head, order = f"{column}, count(DISTINCT u.object_id)", f"{column} IS NULL, {column}"
    rows = _priced(index, head, " AND ".join(where), params, f"GROUP BY {column} ORDER BY {order}", prices)
    width = 3 if by == "session" else 1
    names = ("key", "name", "owner")[:width]
    totals = [sum(column) for column in zip(*(row[width + 1:] for row in rows))] if rows else [0] * (len(_PRICED_FIELDS) - 1)
    if any(v > 2**63 - 1 for v in totals[:len(COUNTS) - 1]):  # the counts (sums of non-negative counts: the total is the largest)
        raise storage("a usage total is past 2^63-1 and cannot be counted exactly; narrow it with --user, --session"
                      " or --newer-than")
    sessions = len(rows) if by == "session" else (
        _tuples(index, f"SELECT count(DISTINCT u.object_id) {source}", params)[0][0] if rows else 0)
    groups = []
    for row in rows:
        doc = _document(dict(zip(names, row)), row[width:])
        if by == "model":
            doc["price"] = _price(prices, row[0])
        groups.append(doc)
    return {"groups": groups, "total": _document({}, (sessions, *totals)), "prices": prices.sources}


def _document(doc, sums) -> dict:
    """DOC with a group's fields (FIELDS' order) from SUMS (_PRICED_FIELDS' order)."""
    sessions, turns, tokens, input_tokens, output_tokens, cache_read, cache_write, given, computed, priced, unpriced = sums
    given, computed = float(given or 0), float(computed or 0)
    doc.update(sessions=sessions or 0, turns=turns or 0, tokens=tokens or 0, input_tokens=input_tokens or 0,
               output_tokens=output_tokens or 0, cost_usd=round(given + computed, 10), cache_read_tokens=cache_read or 0,
               cache_write_tokens=cache_write or 0, cost_given_usd=round(given, 10), cost_computed_usd=round(computed, 10),
               priced_turns=priced or 0, unpriced_turns=unpriced or 0)
    return doc


# what _priced answers per group after HEAD's key columns: the sessions, then its sums
_PRICED_FIELDS = ("sessions", *COUNTS[1:], "cost_given_usd", "cost_computed_usd", "priced_turns", "unpriced_turns")


def _priced(index, head, where, params, tail, prices) -> list:
    """`SELECT HEAD, <the sums of _PRICED_FIELDS less the sessions> … WHERE WHERE TAIL` over index.db's usage rows:
    the rows without a given cost priced per usage row with PRICES (prices.cost's sum, in SQL: one price per model,
    looked up in Python, passed as a VALUES table; the cost is linear in the tokens, so it is the same as pricing
    each group's whole sums, as `finish` does the remote backend's pages)."""
    joined = _JOINED
    rates = []
    for (model,) in _tuples(index, "SELECT DISTINCT model FROM usage WHERE uncosted_rows > 0", ()):  # anyone's: a superset
        found = prices.find(model)
        if found is not None:
            rates.append((model, *(float(found[1][k]) for k in ("input", "cache_read", "cache_write", "output"))))
    table = (f"VALUES {', '.join(['(?, ?, ?, ?, ?)'] * len(rates))}" if rates else "SELECT NULL, 0, 0, 0, 0 WHERE 0")
    known = "p.model IS NOT NULL"
    sums = (f"{_TOTALS}, total(CASE WHEN {known} AND u.uncosted_rows > 0 THEN (coalesce(u.uncosted_base, 0) * p.input"
            " + coalesce(u.uncosted_cache_read, 0) * p.cache_read + coalesce(u.uncosted_cache_write, 0) * p.cache_write"
            " + coalesce(u.uncosted_output, 0) * p.output) / 1e6 END),"
            f" coalesce(sum(CASE WHEN {known} THEN u.uncosted_rows END), 0),"
            f" coalesce(sum(CASE WHEN {known} THEN 0 ELSE u.uncosted_rows END), 0)")
    sql = (f"WITH p(model, input, cache_read, cache_write, output) AS ({table})"
           f" SELECT {head}, {sums} {joined} LEFT JOIN p ON p.model = u.model WHERE {where} {tail}")
    return _tuples(index, sql, [*(v for r in rates for v in r), *params])


def costs(store, ids, prices) -> dict:
    """{object id: its `cost_usd` as `usage --by session` reports it} for IDS (a page of `ls`: durable ui's list,
    docs/reference/ui.md §16.3), priced with PRICES; an id without usage rows is absent."""
    if not ids:
        return {}
    index = store.objects.index(create=False)
    rows = _priced(index, "o.id, 1", f"o.id IN ({', '.join('?' * len(ids))})", list(ids),
                   "GROUP BY o.id", prices)
    return {row[0]: _document({}, row[1:])["cost_usd"] for row in rows}


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
