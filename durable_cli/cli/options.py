"""What the command modules share: the global options of this run (G), its Store, and the options and
arguments every command parses alike (--json/--jsonl, TEXT or -, durations, NAME completion)."""

import sys

import typer

from ..errors import DurableError


class Globals:
    home = None
    user = None
    tenant = None
    lock_timeout = None
    remote = None
    argv = None  # this run's command line (`durable step` finds its `--` in it)
    span: dict | None = None  # attributes a command adds to its operation span (docs/reference/traces.md §15.6), or None
    units = None  # work, mcp, ui: their spans per prompt, tool call or POST (telemetry/operation.py Units), or None
    cmd_status = False  # `durable step`: the run's exit status is CMD's own, with no §4 code (its span: no error.type)
    _store = None


G = Globals()


def store():
    """The library Store for this run, built from the global options."""
    if G._store is None:
        from .. import guard
        from ..library import Store
        from .signals import commit_guard, poll_settled, signals_deferred, taken_before

        guard.commit_guard = commit_guard  # for this run only: run() takes it back
        guard.poll_settled = poll_settled
        guard.signals_deferred = signals_deferred
        guard.signal_before = taken_before
        guard.wakes = {}  # each object's wakes, for an operation span (docs/reference/traces.md §15.6)
        G._store = Store(G.home, user=G.user, tenant=G.tenant, lock_timeout=G.lock_timeout, remote=G.remote)
        G._store.delivering = "process"  # a command sends them after its output (deliver.after_commit)
        # DURABLE_TRACES=some is exit 2 before the command does anything, as every config value (docs/reference/traces.md
        # §15.1), though only `work` and the operation span read it (a file's value is checked when the file is read)
        G._store.config.get("telemetry.traces")
    return G._store


def operation_spans() -> bool:
    """telemetry.traces = all for this run (docs/reference/traces.md §15.6), read from the Store's configuration."""
    import os

    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return store().config.get("telemetry.traces") == "all"


def units(live=None):
    """With telemetry.traces = all, the sender of a long-running command's spans, one per unit of its work
    (docs/reference/traces.md §15.6: a prompt of `work`, a tool call of `mcp`, a POST of `ui`); else None, and
    nothing imported. Its wakes are then routed per unit (operation.Routed)."""
    if G.units is None and operation_spans():
        from .. import guard
        from ..telemetry import operation

        s = store()
        G.units = operation.Units(s.config, remote=type(s).__name__ == "RemoteStore", live=live)
        guard.wakes = operation.Routed()
    return G.units


def memory_span(operation: str, doc: dict) -> None:
    """A memory command's attributes of the conventions on its operation span (§15.6); the key and value only with
    telemetry.content."""
    if not isinstance(doc, dict) or not operation_spans():
        return
    G.span = {"gen_ai.operation.name": operation, "durable.memory.source": doc.get("source"),
              "durable.memory.confirmed": bool(doc.get("confirmed"))}
    if store().config.get("telemetry.content"):
        G.span.update({"durable.memory.key": doc.get("key"), "durable.memory.value": doc.get("value")})
    G.span = {k: v for k, v in G.span.items() if v is not None}


def complete_name(incomplete: str):
    """TAB completion of NAME: the acting user's objects, straight from index.db."""
    try:
        return [row["name"] for row in store().ls(all_objects=True) if row["name"].startswith(incomplete)]
    except Exception:  # noqa: BLE001 - completion must never print a traceback into the shell
        return []


def complete_choices(*choices):
    return lambda incomplete: [c for c in choices if c.startswith(incomplete)]


def one_output(ctx: typer.Context, param: typer.CallbackParam, value: bool) -> bool:
    """--json and --jsonl are two answers to one question: both on one command line is exit 2,
    found while parsing (input is checked before the object is looked for)."""
    other = "jsonl" if param.name == "json_out" else "json_out"
    if value and ctx.params.get(other):
        raise DurableError("--json and --jsonl do not go together; give one of them", "invalid_input")
    return value


def mode(json_out: bool = False, jsonl: bool = False) -> str:
    return "jsonl" if jsonl else "json" if json_out else "plain"


def read_content(text: str, what: str = "TEXT") -> str:
    """TEXT as given, or stdin (strict UTF-8) for "-" less one trailing newline (\\n or \\r\\n, as
    `echo` and here-documents add); never an implicit read of an inherited stdin."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read() if sys.stdin is not None else b""
    if data.endswith(b"\n"):
        data = data[:-2] if data.endswith(b"\r\n") else data[:-1]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DurableError(f"{what} on stdin is not valid UTF-8 (byte {e.start}); nothing was stored", "invalid_input") from e


def seconds(text, *, allow_zero=False, what="duration"):
    from .. import durations

    return None if text is None else durations.parse(text, allow_zero=allow_zero, what=what)
