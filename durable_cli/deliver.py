"""Sending the outbox (docs/reference/sessions.md §5.3): a delivery is claimed under the object's lock, sent
without it, and its result recorded under the lock again.

A process whose commit wrote deliveries (or whose wake found due ones) notes the object; after its own work,
commit and stdout it sends what is due there, within 2 s in all (`after_commit`). `sweep` and `work` send
through the same function. A process killed anywhere after the commit leaves a pending (or claimed) delivery
that a later wake, `sweep` or `work` sends: at least once, with one `webhook-id` and one body for every attempt.
"""

import base64
import hashlib
import hmac
import time

from . import __version__, clock
from .contract.vocabulary import WEBHOOKS

# docs/reference/sessions.md §5.3 "Attempts": attempt n+1 is due this many seconds after attempt n (the Standard Webhooks
# schedule, no jitter); 8 attempts in all (contract.json "webhooks", as the Worker has them)
DELAYS = tuple(WEBHOOKS["delays"])
ATTEMPTS = len(DELAYS) + 1
CLAIM_FLOOR = WEBHOOKS["claim_floor_seconds"]  # a claimed attempt is not sent by another process for at least this long
TIMEOUT = float(WEBHOOKS["attempt_timeout_seconds"])
INLINE_BUDGET = 2.0
READ_LIMIT = 64 * 1024

_NOTED: dict = {}  # object id -> its ObjectStore: objects whose outbox this process should send after its commit


def note(handle, made=()) -> None:
    """HANDLE's object has due deliveries; MADE: the ids its caller's transaction wrote (an outcome's), kept on the
    handle for the library's block that made them (library.Store.open)."""
    _NOTED[handle.id] = handle.store
    if made:
        outbox = getattr(handle, "outbox", None)
        if outbox is not None:
            outbox.extend(made)


def after_commit(budget: float = INLINE_BUDGET) -> None:
    """Send the due deliveries of the objects this process noted, within BUDGET seconds in all."""
    if not _NOTED:
        return
    noted = list(_NOTED.items())
    _NOTED.clear()
    deadline = time.monotonic() + budget
    for object_id, objects in noted:
        if time.monotonic() >= deadline:
            break
        try:
            send_due(objects, object_id, deadline)
        except Exception:  # a delivery never changes a command's status or output
            if __import__("os").environ.get("DURABLE_DEBUG") == "1":
                raise


def send_due(objects, object_id: str, deadline: float, ids=None, tally=None) -> int:
    """Claim, send and record the object's due deliveries (only those of IDS when given) one at a time until none
    is due or DEADLINE (time.monotonic()) passes; returns how many were attempted. TALLY (a dict) counts each
    attempted delivery by where it stands after the attempt: delivered, pending or failed."""
    sent = 0
    while time.monotonic() < deadline:
        claimed = _claim(objects, object_id, ids)
        if claimed is None:
            return sent
        delivery_id, attempt, started, url, secret, webhook_id, body = claimed
        left = max(0.05, min(TIMEOUT, deadline - time.monotonic()))
        status, error = post(url, secret, webhook_id, body, timeout=left)
        outcome = _record(objects, object_id, delivery_id, attempt, started, status, error)
        if tally is not None and outcome is not None:
            tally[outcome] = tally.get(outcome, 0) + 1
        sent += 1
    return sent


SWEEP_BUDGET = 300.0
SWEEP_AT_ONCE = 8  # docs/reference/sessions.md §5.3: sweep sends at most 8 deliveries at a time


def sweep_send(budget: float = SWEEP_BUDGET) -> list:
    """`sweep`: send the due deliveries of every object its wakes noted, at most 8 objects (so 8 attempts) at a time,
    before its receipt is printed; returns [(object id, {"delivered": N, "pending": M, "failed": K})] for each
    object where a delivery was attempted. A failed delivery never changes sweep's exit status."""
    from concurrent.futures import ThreadPoolExecutor

    noted = list(_NOTED.items())
    _NOTED.clear()
    if not noted:
        return []
    deadline = time.monotonic() + budget

    def one(item):
        object_id, objects = item
        tally = {"delivered": 0, "pending": 0, "failed": 0}
        _quietly(send_due, objects, object_id, deadline, None, tally)
        return object_id, tally

    with ThreadPoolExecutor(max_workers=min(SWEEP_AT_ONCE, len(noted))) as pool:
        done = list(pool.map(one, noted))
    return [(object_id, tally) for object_id, tally in done if any(tally.values())]


def made_by_block(objects, object_id: str, ids, *, background: bool) -> None:
    """docs/reference/sessions.md §5.3 and reference/library.md §9: the library sends the deliveries its block's commit wrote
    (IDS), after the lock is released, within the inline bound; `ui` and `mcp` (BACKGROUND) send theirs off the
    request, in a thread of their own. A failure is never the caller's: what is not sent stays pending."""
    if not background:
        _quietly(send_due, objects, object_id, time.monotonic() + INLINE_BUDGET, list(ids))
        return
    import threading

    threading.Thread(target=_quietly, args=(send_due, objects, object_id, time.monotonic() + INLINE_BUDGET, list(ids)),
                     name="durable-deliveries", daemon=True).start()


def _quietly(send, *args) -> None:
    try:
        send(*args)
    except Exception:  # a delivery never changes a caller's outcome
        if __import__("os").environ.get("DURABLE_DEBUG") == "1":
            raise


def _claim(objects, object_id, ids=None):
    from .core import state

    with objects.open(object_id, create=False, what="session", lock_timeout=1.0) as handle:
        handle.on_sleep = state.sync_index
        with handle.transaction() as db:
            now = clock.now()
            only = "" if ids is None else f" AND d.id IN ({', '.join('?' * len(ids))})"
            row = db.execute(
                "SELECT d.id, d.attempts, h.url, h.secret, d.webhook_id, d.body FROM deliveries d JOIN hooks h ON h.id = d.hook_id"
                f" WHERE d.status = 'pending' AND d.next_attempt_at <= ?{only} ORDER BY d.next_attempt_at, d.id LIMIT 1",
                (now, *(ids or ()))).fetchone()
            if row is None:
                return None
            delivery_id, attempts, url, secret, webhook_id, body = row
            attempt = attempts + 1
            delay = DELAYS[attempt - 1] if attempt <= len(DELAYS) else 0
            db.execute("UPDATE deliveries SET attempts = ?, last_attempt_at = ?, next_attempt_at = ? WHERE id = ?",
                       (attempt, now, now + max(delay, CLAIM_FLOOR) * 1000, delivery_id))
            db.execute("UPDATE object SET updated_at = ?", (now,))  # a delivery's bookkeeping (docs/reference/storage.md §3)
    return delivery_id, attempt, now, url, secret, webhook_id, body


def _record(objects, object_id, delivery_id, attempt, started, status, error) -> "str | None":
    from .core import state

    with objects.open(object_id, create=False, what="session", lock_timeout=5.0) as handle:
        handle.on_sleep = state.sync_index
        with handle.transaction() as db:
            row = db.execute("SELECT hook_id, prompt_id, attempts, status FROM deliveries WHERE id = ?", (delivery_id,)).fetchone()
            if row is None or row[2] != attempt or row[3] != "pending":
                return None  # unhooked, or another process went on with it meanwhile
            hook_id, prompt_id = row[0], row[1]
            now = clock.now()
            db.execute("UPDATE object SET updated_at = ?", (now,))  # a delivery's bookkeeping, not activity (storage.md §3)
            outcome = "pending"
            if error is None:
                outcome = "delivered"
                db.execute("UPDATE deliveries SET status = 'delivered', delivered_at = ?, next_attempt_at = NULL,"
                           " last_response = ?, last_error = NULL WHERE id = ?", (now, status, delivery_id))
            elif attempt >= ATTEMPTS:
                outcome = "failed"
                db.execute("UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, last_response = ?,"
                           " last_error = ? WHERE id = ?", (status, error, delivery_id))
                db.execute("INSERT INTO events (type, actor, data, at) VALUES ('delivery.failed', NULL, ?, ?)",
                           (_json({"delivery_id": delivery_id, "hook_id": hook_id, "prompt_id": prompt_id,
                                   "attempts": attempt, "error": error}), now))
            else:
                db.execute("UPDATE deliveries SET next_attempt_at = ?, last_response = ?, last_error = ? WHERE id = ?",
                           (started + DELAYS[attempt - 1] * 1000, status, error, delivery_id))
            # a session keeps its 100 newest finished deliveries per hook
            db.execute("DELETE FROM deliveries WHERE hook_id = ? AND status IN ('delivered', 'failed') AND id NOT IN"
                       " (SELECT id FROM deliveries WHERE hook_id = ? AND status IN ('delivered', 'failed')"
                       " ORDER BY id DESC LIMIT 100)", (hook_id, hook_id))
    return outcome


def _json(value) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def sign(secret: str, webhook_id: str, timestamp: int, body: str) -> str:
    """`v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, the key being the secret's base64 after whsec_."""
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"{webhook_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def post(url: str, secret: str, webhook_id: str, body: str, *, timeout: float):
    """One attempt: (HTTP status or None, None when delivered else a short reason)."""
    import socket
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    timestamp = int(time.time())
    request = urllib.request.Request(url, data=body.encode("utf-8"), method="POST", headers={
        "content-type": "application/json", "user-agent": f"durable/{__version__}", "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp), "webhook-signature": sign(secret, webhook_id, timestamp, body)})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as answer:
            answer.read(READ_LIMIT)
            code = answer.status
    except urllib.error.HTTPError as e:
        code = e.code
    except (TimeoutError, socket.timeout):
        return None, "timeout"
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, ConnectionRefusedError):
            return None, "connection refused"
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return None, "timeout"
        return None, str(reason)[:200]
    except (OSError, ValueError) as e:
        return None, (str(e) or type(e).__name__)[:200]
    if 200 <= code < 300:
        return code, None
    return code, f"HTTP {code}"


def valid_status(status) -> None:
    """`session deliveries --status`: pending, delivered or failed (exit 2, before the session is looked at)."""
    if status is not None and status not in ("pending", "delivered", "failed"):
        from .errors import invalid

        raise invalid(f"invalid --status {status!r}: use pending, delivered or failed")


def listing(store, name, *, hook_id=None, status=None) -> list:
    """`session deliveries`: every delivery of NAME (filtered), read a page a request (the op `deliveries`), on
    either backend. A bad --status is exit 2 before NAME is looked at (input before existence, docs/reference/output.md §4)."""
    valid_status(status)
    rows, after = [], None
    while True:
        page = store.run(name, "deliveries", hook_id=hook_id, status=status, after=after)
        rows += page["rows"]
        after = page["next"]
        if after is None:
            return rows
