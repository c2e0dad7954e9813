"""The command line: typer wiring only (parse -> call the library -> render).

Only the command group being run is imported and built (start-up is a feature: every call pays it);
`--help` at the top, completion and the man page generator build them all.
"""

import os
import signal
import sys
from contextlib import contextmanager

import typer

from ..errors import DurableError, Interrupted

# which module defines each top-level command or group
MODULES = {
    "session": "session", "transcript": "transcript",
    "ls": "retention", "ttl": "retention", "delete": "retention", "purge": "retention", "sweep": "retention",
    "forget": "admin", "export": "admin", "import": "admin", "backup": "admin", "doctor": "admin", "config": "admin", "path": "admin",
    "elicit": "hitl", "memory": "hitl", "limit": "hitl",
    "search": "search", "usage": "search",
    "remote": "remote",
    "work": "work",
    "mcp": "mcp",
}
_GLOBAL_WITH_VALUE = ("--home", "--as", "--tenant", "--lock-timeout", "--remote")

HELP = """Keep AI-agent sessions on local disk: one named, single-writer SQLite object per session.

Example: durable transcript append demo --role user "hello" && durable transcript show demo --json
"""


class Globals:
    home = None
    user = None
    tenant = None
    lock_timeout = None
    remote = None
    _store = None


G = Globals()


def store():
    """The library Store for this run, built from the global options."""
    if G._store is None:
        from .. import guard
        from ..library import Store

        guard.commit_guard = _commit_guard  # for this run only: run() takes it back
        guard.poll_settled = _poll_settled
        G._store = Store(G.home, user=G.user, tenant=G.tenant, lock_timeout=G.lock_timeout, remote=G.remote)
    return G._store


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
        raise DurableError(f"{what} on stdin is not valid UTF-8 (byte {e.start}); nothing was stored", "invalid_input")


def seconds(text, *, allow_zero=False, what="duration"):
    from .. import durations

    return None if text is None else durations.parse(text, allow_zero=allow_zero, what=what)


def _version(value: bool):
    if value:
        from .. import __version__

        print(f"durable {__version__}")
        raise typer.Exit()


# Typer patch (private: typer.core.TyperArgument.make_metavar, replaced on the class), kept for what it
# shows, at no measurable cost: plain typer writes usage lines as `{NAME} {TEXT|-}`, unlike the man pages,
# and offers no public option to change that (an argument's metavar= is braced too). Cost measured with
# `python bench/shims.py --only typer`: ~0.01 ms; whole `durable transcript append` processes with and
# without both typer patches differ within noise (docs/benchmarks.md, "Private-API shims").
# tests/cli/test_typer_patches.py fails when typer changes the method or stops bracing (then remove this).
def _usage_as_in_man_pages() -> None:
    """Usage lines name arguments as the man pages do (`NAME TEXT|-`), not typer's `{NAME} {TEXT|-}`."""
    from typer.core import TyperArgument

    if getattr(TyperArgument.make_metavar, "plain", False):
        return
    braced = TyperArgument.make_metavar

    def make_metavar(self, ctx, *, usage=False):
        var = braced(self, ctx, usage=usage)
        return var[1:-1] if usage and var.startswith("{") and var.endswith("}") else var

    make_metavar.plain = True
    TyperArgument.make_metavar = make_metavar


def make_app() -> typer.Typer:
    _usage_as_in_man_pages()
    app = typer.Typer(
        name="durable", help=HELP, rich_markup_mode=None, pretty_exceptions_enable=False,
        no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def main_options(
        home: str = typer.Option(None, "--home", metavar="DIR", help="Data directory (env DURABLE_HOME; config defaults.home)."),
        as_user: str = typer.Option(None, "--as", metavar="USER", help="Act as USER (env DURABLE_USER; config defaults.user)."),
        tenant: str = typer.Option(None, "--tenant", metavar="ORG", help="Address tenant-scoped objects of ORG (env DURABLE_TENANT)."),
        lock_timeout: str = typer.Option(
            None, "--lock-timeout", metavar="DUR",
            help="Wait this long for an object's lock, then exit 6; 0 = do not wait (env DURABLE_LOCK_TIMEOUT; default 10s).",
        ),
        remote: str = typer.Option(None, "--remote", metavar="URL", help="Use the durable Worker at URL (env DURABLE_REMOTE; config remote.url; token DURABLE_TOKEN)."),
        version: bool = typer.Option(False, "--version", is_eager=True, callback=_version, help="Print the version and exit."),
    ):
        if lock_timeout is not None:
            seconds(lock_timeout, allow_zero=True, what="--lock-timeout")
        if remote is not None:
            from ..config import check_value

            check_value("remote.url", remote, origin="--remote")
        G.home, G.user, G.tenant, G.lock_timeout, G.remote = home, as_user, tenant, lock_timeout, remote

    return app


def build_app(argv=None, *, full=False) -> typer.Typer:
    """The typer app with the command groups needed for ARGV (all of them when FULL)."""
    import importlib

    app = make_app()
    wanted = None if full else _command_of(argv or [])
    seen = set()
    for command, module in MODULES.items():
        if module in seen or (wanted is not None and MODULES.get(wanted) != module):
            continue
        seen.add(module)
        importlib.import_module(f"{__name__}.{module}").register(app)
    return app


def _command_of(argv):
    """The first positional word after the global options, if it names a known command."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _GLOBAL_WITH_VALUE:
            i += 2
            continue
        if word.startswith("-"):
            if word in ("-h", "--help"):
                return None
            i += 1
            continue
        return word if word in MODULES else None
    return None


def _globals_after_the_command(argv) -> bool:
    """Whether a global option (or --NAME=VALUE of one) follows the command word, before any `--`: only
    then are they added to every command (`_global_options_anywhere`), so other runs pay nothing."""
    command = _command_of(argv)
    if command is None or command not in argv:
        return False
    for word in argv[argv.index(command) + 1:]:
        if word == "--":
            return False
        if word.startswith("--") and word.split("=", 1)[0] in _GLOBAL_WITH_VALUE:
            return True
    return False


def _late_global(param, attr):
    def callback(ctx, _param, value):
        if value is not None:  # after the command: later than the same option before it, so it wins
            if attr == "lock_timeout":
                seconds(value, allow_zero=True, what="--lock-timeout")
            elif attr == "remote":
                from ..config import check_value

                check_value("remote.url", value, origin="--remote")
            setattr(G, attr, value)
        return value

    return callback


_GLOBAL_ATTRS = {"home": "home", "as_user": "user", "tenant": "tenant", "lock_timeout": "lock_timeout", "remote": "remote"}


def _global_options_anywhere(root) -> None:
    """SPEC §4: the global options are taken after the command too (`durable ls --as bob`), the last one on
    the command line winning. Each command and group gets a hidden copy of each, parsed by click where an
    option may stand (never as an option's value, a positional, or after `--`), which sets the same
    global as the one before the command."""
    import copy

    late = []
    for param in root.params:
        if param.name in _GLOBAL_ATTRS:
            twin = copy.copy(param)
            twin.hidden, twin.expose_value = True, False
            twin.callback = _late_global(twin, _GLOBAL_ATTRS[param.name])
            late.append(twin)

    def walk(cmd):
        for sub in (getattr(cmd, "commands", None) or {}).values():
            sub.params.extend(late)
            walk(sub)

    walk(root)


def _completion_words():
    """The words before the one being completed (bash: COMP_WORDS/COMP_CWORD; zsh, fish: _TYPER_COMPLETE_ARGS)."""
    if "COMP_WORDS" in os.environ:
        words = os.environ["COMP_WORDS"].split()
        cword = int(os.environ.get("COMP_CWORD", len(words)))
        return words[1:cword]
    import shlex

    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    if words and not line.endswith(" "):
        words = words[:-1]
    return words[1:]


class Deferral:
    """SIGINT/SIGTERM while a run may have committed wait for its exit (SPEC §3: 130/143 = nothing changed)."""

    committing = False  # a COMMIT has started: from here the run ends with its own status, not 130/143
    exiting = False  # the run is done: a signal now only has to wait for os._exit
    pending = None  # the status of a signal that came while deferred
    requested = None  # the status of a signal raised as Interrupted (even one swallowed in a __del__)


D = Deferral()


@contextmanager
def _commit_guard():
    """Entered around each COMMIT (durable_cli.guard.commit_guard). A failed COMMIT changed nothing, so a
    signal that came meanwhile is delivered then; after a successful one signals wait for the exit."""
    already = D.committing
    if not already and D.requested is not None:  # its Interrupted was swallowed (raised inside a __del__)
        raise Interrupted(D.requested)
    D.committing = True
    try:
        yield
    except BaseException:
        if not already:
            D.committing = False
            if D.pending is not None:
                raise Interrupted(D.pending)
        raise


def _poll_settled(result) -> None:
    """guard.poll_settled: when a remote wait's poll answered nothing (RESULT None, or STOPPED), its guarded
    write changed nothing: the run is interruptible again, and a signal that came during the poll ends it
    now with 130/143. A poll that took or stored something keeps its answer (printed, exit 0)."""
    if D.exiting or not (result is None or result is STOPPED):
        return
    D.committing = False
    if D.pending is not None:
        D.requested, D.pending = D.pending, None
        raise Interrupted(D.requested)


def _interrupt(signum, _frame):
    if D.committing or D.exiting:
        D.pending = D.pending or 128 + signum
        return
    D.requested = 128 + signum
    raise Interrupted(128 + signum)


def _unraisable(hook_args) -> None:
    """An Interrupted raised where Python cannot propagate it (a finalizer) is not a traceback: the run
    still ends 130/143 (D.requested), and no commit happens after it."""
    if not isinstance(hook_args.exc_value, Interrupted):
        sys.__unraisablehook__(hook_args)


STOPPED = object()


def unless_interrupted(result):
    """What a waiting command's poll returns: STOPPED instead of "nothing yet" once a signal came after
    the run committed (an alarm fired at wake), so the wait ends with its own status, not 130/143."""
    return STOPPED if result is None and D.pending is not None else result


def _reserve_std_fds() -> None:
    """A closed stdin/stdout/stderr (`durable ls >&-`) reads as empty and writes nowhere; it also keeps
    fds 0-2 from being reused by a lock or object file, where a stray print would land."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", closefd=False))


def main() -> None:
    """The console script: run, flush, and exit without interpreter teardown (every write is already
    committed and fsync'd, so there is nothing left to do but pay for garbage collection)."""
    try:  # from the moment a handler is installed, its Interrupted is caught below
        sys.unraisablehook = _unraisable
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        _reserve_std_fds()
        status = run(sys.argv[1:])
    except Interrupted as e:  # a signal while the error of an uncommitted run was being reported
        status = e.exit_status
    D.exiting = True
    _flush()
    os._exit(status)


def _arguments_are_text(argv) -> None:
    """Invalid UTF-8 on the command line arrives as surrogate escapes: exit 2 before anything runs."""
    for i, word in enumerate(argv, start=1):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            try:
                shown = word.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # bytes from argv
            except UnicodeEncodeError:
                shown = word.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate from a caller
            raise DurableError(f"invalid UTF-8 in argument {i} ('{shown[:60]}'); nothing was changed", "invalid_input")


INT64 = (-(2 ** 63), 2 ** 63 - 1)


# Typer patch (private: typer._click.types, each number parameter's type given a bounded subclass), kept
# for SPEC §4 in one place: plain typer takes `--limit 9223372036854775808` (exit 0) and `nan`; the public
# typer.Option(max=...) on each of the ~33 options would print `<int range>` and `x<=9223372036854775807`
# in every help line and man page, and FloatRange lets NaN through. Cost: ~0.2 ms to walk every command
# tree, less for the one group a hot command builds; whole processes differ within noise
# (`python bench/shims.py --only typer`; docs/benchmarks.md, "Private-API shims"). typer is pinned <0.29
# for start-up (pyproject.toml); tests/cli/test_typer_patches.py fails when typer changes these types or
# starts bounding numbers itself.
def _bounded_numbers(command, _made={}) -> None:
    """Every integer parameter of every command refuses values beyond 64 bits, and every float a value
    that is not finite (SPEC §4: exit 2), so no command meets a number SQLite cannot hold."""
    import copy

    from typer._click import types

    for param in command.params:
        base = type(param.type)
        if issubclass(base, (types.IntParamType, types.FloatParamType)) and not getattr(base, "bounded", False):
            if base not in _made:
                _made[base] = type(base.__name__, (base,), {"bounded": True, "convert": _convert_bounded})
            bounded = copy.copy(param.type)
            bounded.__class__ = _made[base]
            param.type = bounded
    for sub in (getattr(command, "commands", None) or {}).values():
        _bounded_numbers(sub)


def _convert_bounded(self, value, param, ctx):
    import math

    rv = super(type(self), self).convert(value, param, ctx)
    if isinstance(rv, float) and not math.isfinite(rv):
        self.fail(f"{value!r} is not a finite number.", param, ctx)
    if isinstance(rv, int) and not INT64[0] <= rv <= INT64[1]:
        self.fail(f"{value!r} is out of range (at most {INT64[1]}).", param, ctx)
    return rv


def _usage_error(e, as_json: bool) -> int:
    """The argument parser's own errors in the one-line form of SPEC §4 (never click's usage block)."""
    from typer._click.exceptions import NoArgsIsHelpError

    from .render import error

    if isinstance(e, NoArgsIsHelpError):  # `durable session`: the help, as a usage error
        _write_err(e.ctx.get_help() + "\n")
        return 2
    error(" ".join(e.format_message().split()) or "invalid usage", "invalid_input", 2, as_json)
    if not as_json and e.ctx is not None:
        _write_err(f"Try '{e.ctx.command_path} --help'.\n")
    return 2


def _write_err(text: str) -> None:
    if sys.stderr is not None:
        sys.stderr.write(text)
        sys.stderr.flush()


def run(argv) -> int:
    """Run one command line; returns the exit status (tests call this in-process)."""
    from .render import OutputFailed, PipeClosed, error

    argv = list(argv)
    G.home = G.user = G.tenant = G.lock_timeout = G.remote = G._store = None
    D.committing = D.exiting = False
    D.pending = D.requested = None
    os.umask(0o077)  # files SQLite creates (WAL, SHM) are 0600 whatever the caller's umask
    as_json = "--json" in argv or "--jsonl" in argv
    completing = os.environ.get("_DURABLE_COMPLETE")
    status = 0
    try:
        try:
            if not completing:
                _arguments_are_text(argv)
            app = build_app(_completion_words() if completing else argv, full=bool(completing) and not completing.startswith("complete"))
            import typer.main

            command = typer.main.get_command(app)
            _bounded_numbers(command)
            if not completing and _globals_after_the_command(argv):
                _global_options_anywhere(command)
            try:
                rv = command.main(args=argv, prog_name="durable", standalone_mode=False)
                status = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
            except SystemExit as e:  # completion, and the parser's own exits
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if sys.stdout is not None:
                try:
                    sys.stdout.flush()  # a full device shows here, while the status can still say so
                except BrokenPipeError:
                    raise PipeClosed()
                except OSError as e:
                    raise OutputFailed(e)
        except DurableError as e:
            if e.document is not None:
                from . import render

                render.document(e.document, "json" if as_json else "plain")
            _flush()
            error(e.message, e.code, e.exit_status, as_json)
            status = e.exit_status
        except (PipeClosed, BrokenPipeError):
            status = 0  # `durable ls | head -1`: the reader has what it wanted
            if D.committing:
                _write_err("durable: note: stdout was closed before the output was written; the change was committed\n")
        except OutputFailed as e:
            status = 7
            what = "the change was committed; do not retry it" if D.committing else "nothing was changed"
            error(f"cannot write the output to stdout ({e.error.strerror or e.error}); {what}", "storage", 7, as_json)
        except Exception as e:  # noqa: BLE001 - the parser's errors, the OS's and bugs, each once
            from typer._click.exceptions import ClickException, UsageError

            if isinstance(e, UsageError):
                status = _usage_error(e, as_json)
            elif isinstance(e, ClickException):
                error(" ".join(e.format_message().split()), "invalid_input", 2, as_json)
                status = 2
            elif isinstance(e, OSError):  # the environment, not a bug: a file that cannot be read or written
                where = f" ({e.filename})" if e.filename else ""
                what = "the change itself was committed" if D.committing else "nothing was changed"
                error(f"{e.strerror or e}{where}; {what}", "storage", 7, as_json)
                status = 7
            else:
                if os.environ.get("DURABLE_DEBUG") == "1":
                    raise
                error(f"internal error: {type(e).__name__}: {e}; run with DURABLE_DEBUG=1 for details", "internal", 1, as_json)
                status = 1
    except Interrupted as e:
        status = e.exit_status
    finally:
        D.exiting = True
        if "durable_cli.guard" in sys.modules:
            sys.modules["durable_cli.guard"].commit_guard = None
            sys.modules["durable_cli.guard"].poll_settled = None
        if G._store is not None:
            try:
                if G._store._objects is not None:
                    for warning in G._store._objects.warnings:
                        _write_err(f"durable: warning: {warning}\n")
                G._store.close()
            except Exception:  # noqa: BLE001 - the status is decided; closing is the OS's job at exit
                pass
    if D.requested is not None and not D.committing:
        status = D.requested  # interrupted, though the Interrupted itself was swallowed: nothing committed
    return status


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
