"""What each page of `durable ui` reads (docs/reference/ui.md §16.3): the same reads as the CLI's commands,
bounded to one page (100 sessions, 200 rows, 50 events, 20 finished prompts and answered questions)."""

import json

from .. import clock
from ..contract.vocabulary import STATUSES
from ..errors import DurableError, invalid, not_found

SESSIONS_PAGE = 100
ROWS_PAGE = 200
EVENTS_PAGE = 50
FINISHED = 20
HITS = 50


def statuses_of(values):
    """`?status=S` (repeatable) as `ls --status` takes it; `all` is `ls --all`."""
    chosen = [v for v in values if v != ""]
    for s in chosen:
        if s != "all" and s not in STATUSES:
            raise invalid(f"invalid --status {s!r}: use one of {', '.join(STATUSES)}")
    return tuple(s for s in chosen if s != "all"), "all" in chosen


def sessions(store, *, statuses=(), all_objects=False, after=None) -> dict:
    """One page of `ls` (newest activity first), keyset-paged by (last_active_at, id); from index.db only."""
    from ..across import retention

    extra, params = [], []
    if after is not None:
        extra.append("(o.last_active_at < ? OR (o.last_active_at = ? AND o.id < ?))")
        params += [after[0], after[0], after[1]]
    try:
        rows = list(retention.ls_rows(store, statuses=statuses, all_objects=all_objects, extra=extra,
                                      extra_params=params, limit=SESSIONS_PAGE + 1))
    except DurableError as e:
        if e.code == "not_found":  # no index.db yet: no sessions
            rows = []
        else:
            raise
    more = len(rows) > SESSIONS_PAGE
    rows = rows[:SESSIONS_PAGE]
    costs = {}
    if rows:
        ids = [r["id"] for r in rows]
        marks = ",".join("?" * len(ids))
        for r in store.objects.index(create=False).rows(
                f"SELECT object_id, total(cost_usd) AS cost FROM usage WHERE object_id IN ({marks}) GROUP BY object_id", ids):
            costs[r["object_id"]] = r["cost"]
    out = []
    for r in rows:
        out.append({
            "name": r["name"], "tenant": r["owner"] if r["scope"] == "tenant" else None, "status": r["status"],
            "title": r["title"], "turns": r["turns"], "tokens": r["tokens"], "cost": costs.get(r["id"], 0.0),
            "last_active_at": clock.iso(r["last_active_at"]), "pending": r.get("pending_requests") or 0,
        })
    after = f"{rows[-1]['last_active_at']}:{rows[-1]['id']}" if more else None
    return {"sessions": out, "next": after}


def parse_after(text):
    if text is None:
        return None
    at, _, object_id = text.partition(":")
    try:
        return int(at), object_id
    except ValueError:
        raise invalid(f"invalid after {text!r}: follow the Next page link") from None


def _int(value, what, *, low=0):
    if value is None or value == "":
        return None
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or n < low:
        raise invalid(f"invalid {what} {value!r}: give a whole number")
    return n


def session(store, name, *, tenant=None, before=None, superseded=False, events_before=None, lock_timeout=None) -> dict:
    """Everything the session page shows, read under the object's lock in one go."""
    from ..core import elicit
    from ..core.transcript.row import ROW_COLUMNS, row_json

    before = _int(before, "before")
    events_before = _int(events_before, "events_before")
    with store.open(name, tenant=tenant or None, lock_timeout=lock_timeout) as s:
        info = s.show()
        pending = s.requests(pending_only=True)
        answered = [elicit.request_json(r) for r in s.db.execute(
            f"SELECT {elicit.COLUMNS} FROM requests WHERE status != 'pending' ORDER BY id DESC LIMIT ?", (FINISHED,))]
        # the transcript page: live rows by position (or, superseded=1, every row by seq), newest 200 before BEFORE
        key = "seq" if superseded else "pos"
        where = [] if superseded else ["superseded_by IS NULL"]
        params = []
        if before is not None:
            where.append(f"{key} < ?")
            params.append(before)
        sql = (f"SELECT {ROW_COLUMNS} FROM turns {'WHERE ' + ' AND '.join(where) if where else ''}"
               f" ORDER BY {key} DESC LIMIT ?")
        raw = s.db.execute(sql, (*params, ROWS_PAGE + 1)).fetchall()
        earlier = len(raw) > ROWS_PAGE
        raw = list(reversed(raw[:ROWS_PAGE]))
        position = ROW_COLUMNS.replace(" ", "").split(",").index(key)
        rows = []
        for r in raw:
            row = row_json(r)
            row["key"] = r[position]
            rows.append(row)
        later = None  # an older page's Later rows: BEFORE for the 200 rows after this page (None: the newest page)
        if before is not None and rows:
            found = s.db.execute(f"SELECT {key} FROM turns WHERE {key} > ? {'' if superseded else 'AND superseded_by IS NULL'}"
                                 f" ORDER BY {key} LIMIT 1 OFFSET ?", (rows[-1]["key"], ROWS_PAGE)).fetchone()
            later = found[0] if found is not None else None
        # results of the page's tool calls that are not on the page (turns_by_call: one lookup per call)
        on_page = {r["seq"] for r in rows}
        calls = [c.get("id") for r in rows for c in (r["tool_calls"] or []) if isinstance(c, dict) and c.get("id")]
        elsewhere = []
        if calls:
            marks = ",".join("?" * len(calls))
            live = "" if superseded else " AND superseded_by IS NULL"
            for r in s.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE call_id IN ({marks}){live} ORDER BY seq", calls):
                if r[0] not in on_page:
                    elsewhere.append(row_json(r))
        queue = _queue(s)
        ev_where, ev_params = ("WHERE seq < ?", (events_before,)) if events_before is not None else ("", ())
        events = [{"seq": q, "type": t, "actor": a, "data": d, "at": clock.iso(at)} for q, t, a, d, at in s.db.execute(
            f"SELECT seq, type, actor, data, at FROM events {ev_where} ORDER BY seq DESC LIMIT ?", (*ev_params, EVENTS_PAGE + 1))]
    more_events = len(events) > EVENTS_PAGE
    events = events[:EVENTS_PAGE]
    return {
        "info": info, "tenant": tenant or None, "pending": pending, "answered": answered,
        "shown": thread(rows, elsewhere), "earlier": rows[0]["key"] if earlier and rows else None,
        "later": later, "before": before, "superseded": superseded, "queue": queue,
        "events": events, "events_before": events[-1]["seq"] if more_events else None,
        "live": before is None,
    }


def _queue(s) -> dict:
    from ..core.sessions import PROMPT_COLUMNS, QUEUE_ORDER, prompt_json

    columns = ", ".join(PROMPT_COLUMNS)
    active = [prompt_json(r) for r in s.db.execute(
        f"SELECT {columns} FROM prompts WHERE status = 'processing' ORDER BY id")]
    position = 0
    for r in s.db.execute(f"SELECT {columns} FROM prompts WHERE status = 'pending' ORDER BY {QUEUE_ORDER}"):
        position += 1
        p = prompt_json(r)
        p["position"] = position
        active.append(p)
    finished = [prompt_json(r) for r in s.db.execute(
        f"SELECT {columns} FROM prompts WHERE status NOT IN ('pending', 'processing') ORDER BY id DESC LIMIT ?", (FINISHED,))]
    return {"active": active, "finished": finished}


def thread(rows, elsewhere) -> list:
    """The page's rows as shown: each tool call with its result(s) nested under it; a result whose call is
    not on the page on its own."""
    results: dict = {}
    for r in rows + elsewhere:
        if r["role"] == "tool" and r["call_id"] is not None:
            results.setdefault(r["call_id"], []).append(r)
    nested: set = set()
    for r in rows:
        calls = []
        for c in r["tool_calls"] or []:
            if not isinstance(c, dict):
                continue
            found = results.get(c.get("id"), [])
            nested.update(x["seq"] for x in found)
            calls.append({"id": c.get("id"), "name": c.get("name"), "arguments": pretty(c.get("arguments")), "results": found})
        r["calls"] = calls
    items = []
    for r in rows:
        if r["seq"] in nested:
            continue
        r["orphan"] = r["role"] == "tool" and r["call_id"] is not None
        items.append(r)
    return items


def pretty(arguments) -> str:
    """A tool call's arguments: pretty-printed when they are JSON, verbatim otherwise."""
    if arguments is None:
        return ""
    if not isinstance(arguments, str):
        return json.dumps(arguments, indent=2, ensure_ascii=False)
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def memory(store) -> list:
    try:
        with store.open_reserved() as m:
            facts = m.facts(all_facts=True)
    except DurableError as e:
        if e.code != "not_found":
            raise
        return []
    now = clock.iso(clock.now())
    for f in facts:
        expired = f["expires_at"] is not None and f["expires_at"] <= now
        f["state"] = "expired" if expired else "confirmed" if f["confirmed"] else "unconfirmed"
    return facts


def search(store, query) -> dict:
    if not query.strip():
        return {"hits": [], "skipped": []}
    hits, receipt = store.search(query, limit=HITS)
    hits = list(hits)
    if hits:
        ids = sorted({h["id"] for h in hits})
        marks = ",".join("?" * len(ids))
        scopes = {r["id"]: r for r in store.objects.index(create=False).rows(
            f"SELECT id, scope, owner FROM objects WHERE id IN ({marks})", ids)}
        for h in hits:
            o = scopes.get(h["id"])
            h["tenant"] = o["owner"] if o is not None and o["scope"] == "tenant" else None
    return {"hits": hits, "skipped": receipt.get("skipped", [])}


def usage(store, days) -> dict:
    from ..across import usage as across_usage

    return across_usage.by_day_and_model(store, days)


def answer(store, form, *, lock_timeout=None) -> None:
    name = form.get("name", "")
    request_id = _int(form.get("request"), "request id", low=1)
    if request_id is None:
        raise invalid("the form names no request; reload the page")
    comment = form.get("comment") or None
    with store.open(name, tenant=form.get("tenant") or None, lock_timeout=lock_timeout) as s:
        s.answer(request_id, form.get("choice", ""), comment=comment)


def confirm(store, form) -> None:
    key = form.get("key", "")
    with store.open_reserved() as m:
        m.confirm_fact(key)


def require_name(value):
    if value is None or value == "":
        raise not_found("give a session: /session?name=NAME")
    return value
