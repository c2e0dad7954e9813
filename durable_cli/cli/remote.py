"""durable remote: remote mode's local tools (docs/reference/remote.md §13)."""

import typer

app = typer.Typer(help="Remote mode on Cloudflare Durable Objects.\n\nExample: durable remote dev --port 8787", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="remote")


@app.command()
def dev(
    port: int = typer.Option(None, "--port", metavar="N", help="Port on 127.0.0.1 (default: a free one)."),
    storage: str = typer.Option(None, "--storage", metavar="DIR", help="Keep the objects and the Worker's keys in DIR (default: a temporary directory, removed at exit)."),
    rate_limit: int = typer.Option(0, "--rate-limit", metavar="N", help="Each token's requests a minute, as DURABLE_RATE_LIMIT deployed (default: 0, no limit)."),
):
    """Serve the Worker with a local workerd; prints {"url", "admin_token", "token_key_file"} once it answers, runs until SIGTERM/SIGINT.

    The signing key (token_key_file, kept in DIR) issues user tokens: durable remote token alice --key-file FILE.
    Example: durable remote dev --storage ./dev-objects
    """
    from ..errors import DurableError
    from ..remote import dev as dev_server

    if port is not None and not 0 < port < 65536:
        raise DurableError("--port must be between 1 and 65535", "invalid_input")
    if not 0 <= rate_limit <= dev_server.MAX_RATE_LIMIT:
        raise DurableError(f"--rate-limit must be a whole number from 0 (no limit) to {dev_server.MAX_RATE_LIMIT}", "invalid_input")
    status = dev_server.serve(port=port, storage=storage, rate_limit=rate_limit)
    raise typer.Exit(status)


@app.command()
def install(json_out: bool = typer.Option(False, "--json", help='Print {"workerd", "version"}.')):
    """Install workerd for 'remote dev' into the user cache with npm, at the version the bundled Worker was built for.

    Plain output: the path of the workerd binary. Needs npm (exit 2 without it; a failed install is exit 7).
    Example: durable remote install && durable remote dev --storage ./dev-objects
    """
    from ..remote import dev as dev_server
    from . import render

    doc = dev_server.install()
    render.document(doc, "json") if json_out else render.out(doc["workerd"])


@app.command()
def reindex(json_out: bool = typer.Option(False, "--json", help="Print one JSON document.")):
    """Admin: rebuild the remote index shards from the objects, page by page; prints a receipt.

    Each object the index knows re-sends its row; rows of objects that are gone are dropped. Needs
    --remote (or DURABLE_REMOTE) and an admin token; locally, 'durable doctor --repair' rebuilds index.db.

    Example: durable --remote https://durable.example.workers.dev remote reindex --json
    """
    from . import render
    from .options import mode, store

    doc = store().reindex()
    if mode(json_out) == "plain":
        import sys

        sys.stderr.write(f"reindexed {doc['reindexed']} object(s), removed {doc['removed']} stale index row(s)\n")
    render.receipt(doc, mode(json_out))


@app.command()
def token(
    user: str = typer.Argument(..., metavar="USER", help="The user the token names (its sub)."),
    admin: bool = typer.Option(False, "--admin", help="An admin token: installation-wide commands, and --as any user."),
    expires: str = typer.Option("90d", "--expires", metavar="DUR", help="Valid for DUR (default 90d)."),
    key_file: str = typer.Option(None, "--key-file", metavar="F", help="The signing key (the Worker's DURABLE_TOKEN_KEY) from file F; default: $DURABLE_TOKEN_KEY."),
    json_out: bool = typer.Option(False, "--json", help='Print {"token", "user", "admin", "jti", "issued_at", "expires_at"}.'),
):
    """Print a signed token (JWT, HS256) naming USER, offline, with the Worker's DURABLE_TOKEN_KEY.

    Plain output: the token alone.
    Example: DURABLE_TOKEN=$(durable remote token alice --expires 30d --key-file ./dev-objects/durable-token-key)
    """
    from .. import durations
    from ..config import valid_name
    from ..remote import tokens
    from . import render

    valid_name(user, "user")
    life = durations.parse(expires, what="--expires")
    issued = tokens.issue(tokens.read_key(key_file), user, admin=admin, expires=life)
    if not json_out:
        render.out(issued)
        return
    from .. import clock

    c = tokens.claims(issued)
    render.document({"token": issued, "user": c["sub"], "admin": c["adm"], "jti": c["jti"],
                     "issued_at": clock.iso(c["iat"] * 1000), "expires_at": clock.iso(c["exp"] * 1000)}, "json")


def _whole_seconds(text: str) -> int:
    """An RFC 3339 time (2026-12-01T09:00:00Z, fractions and offsets allowed) as whole seconds since the epoch."""
    import re
    from datetime import datetime

    from ..errors import invalid

    if not re.fullmatch(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d{1,9})?([Zz]|[+-]\d\d:\d\d)", text or ""):
        raise invalid(f"invalid --issued-before {text!r}: use an RFC 3339 time such as 2026-12-01T09:00:00Z")
    plain = re.sub(r"\.\d+", "", text).replace("t", "T").replace("z", "Z").replace("Z", "+00:00")
    try:
        t = datetime.fromisoformat(plain)
    except ValueError:
        raise invalid(f"invalid --issued-before {text!r}: not a date and time") from None
    return int(t.timestamp())  # whole seconds of iat are compared: a fraction does not move the cut


@app.command()
def revoke(
    jti: str = typer.Argument(None, metavar="JTI", help="The token id (its jti claim) to revoke."),
    user: str = typer.Option(None, "--user", metavar="USER", help="Revoke USER's tokens instead."),
    issued_before: str = typer.Option(None, "--issued-before", metavar="TIME", help="With --user: those issued before TIME (RFC 3339; default: now + 1 s)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document."),
):
    """Revoke a token by its id, or every token of a user issued before a time (admin token, --remote).

    Plain output: one TSV row revoked, user, issued_before.
    Example: durable remote revoke --user bob --json
    """
    import time

    from ..config import valid_name
    from ..errors import invalid
    from . import render
    from .options import store

    if (jti is None) == (user is None):
        raise invalid("give a token id (JTI) or --user USER, not both" if jti is not None else "give a token id (JTI) or --user USER")
    if issued_before is not None and user is None:
        raise invalid("--issued-before goes with --user USER")
    if jti is not None and (not jti or len(jti) > 200 or not jti.isprintable() or any(c.isspace() for c in jti)):
        shown = jti if len(jti) <= 64 else jti[:64] + "..."  # a pasted token or file is not echoed whole
        raise invalid(f"invalid JTI {shown!r}: use the jti claim of a token (durable remote token --json prints it)")
    if user is not None:
        valid_name(user, "user")
    cut = None
    if user is not None:
        cut = _whole_seconds(issued_before) if issued_before is not None else int(time.time()) + 1
    s = store()
    if not getattr(s, "remote", False):
        raise invalid("'remote revoke' needs --remote URL (or DURABLE_REMOTE, config remote.url): tokens are the Worker's")
    doc = s.revoke(jti=jti, user=user, issued_before=cut)
    render.document(doc, "json" if json_out else "plain")
