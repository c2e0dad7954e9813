"""Input first (docs/reference/output.md §4): the checks an operation's input passes before anything is opened, created or sent.

One list for every caller, so both backends refuse the same input with the same message. A check the
contract names on an op or an argument ("check": NAME in durable_cli/contract/contract.json "ops") is run by the
seam (durable_cli/seam.py) for every call of that op, on either backend, before NAME is opened or a
request sent (a bad input is exit 2 whether NAME exists or not; the Worker checks again: it cannot trust
clients). The others are called by the op's own client logic (a remote hook, a command that reads rows
from a file). Each raises DurableError (exit 2) or returns the input as the operation stores it. The
rules themselves live in core/ (one object) and across/ (many).
"""

# name: (module, function), each imported when first called, so a command loads only the rules it checks
# (looked up at every use, never kept here: a function replaced in its module is the one that runs)
_CHECKS = {
    "question": ("core.elicit", "check_ask"),  # prompt and choices of `elicit ask`
    "request_id": ("core.lifecycle", "valid_request_id"),
    "title": ("core.lifecycle", "valid_title"),
    "rate": ("core.limits", "parse_rate"),  # N/DUR of `limit hit`
    "invite": ("core.sessions", "check_invite"),  # USER and --role of `session invite`
    "finish": ("core.sessions", "plan_finish"),  # the rows `session finish` appends: --rows, then --reply, --meta
    "attempt": ("core.sessions", "valid_attempt"),  # --attempt of renew, finish, release
    "lease_policy": ("core.sessions", "valid_policy"),  # --on-expiry and --max-attempts of `session next`
    "summary_request": ("core.transcript", "check_summary_request"),  # TEXT or --command, --input: summarize, compact
    "text": ("core.transcript", "check_text"),  # a prompt's text, a reply: not empty, within max_turn_bytes
    "json_option": ("core.transcript", "parse_json"),  # --meta, --data, --tool-calls: RFC 8259, exit 2 naming it
    "row": ("core.transcript", "prepare"),  # one row of `transcript append`
    "rows": ("core.transcript", "prepare_batch"),  # the JSONL lines of `append --batch` and `finish --rows`
    "tag_set": ("core.tags", "valid_set"),  # the tags of `session create --tag`
    "tag_pairs": ("core.tags", "parse_pairs"),  # KEY=VALUE arguments; `ls --tag`, `usage --tag` filters (KEY alone too)
    "schedule": ("core.schedules", "plan"),  # --at, --in, --every, --cron and --tz of `session prompt`
}


# What each named check refuses, as JSON Schema keywords (as far as a schema can say it): seam.json_schema adds
# them to an argument's type and range, so an advertised schema (the MCP tools') is as strict as the check.
# A NAME (docs/reference/concepts.md §2): 1-200 printable characters with no blank at either end.
NAME_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 200,
               "pattern": r"^[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?$"}
SCHEMAS = {
    "title": {"minLength": 1, "pattern": r"^\s*[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]{0,198}[^\s\x00-\x1f\x7f-\x9f])?\s*$"},
    "request_id": {"minLength": 1, "maxLength": 128},
    "attempt": {"minimum": 1},
    "user": NAME_SCHEMA,
    "prompt_text": {"minLength": 1, "pattern": r"\S"},
    "choices": {"items": {"minLength": 1}, "uniqueItems": True},
}


def __getattr__(name):
    try:
        module, function = _CHECKS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    from importlib import import_module

    return getattr(import_module(f"durable_cli.{module}"), function)


# The checks the contract names on an argument ("check": NAME, run by durable_cli/seam.py on either backend):
# each takes the argument's value and returns it as the op takes it.

def user(value):
    """A user NAME (invite's USER)."""
    from .config import valid_name

    return valid_name(value, "user")


def participant_role(value):
    """--role of `session invite`: owner or member."""
    from .contract.messages import say
    from .core.state import ROLES
    from .errors import invalid

    if value not in ROLES:
        raise invalid(say("invalid_participant_role", role=value))
    return value


def tag_change(args: dict) -> None:
    """`session tag`'s KEY=VALUE and --untag KEY together: each KEY and VALUE, no KEY named twice."""
    from .core.tags import valid_change

    args["set"], args["untag"] = valid_change(args.get("set"), args.get("untag"))


def prompt_text(value):
    """The question of `elicit ask`: not empty, not only blanks."""
    from .core.elicit import check_ask

    check_ask(value, ())
    return value


def choices(value):
    """The choices of `elicit ask`: each a non-empty string, none twice (as a list)."""
    from .core.elicit import check_ask

    if value is None:
        return []
    return check_ask("?", value) if isinstance(value, (list, tuple)) else value  # else: not a JSON array (seam.py)


def fact(args: dict) -> None:
    """`memory set` (the op set_fact): KEY, VALUE, --source and --confirmed together (a model's fact is never
    confirmed by itself)."""
    from .core.memory import check_set

    check_set(args.get("key"), args.get("value"), args.get("source"), args.get("confirmed"))


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
