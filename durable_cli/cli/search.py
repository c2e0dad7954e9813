"""durable search, usage: find what was said, count what it cost (docs/reference/retention.md §7)."""

import sys

import typer

from ..contract.vocabulary import ROW_ROLES as ROLES
from ..errors import DurableError
from . import render
from .options import complete_choices, complete_name, mode, one_output, seconds, store

GROUPINGS = ("session", "day", "model")


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.command("usage")(usage)


def _user(user):
    if user is not None:
        from ..config import valid_name

        valid_name(user, "user")


def search(
    query: str = typer.Argument(..., metavar="QUERY", help='Plain text: every word must match as written, "a phrase", prefix*.'),
    fts: bool = typer.Option(False, "--fts", help="Take QUERY in SQLite FTS5 syntax instead (OR, NOT, NEAR, prefix*, \"phrases\")."),
    user: str = typer.Option(None, "--user", metavar="U", help="Search the sessions of user U (as 'ls --user U')."),
    session: str = typer.Option(None, "--session", metavar="NAME", help="Only session NAME.", autocompletion=complete_name),
    role: str = typer.Option(None, "--role", metavar="R", help="Only rows of role R.", autocompletion=complete_choices(*ROLES)),
    newer_than: str = typer.Option(None, "--newer-than", metavar="DUR", help="Only rows created within DUR."),
    superseded: bool = typer.Option(False, "--superseded", help="Search rows replaced by a summary too."),
    limit: int = typer.Option(20, "--limit", metavar="N", help="At most N hits (default 20)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON array.", callback=one_output),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print one JSON object per line.", callback=one_output),
):
    """Full-text search of your sessions' transcripts (archived and tenant ones included), best match first.

    Each hit names the session and row; the snippet shows the match in [brackets].
    QUERY is plain text: PROJ-123, alice@example.com or main.py are words to find, never syntax.
    Example: durable search 'refund "credit card"' --role user --json | jq -r '.[] | "\\(.name)#\\(.seq)"'
    """
    _user(user)
    if limit < 0:
        raise DurableError("--limit must be non-negative", "invalid_input")
    if session is not None:
        from ..config import valid_name

        valid_name(session)
    hits, skipped = store().search(query, user=user, session=session, role=role,
                                   newer_than=seconds(newer_than, what="--newer-than"), superseded=superseded, limit=limit, fts=fts)
    how = mode(json_out, jsonl)
    if how == "plain" and render.pretty():
        render.search_table(hits)
    else:
        render.listing(hits, how)
    for item in skipped["skipped"]:
        sys.stderr.write(f"durable: warning: skipped {item['name'] or item['id']}: {item['reason']}\n")
    from ..library import conclude_search

    conclude_search(skipped)


def usage(
    user: str = typer.Option(None, "--user", metavar="U", help="The sessions of user U (as 'ls --user U')."),
    all_users: bool = typer.Option(False, "--all", help="Every user's sessions: the whole installation (archived ones count either way)."),
    session: str = typer.Option(None, "--session", metavar="NAME", help="Only session NAME.", autocompletion=complete_name),
    tag: list[str] = typer.Option(None, "--tag", metavar="KEY=VALUE|KEY", help="Only sessions with tag KEY (equal to VALUE when given); repeated, all must hold."),
    newer_than: str = typer.Option(None, "--newer-than", metavar="DUR", help="Only the UTC days within DUR (whole days)."),
    by: str = typer.Option("session", "--by", metavar="session|day|model", help="Group by session (default), UTC day or model.",
                           autocompletion=complete_choices(*GROUPINGS)),
    show_prices: bool = typer.Option(False, "--show-prices", help="Print the price table in force (shipped, and your usage.prices file) and exit."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document."),
):
    """Turns, tokens, input/output tokens and cost of your sessions, from index.db (no session is opened).

    A row's meta.cost_usd is its cost as given; a row with meta.usage and no cost is priced from the
    price table in force (shipped with durable, under your own file: config usage.prices or
    DURABLE_PRICES), cache reads and writes at their own prices.
    Plain output: one row per group (key, then name and owner with --by session, then sessions, turns,
    tokens, input_tokens, output_tokens, cost_usd, cache_read_tokens, cache_write_tokens, cost_given_usd,
    cost_computed_usd, priced_turns, unpriced_turns), then a row whose key is "total".
    --show-prices: one line per model (key, input, output, cache_read, cache_write, source, as_of), USD
    per million tokens.
    Example: durable usage --by day --newer-than 7d --json | jq -r '.groups[] | "\\(.key)\\t\\(.cost_usd)"'
    """
    from .. import prices

    if show_prices:
        table = prices.load(store().config)
        if json_out:
            render.document(table.document(), "json")
            return
        render.listing([{"key": k, **v} for k, v in table.models.items()], "plain")
        return
    _user(user)
    if session is not None:
        from ..config import valid_name

        valid_name(session)
    from .. import checks

    tags = checks.tag_pairs(tag or (), values_required=False)
    table = prices.load(store().config)
    doc = store().usage(user=user, everyone=all_users, session=session, newer_than=seconds(newer_than, what="--newer-than"), by=by,
                        prices=table, **({"tags": tags} if tags else {}))
    if json_out:
        render.document(doc, "json")
        return
    if render.pretty():
        render.usage_table(doc, by)
        return
    rows = [{k: v for k, v in g.items() if k != "price"} for g in doc["groups"]]
    rows.append({"key": "total", **({"name": None, "owner": None} if by == "session" else {}), **doc["total"]})
    render.listing(rows, "plain")
