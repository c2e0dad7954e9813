"""`durable step` and `Store.step` (docs/reference/sessions.md §5.2): run a piece of a prompt's work at most once per
(prompt, KEY) as long as a run reaches its commit, and replay its recorded result afterwards.

The object's lock is held only for the reservation, each renewal (every RENEW_EVERY seconds) and the
commit (core/steps.py), never while CMD runs. A second caller of a KEY that is running and live waits,
polling every POLL seconds without the lock, then replays (or runs it, when the first one was abandoned).
"""

import os
import secrets
import shutil
import signal
import subprocess
import threading
import time

from .core import steps as journal
from .core.steps import parse_args  # noqa: F401 - `elicit ask --args` reads its JSON as a step's
from .errors import DurableError, conflict, invalid

RENEW_EVERY = 10.0  # seconds between renewals of a running step's reservation
POLL = 0.25  # seconds between the polls of a caller that waits for another's run of its KEY
GRACE = 10  # seconds between the SIGTERM passed on to CMD's group and its SIGKILL


class StepResult:
    """What `Store.step` returns: the recorded stdout (bytes), the exit status, and whether it was replayed."""

    __slots__ = ("stdout", "exit_status", "replayed")

    def __init__(self, stdout: bytes, exit_status: int, replayed: bool):
        self.stdout, self.exit_status, self.replayed = stdout, exit_status, replayed

    def __repr__(self):
        return f"StepResult(stdout={self.stdout!r}, exit_status={self.exit_status}, replayed={self.replayed})"

    def __eq__(self, other):
        return isinstance(other, StepResult) and (self.stdout, self.exit_status, self.replayed) == (
            other.stdout, other.exit_status, other.replayed)


class StepFailed(Exception):
    """Raised by a library step's fn to record a failure: EXIT_STATUS (1-255) and STDOUT are recorded and replayed."""

    def __init__(self, exit_status: int, stdout: bytes = b""):
        super().__init__(exit_status)
        self.exit_status, self.stdout = exit_status, stdout


class Abandoned(DurableError):
    """CMD exited 75 or was ended by a signal (or the library's fn raised): nothing recorded, the step abandoned."""

    def __init__(self, message: str, exit_status: int, step):
        super().__init__(message, "internal")
        self.exit_status, self.step = exit_status, step


def _same_home(store, env) -> bool:
    remote = getattr(store, "url", None)
    if remote:
        return env.get("DURABLE_REMOTE") == remote
    home = env.get("DURABLE_HOME")
    return bool(home) and os.path.realpath(home) == os.path.realpath(store.home)


def from_environment(store, name, prompt, attempt, env):
    """The prompt and start of docs/reference/sessions.md §5.2: --prompt/--attempt, else DURABLE_PROMPT_ID/DURABLE_ATTEMPT when
    DURABLE_SESSION is NAME and the user, tenant and data directory are those this call resolves."""
    if prompt is not None:
        return prompt, attempt
    if env.get("DURABLE_SESSION") != name or not env.get("DURABLE_PROMPT_ID"):
        return None, attempt
    if env.get("DURABLE_USER") != store.user or (env.get("DURABLE_TENANT") or None) != (store.tenant or None):
        return None, attempt
    if not _same_home(store, env):
        return None, attempt
    try:
        prompt = int(env["DURABLE_PROMPT_ID"])
    except ValueError:
        return None, attempt
    if attempt is None and env.get("DURABLE_ATTEMPT"):
        try:
            attempt = int(env["DURABLE_ATTEMPT"])
        except ValueError:
            attempt = None
    return prompt, attempt


def check_attempt(attempt):
    if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= 2**63 - 1):
        raise invalid(f"invalid --attempt {attempt}: a start number is a positive integer")
    return attempt


def check_prompt(prompt):
    if prompt is not None and (isinstance(prompt, bool) or not isinstance(prompt, int) or not 1 <= prompt <= 2**63 - 1):
        raise invalid(f"invalid --prompt {prompt}: a prompt id is a positive integer")
    return prompt


def find_command(argv) -> str:
    """CMD's program, looked up on PATH as `env` does; exit 2 (nothing reserved) when it is missing or not executable."""
    if not argv:
        raise invalid("no command to run: give it after '--' (durable step NAME KEY -- CMD [ARG]...)")
    program = argv[0]
    found = shutil.which(program) if "/" not in program else (
        program if os.path.isfile(program) and os.access(program, os.X_OK) else None)
    if not found:
        raise invalid(f"cannot run {program!r}: not found or not executable; nothing was run or recorded")
    return found


class Call:
    """One step call: its checked input, then begin (replay, wait, reserve), the run, and the commit."""

    def __init__(self, store, name, key, *, prompt=None, attempt=None, call_id=None, args=None, approval=None,
                 env=None, args_given=None, parsed=False):
        self.store, self.name = store, name
        self.key = journal.check_key(key)
        check_prompt(prompt)
        check_attempt(attempt)
        if approval is not None and (isinstance(approval, bool) or not isinstance(approval, int) or approval < 1):
            raise invalid(f"invalid --approval {approval}: a request id is a positive integer")
        self.call_id, self.args, self.sha = journal.check_binding(call_id, args, approval=approval, args_given=args_given,
                                                                     parsed=parsed)
        self.approval = approval
        self.env = os.environ if env is None else env
        self.prompt, self.attempt = from_environment(store, name, prompt, attempt, self.env)
        check_attempt(self.attempt)
        self.inside = (self.env.get("DURABLE_PROMPT_ID") if self.env.get("DURABLE_STEP_KEY") == key
                       and self.env.get("DURABLE_SESSION") == name else None)
        self.token = secrets.token_hex(16)
        self.step_ids: dict = {}

    def begin(self, stopped=lambda: False):
        """("replay", step) or ("run", (prompt id, start)), waiting while another caller's run is live. Each try is
        one op of the session (step_begin: one transaction locally, one request to the Durable Object remotely); the
        polls of a wait only read (step_live)."""
        while True:
            with self.store.open(self.name) as session:
                doc = _approval_error(lambda: session.step_begin(
                    key=self.key, token=self.token, prompt_id=self.prompt, attempt=self.attempt, call_id=self.call_id,
                    args_sha256=self.sha, approval=self.approval, inside=self.inside))
            self.step_ids[doc["prompt"]] = doc["step_id"]
            if doc["action"] == "replay":
                return "replay", doc["step"]
            if doc["action"] == "run":
                return "run", (doc["prompt"], doc["start"])
            self.prompt, self.attempt = doc["prompt"], doc["start"]  # this call's own start: when it ends, the wait ends with exit 4
            while True:  # polls that only read (step_live), then begin again
                time.sleep(POLL)
                if stopped():
                    return "stopped", None
                with self.store.open(self.name) as session:
                    if not session.step_live(prompt_id=self.prompt, key=self.key):
                        break

    def step_id(self, prompt_id) -> str:
        return self.step_ids[prompt_id]

    def renew(self, prompt_id, start) -> str | None:
        """One renewal without waiting for a lock another process holds: None, "busy" (also a Worker that did not
        answer: the network's blip is no reason to stop CMD), or why the start is gone."""
        try:
            with self.store.open(self.name, lock_timeout=0) as session:
                session.step_renew(prompt_id=prompt_id, key=self.key, token=self.token, start=start)
        except DurableError as e:
            if e.code == "busy" or (getattr(self.store, "url", None) and e.code in ("outcome_unknown", "storage", "rate_limited")):
                return "busy"  # tried again shortly; a Worker out of reach for 30 s makes the step abandoned by its clock
            if e.code in ("conflict", "not_found"):
                return e.message
            raise
        return None

    def commit(self, prompt_id, start, exit_status, stdout, size) -> dict:
        """The result, one op (a request remotely, retried under its request id: applied once). Over 1 MiB it holds
        no stdout and is marked output_too_large (docs/reference/sessions.md §5.2 "Limits")."""
        import base64

        too_large = size > journal.MAX_STDOUT
        with self.store.open(self.name) as session:
            return session.step_commit(prompt_id=prompt_id, key=self.key, token=self.token, start=start,
                                       exit_status=exit_status, stdout_bytes=size, output_too_large=too_large,
                                       stdout=None if too_large else base64.b64encode(bytes(stdout)).decode("ascii"))

    def abandon(self, prompt_id):
        try:
            with self.store.open(self.name) as session:
                return session.step_abandon(prompt_id=prompt_id, key=self.key, token=self.token)
        except DurableError:
            return None  # whatever is left reads as abandoned once it is not renewed


def _approval_error(call):
    """CALL(); a remote refusal of the approval (exit 10/11, its request and reason in the error's document) as the
    file backend raises it, so the §4 JSON error carries `reason` and `request` on both backends."""
    try:
        return call()
    except journal.NotApproved:
        raise
    except DurableError as e:
        doc = e.document
        if e.code in ("not_approved", "refused") and isinstance(doc, dict) and "reason" in doc:
            raise journal.NotApproved(e.message, e.code, doc["reason"], doc.get("request")) from None
        raise


def listing(store, name, prompt=None) -> list:
    """`session steps`: NAME's steps by prompt id then seq (PROMPT: one prompt's), read a page at a time (the op
    `steps`), on either backend."""
    check_prompt(prompt)
    rows, cursor = [], None
    while True:
        with store.open(name) as session:
            page = session.steps(prompt_id=prompt, cursor=cursor)
        rows += page["rows"]
        cursor = page["next"]
        if cursor is None:
            return rows


def _grace(env) -> float:
    value = env.get("DURABLE_GRACE")
    if value is None:
        return GRACE
    try:
        return max(min(GRACE, int(value) - 1), 0)
    except ValueError:
        return GRACE


def _pdeathsig():
    """A preexec function giving CMD SIGKILL as its parent-death signal (Linux), or None elsewhere."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None

    def preexec():
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG

    return preexec


def run_command(call, program, argv, prompt_id, start):
    """Run CMD (no shell, its own process group, stdin inherited, stdout kept up to 1 MiB, stderr passed through),
    renewing the reservation; returns (status or None, stdout, size, lost reason, signal status)."""
    env = dict(call.env)
    env.update(DURABLE_SESSION=call.name, DURABLE_PROMPT_ID=str(prompt_id), DURABLE_ATTEMPT=str(start),
               DURABLE_STEP_KEY=call.key, DURABLE_STEP_ID=call.step_id(prompt_id))
    from .stop import Stop  # SIGINT/SIGTERM while CMD runs: remembered, and passed on to CMD's group, as `work` does

    stop = Stop()
    saved = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        proc = subprocess.Popen([program, *argv[1:]], executable=program, stdout=subprocess.PIPE, env=env,
                                start_new_session=True, preexec_fn=_pdeathsig())
        stop.group = proc.pid
        if stop.status is not None:
            _killpg(proc.pid, stop.status - 128)
        kept, size = [], [0]

        def read():
            while True:
                chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(65536)
                if not chunk:
                    return
                if size[0] < journal.MAX_STDOUT + 1:
                    kept.append(chunk[: journal.MAX_STDOUT + 1 - size[0]])
                size[0] += len(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        grace = _grace(call.env)
        renewed, stopping_since, lost = time.monotonic(), None, None
        while True:
            now = time.monotonic()
            if (stop.status is not None or lost is not None) and stopping_since is None:
                stopping_since = now
                if lost is not None:
                    _killpg(proc.pid, signal.SIGTERM)
            if proc.poll() is not None:
                break
            if stopping_since is not None and now - stopping_since >= grace:
                _killpg(proc.pid, signal.SIGKILL)
            if lost is None and stopping_since is None and now - renewed >= RENEW_EVERY:
                why = call.renew(prompt_id, start)
                renewed = now if why != "busy" else now - RENEW_EVERY + 0.25
                if why not in (None, "busy"):
                    lost = why
            time.sleep(0.02)
        _killpg(proc.pid, signal.SIGKILL)  # whatever CMD left running in its group
        reader.join(5)
        return proc.returncode, b"".join(kept), size[0], lost, stop.status
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def _killpg(group, signum):
    try:
        os.killpg(group, signum)
    except OSError:
        pass


def step_command(store, name, key, argv, **options):
    """`durable step`: returns (step json with "replayed", stdout bytes, exit status of CMD). Raises Abandoned
    (75 / 128+N), DurableError for a refusal, the lost start (4) or output over 1 MiB (2, after the commit)."""
    call = Call(store, name, key, **options)
    program = find_command(argv)
    action, value = call.begin()
    if action == "replay":
        return _replayed(value, key)
    prompt_id, start = value
    status, stdout, size, lost, signalled = run_command(call, program, argv, prompt_id, start)
    if lost is not None:
        call.abandon(prompt_id)
        raise conflict(journal.lost_message(key))
    if signalled is not None or status is None or status < 0 or status == 75:
        step = call.abandon(prompt_id)
        code = signalled if signalled is not None else (75 if status == 75 else 128 - status)
        why = "exited 75 (try again)" if code == 75 and signalled is None else f"was ended by signal {code - 128}"
        raise Abandoned(f"step {key!r}: the command {why}; nothing was recorded and the next call runs it again", code, step)
    step = call.commit(prompt_id, start, status, stdout, size)
    if step["output_too_large"]:
        raise invalid(journal.too_large(key, size))
    return {**step, "replayed": False}, stdout, status


def _replayed(step, key):
    import base64

    return {**step, "replayed": True}, base64.b64decode(step["stdout_base64"] or ""), step["exit_status"]


def step_library(store, name, key, fn, *, prompt=None, attempt=None, call_id=None, args=None, approval=None) -> StepResult:
    """Store.step: fn() runs without the lock; bytes or str (UTF-8) recorded with exit status 0, StepFailed
    recorded as given; any other exception records nothing (the step abandoned) and propagates."""
    env = os.environ if prompt is None else {}
    call = Call(store, name, key, prompt=prompt, attempt=attempt, call_id=call_id, args=args, approval=approval, env=env,
                args_given=args is not None, parsed=True)
    action, value = call.begin()
    if action == "replay":
        import base64

        return StepResult(base64.b64decode(value["stdout_base64"] or ""), value["exit_status"], True)
    prompt_id, start = value
    done = threading.Event()
    lost = []

    def renewals():
        renewer = Call.__new__(Call)
        renewer.__dict__.update(call.__dict__)
        renewer.store = _fresh_store(store)
        last = time.monotonic()
        try:
            while not done.is_set():
                time.sleep(0.05)
                if time.monotonic() - last >= RENEW_EVERY:
                    why = renewer.renew(prompt_id, start)
                    last = time.monotonic() if why != "busy" else last + 0.25
                    if why not in (None, "busy"):
                        lost.append(why)
                        return
        finally:
            if renewer.store is not store:
                renewer.store.close()

    thread = threading.Thread(target=renewals, daemon=True)
    thread.start()
    try:
        try:
            out = fn()
            status = 0
        except StepFailed as e:
            out, status = e.stdout, e.exit_status
        if isinstance(out, str):
            out = out.encode("utf-8")
        if not isinstance(out, (bytes, bytearray)) or isinstance(status, bool) or not isinstance(status, int) \
                or not 0 <= status <= 255:
            raise invalid(f"step {key!r}: fn must return bytes or str (and StepFailed an exit status 0-255)")
    except BaseException:
        done.set()
        thread.join()
        call.abandon(prompt_id)
        raise
    done.set()
    thread.join()
    if lost:
        call.abandon(prompt_id)
        raise conflict(journal.lost_message(key))
    step = call.commit(prompt_id, start, status, bytes(out), len(out))
    if step["output_too_large"]:
        raise invalid(journal.too_large(key, len(out)))
    return StepResult(bytes(out), status, False)


def _fresh_store(store):
    """A Store of the same data directory and identity for a renewal thread (a Store is one thread's)."""
    if getattr(store, "url", None):
        return store
    return type(store)(home=store.home, user=store.user, tenant=store.tenant, config=store.config)
