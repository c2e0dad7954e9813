"""Input first (SPEC §4): the checks an operation's input passes before anything is opened, created or sent.

One list for every caller, so both backends refuse the same input with the same message: the CLI runs
them before it opens NAME (a bad input is exit 2 whether NAME exists or not), the remote client before
it sends a request (the Worker checks again: it cannot trust clients), and the local library runs the
same rules of core/ under the object's lock. Each raises DurableError (exit 2) or returns the input as
the operation stores it. The rules themselves live in core/ (one object) and across/ (many).
"""

# name: (module, function), each imported when first called, so a command loads only the rules it checks
# (looked up at every use, never kept here: a function replaced in its module is the one that runs)
_CHECKS = {
    "question": ("core.elicit", "check_ask"),  # prompt and choices of `elicit ask`
    "request_id": ("core.lifecycle", "valid_request_id"),
    "title": ("core.lifecycle", "valid_title"),
    "rate": ("core.limits", "parse_rate"),  # N/DUR of `limit hit`
    "fact": ("core.memory", "check_set"),  # KEY, VALUE, --source, --confirmed of `memory set`
    "invite": ("core.sessions", "check_invite"),  # USER and --role of `session invite`
    "finish": ("core.sessions", "plan_finish"),  # the rows `session finish` appends: --rows, then --reply, --meta
    "attempt": ("core.sessions", "valid_attempt"),  # --attempt of renew, finish, release
    "lease_policy": ("core.sessions", "valid_policy"),  # --on-expiry and --max-attempts of `session next`
    "summary_request": ("core.transcript", "check_summary_request"),  # TEXT or --command, --input: summarize, compact
    "text": ("core.transcript", "check_text"),  # a prompt's text, a reply: not empty, within max_turn_bytes
    "json_option": ("core.transcript", "parse_json"),  # --meta, --data, --tool-calls: RFC 8259, exit 2 naming it
    "row": ("core.transcript", "prepare"),  # one row of `transcript append`
    "rows": ("core.transcript", "prepare_batch"),  # the JSONL lines of `append --batch` and `finish --rows`
}


def __getattr__(name):
    try:
        module, function = _CHECKS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    from importlib import import_module

    return getattr(import_module(f"durable_cli.{module}"), function)


def fork_request(new, new_title, at):
    """NEW, --title and --at of `durable fork`, before the source is opened."""
    from .core.fork import check_request

    return check_request(new, new_title, at)


def search_query(query, fts=False) -> str:
    """QUERY of `durable search` (plain text, or FTS5 syntax with FTS) checked before any object is read or
    a request sent; returns the FTS5 expression it asks for."""
    from .across.search import check_query

    return check_query(query, fts)


def export_records(lines) -> list:
    """The lines of an export file as (line number, record): a line that is not a record is exit 2 before
    anything is imported (each record's own fields are checked at import)."""
    from .across.rights import parse_records

    return parse_records(lines)
