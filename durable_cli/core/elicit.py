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

COLUMNS = ("id, status, prompt, choices, created_at, expires_at, answer, comment, answered_by, answered_at,"
           " approvers, call_id, args, args_sha256, approve")
MAX_APPROVERS = 32


def request_json(r) -> dict:
    approve = json.loads(r[14]) if r[14] is not None else None
    approved = None  # docs/reference/hitl.md §8: null while pending or when not bound to a call
    if r[11] is not None and r[1] == "answered":
        approved = r[6] is not None and approve is not None and r[6] in approve
    elif r[11] is not None and r[1] == "expired":
        approved = False
    return {
        "id": r[0], "status": r[1], "prompt": r[2], "choices": json.loads(r[3]), "created_at": clock.iso(r[4]),
        "expires_at": clock.iso(r[5]), "answer": r[6], "comment": r[7], "answered_by": r[8],
        "answered_at": clock.iso(r[9]), "approvers": json.loads(r[10]) if r[10] is not None else [],
        "call_id": r[11], "args": json.loads(r[12]) if r[12] is not None else None, "args_sha256": r[13],
        "approve": approve, "approved": approved,
    }


def check_binding(choices, call_id, args, approve, approvers, max_bytes, prompt):
    """A request bound to one tool call (docs/reference/hitl.md §8): (choices, approve set, args text, args_sha256, approvers),
    or exit 2."""
    from ..config import valid_name
    from .binding import check_binding as binding

    approvers = list(approvers or [])
    if len(approvers) > MAX_APPROVERS:
        raise invalid(f"at most {MAX_APPROVERS} --approver users may be named")
    for user in approvers:
        valid_name(user, "user")
    approvers = list(dict.fromkeys(approvers))
    approve = list(approve or [])
    call_id, value, sha = binding(call_id, args, args_given=args is not None, parsed=True)
    if call_id is None:
        if approve:
            raise invalid("--approve needs --call-id and --args: it names the choices that approve a tool call")
        return choices, None, None, None, approvers
    if not choices:
        choices, approve = ["approve", "decline"], approve or ["approve"]
    elif not approve:
        raise invalid("say which choices approve the call with --approve")
    for c in approve:
        if c not in choices:
            raise invalid(say("choice_not_offered", choice=c, choices=", ".join(choices)))
    approve = list(dict.fromkeys(approve))
    from .binding import as_ecmascript_writes

    text = json.dumps(as_ecmascript_writes(value), ensure_ascii=False, separators=(",", ":"))
    size = len(prompt.encode("utf-8")) + len(json.dumps(choices).encode("utf-8")) + len(text.encode("utf-8"))
    if max_bytes is not None and size > max_bytes:
        raise invalid(f"the request is {size} bytes with its choices and arguments, more than transcript.max_turn_bytes"
                      f" ({max_bytes})")
    return choices, approve, text, sha, approvers


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


def ask(obj, prompt: str, *, choices=(), timeout_seconds=None, request_id=None, call_id=None, args=None, approve=None,
        approvers=None) -> dict:
    """Store a pending request. REQUEST_ID (1-128 characters, as `--request-id`) makes the ask idempotent:
    the same id with the same prompt and choices returns the request it made, as it stands now (answered,
    pending or expired), and stores nothing; with another prompt or choices it is exit 4. The id is kept in
    the `elicit.asked` event (requests are never deleted, so it stays as long as the request)."""
    from .lifecycle import check, valid_request_id

    valid_request_id(request_id)
    choices = check_ask(prompt, choices)
    choices, approve, args_text, sha, approvers = check_binding(
        choices, call_id, args, approve, approvers, obj.config.get("transcript.max_turn_bytes"), prompt)
    _require(obj)
    if request_id is not None:
        asked = _asked_with(obj, request_id)
        if asked is not None:
            if (asked["prompt"] != prompt or asked["choices"] != choices or asked["call_id"] != call_id
                    or asked["args_sha256"] != sha or set(asked["approvers"]) != set(approvers)):
                raise conflict(say("ask_request_id_reused", request_id=request_id, what=obj.what))
            return asked
    now = clock.now()
    with obj.handle.transaction():
        check(obj, "write")  # archived objects are read-only (docs/reference/sessions.md §5): exit 4, nothing asked
        cur = obj.db.execute(
            "INSERT INTO requests (status, prompt, choices, created_at, expires_at, approvers, call_id, args, args_sha256,"
            " approve) VALUES ('pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (prompt, json.dumps(choices), now, now + timeout_seconds * 1000 if timeout_seconds else None,
             json.dumps(approvers) if approvers else None, call_id, args_text, sha,
             json.dumps(approve) if approve is not None else None),
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
    if request["approvers"] and obj.actor not in request["approvers"]:
        from ..errors import denied

        raise denied(f"{obj.actor} may not answer request {request_id} of {obj.what}: only "
                     f"{', '.join(request['approvers'])} may (its --approver)")
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


def decline(obj, request_id: int, action: str, choice=None) -> dict:
    """The person's answer through an MCP client's elicitation (docs/reference/mcp.md §14): `decline` or `cancel` (the request is
    `answered` with answer null and ACTION as the comment, so nobody asks it again), or `accept` with CHOICE. It is
    the person's, accepted whatever the request's approvers, and its answered_by is the first approver (the acting
    user when there are none; docs/reference/hitl.md §8)."""
    if action not in ("decline", "cancel", "accept"):
        raise invalid(say("invalid_elicit_action", action=action))
    request = get(obj, request_id)
    if action == "accept":
        if not choice:
            raise invalid(say("empty_choice"))
        if request["choices"] and choice not in request["choices"]:
            raise invalid(say("choice_not_offered", choice=choice, choices=", ".join(request["choices"])))
    if request["status"] != "pending":
        raise conflict(say("request_not_pending", id=request_id, what=obj.what, status=request["status"]))
    answer, comment = (choice, None) if action == "accept" else (None, action)
    with obj.handle.transaction():
        obj.db.execute(
            "UPDATE requests SET status = 'answered', answer = ?, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
            (answer, comment, request["approvers"][0] if request["approvers"] else obj.actor, clock.now(), request_id),
        )
        state.event(obj, "elicit.answered", {"request_id": request_id, "answer": answer})
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
