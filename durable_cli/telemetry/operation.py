"""One operation span per command run (docs/reference/traces.md §15.6), with `telemetry.traces = all`.

Imported only after a run, and only when the switch is `all` (cli/app.py reads it from the run's own
configuration); the span goes out through the live sender of telemetry/otlp.py: within `telemetry.timeout`,
one warning line when it is not accepted, never a change to the exit status or to stdout.
"""

import os
import re
import time

from ..errors import EXIT_CODES
from . import otlp, traces

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


def span(command: str, status: int, code, *, remote: bool, wakes, start_ns: int, end_ns: int, extra=None) -> traces.Span:
    """The span of one run: COMMAND (`transcript append`), its exit STATUS and §4 CODE, the wakes of guard.wakes."""
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
    if status != 0:
        attributes["error.type"] = code if code and EXIT_CODES.get(code) == status else _CODE_OF.get(status, "internal")
    wakes = wakes or {}
    if len(wakes) == 1:
        attributes["durable.object.id"] = next(iter(wakes))
    elif len(wakes) > 1:
        attributes["durable.objects"] = len(wakes)
    if wakes:
        seen = list(wakes.values())
        for i, key in ((2, "durable.lock.wait_duration"), (3, "durable.wake.duration"), (4, "durable.work.duration"),
                       (5, "durable.commit.duration")):
            attributes[key] = float(sum(w[i] for w in seen))
        if len(wakes) == 1 and seen[0][0] is not None:
            size = _size(seen[0][0])
            if size is not None:
                attributes["durable.object.size"] = size
    attributes.update(extra or {})  # a memory operation's (§15.6)
    out = traces.Span(trace_id, span_id, parent_id, name, traces.INTERNAL, start_ns, max(end_ns, start_ns), attributes)
    if status in _FAULTS:
        out.status = traces.ERROR
    return out


def emit(config, command: str, status: int, code, *, remote: bool, wakes, start_ns: int, extra=None) -> None:
    """Send the run's span (never raises: a trace backend never changes an outcome)."""
    live = otlp.live(config)
    if live is None:
        return
    live.send([span(command, status, code, remote=remote, wakes=wakes, start_ns=start_ns, end_ns=time.time_ns(), extra=extra)])
