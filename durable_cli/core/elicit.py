"""Human-in-the-loop requests: a question stored in the session object, answered later by a person.

A request is pending until answered or until its timeout passes (an alarm marks it `expired`).
Every ask, answer and expiry is an event.
"""

import json

from .. import clock
from ..contract.messages import say
from ..contract.text import strip
from ..errors import conflict, invalid, not_found
from . import state

COLUMNS = "id, status, prompt, choices, created_at, expires_at, answer, comment, answered_by, answered_at"


def request_json(r) -> dict:
    return {
        "id": r[0], "status": r[1], "prompt": r[2], "choices": json.loads(r[3]), "created_at": clock.iso(r[4]),
        "expires_at": clock.iso(r[5]), "answer": r[6], "comment": r[7], "answered_by": r[8],
        "answered_at": clock.iso(r[9]),
    }


def _require(obj):
    from .lifecycle import require_session

    require_session(obj)
    obj.require_visible()


def get(obj, request_id: int) -> dict:
    _require(obj)
    row = obj.handle.row(f"SELECT {COLUMNS} FROM requests WHERE id = ?", (request_id,))
    if row is None:
        raise not_found(say("request_not_found", id=request_id, what=obj.what, name=obj.name))
    return request_json(row)


def check_ask(prompt, choices) -> list:
    """A request's input (exit 2), checked before the object is reached, on both backends."""
    if not isinstance(prompt, str) or not prompt or not strip(prompt):
        raise invalid(say("empty_prompt"))
    choices = list(choices)
    for c in choices:
        if not isinstance(c, str) or not c:
            raise invalid(say("empty_choice"))
    if len(set(choices)) != len(choices):
        raise invalid(say("duplicate_choice"))
    return choices


def ask(obj, prompt: str, *, choices=(), timeout_seconds=None, request_id=None) -> dict:
    """Store a pending request. REQUEST_ID (1-128 characters, as `--request-id`) makes the ask idempotent:
    the same id with the same prompt and choices returns the request it made, as it stands now (answered,
    pending or expired), and stores nothing; with another prompt or choices it is exit 4. The id is kept in
    the `elicit.asked` event (requests are never deleted, so it stays as long as the request)."""
    from .lifecycle import check, valid_request_id

    valid_request_id(request_id)
    choices = check_ask(prompt, choices)
    _require(obj)
    if request_id is not None:
        asked = _asked_with(obj, request_id)
        if asked is not None:
            if asked["prompt"] != prompt or asked["choices"] != choices:
                raise conflict(say("ask_request_id_reused", request_id=request_id, what=obj.what))
            return asked
    now = clock.now()
    with obj.handle.transaction():
        check(obj, "write")  # archived objects are read-only (docs/reference/sessions.md §5): exit 4, nothing asked
        cur = obj.db.execute(
            "INSERT INTO requests (status, prompt, choices, created_at, expires_at) VALUES ('pending', ?, ?, ?, ?)",
            (prompt, json.dumps(choices), now, now + timeout_seconds * 1000 if timeout_seconds else None),
        )
        made = cur.lastrowid
        data = {"request_id": made}
        if request_id is not None:
            data["key"] = request_id
        state.event(obj, "elicit.asked", data)
        state.touch(obj)
    return get(obj, made)


def _asked_with(obj, request_id: str):
    """The request an earlier ask with REQUEST_ID made, or None."""
    row = obj.handle.row(
        "SELECT json_extract(data, '$.request_id') FROM events WHERE type = 'elicit.asked'"
        " AND json_extract(data, '$.key') = ? ORDER BY seq LIMIT 1", (request_id,))
    return None if row is None else get(obj, row[0])


def list_requests(obj, *, pending_only: bool = False) -> list:
    _require(obj)
    where = "WHERE status = 'pending'" if pending_only else ""
    return [request_json(r) for r in obj.db.execute(f"SELECT {COLUMNS} FROM requests {where} ORDER BY id")]


def answer(obj, request_id: int, choice: str, *, comment=None) -> dict:
    request = get(obj, request_id)
    if request["choices"] and choice not in request["choices"]:
        raise invalid(say("choice_not_offered", choice=choice, choices=", ".join(request["choices"])))
    if not choice:
        raise invalid(say("empty_choice"))
    if request["status"] != "pending":
        raise conflict(say("request_not_pending", id=request_id, what=obj.what, status=request["status"]))
    with obj.handle.transaction():
        obj.db.execute(
            "UPDATE requests SET status = 'answered', answer = ?, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
            (choice, comment, obj.actor, clock.now(), request_id),
        )
        state.event(obj, "elicit.answered", {"request_id": request_id, "answer": choice})
        state.touch(obj)
    return get(obj, request_id)


def decline(obj, request_id: int, action: str) -> dict:
    """The person would not answer (docs/reference/mcp.md §14: an MCP client's `decline` or `cancel`): the request is
    `answered` with answer null and ACTION as the comment, so nobody asks it again."""
    if action not in ("decline", "cancel"):
        raise invalid(say("invalid_elicit_action", action=action))
    request = get(obj, request_id)
    if request["status"] != "pending":
        raise conflict(say("request_not_pending", id=request_id, what=obj.what, status=request["status"]))
    with obj.handle.transaction():
        obj.db.execute(
            "UPDATE requests SET status = 'answered', answer = NULL, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
            (action, obj.actor, clock.now(), request_id),
        )
        state.event(obj, "elicit.answered", {"request_id": request_id, "answer": None})
        state.touch(obj)
    return get(obj, request_id)


def expire(obj, now: int) -> int:
    """Alarm: pending requests past their timeout become `expired` (inside a transaction)."""
    ids = [r[0] for r in obj.db.execute("SELECT id FROM requests WHERE status = 'pending' AND expires_at <= ?", (now,))]
    for request_id in ids:
        obj.db.execute("UPDATE requests SET status = 'expired' WHERE id = ?", (request_id,))
        state.event(obj, "elicit.expired", {"request_id": request_id}, actor=None)
    if ids:
        state.touch(obj, active=False)
    return len(ids)
