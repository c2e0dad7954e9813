"""The command line: typer wiring only (parse -> call the library -> render).

Only the command group being run is imported and built (start-up is a feature: every call pays it);
`--help` at the top, completion and the man page generator build them all.
"""

import os
import signal
import sys

import typer

from ..errors import DurableError, Interrupted

# which module defines each top-level command or group
MODULES = {
    "session": "session", "transcript": "transcript",
    "ls": "retention", "ttl": "retention", "delete": "retention", "purge": "retention", "sweep": "retention",
    "forget": "admin", "export": "admin", "import": "admin", "backup": "admin", "doctor": "admin", "config": "admin", "path": "admin",
    "elicit": "hitl", "memory": "hitl", "limit": "hitl",
    "search": "search", "usage": "search",
}
_GLOBAL_WITH_VALUE = ("--home", "--as", "--tenant", "--lock-timeout")

HELP = """Keep AI-agent sessions on local disk: one named, single-writer SQLite object per session.

Example: durable transcript append demo --role user "hello" && durable transcript show demo --json
"""


class Globals:
    home = None
    user = None
    tenant = None
    lock_timeout = None
    _store = None


G = Globals()


def store():
    """The library Store for this run, built from the global options."""
    if G._store is None:
        from ..library import Store

        G._store = Store(G.home, user=G.user, tenant=G.tenant, lock_timeout=G.lock_timeout)
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
    data = sys.stdin.buffer.read()
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
        version: bool = typer.Option(False, "--version", is_eager=True, callback=_version, help="Print the version and exit."),
    ):
        if lock_timeout is not None:
            seconds(lock_timeout, allow_zero=True, what="--lock-timeout")
        G.home, G.user, G.tenant, G.lock_timeout = home, as_user, tenant, lock_timeout

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


def _interrupt(signum, _frame):
    raise Interrupted(128 + signum)


def main() -> None:
    """The console script: run, flush, and exit without interpreter teardown (every write is already
    committed and fsync'd, so there is nothing left to do but pay for garbage collection)."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    status = run(sys.argv[1:])
    _flush()
    os._exit(status)


def run(argv) -> int:
    """Run one command line; returns the exit status (tests call this in-process)."""
    argv = list(argv)
    G.home = G.user = G.tenant = G.lock_timeout = G._store = None
    os.umask(0o077)  # files SQLite creates (WAL, SHM) are 0600 whatever the caller's umask
    as_json = "--json" in argv or "--jsonl" in argv
    completing = os.environ.get("_DURABLE_COMPLETE")
    status = 0
    try:
        app = build_app(_completion_words() if completing else argv, full=bool(completing) and not completing.startswith("complete"))
        try:
            app(args=argv, prog_name="durable", standalone_mode=True)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except DurableError as e:
        if e.document is not None:
            from . import render

            render.document(e.document, "json" if as_json else "plain")
        _flush()
        from .render import error

        error(e.message, e.code, e.exit_status, as_json)
        status = e.exit_status
    except Interrupted as e:
        status = e.exit_status
    except BrokenPipeError:
        status = 0
    except BaseException as e:
        from .render import PipeClosed

        if not isinstance(e, PipeClosed):
            raise
        status = 0
    except OSError as e:  # the environment, not a bug: a file that cannot be read or written
        from .render import error

        where = f" ({e.filename})" if e.filename else ""
        error(f"{e.strerror or e}{where}; nothing was changed", "storage", 7, as_json)
        status = 7
    except Exception as e:  # noqa: BLE001 - the one place a bug becomes exit 1
        if os.environ.get("DURABLE_DEBUG") == "1":
            raise
        from .render import error

        error(f"internal error: {type(e).__name__}: {e} (a bug; rerun with DURABLE_DEBUG=1 for a traceback)", "internal", 1, as_json)
        status = 1
    finally:
        if G._store is not None:
            if G._store._objects is not None:
                for warning in G._store._objects.warnings:
                    sys.stderr.write(f"durable: warning: {warning}\n")
            G._store.close()
    return status


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
