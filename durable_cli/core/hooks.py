"""Hooks and the outbox: URLs told about each prompt's outcome (docs/reference/sessions.md §5.3).

An outcome (a prompt completed or failed) writes one pending delivery per subscribed hook in the outcome's own
transaction (`outcome`), so a process killed after the commit loses nothing. Sending is `deliver.py`'s, outside
the object's lock. The request is signed as the Standard Webhooks specification says.
"""

import base64
import binascii
import json
import secrets

from .. import clock
from ..contract.vocabulary import WEBHOOKS
from ..errors import conflict, invalid, not_found
from . import state
from .lifecycle import require_session

KINDS = ("completed", "failed", "cancelled")
MAX_HOOKS = 5
MAX_URL_BYTES = 2048
MAX_ERROR_BYTES = 4096
MAX_REPLY_BYTES = 64 * 1024
KEEP_FINISHED = 100
HOOK_COLUMNS = ("id", "url", "events", "include_reply", "secret", "author", "created_at")
DELIVERY_COLUMNS = ("id", "hook_id", "webhook_id", "type", "prompt_id", "status", "attempts", "created_at",
                    "last_attempt_at", "next_attempt_at", "delivered_at", "last_response", "last_error")
_DELIVERY_TIMES = ("created_at", "last_attempt_at", "next_attempt_at", "delivered_at")


def valid_url(url) -> str:
    """http or https, with a host, at most 2,048 bytes, no user name or password; else exit 2."""
    from urllib.parse import urlsplit

    bad = f"invalid --url {url!r}: use an http:// or https:// URL with a host and no user name or password"
    if not isinstance(url, str) or not url or len(url.encode("utf-8", "surrogatepass")) > MAX_URL_BYTES:
        raise invalid(bad[:300])
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # a bad port raises
    except ValueError:
        raise invalid(bad[:300]) from None
    if parts.scheme not in ("http", "https") or not host or parts.username is not None or parts.password is not None \
            or any(c.isspace() or ord(c) < 32 for c in url):
        raise invalid(bad[:300])
    return url


def valid_events(events) -> list:
    """The kinds subscribed to, in the order completed, failed, cancelled (default all three)."""
    if events is None:
        return list(KINDS)
    items = events.split(",") if isinstance(events, str) else list(events)
    for item in items:
        if item not in KINDS:
            raise invalid(f"invalid --events item {item!r}: use a comma-separated list of completed, failed, cancelled")
    return [k for k in KINDS if k in items]


def valid_secret(secret) -> str:
    """whsec_ and the standard base64 of 24 to 64 bytes; exit 2 for anything else."""
    bad = "invalid --secret-file: it must hold whsec_ followed by the standard base64 of 24 to 64 bytes"
    if not isinstance(secret, str) or not secret.startswith("whsec_"):
        raise invalid(bad)
    try:
        key = base64.b64decode(secret[6:], validate=True)
    except (binascii.Error, ValueError):
        raise invalid(bad) from None
    if not 24 <= len(key) <= 64:
        raise invalid(bad)
    return secret


def hook_json(row) -> dict:
    h = dict(zip(HOOK_COLUMNS, row))
    h["events"] = json.loads(h["events"])
    h["include_reply"] = bool(h["include_reply"])
    h["created_at"] = clock.iso(h["created_at"])
    return h


def delivery_json(row) -> dict:
    d = dict(zip(DELIVERY_COLUMNS, row))
    for key in _DELIVERY_TIMES:
        d[key] = clock.iso(d[key])
    return d


def _owner(obj, doing):
    require_session(obj)
    obj.require_visible()
    obj.require_owner(doing)


def create(obj, url: str, *, events=None, include_reply=False, secret=None) -> dict:
    """`session hook`: add a hook (owners only); event `hook.created`."""
    valid_url(url)
    kinds = valid_events(events)
    secret = valid_secret(secret) if secret is not None else "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    _owner(obj, "add a hook")
    with obj.handle.transaction():
        meta = obj.meta()
        if meta["status"] == "archived":
            raise conflict(f"{obj.what} is archived (read-only): unarchive it to add a hook")
        count = obj.db.execute("SELECT count(*) FROM hooks").fetchone()[0]
        if count >= MAX_HOOKS:
            raise conflict(f"too many hooks: {obj.what} has {count} (at most {MAX_HOOKS}); unhook one first")
        cur = obj.db.execute(
            "INSERT INTO hooks (url, events, include_reply, secret, author, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (url, json.dumps(kinds), 1 if include_reply else 0, secret, obj.actor, clock.now()))
        hook_id = cur.lastrowid
        state.event(obj, "hook.created", {"hook_id": hook_id, "events": kinds})
        state.touch(obj)
    return hook_json(obj.handle.row(f"SELECT {', '.join(HOOK_COLUMNS)} FROM hooks WHERE id = ?", (hook_id,)))


def hooks(obj) -> list:
    _owner(obj, "list its hooks")
    return [hook_json(r) for r in obj.db.execute(f"SELECT {', '.join(HOOK_COLUMNS)} FROM hooks ORDER BY id")]


def _hook(obj, hook_id):
    row = obj.handle.row(f"SELECT {', '.join(HOOK_COLUMNS)} FROM hooks WHERE id = ?", (hook_id,))
    if row is None:
        raise not_found(f"no hook {hook_id} in {obj.what}; see 'durable session hooks {obj.name}'")
    return hook_json(row)


def unhook(obj, hook_id: int) -> dict:
    """`session unhook`: the hook and its deliveries go (pending ones are never sent); event `hook.deleted`. An unknown
    ID is exit 3 before a non-owner's 5 (existence before permission, docs/reference/output.md §4)."""
    require_session(obj)
    obj.require_visible()
    found = _hook(obj, hook_id)
    obj.require_owner("delete a hook")
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM deliveries WHERE hook_id = ?", (hook_id,))
        obj.db.execute("DELETE FROM hooks WHERE id = ?", (hook_id,))
        state.event(obj, "hook.deleted", {"hook_id": hook_id})
        state.touch(obj)
    return found


DELIVERIES_PAGE = WEBHOOKS["list_page"]  # a page of `session deliveries` (docs/reference/remote.md §13: a request holds one page)


def deliveries(obj, *, hook_id=None, status=None, after=None) -> dict:
    """One page of the deliveries, oldest first, after delivery id AFTER: {"rows": [...], "next": the id to give as
    AFTER for the next page, or null} (listing() reads them all)."""
    from ..deliver import valid_status  # the statuses a delivery passes through are deliver.py's

    valid_status(status)
    require_session(obj)
    obj.require_visible()
    if hook_id is not None:
        _hook(obj, hook_id)  # an unknown --hook is exit 3 before a non-owner's 5 (docs/reference/output.md §4)
    obj.require_owner("list its deliveries")
    where, params = [], []
    if hook_id is not None:
        where.append("hook_id = ?")
        params.append(hook_id)
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if after is not None:
        where.append("id > ?")
        params.append(after)
    sql = f"SELECT {', '.join(DELIVERY_COLUMNS)} FROM deliveries" + (f" WHERE {' AND '.join(where)}" if where else "")
    rows = [delivery_json(r) for r in obj.db.execute(sql + " ORDER BY id LIMIT ?", [*params, DELIVERIES_PAGE + 1])]
    more = len(rows) > DELIVERIES_PAGE
    rows = rows[:DELIVERIES_PAGE]
    return {"rows": rows, "next": rows[-1]["id"] if more else None}



def _cut(text, limit):
    if text is None:
        return None
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit - 3].decode("utf-8", "ignore") + "…"


def drop_removed_replies(obj) -> None:
    """docs/reference/sessions.md §5.3 Body: a `transcript redact`, `pop`, `clear` or `prune` that removes the content of the
    assistant row a pending delivery's `reply` holds sets that `reply` to null (inside the removal's transaction). The
    row is gone when no assistant row after the prompt's user turn holds that content any longer."""
    rows = obj.db.execute("SELECT id, body FROM deliveries WHERE status = 'pending' AND body LIKE '%\"reply\":\"%'").fetchall()
    for delivery_id, body in rows:
        doc = json.loads(body)
        data = doc["data"]
        if data.get("reply") is None or obj.db.execute(
                "SELECT 1 FROM turns WHERE role = 'assistant' AND seq > ? AND content = ? LIMIT 1",
                (data.get("turn_seq") or 0, data["reply"])).fetchone() is not None:
            continue
        data["reply"] = None
        obj.db.execute("UPDATE deliveries SET body = ? WHERE id = ?",
                       (json.dumps(doc, separators=(",", ":"), ensure_ascii=False), delivery_id))


def outcome(obj, p: dict, kind: str) -> int:
    """Inside the outcome's own transaction: one pending delivery per hook subscribed to KIND (completed,
    failed or cancelled) for prompt P (its JSON, core/sessions.get_prompt), its body fixed now. Returns how many."""
    hooks_ = obj.db.execute("SELECT id, events, include_reply FROM hooks ORDER BY id").fetchall()
    subscribed = [(h, r) for h, ev, r in hooks_ if kind in json.loads(ev)]
    if not subscribed:
        return 0
    prompt_id = p["id"]
    meta = obj.meta()
    reply = None
    if kind == "completed" and p["turn_seq"] is not None:
        row = obj.db.execute(
            "SELECT content FROM turns WHERE seq > ? AND role = 'assistant' AND superseded_by IS NULL ORDER BY seq DESC LIMIT 1",
            (p["turn_seq"],)).fetchone()
        if row is not None and len(row[0].encode("utf-8")) <= MAX_REPLY_BYTES:
            reply = row[0]
    now = clock.now()
    type_ = "prompt." + kind
    made = []
    for hook_id, include_reply in subscribed:
        data = {"hook_id": hook_id, "session": meta["name"], "session_id": meta["id"], "scope": meta["scope"],
                "owner": meta["owner"], "prompt_id": prompt_id, "request_id": p["request_id"], "source": p["source"],
                "schedule_id": p["schedule_id"], "status": p["status"], "error": _cut(p["error"], MAX_ERROR_BYTES),
                "attempts": p["attempts"], "turn_seq": p["turn_seq"], "created_at": p["created_at"],
                "started_at": p["started_at"], "completed_at": p["completed_at"],
                "reply": reply if include_reply else None}
        body = json.dumps({"type": type_, "timestamp": p["completed_at"], "data": data}, separators=(",", ":"),
                          ensure_ascii=False)
        made.append(obj.db.execute(
            "INSERT INTO deliveries (hook_id, webhook_id, type, prompt_id, body, status, created_at, next_attempt_at)"
            " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
            (hook_id, "msg_" + secrets.token_hex(16), type_, prompt_id, body, now, now)).lastrowid)
    from .. import deliver

    # the committing process sends them after its commit: a CLI command through deliver.after_commit, the library
    # at the end of its block (library.Store.open)
    deliver.note(obj.handle, made)
    return len(subscribed)
