"""durable remote: remote mode's local tools (SPEC §13)."""

import typer

app = typer.Typer(help="Remote mode on Cloudflare Durable Objects.\n\nExample: durable remote dev --port 8787", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="remote")


@app.command()
def dev(
    port: int = typer.Option(None, "--port", metavar="N", help="Port on 127.0.0.1 (default: a free one)."),
    storage: str = typer.Option(None, "--storage", metavar="DIR", help="Keep the objects in DIR (default: a temporary directory, removed at exit)."),
    token: list[str] = typer.Option(None, "--token", metavar="TOKEN=USER", help="Also accept TOKEN as USER's token (repeatable)."),
):
    """Serve the Worker with a local workerd; prints {"url", "admin_token"} once it answers, runs until SIGTERM/SIGINT.

    Example: durable remote dev --storage ./dev-objects
    """
    from ..config import valid_name
    from ..errors import DurableError
    from ..remote import dev as dev_server

    if port is not None and not 0 < port < 65536:
        raise DurableError("--port must be between 1 and 65535", "invalid_input")
    tokens = {}
    for item in token or ():
        value, sep, user = item.partition("=")
        if not sep or not value:
            raise DurableError(f"invalid --token {item!r}: use TOKEN=USER", "invalid_input")
        tokens[value] = valid_name(user, "user")
    status = dev_server.serve(port=port, storage=storage, tokens=tokens)
    raise typer.Exit(status)


@app.command()
def reindex(json_out: bool = typer.Option(False, "--json", help="Print one JSON document.")):
    """Admin: rebuild the remote index shards from the objects, page by page; prints a receipt.

    Each object the index knows re-sends its row; rows of objects that are gone are dropped. Needs
    --remote (or DURABLE_REMOTE) and an admin token; locally, 'durable doctor --repair' rebuilds index.db.

    Example: durable --remote https://durable.example.workers.dev remote reindex --json
    """
    from . import mode, render, store

    doc = store().reindex()
    if mode(json_out) == "plain":
        import sys

        sys.stderr.write(f"reindexed {doc['reindexed']} object(s), removed {doc['removed']} stale index row(s)\n")
    render.receipt(doc, mode(json_out))
