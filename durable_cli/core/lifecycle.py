"""The lifecycle of docs/reference/sessions.md §5 as data: the transition table, the one function that reads it, and the
input checks every write of one object shares (titles, request ids). Used by sessions, transcript,
elicit and alarms; core/sessions.py holds the prompt queue that moves an object through it.

| command   | from                                        | to        | who         |
|-----------|---------------------------------------------|-----------|-------------|
| prompt    | created active completed failed cancelled   | active    | participant |
| next      | created active completed failed             | (same)    | participant |
| cancel    | created active                              | cancelled | participant |
| archive   | any but cancelled (and no queued work)      | archived  | owner       |
| unarchive | archived                                    | active    | participant |
| append, summarize, compact, elicit ask | any but archived | (same) | participant |
| invite    | any (tenant scope only)                     | (same)    | owner       |
| title, stop, finish, renew, dequeue, ttl, prune, redact | any | (same)   | participant |

After finish, stop, dequeue and lease expiry the status is recomputed: `active` if a prompt is
pending or processing, else the outcome of the last finished prompt, else `created`.
"""

from ..contract.messages import say
from ..contract.text import printable, strip
from ..errors import conflict, invalid, not_found
from . import state

ANY = frozenset(state.STATUSES)
LIVE = ANY - {"archived"}

# command: (allowed from-statuses, to-status or None for "unchanged", role required)
TRANSITIONS = {
    "prompt": (frozenset({"created", "active", "completed", "failed", "cancelled"}), "active", None),
    "next": (frozenset({"created", "active", "completed", "failed"}), None, None),
    "cancel": (frozenset({"created", "active"}), "cancelled", None),
    "archive": (ANY - {"cancelled"}, "archived", "owner"),
    "unarchive": (frozenset({"archived"}), "active", None),
    "write": (LIVE, None, None),
    "invite": (ANY, None, "owner"),
    "any": (ANY, None, None),
}


def check(obj, command: str, *, status=None, noop=False):
    """Permission, then "nothing to do" (exit 0), then state: the order of docs/reference/output.md §4.

    Returns the target status (or the current one when the command leaves it), or None for a no-op.
    """
    allowed, to, role = TRANSITIONS[command]
    if role == "owner":
        obj.require_owner("invite participants" if command == "invite" else command)
    if noop:
        return None
    current = status if status is not None else obj.meta()["status"]
    if current not in allowed:
        raise conflict(refusal(obj, command, current))
    return to or current


def refusal(obj, command: str, current: str) -> str:
    what, name = obj.what, obj.name
    if current == "archived":
        return say("refused_archived", what=what, name=name)
    if current == "cancelled" and command == "archive":
        return say("refused_cancelled_archive", what=what, name=name)
    if current == "cancelled":
        return say("refused_cancelled", what=what, name=name)
    if command == "unarchive":
        return say("refused_not_archived", what=what, status=current)
    return say(f"cannot_{command}", what=what, status=current)


def require_session(obj) -> dict:
    meta = obj.meta()
    if meta is None:
        raise not_found(obj.address.missing)  # the same words for every missing or invisible session
    return meta


def valid_title(title: str) -> str:
    title = strip(title) if isinstance(title, str) else title
    if not isinstance(title, str) or not 1 <= len(title) <= 200 or not printable(title):
        raise invalid(say("invalid_title"))
    return title


def valid_request_id(request_id):
    if request_id is not None and (not 1 <= len(request_id) <= 128 or not printable(request_id)):
        raise invalid(say("invalid_request_id"))
    return request_id


# docs/reference/sessions.md §5.3: the request ids a schedule reserves for its prompts (schedule:ID:DUE); no caller's own
RESERVED_PREFIX = "schedule:"


def valid_own_request_id(request_id):
    """A --request-id a caller gives (a prompt's, a schedule's): valid, and not one the schedules reserve."""
    valid_request_id(request_id)
    if request_id is not None and request_id.startswith(RESERVED_PREFIX):
        raise invalid(say("reserved_request_id", request_id=request_id))
    return request_id
