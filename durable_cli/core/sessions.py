"""Sessions: the prompt queue of docs/reference/sessions.md §5 (create, prompt, next, renew, finish, release, stop, cancel,
archive, title, invite, dequeue). The transition table they move an object through is data in
core/lifecycle.py (re-exported here: `check`, `TRANSITIONS`).
"""

from .. import clock
from ..contract.messages import say
from ..contract.vocabulary import LIMITS
from ..errors import conflict, invalid, not_found
from . import state, transcript
from .lifecycle import ANY, LIVE, TRANSITIONS, check, refusal, require_session, valid_own_request_id, valid_request_id, valid_title  # noqa: F401 - the lifecycle's API, as before
from .transcript.row import _loads

PROMPT_COLUMNS = (
    "id", "status", "content", "author", "source", "request_id", "turn_seq", "attempts", "start", "created_at", "started_at",
    "lease_expires_at", "completed_at", "error", "schedule_id",
)
# Queue order (docs/reference/sessions.md §5): released and retried prompts first, in the order they were handed back, then FIFO by id.
ORDER_KEY = "coalesce(handed_back, 9223372036854775807)"
QUEUE_ORDER = f"{ORDER_KEY}, id"
EXPIRY_POLICIES = ("fail", "retry")
_TIMES = ("created_at", "started_at", "lease_expires_at", "completed_at")


def create(obj, *, title=None, ttl_seconds=None, tags=None) -> dict:
    from . import tags as _tags

    tags = _tags.valid_set(tags)
    with obj.handle.transaction():
        if obj.meta() is not None:
            obj.require_visible()
            raise conflict(say("session_exists", what=obj.what, name=obj.name))
        state.create_object(obj, "created", title=valid_title(title) if title is not None else None, ttl_seconds=ttl_seconds)
        _tags.put(obj, tags)  # its tags in the same transaction (docs/reference/sessions.md §5)
    return state.session_json(obj)


def show(obj) -> dict:
    require_session(obj)
    return state.session_json(obj)


# the prompt object's keys in the order of docs/reference/sessions.md §5 (contract.json "shapes"), which piped
# listings (`session queue`) print as columns; `position` is filled in by the caller
PROMPT_KEYS = ("id", "status", "content", "author", "source", "request_id", "turn_seq", "position", "attempts", "start",
               "schedule_id", "created_at", "started_at", "lease_expires_at", "completed_at", "error")


def prompt_json(row) -> dict:
    p = dict(zip(PROMPT_COLUMNS, row))
    for key in _TIMES:
        p[key] = clock.iso(p[key])
    return {key: p.get(key) for key in PROMPT_KEYS}


def _prompt(obj, prompt_id):
    row = obj.handle.row(f"SELECT {', '.join(PROMPT_COLUMNS)} FROM prompts WHERE id = ?", (prompt_id,))
    if row is None:
        raise not_found(say("prompt_not_found", id=prompt_id, what=obj.what, name=obj.name))
    return row


def get_prompt(obj, prompt_id: int) -> dict:
    p = prompt_json(_prompt(obj, prompt_id))
    if p["status"] == "pending":
        p["position"] = obj.handle.row(
            f"SELECT count(*) FROM prompts, (SELECT {ORDER_KEY} AS k FROM prompts WHERE id = ?1) AS me"
            f" WHERE status = 'pending' AND ({ORDER_KEY} < me.k OR ({ORDER_KEY} = me.k AND id <= ?1))", (prompt_id,)
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


def prompt(obj, content: str, *, source=None, request_id=None, created=False, waiting=False) -> dict | None:
    """Enqueue a prompt (creating the object when CREATED is allowed by the caller).

    While WAITING (`prompt --wait`), a full queue means "not yet": None, and nothing is stored."""
    transcript.check_content(obj, content)
    valid_own_request_id(request_id)  # docs/reference/sessions.md §5.3: not one of the schedules' own
    with obj.handle.transaction():
        meta = state.meta_for_write(obj, created=created, status="active")
        if request_id is not None:
            row = obj.db.execute("SELECT id, content FROM prompts WHERE request_id = ?", (request_id,)).fetchone()
            if row is not None:
                if row[1] != content:
                    raise conflict(say("prompt_request_id_reused", request_id=request_id, what=obj.what))
                return get_prompt(obj, row[0])
        to = check(obj, "prompt", status=meta["status"])
        unfinished = obj.db.execute("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')").fetchone()[0]
        limit = obj.config.get("queue.max_unfinished")
        if unfinished >= limit:
            if waiting:
                return None
            raise conflict(say("queue_full", what=obj.what, unfinished=unfinished, limit=limit))
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


def valid_policy(on_expiry, max_attempts):
    """The lease policy a start stores with its prompt (docs/reference/sessions.md §5): exit 2 for another value."""
    if on_expiry not in EXPIRY_POLICIES:
        raise invalid(say("invalid_on_lease_expiry", value=on_expiry))
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts <= 2**63 - 1:
        raise invalid(say("invalid_max_attempts", value=max_attempts))
    return on_expiry, max_attempts


def valid_attempt(attempt):
    """`--attempt N`: the start the caller holds, by its start number (a positive integer), or None."""
    if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= 2**63 - 1):
        raise invalid(say("invalid_attempt", attempt=attempt))
    return attempt


def next_prompt(obj, *, lease_seconds: int, waiting: bool = False, context=None, format="messages",  # noqa: A002
                on_expiry=None, max_attempts=None):
    """Hand the first startable prompt of the queue out for work, or None when there is nothing to take.

    Its content becomes the `user` turn in the same transaction, so the transcript reads in work order
    (a prompt started again reuses its user turn while that is still the newest live row). While WAITING,
    a prompt already processing means "not yet" rather than a conflict. With CONTEXT (a token budget) the
    prompt carries "window": the context window in FORMAT, always holding the pinned rows and that user
    turn. The start's lease policy (ON_EXPIRY, MAX_ATTEMPTS; default: config) is stored with the prompt.
    """
    on_expiry, max_attempts = valid_policy(
        on_expiry if on_expiry is not None else obj.config.get("queue.on_lease_expiry"),
        max_attempts if max_attempts is not None else obj.config.get("queue.max_attempts"))
    meta = require_session(obj)
    obj.require_visible()
    check(obj, "next", status=meta["status"])
    busy = obj.db.execute("SELECT id FROM prompts WHERE status = 'processing' LIMIT 1").fetchone()
    if busy is not None:
        if waiting:
            return None
        raise conflict(say("prompt_still_processing", id=busy[0], what=obj.what, name=obj.name))
    now = clock.now()
    with obj.handle.transaction():
        row = obj.db.execute(
            "SELECT id, content, author, turn_seq FROM prompts WHERE status = 'pending'"
            f" AND (not_before IS NULL OR not_before <= ?) ORDER BY {QUEUE_ORDER} LIMIT 1", (now,)).fetchone()
        if row is None:
            return None
        prompt_id, content, author, seq = row
        if seq is None or obj.db.execute(
                "SELECT max(seq) FROM turns WHERE superseded_by IS NULL").fetchone()[0] != seq:
            seq = transcript.insert_turn(obj, "user", content, author=author)["seq"]
        obj.db.execute(
            "UPDATE prompts SET status = 'processing', started_at = ?, lease_expires_at = ?, turn_seq = ?,"
            " attempts = attempts + 1, start = start + 1, handed_back = NULL, not_before = NULL, on_expiry = ?, max_attempts = ? WHERE id = ?",
            (now, now + lease_seconds * 1000, seq, on_expiry, max_attempts, prompt_id),
        )
        state.event(obj, "prompt.started", {"prompt_id": prompt_id, "turn_seq": seq})
        state.touch(obj)
        # inside the transaction: a window that cannot be rendered (exit 4) takes nothing
        window = transcript.window(obj, tokens=context, format=format, keep=seq) if context is not None else None
    p = get_prompt(obj, prompt_id)
    if context is not None:
        p["window"] = window
    return p


def _processing(obj, prompt_id: int, doing: str, attempt=None):
    require_session(obj)
    obj.require_visible()
    row = _prompt(obj, prompt_id)
    if row[1] != "processing":
        raise conflict(say("prompt_not_processing", id=prompt_id, what=obj.what, status=row[1], doing=doing))
    current = row[PROMPT_COLUMNS.index("start")]  # docs/reference/sessions.md §5: a start is named by its start number, never attempts
    if attempt is not None and attempt != current:
        raise conflict(say("prompt_lease_lost", id=prompt_id, what=obj.what, current=current, attempt=attempt, doing=doing))
    return row


def renew(obj, prompt_id: int, *, lease_seconds: int, attempt=None) -> dict:
    valid_attempt(attempt)
    _processing(obj, prompt_id, "renewed", attempt)
    with obj.handle.transaction():
        obj.db.execute("UPDATE prompts SET lease_expires_at = ? WHERE id = ?", (clock.now() + lease_seconds * 1000, prompt_id))
        state.touch(obj, active=False)
    return get_prompt(obj, prompt_id)


FINISH_ROLES = ("assistant", "tool")


def plan_finish(config, *, reply=None, meta=None, rows=None, failed=False) -> list:
    """The rows a finish appends, checked before anything is touched (exit 2, nothing changed): ROWS (§6 rows
    as dicts, or prepared), then the REPLY as an assistant row; META (a dict, or JSON text) goes on the reply,
    or without one on the last assistant row of ROWS. Without a reply (and not FAILED) the rows must end
    with a final assistant row without tool calls."""
    if isinstance(meta, str):
        meta = transcript.parse_json(meta, "--meta")
    if meta is not None and not isinstance(meta, dict):
        raise invalid("--" + say("meta_not_object"))
    prepared = []
    for i, r in enumerate(rows or (), 1):
        r = r if isinstance(r, transcript.Prepared) else transcript.prepare(config, r, where=f"line {i}: ")
        if r.role not in FINISH_ROLES:
            raise invalid(say("finish_row_role", line=i, role=r.role))
        prepared.append(r)
    if reply is not None:
        prepared.append(transcript.prepare(config, {"role": "assistant", "content": reply, "meta": meta}, where="--reply: "))
    elif meta is not None:
        last = next((i for i in range(len(prepared) - 1, -1, -1) if prepared[i].role == "assistant"), None)
        if last is None:
            raise invalid("--meta goes on the reply, or on the last assistant row of --rows; there is neither")
        r = prepared[last]
        if r.meta is not None:
            raise invalid(f"line {last + 1}: the last assistant row has its own meta; give --meta or the row's meta, not both")
        prepared[last] = transcript.prepare(config, {
            "role": r.role, "content": r.content, "tool_calls": _loads(r.tool_calls), "meta": meta,
            "data": _loads(r.data), "tokens": r.given_tokens}, where=f"line {last + 1}: ")
    if rows and reply is None and not failed and (prepared[-1].role != "assistant" or prepared[-1].tool_calls is not None):
        raise invalid(say("finish_unended", line=len(prepared)))
    return prepared


def finish(obj, prompt_id: int, *, reply=None, failed=False, error=None, meta=None, rows=None, attempt=None) -> dict:
    """Finish the processing prompt: its turn's rows (ROWS, then REPLY with META) appended and the prompt
    completed (or failed), in one transaction; see `plan_finish` for what is refused (exit 2)."""
    valid_attempt(attempt)
    turn = plan_finish(obj.config, reply=reply, meta=meta, rows=rows, failed=failed or error is not None)
    _processing(obj, prompt_id, "finished", attempt)
    failed = failed or error is not None
    with obj.handle.transaction():
        meta = obj.meta()
        now = clock.now()
        if turn:
            transcript.insert_rows(obj, turn, author=obj.actor, now=now)
        obj.db.execute(
            "UPDATE prompts SET status = ?, completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?",
            ("failed" if failed else "completed", now, error if failed else None, prompt_id),
        )
        state.event(obj, "prompt.failed" if failed else "prompt.completed",
                    {"prompt_id": prompt_id, **({"error": error} if failed else {})})
        _outcome(obj, prompt_id, "failed" if failed else "completed")
        recompute(obj, meta["status"])
        state.touch(obj)
    return get_prompt(obj, prompt_id)


def _hand_back(obj, prompt_id: int, *, delay_seconds: int = 0, not_an_attempt: bool = False) -> None:
    """Processing -> pending at the head of the queue (after those handed back before), not startable before
    the delay (inside a transaction)."""
    now = clock.now()
    obj.db.execute(
        "UPDATE prompts SET status = 'pending', lease_expires_at = NULL, started_at = NULL,"
        " handed_back = (SELECT coalesce(max(handed_back), 0) + 1 FROM prompts), not_before = ?,"
        " attempts = max(attempts - ?, 0) WHERE id = ?",
        (now + delay_seconds * 1000 if delay_seconds else None, 1 if not_an_attempt else 0, prompt_id),
    )


def release(obj, prompt_id: int, *, delay_seconds: int = 0, not_an_attempt: bool = False, attempt=None) -> dict:
    """`session release`: hand the processing prompt back (docs/reference/sessions.md §5); event `prompt.released`."""
    valid_attempt(attempt)
    if isinstance(delay_seconds, bool) or not isinstance(delay_seconds, int) or not 0 <= delay_seconds <= 36500 * 86400:
        raise invalid(say("invalid_delay", delay=delay_seconds))
    _processing(obj, prompt_id, "released", attempt)
    with obj.handle.transaction():
        meta = obj.meta()
        _hand_back(obj, prompt_id, delay_seconds=delay_seconds, not_an_attempt=not_an_attempt)
        attempts = obj.db.execute("SELECT attempts FROM prompts WHERE id = ?", (prompt_id,)).fetchone()[0]
        state.event(obj, "prompt.released", {"prompt_id": prompt_id, "attempts": attempts, "delay": delay_seconds})
        recompute(obj, meta["status"])
        state.touch(obj)
    return get_prompt(obj, prompt_id)


def _outcome(obj, prompt_id, kind) -> None:
    """docs/reference/sessions.md §5.3: the outcome's deliveries, in its own transaction (only when the object has hooks)."""
    if obj.db.execute("SELECT 1 FROM hooks LIMIT 1").fetchone():
        from . import hooks

        hooks.outcome(obj, get_prompt(obj, prompt_id), kind)


def fail_processing(obj, error: str, event_type: str = "prompt.failed", *, where="status = 'processing'", params=(), actor="__actor__",
                    kind="failed") -> int:
    """Fail the processing (or matching) prompts with ERROR; returns how many (inside a transaction)."""
    now = clock.now()
    ids = [r[0] for r in obj.db.execute(f"SELECT id FROM prompts WHERE {where} ORDER BY id", params)]
    for prompt_id in ids:
        obj.db.execute(
            "UPDATE prompts SET status = 'failed', completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?",
            (now, error, prompt_id),
        )
        state.event(obj, event_type, {"prompt_id": prompt_id, "error": error}, actor=actor)
        _outcome(obj, prompt_id, kind)
    return len(ids)


def stop(obj) -> dict:
    meta = require_session(obj)
    obj.require_visible()
    if obj.db.execute("SELECT 1 FROM prompts WHERE status = 'processing'").fetchone() is None:
        return state.session_json(obj)
    with obj.handle.transaction():
        fail_processing(obj, "stopped", kind="cancelled")
        recompute(obj, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def cancel(obj) -> dict:
    meta = require_session(obj)
    obj.require_visible()
    to = check(obj, "cancel", status=meta["status"])
    with obj.handle.transaction():
        fail_processing(obj, "cancelled", where="status IN ('pending', 'processing')", kind="cancelled")
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
        raise conflict(say("archive_busy", what=obj.what, queued=queued))
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
            state.touch(obj)  # a title is activity (docs/reference/storage.md §3)
    return state.session_json(obj)


def check_invite(user, role) -> None:
    """An invitation's input (exit 2), checked before the object is reached, on both backends."""
    from ..config import valid_name

    valid_name(user, "user")
    if role not in state.ROLES:
        raise invalid(say("invalid_participant_role", role=role))


def invite(obj, user: str, role: str = "member") -> dict:
    check_invite(user, role)
    require_session(obj)
    obj.require_visible()
    check(obj, "invite")
    if obj.address.id_scope != "tenant":
        raise conflict(say("participants_tenant_only", what=obj.what))
    current = obj.db.execute("SELECT role FROM participants WHERE user = ?", (user,)).fetchone()
    if current is None:
        count = obj.db.execute("SELECT count(*) FROM participants").fetchone()[0]
        if count >= LIMITS["participants"]:  # docs/reference/sessions.md §5: at most 1,000 participants per object
            raise conflict(say("too_many_participants", what=obj.what, count=count))
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
        raise conflict(say("prompt_not_pending", id=prompt_id, what=obj.what, status=row[1]))
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM prompts WHERE id = ?", (prompt_id,))
        state.event(obj, "prompt.dequeued", {"prompt_id": prompt_id})
        recompute(obj, meta["status"])
        state.touch(obj)
    return state.session_json(obj)


def queue(obj, *, pending_only: bool = False) -> list:
    """Every prompt by id (PENDING_ONLY: the pending ones in queue order); `position` in queue order."""
    require_session(obj)
    obj.require_visible()
    pending = [r[0] for r in obj.db.execute(f"SELECT id FROM prompts WHERE status = 'pending' ORDER BY {QUEUE_ORDER}")]
    positions = {prompt_id: i for i, prompt_id in enumerate(pending, 1)}
    where, order = ("WHERE status = 'pending'", QUEUE_ORDER) if pending_only else ("", "id")
    out = []
    for row in obj.db.execute(f"SELECT {', '.join(PROMPT_COLUMNS)} FROM prompts {where} ORDER BY {order}"):
        p = prompt_json(row)
        p["position"] = positions.get(p["id"])
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


UI_EVENTS = 50  # the web view's page sizes (docs/reference/ui.md §16.7): newest events, finished prompts and answered questions
UI_FINISHED = 20


def session_page(obj, *, events_before=None) -> dict:
    """What the web view's session page shows but the transcript (docs/reference/ui.md §16.3), read in one go: the
    session, its pending questions and the last 20 answered or expired ones, the queue (pending and processing
    prompts, then the last 20 finished ones), and the newest 50 events before EVENTS_BEFORE (`events_before` of
    the answer: the seq for the Earlier events link, or None)."""
    import json

    from . import elicit

    require_session(obj)
    obj.require_visible()
    pending = [elicit.request_json(r) for r in obj.db.execute(
        f"SELECT {elicit.COLUMNS} FROM requests WHERE status = 'pending' ORDER BY id")]
    answered = [elicit.request_json(r) for r in obj.db.execute(
        f"SELECT {elicit.COLUMNS} FROM requests WHERE status != 'pending' ORDER BY id DESC LIMIT ?", (UI_FINISHED,))]
    columns = ", ".join(PROMPT_COLUMNS)
    active = [prompt_json(r) for r in obj.db.execute(f"SELECT {columns} FROM prompts WHERE status = 'processing' ORDER BY id")]
    for position, r in enumerate(obj.db.execute(f"SELECT {columns} FROM prompts WHERE status = 'pending' ORDER BY {QUEUE_ORDER}"), 1):
        p = prompt_json(r)
        p["position"] = position
        active.append(p)
    finished = [prompt_json(r) for r in obj.db.execute(
        f"SELECT {columns} FROM prompts WHERE status NOT IN ('pending', 'processing') ORDER BY id DESC LIMIT ?", (UI_FINISHED,))]
    bound = events_before if events_before is not None else 2**63 - 1
    events = [{"seq": q, "type": t, "actor": a, "data": json.loads(d), "at": clock.iso(at)} for q, t, a, d, at in obj.db.execute(
        "SELECT seq, type, actor, data, at FROM events WHERE seq < ? ORDER BY seq DESC LIMIT ?", (bound, UI_EVENTS + 1))]
    more = len(events) > UI_EVENTS
    events = events[:UI_EVENTS]
    return {"info": state.session_json(obj), "pending": pending, "answered": answered,
            "queue": {"active": active, "finished": finished}, "events": events,
            "events_before": events[-1]["seq"] if more else None}


def participants(obj) -> list:
    require_session(obj)
    obj.require_visible()
    return state.session_json(obj)["participants"]


def expire_leases(obj, now: int) -> int:
    """Alarm: processing prompts whose lease ran out go back to the head of the queue when the policy their
    start stored says "retry" and they have attempts left, else fail "timed out"; inside a transaction."""
    meta = obj.meta()
    retried = obj.db.execute(
        "SELECT id, attempts FROM prompts WHERE status = 'processing' AND lease_expires_at <= ?"
        " AND on_expiry = 'retry' AND attempts < coalesce(max_attempts, 1) ORDER BY id", (now,)).fetchall()
    for prompt_id, attempts in retried:
        _hand_back(obj, prompt_id)
        state.event(obj, "prompt.lease_expired", {"prompt_id": prompt_id, "retry": True, "attempts": attempts}, actor=None)
    n = len(retried) + fail_processing(
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
    if obj.db.execute("SELECT 1 FROM prompts UNION ALL SELECT 1 FROM schedules LIMIT 1").fetchone():
        return False  # a session holding a schedule is not a draft (docs/reference/sessions.md §5)
    with obj.handle.transaction():
        obj.db.execute("UPDATE object SET status = 'archived'")
        state.event(obj, "session.status", {"from": "created", "to": "archived", "reason": "draft expired"}, actor=None)
        state.touch(obj, active=False)
    return True

