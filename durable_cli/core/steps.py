"""The step journal of docs/reference/sessions.md §5.2: a prompt's steps, each run at most once per (prompt, KEY) as long as
a run reaches its commit, and replayed from the journal afterwards.

The rules here work on an opened object (its lock held): `begin` (the start checked, then replay, wait, or a
reservation), `still_live`, `renew`, `commit`, `abandon`, `listing` and `of_start`: the ops step_begin, step_live, step_renew,
step_commit, step_abandon, steps and step_report of the contract, whose twins are worker/src/rules/steps.ts. The run itself (CMD without the lock, the renewals,
the signals) is durable_cli/steps.py's. A `running` step is live while its start is current and it was renewed
within LIVE_MS; otherwise it reads as `abandoned`.
"""

import base64
import json

from .. import clock
from ..contract.text import printable, strip
from ..errors import DurableError, conflict, invalid, not_found
from .binding import check_binding, parse_args  # noqa: F401 - a step's binding (the library's names for them)

LIVE_MS = 30_000  # a running step not renewed for this long reads as abandoned
MAX_STDOUT = 1_048_576  # bytes of CMD's stdout a step keeps
MAX_KEY = 200

COLUMNS = ("prompt_id", "key", "seq", "status", "attempt", "token", "renewed_at", "runs", "replays", "last_replay_attempt",
           "exit_status", "stdout", "stdout_bytes", "output_too_large", "redacted", "call_id", "args_sha256", "approval",
           "started_at", "ended_at")
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM steps"


def step_id(object_id: str, prompt_id: int, key: str) -> str:
    """DURABLE_STEP_ID: the same in every start of the prompt, another for another prompt, KEY or object."""
    import hashlib  # here, not at import: `work` loads this module for every prompt (start-up)
    return hashlib.sha256(f"{object_id}\n{prompt_id}\n{key}".encode()).hexdigest()[:32]


def check_key(key) -> str:
    """KEY: the NAME rule of docs/reference/concepts.md §2 (1-200 code points, printable, its own strip()), not beginning with '-'."""
    if (not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY or not printable(key) or key != strip(key)
            or key.startswith("-")):
        raise invalid(f"invalid step KEY {key!r}: use 1-{MAX_KEY} printable characters, without leading or trailing "
                      "white space, not beginning with '-'")
    return key


def _step(obj, prompt_id: int, key: str):
    row = obj.db.execute(f"{_SELECT} WHERE prompt_id = ? AND key = ?", (prompt_id, key)).fetchone()
    return None if row is None else dict(zip(COLUMNS, row))


def _current(obj, prompt_id: int) -> int | None:
    """The prompt's current start, or None when it is not processing."""
    row = obj.db.execute("SELECT status, start FROM prompts WHERE id = ?", (prompt_id,)).fetchone()
    return row[1] if row is not None and row[0] == "processing" else None


def live(obj, step: dict, now: int) -> bool:
    return (step["status"] == "running" and step["attempt"] == _current(obj, step["prompt_id"])
            and (step["renewed_at"] or 0) >= now - LIVE_MS)


def status_of(obj, step: dict, now: int) -> str:
    if step["status"] == "running" and not live(obj, step, now):
        return "abandoned"
    return step["status"]


def step_json(obj, step: dict, now=None) -> dict:
    now = clock.now() if now is None else now
    status = status_of(obj, step, now)
    kept = status == "done" and not step["output_too_large"] and not step["redacted"]
    out = bytes(step["stdout"] or b"") if kept else None
    text = None
    if out is not None:
        try:
            text = out.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    return {
        "prompt": step["prompt_id"], "key": step["key"], "seq": step["seq"],
        "step_id": step_id(obj.id, step["prompt_id"], step["key"]), "status": status, "attempt": step["attempt"],
        "runs": step["runs"], "replays": step["replays"], "last_replay_attempt": step["last_replay_attempt"],
        "exit_status": step["exit_status"] if step["status"] == "done" else None,
        "stdout": text, "stdout_base64": base64.b64encode(out).decode("ascii") if out is not None else None,
        "stdout_bytes": step["stdout_bytes"] if step["status"] == "done" else None,
        "output_too_large": bool(step["output_too_large"]), "redacted": bool(step["redacted"]),
        "call_id": step["call_id"], "args_sha256": step["args_sha256"], "approval": step["approval"],
        "started_at": clock.iso(step["started_at"]), "ended_at": clock.iso(step["ended_at"]),
    }


def _require(obj):
    from .lifecycle import require_session

    require_session(obj)
    obj.require_visible()


def _prompt_of(obj, prompt_id, attempt):
    """(prompt id, current start) of the step's prompt, after existence (3): exit 4 when it is not processing or
    ATTEMPT is not its current start (docs/reference/sessions.md §5.2 "Only the current start")."""
    if prompt_id is None:
        row = obj.db.execute("SELECT id, start FROM prompts WHERE status = 'processing' ORDER BY id LIMIT 1").fetchone()
        if row is None:
            raise conflict(f"no prompt of {obj.what} is processing; a step belongs to a started prompt")
        prompt_id, start = row
    else:
        row = obj.db.execute("SELECT status, start FROM prompts WHERE id = ?", (prompt_id,)).fetchone()
        if row is None:
            raise not_found(f"prompt {prompt_id} of {obj.what} not found; list them with 'durable session queue {obj.name}'")
        if row[0] != "processing":
            raise conflict(f"prompt {prompt_id} of {obj.what} is {row[0]}, not processing; a step belongs to a started "
                           "prompt, and only its current start may run it")
        start = row[1]
    if attempt is not None and attempt != start:
        raise conflict(f"start {attempt} of prompt {prompt_id} of {obj.what} is not its current start ({start}); "
                       "a step acts only for the current start")
    return prompt_id, start


def locate(obj, *, prompt_id=None, approval=None):
    """Existence (3): NAME, --prompt, the --approval request. Returns the request row (or None)."""
    _require(obj)
    if prompt_id is not None and obj.db.execute("SELECT 1 FROM prompts WHERE id = ?", (prompt_id,)).fetchone() is None:
        raise not_found(f"prompt {prompt_id} of {obj.what} not found; list them with 'durable session queue {obj.name}'")
    if approval is not None:
        from . import elicit

        return elicit.get(obj, approval)
    return None


class NotApproved(DurableError):
    """Exit 10 (not_approved) or 11 (refused): the §4 JSON error carries `reason` and `request`."""

    def __init__(self, message: str, code: str, reason: str, request: dict):
        super().__init__(message, code)
        self.extra = {"reason": reason, "request": request}


def _approval(obj, request: dict, prompt_id: int, key: str, call_id: str, sha: str) -> None:
    """REQ approves this very call, or exit 10/11 (docs/reference/sessions.md §5.2 "Approvals", in that order)."""
    rid = request["id"]
    where = f"request {rid} of {obj.what}"
    if request.get("call_id") is None:
        raise NotApproved(f"{where} is not bound to a tool call; ask it with --call-id and --args", "not_approved", "unbound", request)
    if request["call_id"] != call_id or request["args_sha256"] != sha:
        raise NotApproved(f"{where} approves another call (call id {request['call_id']!r}); this call was not approved",
                          "not_approved", "other_call", request)
    used = obj.db.execute("SELECT prompt_id, key FROM steps WHERE approval = ? AND NOT (prompt_id = ? AND key = ?) LIMIT 1",
                          (rid, prompt_id, key)).fetchone()
    if used is not None:
        raise NotApproved(f"{where} was already used by step {used[1]!r} of prompt {used[0]}; a request approves one step",
                          "not_approved", "used", request)
    if request["status"] == "pending":
        raise NotApproved(f"{where} is pending; wait for the answer with 'durable elicit wait {obj.name} {rid}', then run "
                          "the step again", "not_approved", "pending", request)
    if request["status"] == "expired":
        raise NotApproved(f"{where} expired without an answer; the call was refused", "refused", "expired", request)
    if not request.get("approved"):
        raise NotApproved(f"{where} was declined (answer {request['answer']!r}); the call was refused", "refused", "declined", request)


def _check_call(key, token, call_id=None, sha=None, approval=None) -> None:
    """A call's own arguments as the rule takes them (the client checked them first; a crafted body is exit 2 here)."""
    check_key(key)
    if not isinstance(token, str) or not 1 <= len(token) <= 64:
        raise invalid("invalid step token: 1-64 characters")
    if (call_id is None) != (sha is None):
        raise invalid("--call-id and --args go together: give both, or neither")
    if approval is not None and call_id is None:
        raise invalid("--approval needs --call-id and --args: an approval is bound to one tool call")
    if call_id is not None and (not 1 <= len(call_id) <= 128 or not printable(call_id)):
        raise invalid("invalid --call-id: use 1-128 printable characters")
    if sha is not None and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
        raise invalid("invalid args_sha256: 64 lowercase hex digits")


def begin(obj, *, key, token, prompt_id=None, attempt=None, call_id=None, args_sha256=None, approval=None, inside=None):
    """One transaction: the start, then the recorded step (replay, wait), then the approval, then the
    reservation. Returns {"action": "replay" | "wait" | "run", "prompt", "start", "step_id", "step"} (`step`: the
    replayed step's object, else None). INSIDE: the DURABLE_PROMPT_ID of a `durable step` of this NAME and KEY this
    process runs under, if any."""
    _check_call(key, token, call_id, args_sha256, approval)
    sha = args_sha256
    request = locate(obj, prompt_id=prompt_id, approval=approval)
    now = clock.now()

    def answer(action, step=None):
        return {"action": action, "prompt": prompt_id, "start": start, "step_id": step_id(obj.id, prompt_id, key),
                "step": step}

    with obj.handle.transaction():
        prompt_id, start = _prompt_of(obj, prompt_id, attempt)
        step = _step(obj, prompt_id, key)
        if step is not None:
            if (step["call_id"], step["args_sha256"]) != (call_id, sha):
                raise conflict(f"step {key!r} was recorded for another call; its key is taken for prompt {prompt_id}")
            if step["status"] == "done":
                if step["redacted"]:
                    raise conflict(f"step {key!r} was redacted; its output is gone (it is not run again)")
                if step["output_too_large"]:
                    raise invalid(too_large(key, step["stdout_bytes"]))
                obj.db.execute("UPDATE steps SET replays = replays + 1, last_replay_attempt = ? WHERE prompt_id = ? AND key = ?",
                               (start, prompt_id, key))
                step["replays"] += 1
                step["last_replay_attempt"] = start
                from . import state

                state.touch(obj, active=False)  # a commit of its own (the replay count): updated_at, not last_active_at (storage.md §3)
                return answer("replay", step_json(obj, step, now))
            if live(obj, step, now):
                if inside == str(prompt_id):
                    raise conflict(f"step {key!r} is already running in this process tree")
                return answer("wait")
        if request is not None:
            _approval(obj, request, prompt_id, key, call_id, sha)
        if step is None:
            seq = obj.db.execute("SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE prompt_id = ?", (prompt_id,)).fetchone()[0]
            obj.db.execute(
                "INSERT INTO steps (prompt_id, key, seq, status, attempt, token, renewed_at, runs, call_id, args_sha256,"
                " approval, started_at) VALUES (?, ?, ?, 'running', ?, ?, ?, 1, ?, ?, ?, ?)",
                (prompt_id, key, seq, start, token, now, call_id, sha, approval, now))
        else:
            obj.db.execute(
                "UPDATE steps SET status = 'running', attempt = ?, token = ?, renewed_at = ?, runs = runs + 1,"
                " approval = coalesce(?, approval), started_at = ?, ended_at = NULL WHERE prompt_id = ? AND key = ?",
                (start, token, now, approval, now, prompt_id, key))
        from . import state

        state.touch(obj, active=False)
    return answer("run")


def still_live(obj, *, prompt_id: int, key: str) -> bool:
    """Whether step KEY of PROMPT_ID is running and live: what a caller that got "wait" from `begin` polls, reading
    only, until it is not (then `begin` again replays, reserves, or says the caller's start is gone)."""
    _require(obj)
    step = _step(obj, prompt_id, key)
    return step is not None and live(obj, step, clock.now())


def too_large(key: str, size) -> str:
    return (f"step {key!r} wrote {size} bytes, more than the 1 MiB a step keeps; it is not run again (write a large "
            "result to a file and print its path)")


def _held(obj, prompt_id: int, key: str, token: str, start: int):
    step = _step(obj, prompt_id, key)
    return (step is not None and step["status"] == "running" and step["token"] == token
            and step["attempt"] == start and _current(obj, prompt_id) == start)


def lost_message(key: str) -> str:
    return (f"the start was lost while step {key!r} ran; its result is not recorded and the next start runs it again")


def renew(obj, *, prompt_id: int, key: str, token: str, start: int) -> None:
    """Keep the reservation live; exit 4 when the start (or the reservation) is gone."""
    _check_call(key, token)
    with obj.handle.transaction():
        if not _held(obj, prompt_id, key, token, start):
            raise conflict(lost_message(key))
        obj.db.execute("UPDATE steps SET renewed_at = ? WHERE prompt_id = ? AND key = ?", (clock.now(), prompt_id, key))
        from . import state

        state.touch(obj, active=False)  # a renewal is a commit: updated_at, not last_active_at (docs/reference/storage.md §3)


def _stdout_of(key: str, stdout, stdout_bytes: int, output_too_large: bool):
    """The bytes a commit stores (None for a step over the cap): STDOUT is base64; more than MAX_STDOUT bytes not
    marked OUTPUT_TOO_LARGE is exit 2 (HTTP 400 on the Worker), as is a size that does not match."""
    if stdout is None:
        data = b""
    else:
        import binascii

        try:
            data = base64.b64decode(stdout, validate=True)
        except (binascii.Error, ValueError):
            raise invalid(f"the stdout of step {key!r} is not base64") from None
    if output_too_large:
        if stdout_bytes <= MAX_STDOUT:
            raise invalid(f"step {key!r} is marked output_too_large with {stdout_bytes} bytes, within the 1 MiB a step keeps")
        return None
    if len(data) > MAX_STDOUT:
        raise invalid(f"the stdout of step {key!r} is {len(data)} bytes, more than the 1 MiB a step keeps; a commit "
                      "over it is marked output_too_large and holds no stdout")
    if stdout_bytes != len(data):
        raise invalid(f"the stdout of step {key!r} is {len(data)} bytes, not the {stdout_bytes} stdout_bytes says")
    return data


def commit(obj, *, prompt_id: int, key: str, token: str, start: int, exit_status: int, stdout_bytes: int, stdout=None,
           output_too_large=False) -> dict:
    """Record the result (STDOUT base64), only if the reservation is still this call's and its start is current
    (else exit 4)."""
    _check_call(key, token)
    data = _stdout_of(key, stdout, stdout_bytes, output_too_large)
    now = clock.now()
    from . import state

    with obj.handle.transaction():
        if not _held(obj, prompt_id, key, token, start):
            raise conflict(lost_message(key))
        obj.db.execute(
            "UPDATE steps SET status = 'done', token = NULL, exit_status = ?, stdout = ?, stdout_bytes = ?,"
            " output_too_large = ?, ended_at = ? WHERE prompt_id = ? AND key = ?",
            (exit_status, data, stdout_bytes, 1 if data is None else 0, now, prompt_id, key))
        state.touch(obj)
    return step_json(obj, _step(obj, prompt_id, key), now)


def abandon(obj, *, prompt_id: int, key: str, token: str) -> dict | None:
    """CMD exited 75 or was ended by a signal: nothing recorded, the reservation given up (if still ours)."""
    _check_call(key, token)
    with obj.handle.transaction():
        step = _step(obj, prompt_id, key)
        if step is not None and step["status"] == "running" and step["token"] == token:
            obj.db.execute("UPDATE steps SET status = 'abandoned', token = NULL WHERE prompt_id = ? AND key = ?",
                           (prompt_id, key))
            from . import state

            state.touch(obj, active=False)  # a commit (updated_at), not activity
    step = _step(obj, prompt_id, key)
    return None if step is None else step_json(obj, step)


PAGE_ROWS = 1000  # a page of `session steps` holds at most this many steps
PAGE_BYTES = 1024 * 1024  # ... and ends with the step that reaches this many bytes of stdout (a step keeps at most 1 MiB)


def listing(obj, *, prompt_id=None, cursor=None) -> dict:
    """`session steps`, one page: {"rows": the steps of the session by prompt id then seq (one prompt's with
    PROMPT_ID) after CURSOR ([prompt id, seq] of the last one read), "next": the cursor of the next page or None}
    (docs/reference/remote.md §13: a request holds one page of its answer)."""
    _require(obj)
    if prompt_id is not None and obj.db.execute("SELECT 1 FROM prompts WHERE id = ?", (prompt_id,)).fetchone() is None:
        raise not_found(f"prompt {prompt_id} of {obj.what} not found; list them with 'durable session queue {obj.name}'")
    if cursor is not None and len(cursor) != 2:
        raise invalid("invalid cursor of steps: [prompt id, seq]")
    now = clock.now()
    after = tuple(cursor) if cursor is not None else (0, 0)
    where, params = "WHERE (prompt_id > ? OR (prompt_id = ? AND seq > ?))", [after[0], after[0], after[1]]
    if prompt_id is not None:
        where, params = where + " AND prompt_id = ?", params + [prompt_id]
    rows: list = []
    size = 0
    for r in obj.db.execute(f"{_SELECT} {where} ORDER BY prompt_id, seq", params):
        if len(rows) >= PAGE_ROWS or size >= PAGE_BYTES:
            last = rows[-1]
            return {"rows": rows, "next": [last["prompt"], last["seq"]]}
        step = dict(zip(COLUMNS, r))
        size += len(step["stdout"] or b"")
        rows.append(step_json(obj, step, now))
    return {"rows": rows, "next": None}


def of_start(obj, *, prompt_id: int, start: int) -> dict:
    """`work --json`'s "steps": the keys this start committed (`ran`) and replayed (`replayed`), in seq order."""
    ran, replayed = [], []
    for key, status, attempt, last_replay in obj.db.execute(
            "SELECT key, status, attempt, last_replay_attempt FROM steps WHERE prompt_id = ? ORDER BY seq", (prompt_id,)):
        if status == "done" and attempt == start:
            ran.append(key)
        elif status == "done" and last_replay == start:
            replayed.append(key)
    return {"ran": ran, "replayed": replayed}


# Export/import (docs/reference/retention.md §7: key `steps` of the object's record) and erasure.
def export_rows(db) -> list:
    out = []
    for r in db.execute(f"{_SELECT} ORDER BY prompt_id, seq"):
        d = dict(zip(COLUMNS, r))
        d["stdout"] = base64.b64encode(bytes(d["stdout"])).decode("ascii") if d["stdout"] is not None else None
        out.append(d)
    return out


def import_rows(db, rows) -> None:
    for d in rows or []:
        if not isinstance(d, dict) or set(d) != set(COLUMNS):
            raise invalid("an export record's steps are malformed")
        values = dict(d)
        values["stdout"] = base64.b64decode(d["stdout"]) if d["stdout"] is not None else None
        db.execute(f"INSERT INTO steps ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                   tuple(values[c] for c in COLUMNS))


def json_dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
