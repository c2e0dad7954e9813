"""What each page of `durable ui` reads (docs/reference/ui.md §16.3): the same reads as the CLI's commands,
bounded to one page (100 sessions, 200 rows, 50 events, 20 finished prompts and answered questions)."""

import json

from .. import clock
from ..contract.vocabulary import STATUSES
from ..errors import DurableError, invalid

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
    """One page of `ls` (newest activity first), keyset-paged by (last_active_at, id); from the index alone
    (index.db, or the index Durable Objects with --remote: Store.sessions_page)."""
    page = store.sessions_page(statuses=statuses, all_objects=all_objects, after=after, limit=SESSIONS_PAGE)
    out = []
    for r in page["rows"]:
        out.append({
            "name": r["name"], "tenant": r["owner"] if r["scope"] == "tenant" else None, "status": r["status"],
            "title": r["title"], "turns": r["turns"], "tokens": r["tokens"], "cost": r["cost_usd"],
            "last_active_at": clock.iso(r["last_active_at"]), "pending": r["pending_requests"],
        })
    after = f"{page['next'][0]}:{page['next'][1]}" if page["next"] else None
    return {"sessions": out, "next": after, "prices_unread": page.get("prices_unread")}


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
    """Everything the session page shows, through the Store's ops on either backend (docs/reference/ui.md §16.3):
    `session_page` (the session, questions, queue, events) and `rows_before` (one page of rows, read a request
    at a time when the rows are big), the object's lock held for these reads only."""
    before = _int(before, "before")
    events_before = _int(events_before, "events_before")
    with store.open(name, tenant=tenant or None, lock_timeout=lock_timeout) as s:
        doc = s.session_page(events_before=events_before)
        page = s.rows_before(before=before, superseded=superseded, limit=ROWS_PAGE)
        later = page["later"]
        newest_first, results = list(page["rows"]), list(page["results"])
        while page["next"] is not None and len(newest_first) < ROWS_PAGE:
            page = s.rows_before(before=page["next"], superseded=superseded, limit=ROWS_PAGE - len(newest_first))
            newest_first += page["rows"]
            results += page["results"]
    rows = list(reversed(newest_first))
    on_page = {r["seq"] for r in rows}
    seen, elsewhere = set(), []
    for r in sorted(results, key=lambda r: r["seq"]):
        if r["seq"] not in on_page and r["seq"] not in seen:
            seen.add(r["seq"])
            elsewhere.append(r)
    return {
        "info": doc["info"], "tenant": tenant or None, "pending": doc["pending"], "answered": doc["answered"],
        "shown": thread(rows, elsewhere), "earlier": rows[0]["key"] if page["earlier"] and rows else None,
        "later": later, "before": before, "superseded": superseded, "queue": doc["queue"],
        "events": doc["events"], "events_before": doc["events_before"], "live": before is None,
    }


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
    if hits and getattr(store, "remote", False):
        for h in hits:  # the Worker's hits do not name their object's scope: the run's --tenant, as the CLI addresses them
            h["tenant"] = store.tenant
    elif hits:
        ids = sorted({h["id"] for h in hits})
        marks = ",".join("?" * len(ids))
        scopes = {r["id"]: r for r in store.objects.index(create=False).rows(
            f"SELECT id, scope, owner, seq_max FROM objects WHERE id IN ({marks})", ids)}
        for h in hits:
            o = scopes.get(h["id"])
            h["tenant"] = o["owner"] if o is not None and o["scope"] == "tenant" else None
            # the link goes to the page that holds the row (docs/reference/ui.md §16.3): the newest page when fewer than
            # a page of rows came after it (a row's position is its seq, a summary's the first row it covers: no later
            # row sorts before it), else the page that ends with it (before=SEQ+1), without opening the object
            top = o["seq_max"] if o is not None else None
            if top is not None and top - h["seq"] >= ROWS_PAGE:
                h["before"] = h["seq"] + 1
    return {"hits": hits, "skipped": receipt.get("skipped", [])}


def usage(store, days) -> dict:
    return store.usage_by_day_and_model(days)


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
        raise invalid("give a session: /session?name=NAME")  # a missing argument: 400 (docs/reference/ui.md §16.6)
    return value
