"""The worker loop of docs/reference/sessions.md §5.1 (`durable work`): take a prompt, run CMD on it, record, renew, retry.

One process for the whole loop, over a Store (either backend): each take, renewal, finish and release is one
wake/work/sleep of the object, and nothing is held between them. CMD runs with `sh -c` in a process group of
its own, the prompt document (the §10 prompt object with its window) as JSON on its stdin. Its stdout is the
turn (a reply, or JSONL rows); its last stderr line is the error of a final failure. A failed attempt is
released with a doubling delay while attempts are left. Signals go to CMD's group; the prompt in hand is then
released as not an attempt (exit 130/143); a signal once the outcome is being committed lets the commit complete,
and `work` exits 0 without taking another prompt. A start that lost its lease records nothing (outcome `lost`).
"""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from . import clock
from .errors import DurableError, invalid
from .stop import Stop

OUTPUTS = ("auto", "text", "rows")
FORMATS = ("messages", "responses", "anthropic", "gemini", "json")
MAX_ATTEMPTS = 10000  # --attempts beyond this is refused (exit 2): no loop should retry for ever
MAX_GRACE = 86400
BACKOFF_CAP = 300  # seconds: the longest delay of a release after a failed attempt
OUTPUT_CAP_FACTOR = 8  # stdout beyond max_turn_bytes x this is refused without being kept
# Idle polling: from 20 ms, x1.5 each time, to at most this (seconds). `next --wait` backs off to 250 ms; a
# shorter cap keeps a prompt's arrival to CMD's start within that interval + 20 ms with the take included.
POLL_CAP = 0.2
# Once CMD's group is done, its pipes are read until their end or until nothing came for this long (seconds):
# a daemon it left (in a session of its own) holding stdout or stderr does not hold `work`.
DRAIN_AFTER = 0.5
BROKEN_RETRY = 60  # seconds: `work --all` skips a corrupt session this long before trying it again


class Settings:
    """The checked options of one `work` run (exit 2 before anything is touched)."""

    def __init__(self, store, *, command, context=None, format=None, lease=None, wait=None, once=False,  # noqa: A002
                 attempts=None, grace=None, output=None, model=None):
        from . import durations

        config = store.config
        self.command = command if command is not None else config.get("work.command")
        if not self.command:
            raise invalid("no command to run: give --command CMD, or set one with 'durable config set work.command CMD'")
        self.format = format or "messages"
        if self.format not in FORMATS:
            raise invalid(f"invalid --format {self.format!r}: use messages, responses, anthropic, gemini or json")
        self.output = output or "auto"
        if self.output not in OUTPUTS:
            raise invalid(f"invalid --output {self.output!r}: use auto, text or rows")
        if context is not None and (isinstance(context, bool) or not 0 <= context <= 10**12):
            raise invalid("--context must be a token budget from 0 to 10^12")
        self.context = context if context is not None else config.get("transcript.token_budget")
        self.lease = durations.parse(lease, what="--lease") if lease is not None else config.seconds("queue.lease")
        self.wait = durations.parse(wait, allow_zero=True, what="--wait") if wait is not None else None
        self.once = once
        if attempts is not None and (isinstance(attempts, bool) or not 1 <= attempts <= MAX_ATTEMPTS):
            raise invalid(f"invalid --attempts {attempts}: use a number of attempts from 1 to {MAX_ATTEMPTS}")
        self.attempts = attempts if attempts is not None else config.get("queue.max_attempts")
        self.grace = durations.parse(grace, what="--grace") if grace is not None else 10
        if self.grace > MAX_GRACE:
            raise invalid(f"invalid --grace {grace!r}: at most 1d")
        self.on_expiry = config.get("queue.on_lease_expiry")
        from .core.sessions import valid_policy

        valid_policy(self.on_expiry, self.attempts)
        self.max_output = config.get("transcript.max_turn_bytes")
        self.model = model if model is not None else config.get("work.model")
        if self.model is not None:
            from .config import valid_name

            valid_name(self.model, "--model")
        # live spans (docs/reference/traces.md §15.5): the setting is read here; nothing is imported unless traces are on
        self.traces = config.get("telemetry.traces") != "off"
        self.live = None
        if self.traces:
            from .telemetry import otlp

            self.live = otlp.live(config)


class Taken:
    """A prompt in hand: where it lives and the prompt document as `next` gave it."""

    def __init__(self, name, address, doc, tenant):
        self.name, self.address, self.doc, self.tenant = name, address, doc, tenant
        # docs/reference/sessions.md §5: the start is named by its start number (never lowered); attempts counts against --attempts
        self.id, self.attempt, self.attempts = doc["id"], doc["start"], doc["attempts"]
        self.object_id = None  # asked only when live spans are sent (docs/reference/traces.md §15.5)


class Run:
    """CMD running on one prompt: stdin fed, stdout kept (to a cap), stderr passed through with its last line kept."""

    def __init__(self, settings, taken, env, stop):
        self.proc = subprocess.Popen(["/bin/sh", "-c", settings.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, start_new_session=True)
        stop.group = self.proc.pid  # from here a signal goes on to CMD's group
        if stop.status is not None:  # one came while CMD was being started
            self.kill_group(stop.status - 128)
        self.cap = settings.max_output * OUTPUT_CAP_FACTOR
        self.out, self.size, self.last_err = [], 0, None
        self.done_at = None  # when CMD's group was done (set by finish)
        document = json.dumps(taken.doc, ensure_ascii=False).encode("utf-8") + b"\n"
        self.threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in (
            (self._feed, (document,)), (self._read_out, ()), (self._read_err, ()))]
        for t in self.threads:
            t.start()

    def _feed(self, document):
        try:
            self.proc.stdin.write(document)
        except OSError:
            pass  # CMD does not read its stdin: its business
        finally:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def _chunks(self, pipe):
        """What PIPE brings, until its end, or until DRAIN_AFTER seconds after CMD's group was done with nothing
        more to read: a daemon that escaped the group and kept the pipe open does not hold the turn (or `work`)."""
        fd = pipe.fileno()
        while True:
            late = time.monotonic() - self.done_at if self.done_at is not None else 0
            if late >= DRAIN_AFTER:
                if late >= 2 * DRAIN_AFTER or not select.select([fd], [], [], 0)[0]:
                    return  # what was left in the pipe is read; a daemon's endless writing is not waited for
            elif not select.select([fd], [], [], 0.05)[0]:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            yield chunk

    def _read_out(self):
        for chunk in self._chunks(self.proc.stdout):
            self.size += len(chunk)
            if self.size <= self.cap:
                self.out.append(chunk)

    def _read_err(self):
        tail = b""
        for chunk in self._chunks(self.proc.stderr):
            try:
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()
            except (OSError, ValueError, AttributeError):
                pass
            tail = (tail + chunk)[-8192:]
            lines = [line for line in tail.decode("utf-8", "replace").splitlines() if line.strip()]
            if lines:
                self.last_err = lines[-1].strip()

    def group_alive(self) -> bool:
        """Whether a process of CMD's group still runs (zombies that init has not reaped yet do not count)."""
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        try:
            entries = os.listdir("/proc")
        except OSError:
            return True  # no /proc: the group answers, so it is taken as running
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 2 and fields[2] == str(self.proc.pid).encode() and fields[0] not in (b"Z", b"X"):
                return True
        return False

    def kill_group(self, signum):
        try:
            os.killpg(self.proc.pid, signum)
        except OSError:
            pass

    def finish(self):
        """Wait for the readers once CMD (and whatever it left holding its pipes) is done."""
        self.done_at = time.monotonic()
        for t in self.threads[1:]:
            t.join()  # bounded: the readers stop DRAIN_AFTER after this once nothing more comes
        for pipe in (self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass

    @property
    def stdout(self) -> bytes:
        return b"".join(self.out)


def backoff(attempts: int) -> int:
    """The delay of a release after a failed attempt: 1s, 2s, 4s, ... at most 5m."""
    return min(2 ** max(attempts - 1, 0), BACKOFF_CAP)


def turn_of(settings, store, raw: bytes, ran=None):
    """CMD's stdout as the turn: (rows for finish, how many) or raise DurableError with the refusal. A text
    reply's meta holds RAN (started_at, ended_at: CMD's run) and the model of --model (docs/reference/traces.md §15.5)."""
    from .core import sessions, transcript

    if len(raw) > settings.max_output * OUTPUT_CAP_FACTOR:
        raise invalid(f"the output is over {settings.max_output * OUTPUT_CAP_FACTOR} bytes; nothing was recorded")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise invalid(f"the output is not valid UTF-8 (byte {e.start}); nothing was recorded") from e
    lines = [line for line in text.split("\n") if line.strip()]
    as_rows = settings.output == "rows" or (settings.output == "auto" and lines and all(_is_row(line) for line in lines))
    if as_rows:
        rows = transcript.prepare_batch(store.config, text.split("\n"))
        turn = sessions.plan_finish(store.config, rows=rows)
        return turn, len(turn)
    reply = text[:-1] if text.endswith("\n") else text
    if not reply:
        raise invalid("the command wrote nothing on stdout: an empty reply is not a turn")
    meta = {}
    if settings.model is not None:
        meta["model"] = settings.model
    if ran is not None:
        meta["started_at"], meta["ended_at"] = ran
    turn = sessions.plan_finish(store.config, reply=reply, meta=meta or None)
    return turn, 1


def _is_row(line: str) -> bool:
    line = line.strip()
    if not line.startswith("{"):
        return False
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return isinstance(value, dict) and "role" in value


class Supervisor:
    """`durable work`: supervises CMD for each prompt it takes (lease renewed while CMD runs, signals passed to
    its process group, the outcome committed once). REPORT(line: dict) is called once per prompt handled."""

    def __init__(self, store, settings, *, name=None, everywhere=False, report=None):
        self.store, self.s = store, settings
        self.name, self.everywhere = name, everywhere
        self.report = report or (lambda line: None)
        self.stop = Stop()
        self.handled = 0
        self.status_shown = False  # the waiting line is on the terminal
        self.recorded = False  # the outcome of the prompt in hand was committed (not a hand-back after a signal)
        self.broken = {}  # --all: the sessions found corrupt (exit 7) -> when to try them again (monotonic)

    # -- taking ---------------------------------------------------------------------------------------

    def _next(self, session):
        return session.next_prompt(lease_seconds=self.s.lease, waiting=True, context=self.s.context, format=self.s.format,
                                   on_expiry=self.s.on_expiry, max_attempts=self.s.attempts)

    def take(self):
        """A prompt in hand, or None when nothing is startable now."""
        return self._take_any() if self.everywhere else self._take_one()

    def _take_one(self):
        try:
            with self.store.open(self.name, lock_timeout=0) as session:
                doc = self._next(session)
        except DurableError as e:
            if e.code == "busy":
                return None  # held by another process: tried again at the next poll (a signal meanwhile ends work at once)
            raise
        return Taken(self.name, None, doc, self.store.tenant) if doc is not None else None

    def _take_any(self):
        self.store.fire_due_alarms()
        now = time.monotonic()
        for row in self.store.startable(limit=8 + len(self.broken)):
            key = (row.get("scope"), row.get("owner"), row["name"])
            if now < self.broken.get(key, 0):
                continue  # corrupt when last tried: the others go on; tried again a minute later
            tenant = row["owner"] if row["scope"] == "tenant" else None
            address = self.store.address(row["name"], tenant=tenant) if tenant else self.store.address(row["name"])
            try:
                with self.store.open(address=address, lock_timeout=0) as session:
                    doc = self._next(session)
            except DurableError as e:
                if e.code in ("busy", "not_found", "conflict"):
                    continue  # held by another process (tried again at the next poll), gone, archived: the next one
                if e.code == "storage":
                    if key not in self.broken:
                        _note(f"{row['name']}: skipped: {e.message}")
                    self.broken[key] = now + BROKEN_RETRY
                    continue
                raise
            self.broken.pop(key, None)
            if doc is not None:
                return Taken(row["name"], address, doc, tenant)
        return None

    def _open(self, taken):
        return self.store.open(address=taken.address) if taken.address is not None else self.store.open(taken.name)

    def _on(self, taken, act, tries=4):
        """ACT(session) on TAKEN's object; a lock another process held past the lock timeout (busy) is
        tried again a few times: CMD's turn is not dropped for a slow neighbour."""
        for attempt in range(tries):
            try:
                with self._open(taken) as session:
                    return act(session)
            except DurableError as e:
                if e.code != "busy" or attempt == tries - 1:
                    raise
                time.sleep(0.25)

    # -- the loop ---------------------------------------------------------------------------------------

    def run(self) -> int:
        self.stop.install()
        try:
            return self._loop()
        finally:
            self._waiting(False)
            self.stop.restore()

    def _waiting(self, on: bool) -> None:
        """docs/reference/output.md §4: while `work` waits for a prompt, one status line on stderr when it is a terminal (written
        in place and wiped when a prompt is taken or the loop ends); nothing at all when it is not."""
        if on == self.status_shown:
            return
        try:
            if not sys.stderr.isatty():
                return
            where = "any session" if self.everywhere else self.name
            sys.stderr.write(f"durable: work: waiting for a prompt on {where} (Ctrl-C stops)" if on else "\r\x1b[K")
            sys.stderr.flush()
            self.status_shown = on
        except (OSError, ValueError):
            pass

    def _loop(self) -> int:
        idle_since, delay, first = time.monotonic(), 0.02, True
        while True:
            if self.stop.status is not None:
                return self.stop.status
            try:
                taken = self.take()
            except DurableError as e:
                if not first and e.code in ("not_found", "conflict"):
                    return 0 if self.handled else e.exit_status  # the session ended while we worked
                raise
            first = False
            if taken is None:
                _deliver()  # docs/reference/sessions.md §5.3: what this poll's wake found due
                self._waiting(True)
                if self.s.wait is not None and time.monotonic() - idle_since >= self.s.wait:
                    return 0 if self.handled else 9
                _sleep(delay, self.stop)
                delay = min(delay * 1.5, POLL_CAP)
                continue
            self._waiting(False)
            self.recorded = False
            self.handle(taken)
            self.handled += 1
            _deliver()  # the outcome's deliveries, at most 2 s before the next take
            if self.stop.status is not None:
                # docs/reference/sessions.md §5.1: a signal during or after the commit of the outcome of the prompt in hand does not undo it;
                # 130/143 never follow a recorded outcome: no further prompt is taken, and the exit is 0
                return 0 if self.recorded else self.stop.status
            if self.s.once:
                return 0
            idle_since, delay = time.monotonic(), 0.02

    def environment(self, taken) -> dict:
        env = dict(os.environ)
        for key in ("DURABLE_TENANT", "DURABLE_REMOTE", "DURABLE_TOKEN", "DURABLE_HOME"):
            env.pop(key, None)
        env.update(DURABLE_SESSION=taken.name, DURABLE_PROMPT_ID=str(taken.id), DURABLE_ATTEMPT=str(taken.attempt),
                   DURABLE_USER=self._user(), DURABLE_GRACE=str(int(self.s.grace)))
        remote = getattr(self.store, "url", None)
        if remote:
            env["DURABLE_REMOTE"] = remote
            token = getattr(self.store, "token", None)
            if token:
                env["DURABLE_TOKEN"] = token
        else:
            env["DURABLE_HOME"] = self.store.home
        if taken.tenant:
            env["DURABLE_TENANT"] = taken.tenant
        if self.s.traces:  # CMD's own spans join the prompt's trace; an inherited TRACEPARENT is not passed on
            env.pop("TRACEPARENT", None)
            if self.s.live is not None and taken.object_id is not None:
                from .telemetry.traces import traceparent

                env["TRACEPARENT"] = traceparent(taken.object_id, taken.id)
        return env

    def _user(self) -> str:
        """The acting user (remotely, without --as: the token's user, asked once)."""
        if self.store.user is None:
            self.store.user = self.store.whoami()["user"]
        return self.store.user

    def handle(self, taken) -> None:
        """Run CMD on TAKEN and record the outcome (or nothing, when the start was lost)."""
        if self.stop.status is not None:  # a signal came while the prompt was being taken
            return self._handed_back(taken, "stopped before the command started")
        if self.s.live is not None and taken.object_id is None:
            taken.object_id = self._on(taken, lambda session: session.meta()["id"])
        started = clock.iso(clock.now())
        try:
            run = Run(self.s, taken, self.environment(taken), self.stop)
        except OSError as e:
            return self._failed(taken, f"the command could not be started: {e.strerror or e}")
        lost = self._supervise(run, taken)
        ended = clock.iso(clock.now())
        self.stop.group = None
        run.finish()
        if lost is not None:
            return self._report(taken, "lost", taken.attempts, 0, lost)
        if self.stop.status is not None:
            return self._handed_back(taken, "stopped by a signal")
        code = run.proc.returncode
        if code != 0:
            if code == 127:
                reason = run.last_err or "command exited 127"
                return self._failed(taken, reason, note=f"the command could not be started (exit 127: not found or not executable): {reason}")
            reason = run.last_err or (f"command killed by signal {-code}" if code < 0 else f"command exited {code}")
            return self._failed(taken, reason)
        try:
            turn, count = turn_of(self.s, self.store, run.stdout, ran=(started, ended))
        except DurableError as e:
            # plan_finish speaks of `finish --reply`, an option the user of `work` never gave
            return self._failed(taken, "the reply" + e.message[len("--reply"):] if e.message.startswith("--reply:") else e.message)
        try:
            done = self._on(taken, lambda session: session.finish(taken.id, rows=turn, attempt=taken.attempt))
        except DurableError as e:
            if e.code in ("conflict", "not_found"):
                return self._report(taken, "lost", taken.attempts, 0, e.message)
            if e.code == "invalid_input":
                return self._failed(taken, e.message)
            raise
        self._report(taken, "completed", done["attempts"], count, None)
        self._send_spans(taken)

    def _send_spans(self, taken) -> None:
        """A finished prompt's spans, right after the commit that finished it (docs/reference/traces.md §15.5)."""
        if self.s.live is None:
            return
        try:
            record = self._on(taken, _record)
        except DurableError as e:
            self.s.live.warn(e.message)
            return
        self.s.live.send_prompt(record, taken.id)

    def _supervise(self, run, taken):
        """Wait for CMD, renewing the lease every third of it; a renewal that finds the start gone stops CMD
        (SIGTERM, killed after the grace) and returns why; so does a signal (sent on by Stop)."""
        every = max(self.s.lease / 3, 0.05)
        renewed, stopping_since = time.monotonic(), None
        lost = None
        # When stopping, the grace is the whole group's: `sh -c 'a; b'` dies at once on SIGTERM while the command
        # it runs may still be cleaning up; it keeps its grace before the SIGKILL.
        while True:
            now = time.monotonic()
            if (self.stop.status is not None or lost is not None) and stopping_since is None:
                stopping_since = now
                if lost is not None:
                    run.kill_group(signal.SIGTERM)
            if run.proc.poll() is not None and (stopping_since is None or not run.group_alive()):
                break
            if stopping_since is not None and now - stopping_since >= self.s.grace:
                run.kill_group(signal.SIGKILL)
                if run.proc.poll() is not None:
                    break  # what is left of the group is dead or a zombie nobody reaps yet
            if lost is None and stopping_since is None and now - renewed >= every:
                renewed = now
                try:
                    # without waiting for a lock another process holds: this loop must keep watching CMD and signals
                    opened = (self.store.open(address=taken.address, lock_timeout=0) if taken.address is not None
                              else self.store.open(taken.name, lock_timeout=0))
                    with opened as session:
                        session.renew(taken.id, lease_seconds=self.s.lease, attempt=taken.attempt)
                except DurableError as e:
                    if e.code in ("conflict", "not_found"):
                        lost = f"the lease was lost while the command ran ({e.message})"
                    elif e.code == "busy":
                        renewed = now - every + 0.25  # tried again shortly
                    # unreachable: tried again a third of the lease later; the lease still runs
            time.sleep(0.02)
        run.kill_group(signal.SIGKILL)  # whatever CMD left running in its group
        return lost

    def _handed_back(self, taken, why):
        try:
            doc = self._on(taken, lambda session: session.release(taken.id, delay_seconds=0, not_an_attempt=True,
                                                                  attempt=taken.attempt))
        except DurableError as e:
            if e.code in ("conflict", "not_found"):
                return self._report(taken, "lost", taken.attempts, 0, e.message)
            raise
        self._report(taken, "released", doc["attempts"], 0, why, recorded=False)

    def _failed(self, taken, reason, note=None):
        """A failed attempt: released with back-off while attempts are left, else failed with REASON."""
        try:
            if taken.attempts < self.s.attempts:
                outcome = "released"
                doc = self._on(taken, lambda session: session.release(taken.id, delay_seconds=backoff(taken.attempts),
                                                                      attempt=taken.attempt))
            else:
                outcome = "failed"
                doc = self._on(taken, lambda session: session.finish(taken.id, failed=True, error=reason, attempt=taken.attempt))
        except DurableError as e:
            if e.code in ("conflict", "not_found"):
                return self._report(taken, "lost", taken.attempts, 0, e.message)
            raise
        self._report(taken, outcome, doc["attempts"], 0, reason, note=note)
        if outcome == "failed":
            self._send_spans(taken)

    def _report(self, taken, outcome, attempts, rows, error, note=None, recorded=True):
        self.recorded = recorded and outcome != "lost"
        self.report({"name": taken.name, "prompt": taken.id, "outcome": outcome, "attempts": attempts, "rows": rows,
                     "steps": self._steps(taken), "error": error}, note)

    def _steps(self, taken) -> dict:
        """docs/reference/sessions.md §5.2: the steps this start committed (`ran`) and replayed (`replayed`), in seq order."""
        none: dict = {"ran": [], "replayed": []}
        try:
            return self._on(taken, lambda session: session.step_report(prompt_id=taken.id, start=taken.attempt), tries=2)
        except DurableError:
            return none  # the session went away meanwhile: its outcome line still goes out


def _record(session) -> dict:
    """The object's export record (what batch export reads), locally or from the Worker."""
    db = getattr(session, "db", None)
    if db is not None:
        from .core.rights import dump

        return dump(db)
    from .remote.backend import _floats, _joined

    return _floats(_joined(lambda cursor: session._call("export", cursor=cursor)))


def _note(text: str) -> None:
    try:
        sys.stderr.write(f"durable: work: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _deliver() -> None:
    if "durable_cli.deliver" in sys.modules:
        sys.modules["durable_cli.deliver"].after_commit()


def _sleep(seconds, stop):
    end = time.monotonic() + seconds
    while stop.status is None and time.monotonic() < end:
        time.sleep(min(0.01, seconds))
