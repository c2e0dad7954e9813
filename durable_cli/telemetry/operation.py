"""One operation span per command run (docs/reference/traces.md §15.6), with `telemetry.traces = all`.

Imported only after a run, and only when the switch is `all` (cli/app.py reads it from the run's own
configuration); the span goes out through the live sender of telemetry/otlp.py: within `telemetry.timeout`,
one warning line when it is not accepted, never a change to the exit status or to stdout.

The long-running commands send one span per unit of their work instead (§15.6): `work` per prompt it handles,
`mcp` per tool call, `ui` per POST. `Units` keeps each unit's wakes apart (guard.wakes routed through a context
variable, which anyio carries into the worker threads of a call) and sends their spans from a thread of its own,
so a slow endpoint never delays an answer.
"""

import contextvars
import os
import re
import threading
import time

from ..errors import EXIT_CODES
from . import otlp, traces

REMOTE = "remote"  # guard.wakes' key of the remote requests: [requests, seconds] (an object id is 64 hex digits)
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_FAULTS = (1, 6, 7)  # status ERROR; every other exit status is UNSET
_CODE_OF: dict = {}
for _code, _status in EXIT_CODES.items():
    _CODE_OF.setdefault(_status, _code)


def _size(path) -> int | None:
    total = None
    for name in (path, path + "-wal"):
        try:
            total = (total or 0) + os.stat(name).st_size
        except OSError:
            pass
    return total


def span(command: str, status: int, code, *, remote: bool, wakes, start_ns: int, end_ns: int, extra=None,
         cmd_status=False) -> traces.Span:
    """The span of one run: COMMAND (`transcript append`), its exit STATUS and §4 CODE, the wakes of guard.wakes.
    CMD_STATUS: STATUS is the exit status of `durable step`'s CMD, no §4 code: no error.type, never a fault."""
    parent = _TRACEPARENT.match(os.environ.get("TRACEPARENT", "").strip().lower())
    if parent and int(parent.group(1), 16) and int(parent.group(2), 16):
        trace_id, parent_id = bytes.fromhex(parent.group(1)), bytes.fromhex(parent.group(2))
    else:
        trace_id, parent_id = os.urandom(16), None
    span_id = os.urandom(8)
    while not any(span_id):
        span_id = os.urandom(8)
    name = f"durable {command}" if command else "durable"
    attributes = {"durable.command": command or "durable", "durable.exit_status": status,
                  "durable.backend": "remote" if remote else "local"}
    if status != 0 and not cmd_status:
        attributes["error.type"] = code if code and EXIT_CODES.get(code) == status else _CODE_OF.get(status, "internal")
    wakes = dict(wakes) if isinstance(wakes, dict) else {}  # a Routed one: its units had the wakes
    requests = wakes.pop(REMOTE, None)
    if requests is not None:  # the run's requests to the Worker, in seconds, and the objects they woke (remote/client.py)
        attributes["durable.remote.duration"] = float(requests[1])
        woken = requests[2] if len(requests) > 2 else ()
        if len(woken) == 1 and not wakes:
            attributes["durable.object.id"] = next(iter(woken))
        elif len(woken) > 1 and not wakes:
            attributes["durable.objects"] = len(woken)
    if len(wakes) == 1:
        attributes["durable.object.id"] = next(iter(wakes))
    elif len(wakes) > 1:
        attributes["durable.objects"] = len(wakes)
    if wakes:
        seen = list(wakes.values())
        for i, key in ((2, "durable.lock.wait_duration"), (3, "durable.wake.duration"), (4, "durable.work.duration"),
                       (5, "durable.commit.duration")):
            attributes[key] = float(sum(w[i] for w in seen))
        attributes["durable.alarms.fired"] = sum(w[6] for w in seen)
        if len(wakes) == 1 and seen[0][0] is not None:
            size = _size(seen[0][0])
            if size is not None:
                attributes["durable.object.size"] = size
    attributes.update(extra or {})  # a memory operation's (§15.6)
    out = traces.Span(trace_id, span_id, parent_id, name, traces.INTERNAL, start_ns, max(end_ns, start_ns), attributes)
    if status in _FAULTS and not cmd_status:
        out.status = traces.ERROR
    return out


def emit(config, command: str, status: int, code, *, remote: bool, wakes, start_ns: int, extra=None,
         cmd_status=False) -> None:
    """Send the run's span (never raises: a trace backend never changes an outcome)."""
    live = otlp.live(config)
    if live is None:
        return
    live.send([span(command, status, code, remote=remote, wakes=wakes, start_ns=start_ns, end_ns=time.time_ns(), extra=extra,
                    cmd_status=cmd_status)])


class Routed:
    """guard.wakes of a process that sends one span per unit: the wakes of each unit (entered with `unit()`) in a
    dict of its own; wakes outside any unit (a page of `ui`, a resource read of `mcp`) are counted nowhere."""

    def __init__(self):
        self.current: contextvars.ContextVar = contextvars.ContextVar("durable_unit_wakes", default=None)

    def setdefault(self, key, default):
        wakes = self.current.get()
        return default if wakes is None else wakes.setdefault(key, default)

    def unit(self) -> dict:
        """A new unit's wakes, for this context and the threads it hands work to."""
        wakes: dict = {}
        self.current.set(wakes)
        return wakes


def unit() -> dict:
    """A new unit's wakes (guard.wakes routed by `units()` of cli/options.py), for this context and its threads."""
    from .. import guard

    routed = guard.wakes
    return routed.unit() if isinstance(routed, Routed) else {}


class Units:
    """The spans of a long-running command, one per unit (`durable mcp memory_set`, `durable ui`, `durable work`):
    queued and sent in order by one daemon thread through one Live sender (one warning per run of failures);
    `close()` waits for what is queued at most telemetry.timeout."""

    def __init__(self, config, *, remote: bool, live=None):
        self.remote = remote
        self.live = live if live is not None else otlp.live(config)
        self.timeout = float(config.seconds("telemetry.timeout"))
        self.queue: list = []
        self.ready = threading.Condition()
        self.thread: threading.Thread | None = None
        self.busy = False  # a batch is being sent
        self.closed = False  # close() was called: the thread ends once the queue is sent
        self.sent = 0  # spans handed to the sender: cli/app.py then sends no span of the whole run
        self.last_status: int | None = None  # the exit status the last unit's span carried

    def span(self, command: str, status: int, code, *, wakes, start_ns: int, extra=None) -> None:
        if self.live is None:
            return
        out = span(command, status, code, remote=self.remote, wakes=wakes, start_ns=start_ns, end_ns=time.time_ns(),
                   extra=extra)
        self.sent, self.last_status = self.sent + 1, status
        with self.ready:
            self.queue.append(out)
            if self.thread is None:
                thread = self.thread = threading.Thread(target=self._run, name="durable-spans", daemon=True)
                thread.start()
            self.ready.notify()

    def send_now(self, command: str, status: int, code, *, wakes, start_ns: int, extra=None) -> None:
        """The same span sent before returning (at most telemetry.timeout): `work`, between two prompts."""
        if self.live is None:
            return
        self.sent, self.last_status = self.sent + 1, status
        self.live.send([span(command, status, code, remote=self.remote, wakes=wakes, start_ns=start_ns,
                             end_ns=time.time_ns(), extra=extra)])

    def _run(self) -> None:
        while True:
            with self.ready:
                while not self.queue and not self.closed:
                    self.ready.wait()
                if not self.queue:
                    self.thread = None
                    return
                batch, self.queue, self.busy = self.queue, [], True
            self.live.send(batch)
            with self.ready:
                self.busy = False
                self.ready.notify_all()

    def close(self) -> None:
        """What is queued goes out, within telemetry.timeout; then the thread ends."""
        end = time.monotonic() + self.timeout
        with self.ready:
            self.closed = True
            self.ready.notify_all()
            while self.thread is not None and (self.queue or self.busy) and time.monotonic() < end:
                self.ready.wait(max(0.0, end - time.monotonic()))


def code_status(e) -> tuple:
    """(exit status, §4 code) of a unit's failure: a DurableError's own, else internal (1)."""
    from ..errors import DurableError

    if isinstance(e, DurableError):
        return e.exit_status, e.code
    return 1, "internal"
