"""The app: which module defines each command, the lazily built typer app (only the command group being
run is imported and built: start-up is a feature, every call pays it; `--help` at the top, completion and
the man page generator build them all), and one run of a command line from argv to exit status."""

import os
import signal
import sys
import time

import typer

from ..errors import DurableError, Interrupted
from .options import G, seconds
from .signals import D, interrupt, reserve_std_fds, unraisable
from .typer_patches import bounded_numbers, global_options_anywhere, usage_as_in_man_pages

# which module defines each top-level command or group
MODULES = {
    "session": "session", "transcript": "transcript",
    "ls": "retention", "ttl": "retention", "delete": "retention", "purge": "retention", "sweep": "retention",
    "forget": "admin", "export": "admin", "import": "admin", "backup": "admin", "doctor": "admin", "config": "admin", "path": "admin",
    "elicit": "hitl", "memory": "hitl", "limit": "hitl",
    "search": "search", "usage": "search",
    "remote": "remote",
    "work": "work",
    "step": "step",
    "mcp": "mcp",
    "ui": "ui",
}


_GLOBAL_WITH_VALUE = ("--home", "--as", "--tenant", "--lock-timeout", "--remote")


HELP = """Keep AI-agent sessions on local disk: one named, single-writer SQLite object per session.

Example: durable transcript append demo --role user "hello" && durable transcript show demo --json
"""


def _version(value: bool):
    if value:
        from .. import __version__

        print(f"durable {__version__}")
        raise typer.Exit()


def make_app() -> typer.Typer:
    usage_as_in_man_pages()
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
        importlib.import_module(f"{__package__}.{module}").register(app)
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
    then are they added to every command (`global_options_anywhere`), so other runs pay nothing."""
    command = _command_of(argv)
    if command is None or command not in argv:
        return False
    for word in argv[argv.index(command) + 1:]:
        if word == "--":
            return False
        if word.startswith("--") and word.split("=", 1)[0] in _GLOBAL_WITH_VALUE:
            return True
    return False


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


def main() -> None:
    """The console script: run, flush, and exit without interpreter teardown (every write is already
    committed and fsync'd, so there is nothing left to do but pay for garbage collection)."""
    try:  # from the moment a handler is installed, its Interrupted is caught below
        sys.unraisablehook = unraisable
        signal.signal(signal.SIGTERM, interrupt)
        signal.signal(signal.SIGINT, interrupt)
        reserve_std_fds()
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
            raise DurableError(f"invalid UTF-8 in argument {i} ('{shown[:60]}'); nothing was changed", "invalid_input") from None


def _usage_error(e, as_json: bool) -> int:
    """The argument parser's own errors in the one-line form of docs/reference/output.md §4 (never click's usage block)."""
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


# click commands already built in this process, by what build_app registered: building one (typer reads
# every command function's signature) costs more than most commands' own work, and a process that runs
# several command lines (the tests, in-process) builds each kind once. Never for completion.
_BUILT: dict = {}


def _command_for(argv, completing):
    """The click command that parses ARGV: the app build_app makes for it, with the numbers bounded and,
    when a global option follows the command word, the global options taken anywhere."""
    import typer.main

    late = not completing and _globals_after_the_command(argv)
    key = None if completing else (MODULES.get(_command_of(argv)), late)
    command = _BUILT.get(key) if key is not None else None
    if command is None:
        app = build_app(_completion_words() if completing else argv, full=bool(completing) and not completing.startswith("complete"))
        command = typer.main.get_command(app)
        bounded_numbers(command)
        if late:
            global_options_anywhere(command)
        if key is not None:
            _BUILT[key] = command
    return command


def run(argv) -> int:
    """Run one command line; returns the exit status (tests call this in-process)."""
    from . import render
    from .render import OutputFailed, PipeClosed, error

    started_ns = time.time_ns()
    argv = list(argv)
    G.home = G.user = G.tenant = G.lock_timeout = G.remote = G._store = None
    G.argv = argv
    G.span = G.units = None
    G.cmd_status = False
    render.last_code = None
    command = None
    D.committing = D.exiting = False
    D.pending = D.requested = None
    if "durable_cli.deliver" in sys.modules:
        sys.modules["durable_cli.deliver"]._NOTED.clear()  # what an earlier run in this process (a test's) left
    os.umask(0o077)  # files SQLite creates (WAL, SHM) are 0600 whatever the caller's umask
    as_json = "--json" in argv or "--jsonl" in argv
    completing = os.environ.get("_DURABLE_COMPLETE")
    status = 0
    try:
        try:
            if not completing:
                _arguments_are_text(argv)
            command = _command_for(argv, completing)
            try:
                rv = command.main(args=argv, prog_name="durable", standalone_mode=False)
                status = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
            except SystemExit as e:  # completion, and the parser's own exits
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if sys.stdout is not None:
                try:
                    sys.stdout.flush()  # a full device shows here, while the status can still say so
                except BrokenPipeError:
                    raise PipeClosed() from None
                except OSError as e:
                    raise OutputFailed(e) from e
        except DurableError as e:
            if e.document is not None:
                from . import render

                render.document(e.document, "json" if as_json else "plain")
            _flush()
            error(e.message, e.code, e.exit_status, as_json, extra=getattr(e, "extra", None))
            status = e.exit_status
        except (PipeClosed, BrokenPipeError):
            status = 0  # `durable ls | head -1`: the reader has what it wanted
            if D.committing:
                _write_err("durable: note: stdout was closed before the output was written; the change was committed\n")
        except OutputFailed as e:
            status = 7
            what = "the change was committed; do not retry it" if D.committing else "nothing was changed"
            error(f"cannot write the output to stdout ({e.error.strerror or e.error}); {what}", "storage", 7, as_json)
        except Exception as e:  # the parser's errors, the OS's and bugs, each once
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
        wakes = None
        if "durable_cli.guard" in sys.modules:  # the hooks store() set, for this run only
            wakes = sys.modules["durable_cli.guard"].wakes
            vars(sys.modules["durable_cli.guard"]).update(commit_guard=None, poll_settled=None, signals_deferred=None,
                                                          wakes=None)
        if "durable_cli.deliver" in sys.modules:  # docs/reference/sessions.md §5.3: after the work, commit and stdout
            try:
                _flush()
                sys.modules["durable_cli.deliver"].after_commit()
            except Exception:  # noqa: BLE001 - a delivery never changes the status or the output
                pass
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
    units, G.units = G.units, None
    if units is not None:  # work, mcp, ui: one span per prompt, tool call or POST (docs/reference/traces.md §15.6)
        try:
            units.close()
        except Exception:  # noqa: BLE001 - a trace backend never changes an outcome
            pass
        if units.sent and status in (0, units.last_status):
            return status  # the run's spans were its units'; a failure none of them carried still sends its own
    if (status not in (130, 143) or G.cmd_status) and not completing:  # a CMD ended by SIGTERM: durable was not
        _operation_span(argv, command, status, wakes, started_ns)
    return status


def _operation_span(argv, command, status: int, wakes, started_ns: int) -> None:
    """With telemetry.traces = all, the run's one span (docs/reference/traces.md §15.6), after its output and locks.
    The switch is read from the run's own configuration (nothing imported while it is off); never changes STATUS."""
    try:
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return
        store = G._store
        config = getattr(store, "config", None)
        if config is None:
            from ..config import Config

            config = Config({"defaults.home": G.home})
        if config.get("telemetry.traces") != "all":
            return
    except Exception:  # noqa: BLE001 - a config the command could not read was its own error to report
        return
    try:
        from ..telemetry import operation
        from . import render

        remote = type(store).__name__ == "RemoteStore" or (store is None and bool(G.remote))
        operation.emit(config, " ".join(_command_words(command, argv)), status, render.last_code, remote=remote,
                       wakes=wakes, start_ns=started_ns, extra=G.span, cmd_status=G.cmd_status)
    except Exception:  # noqa: BLE001 - a trace backend never changes an outcome
        pass


def _command_words(command, argv) -> list:
    """The command's words in ARGV (`transcript append`), walking the app's groups past global options."""
    words, i = [], 0
    while command is not None and hasattr(command, "commands") and i < len(argv):
        word = argv[i]
        if word in _GLOBAL_WITH_VALUE:
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        command = command.commands.get(word)
        if command is None:
            break
        words.append(word)
        i += 1
    return words


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
