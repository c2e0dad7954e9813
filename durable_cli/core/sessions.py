"""Sessions: the lifecycle and the prompt queue of SPEC §5.

The transition table is data, read by one function (`check`):

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

from .. import clock
from ..errors import conflict, invalid, not_found
from ..text import printable, quote, strip
from . import state, transcript

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

_VERBS = {
    "prompt": "take new prompts", "next": "hand out work", "cancel": "be cancelled", "archive": "be archived",
    "unarchive": "be unarchived", "write": "be written to", "invite": "take participants", "any": "do this",
}

PROMPT_COLUMNS = (
    "id", "status", "content", "author", "source", "request_id", "turn_seq", "created_at", "started_at",
    "lease_expires_at", "completed_at", "error",
)
_TIMES = ("created_at", "started_at", "lease_expires_at", "completed_at")


def check(obj, command: str, *, status=None, noop=False):
    """Permission, then "nothing to do" (exit 0), then state: the order of SPEC §4.

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
    name = obj.name
    if current == "archived":
        return f"{obj.what} is archived; run 'durable session unarchive {name}' first"
    if current == "cancelled" and command == "archive":
        return f"{obj.what} is cancelled and cannot be archived; delete it with 'durable delete {name}'"
    if current == "cancelled":
        return f"{obj.what} is cancelled; send a new prompt with 'durable session prompt {name} TEXT' to reopen it"
    if command == "unarchive":
        return f"{obj.what} is not archived (it is {current})"
    return f"{obj.what} is {current} and cannot {_VERBS[command]}"


def require_session(obj) -> dict:
    meta = obj.meta()
    if meta is None:
        raise not_found(obj.address.missing)  # the same words for every missing or invisible session
    return meta


def create(obj, *, title=None, ttl_seconds=None) -> dict:
    with obj.handle.transaction():
        if obj.meta() is not None:
            obj.require_visible()
            raise conflict(f"{obj.what} already exists; pick another name or use 'durable session show {obj.name}'")
        state.create_object(obj, "created", title=valid_title(title) if title is not None else None, ttl_seconds=ttl_seconds)
    return state.session_json(obj)


def show(obj) -> dict:
    require_session(obj)
    return state.session_json(obj)


def valid_title(title: str) -> str:
    title = strip(title) if isinstance(title, str) else title
    if not isinstance(title, str) or not 1 <= len(title) <= 200 or not printable(title):
        raise invalid("invalid title: use 1-200 printable characters")
    return title


def valid_request_id(request_id):
    if request_id is not None and (not 1 <= len(request_id) <= 128 or not printable(request_id)):
        raise invalid("invalid --request-id: use 1-128 printable characters")
    return request_id


def prompt_json(row) -> dict:
    p = dict(zip(PROMPT_COLUMNS, row))
    for key in _TIMES:
        p[key] = clock.iso(p[key])
    return p


def _prompt(obj, prompt_id):
    row = obj.handle.row(f"SELECT {', '.join(PROMPT_COLUMNS)} FROM prompts WHERE id = ?", (prompt_id,))
    if row is None:
        raise not_found(f"prompt {prompt_id} not found in {obj.what}; see 'durable session queue {obj.name}'")
    return row


def get_prompt(obj, prompt_id: int) -> dict:
    p = prompt_json(_prompt(obj, prompt_id))
    if p["status"] == "pending":
        p["position"] = obj.handle.row(
            "SELECT count(*) FROM prompts WHERE status = 'pending' AND id <= ?", (prompt_id,)
        )[0]
    else:
        p["position"] = None
    return p


def recompute(obj, current: str) -> None:
    """The status rule after finish, stop, dequeue and lease expiry."""
    if obj.db.execute("SELECT 1 FROM prompts WHERE status IN ('pending', 'processing') LIMIT 1").fetchone():
        new = "active"
    else:
        last = obj.db.execute(
            "SELECT status FROM prompts WHERE status IN ('completed', 'failed')"
            " ORDER BY completed_at DESC, id DESC LIMIT 1"
        ).fetchone()
        new = last[0] if last else "created"
    state.set_status(obj, new, current)


def prompt(obj, content: str, *, source=None, request_id=None, created=False, waiting=False) -> dict:
    """Enqueue a prompt (creating the object when CREATED is allowed by the caller).

    While WAITING (`prompt --wait`), a full queue means "not yet": None, and nothing is stored."""
    transcript.check_content(obj, content)
    valid_request_id(request_id)
    with obj.handle.transaction():
        meta = obj.meta()
        if meta is None:
            if not created:
                raise not_found(obj.address.missing)
            state.create_object(obj, "active")
            meta = obj.meta()
        else:
            obj.require_visible()
        if request_id is not None:
            row = obj.db.execute("SELECT id, content FROM prompts WHERE request_id = ?", (request_id,)).fetchone()
            if row is not None:
                if row[1] != content:
                    raise conflict(f"request id {request_id!r} was already used with other content in {obj.what}")
                return get_prompt(obj, row[0])
        to = check(obj, "prompt", status=meta["status"])
        unfinished = obj.db.execute("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')").fetchone()[0]
        limit = obj.config.get("queue.max_unfinished")
        if unfinished >= limit:
            if waiting:
                return None
            raise conflict(
                f"the queue of {obj.what} is full ({unfinished} unfinished prompts, queue.max_unfinished = {limit}); "
                "wait for room with --wait DUR, dequeue one, or raise the cap with "
                "'durable config set queue.max_unfinished N'"
            )
        now = clock.now()
        cur = obj.db.execute(
            "INSERT INTO prompts (status, content, author, source, request_id, created_at) VALUES ('pending', ?, ?, ?, ?, ?)",
            (content, obj.actor, source, request_id, now),
        )
        prompt_id = cur.lastrowid
        state.event(obj, "prompt.queued", {"prompt_id": prompt_id})
        state.set_status(obj, to, meta["status"])
        state.touch(obj)
    return get_prompt(obj, prompt_id)


def next_prompt(obj, *, lease_seconds: int, waiting: bool = False, context=None, format="messages"):  # noqa: A002
    """Hand the oldest pending prompt out for work, or None when there is nothing to take.

    Its content becomes the `user` turn in the same transaction, so the transcript reads in work order.
    While WAITING, a prompt already processing means "not yet" rather than a conflict. With CONTEXT
    (a token budget) the prompt carries "window": the context window in FORMAT, always holding the
    pinned rows and that user turn.
    """
    meta = require_session(obj)
    obj.require_visible()
    check(obj, "next", status=meta["status"])
    busy = obj.db.execute("SELECT id FROM prompts WHERE status = 'processing' LIMIT 1").fetchone()
    if busy is not None:
        if waiting:
            return None
        raise conflict(
            f"prompt {busy[0]} of {obj.what} is still processing; finish it with 'durable session finish {obj.name} {busy[0]}'"
            " or wait with --wait"
        )
    with obj.handle.transaction():
        row = obj.db.execute("SELECT id, content, author FROM prompts WHERE status = 'pending' ORDER BY id LIMIT 1").fetchone()
        if row is None:
            return None
        prompt_id, content, author = row
        now = clock.now()
        seq = transcript.insert_turn(obj, "user", content, author=author)["seq"]
        obj.db.execute(
            "UPDATE prompts SET status = 'processing', started_at = ?, lease_expires_at = ?, turn_seq = ? WHERE id = ?",
            (now, now + lease_seconds * 1000, seq, prompt_id),
        )
        state.event(obj, "prompt.started", {"prompt_id": prompt_id, "turn_seq": seq})
        state.touch(obj)
        # inside the transaction: a window that cannot be rendered (exit 4) takes nothing
        window = transcript.window(obj, tokens=context, format=format, keep=seq) if context is not None else None
    p = get_prompt(obj, prompt_id)
    if context is not None:
        p["window"] = window
    return p


def _processing(obj, prompt_id: int, doing: str):
    require_session(obj)
    obj.require_visible()
    row = _prompt(obj, prompt_id)
    if row[1] != "processing":
        raise conflict(f"prompt {prompt_id} of {obj.what} is {row[1]}, not processing; it cannot be {doing}")
    return row


def renew(obj, prompt_id: int, *, lease_seconds: int) -> dict:
    _processing(obj, prompt_id, "renewed")
    with obj.handle.transaction():
        obj.db.execute("UPDATE prompts SET lease_expires_at = ? WHERE id = ?", (clock.now() + lease_seconds * 1000, prompt_id))
        state.touch(obj, active=False)
    return get_prompt(obj, prompt_id)


def finish(obj, prompt_id: int, *, reply=None, failed=False, error=None) -> dict:
    if reply is not None:
        transcript.check_content(obj, reply)
    _processing(obj, prompt_id, "finished")
    failed = failed or error is not None
    with obj.handle.transaction():
        meta = obj.meta()
        now = clock.now()
        if reply is not None:
            transcript.insert_turn(obj, "assistant", reply, author=obj.actor)
        obj.db.execute(
            "UPDATE prompts SET status = ?, completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?",
            ("failed" if failed else "completed", now, error if failed else None, prompt_id),
        )
        state.event(obj, "prompt.failed" if failed else "prompt.completed",
                    {"prompt_id": prompt_id, **({"error": error} if failed else {})})
        recompute(obj, meta["status"])
        state.touch(obj)
    return get_prompt(obj, prompt_id)


def fail_processing(obj, error: str, event_type: str = "prompt.failed", *, where="status = 'processing'", params=(), actor="__actor__") -> int:
    """Fail the processing (or matching) prompts with ERROR; returns how many (inside a transaction)."""
    now = clock.now()
    ids = [r[0] for r in obj.db.execute(f"SELECT id FROM prompts WHERE {where} ORDER BY id", params)]
    for prompt_id in ids:
        obj.db.execute(
            "UPDATE prompts SET status = 'failed', completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?",
            (now, error, prompt_id),
        )
        state.event(obj, event_type, {"prompt_id": prompt_id, "error": error}, actor=actor)
    return len(ids)


def stop(obj) -> dict:
    meta = require_session(obj)
    obj.require_visible()
    if obj.db.execute("SELECT 1 FROM prompts WHERE status = 'processing'").fetchone() is None:
        return state.session_json(obj)
    with obj.handle.transaction():
        fail_processing(obj, "stopped")
        recompute(obj, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def cancel(obj) -> dict:
    meta = require_session(obj)
    obj.require_visible()
    to = check(obj, "cancel", status=meta["status"])
    with obj.handle.transaction():
        fail_processing(obj, "cancelled", where="status IN ('pending', 'processing')")
        state.set_status(obj, to, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def archive(obj) -> dict:
    meta = require_session(obj)
    obj.require_visible()
    if check(obj, "archive", noop=meta["status"] == "archived") is None:
        return state.session_json(obj)
    to = check(obj, "archive", status=meta["status"])
    queued = obj.db.execute("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')").fetchone()[0]
    if queued:
        raise conflict(
            f"{obj.what} has {queued} queued or processing prompts; finish, dequeue or cancel them before archiving"
        )
    with obj.handle.transaction():
        state.set_status(obj, to, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def unarchive(obj) -> dict:
    meta = require_session(obj)
    obj.require_visible()
    to = check(obj, "unarchive", status=meta["status"])
    with obj.handle.transaction():
        state.set_status(obj, to, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def set_title(obj, title: str) -> dict:
    title = valid_title(title)
    meta = require_session(obj)
    obj.require_visible()
    if meta["title"] != title:
        with obj.handle.transaction():
            obj.db.execute("UPDATE object SET title = ?", (title,))
            state.event(obj, "session.title", {"title": title})
            state.touch(obj)  # a title is activity (SPEC §3)
    return state.session_json(obj)


def check_invite(user, role) -> None:
    """An invitation's input (exit 2), checked before the object is reached, on both backends."""
    from ..config import valid_name

    valid_name(user, "user")
    if role not in state.ROLES:
        raise invalid(f"invalid role {quote(role) if isinstance(role, str) else repr(role)}: use owner or member")


def invite(obj, user: str, role: str = "member") -> dict:
    check_invite(user, role)
    require_session(obj)
    obj.require_visible()
    check(obj, "invite")
    if obj.address.id_scope != "tenant":
        raise conflict(f"{obj.what} belongs to one user; only tenant sessions (--tenant ORG) take participants")
    current = obj.db.execute("SELECT role FROM participants WHERE user = ?", (user,)).fetchone()
    if current is None or current[0] != role:
        with obj.handle.transaction():
            obj.db.execute(
                "INSERT INTO participants (user, role, joined_at) VALUES (?, ?, ?)"
                " ON CONFLICT (user) DO UPDATE SET role = excluded.role",
                (user, role, clock.now()),
            )
            state.event(obj, "participant.added", {"user": user, "role": role})
            state.touch(obj, active=False)
    return state.session_json(obj)


def dequeue(obj, prompt_id: int) -> dict:
    """Delete a pending prompt; the session (status recomputed) is the result, as for any transition."""
    meta = require_session(obj)
    obj.require_visible()
    row = _prompt(obj, prompt_id)
    if row[1] != "pending":
        raise conflict(f"prompt {prompt_id} of {obj.what} is {row[1]}, not pending; only pending prompts can be dequeued")
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM prompts WHERE id = ?", (prompt_id,))
        state.event(obj, "prompt.dequeued", {"prompt_id": prompt_id})
        recompute(obj, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def queue(obj, *, pending_only: bool = False) -> list:
    require_session(obj)
    obj.require_visible()
    where = "WHERE status = 'pending'" if pending_only else ""
    out, position = [], 0
    for row in obj.db.execute(f"SELECT {', '.join(PROMPT_COLUMNS)} FROM prompts {where} ORDER BY id"):
        p = prompt_json(row)
        if p["status"] == "pending":
            position += 1
            p["position"] = position
        else:
            p["position"] = None
        out.append(p)
    return out


def events(obj, *, since: int = 0) -> list:
    import json

    require_session(obj)
    obj.require_visible()
    return [
        {"seq": s, "type": t, "actor": a, "data": json.loads(d), "at": clock.iso(at)}
        for s, t, a, d, at in obj.db.execute("SELECT seq, type, actor, data, at FROM events WHERE seq > ? ORDER BY seq", (since,))
    ]


def participants(obj) -> list:
    require_session(obj)
    obj.require_visible()
    return state.session_json(obj)["participants"]


def expire_leases(obj, now: int) -> int:
    """Alarm: fail processing prompts whose lease ran out ("timed out"); inside a transaction."""
    meta = obj.meta()
    n = fail_processing(
        obj, "timed out", "prompt.lease_expired",
        where="status = 'processing' AND lease_expires_at <= ?", params=(now,), actor=None,
    )
    if n:
        recompute(obj, meta["status"])
        state.touch(obj, active=False)
    return n


def expire_draft(obj, cutoff: int) -> bool:
    """Draft expiry (sweep only): a `created` session with no prompts, untouched (no write of any kind,
    a title included) since before CUTOFF, is archived."""
    meta = obj.meta()
    if meta is None or meta["status"] != "created" or meta["updated_at"] >= cutoff:
        return False
    if obj.db.execute("SELECT 1 FROM prompts LIMIT 1").fetchone():
        return False
    with obj.handle.transaction():
        obj.db.execute("UPDATE object SET status = 'archived'")
        state.event(obj, "session.status", {"from": "created", "to": "archived", "reason": "draft expired"}, actor=None)
        state.touch(obj, active=False)
    return True

