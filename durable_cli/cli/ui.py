"""durable ui: the local web view of sessions, transcripts, queues and questions (docs/reference/ui.md §16)."""

import typer

from ..errors import DurableError
from .options import G, store

EXTRA_MISSING = ("durable ui needs Starlette, uvicorn and Jinja2, which are not installed; "
                 "install them with: pip install 'durable-cli[ui]'")


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)


def ui(
    port: int = typer.Option(None, "--port", metavar="N", help="Serve on 127.0.0.1:N (1-65535); default: a free port the OS picks."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser (it is opened only when stdout is a terminal)."),
):
    """Serve a local web view of your sessions on 127.0.0.1 until SIGINT or SIGTERM.

    Prints one JSON line: {"url", "port", "token", "user", "remote"}; open the url (it carries the run's
    token, after which the browser holds it in a cookie). On a terminal a browser is opened through a 0600
    launch file, so the token never stands on a command line. Pages: sessions (status filter, search), one
    session (questions with an answer form, transcript, queue, events), usage (charts drawn on the server)
    and memory (Confirm). Answers and confirmations go through the same operations as 'elicit answer' and
    'memory confirm'. Open pages update themselves within 2 seconds. With --remote (or DURABLE_REMOTE) it
    shows the remote installation; the remote token stays in this process, never in the browser.

    Exit 130/143 on SIGINT/SIGTERM; 2 for a bad --port or without the extra (pip install 'durable-cli[ui]');
    4 when --port is in use.

    Example: durable ui --no-browser --port 8765
    """
    if port is not None and not 1 <= port <= 65535:
        raise DurableError(f"--port must be between 1 and 65535, not {port}", "invalid_input")
    try:
        import jinja2  # noqa: F401 - the extra `ui`; nothing else imports it
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise DurableError(EXTRA_MISSING, "invalid_input") from None
    from ..ui.server import serve

    return serve(store(), G, port=port, no_browser=no_browser)
