"""durable mcp: serve sessions, memory and human-in-the-loop to MCP clients over stdio (docs/reference/mcp.md §14)."""

import typer

from ..errors import DurableError
from .options import store, units

SDK_MISSING = ("durable mcp needs the MCP Python SDK (mcp >= 2.3), which is not installed; "
               "install it with: pip install 'durable-cli[mcp]'")


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(
    json_out: bool = typer.Option(False, "--json", help="Report an error that stops the server before it serves (no SDK, a bad --as) as one JSON document on stderr; the protocol itself is JSON-RPC on stdout."),
):
    """Serve sessions, memory and questions for a person to an MCP client over stdio, until stdin closes.

    The server acts as one user: --as, DURABLE_USER or config defaults.user (--tenant ORG for a tenant's
    sessions), and works with --remote as every command does; no tool takes a user argument. It speaks
    both protocol revisions of the mcp SDK (>= 2.3): elicitation/create and resources/subscribe with a
    2025-11-25 client, InputRequiredResult and subscriptions/listen with a 2026-07-28 one.

    Tools (arguments are the CLI's names in snake_case; results are the --json documents, an array as
    {"result": [...]}): sessions_list, session_create, session_show, session_prompt, session_next
    (context_tokens, format), session_finish (reply, rows, meta), transcript_append (one row or rows),
    transcript_recent, transcript_search, memory_set, memory_get, memory_list, memory_confirm, ask_human,
    limit_hit. An error is a tool error (isError) whose text is the message and whose structured content is
    {"error": {"code", "message", "exit_status"}}: limit_hit refused is rate_limited with retry_after,
    session_next with nothing pending is timeout, an ask_human that expires unanswered is timeout.

    Resources: durable://sessions, durable://session/NAME and durable://session/NAME/transcript (NAME
    percent-encoded); a subscriber hears of rows any process writes within a second, and the client of a
    session created or deleted (notifications/resources/list_changed). A request whose params durable
    refuses outside a tool's arguments (nesting over 200 levels, NaN, a duplicate key) is JSON-RPC -32602.
    On a terminal, one status line on stderr says whom it serves; nothing when stderr is not a terminal.

    ask_human stores the question in the session first (elicit ask), then asks the person through the
    client when it can elicit: accept records the answer, decline or cancel answers null with that word as
    the comment. Otherwise the request stays pending for 'durable elicit answer'; the same request_id
    returns that request, answered or not, and asks nothing twice, across restarts. memory_set always
    stores source model, unconfirmed; memory_confirm asks the person and confirms only on accept, and
    without elicitation it is refused (permission_denied): the person runs 'durable memory confirm KEY'.

    Exit 0 when stdin closes; 2 when the SDK is not installed (pip install 'durable-cli[mcp]'); 130/143 on
    SIGINT/SIGTERM (the call in hand committed before the signal, or changed nothing).

    Example: durable --as alice mcp    # in the client's config: {"command": "durable", "args": ["--as", "alice", "mcp"]}
    """
    try:
        import mcp_types  # noqa: F401 - the extra `mcp` (2.x); nothing else imports it
        from mcp.server.subscriptions import ListenHandler  # noqa: F401 - absent before 2.3's 2026-07-28 revision
    except ImportError:
        raise DurableError(SDK_MISSING, "invalid_input") from None
    from ..integrations.mcp import serve

    return serve(store(), units())  # units: a span per tool call with telemetry.traces = all
