"""Input first (SPEC §4): the checks an operation's input passes before anything is opened, created or sent.

One list for every caller, so both backends refuse the same input with the same message: the CLI runs
them before it opens NAME (a bad input is exit 2 whether NAME exists or not), the remote client before
it sends a request (the Worker checks again: it cannot trust clients), and the local library runs the
same rules of core/ under the object's lock. Each raises DurableError (exit 2) or returns the input as
the operation stores it. The rules themselves live in core/ (one object) and across/ (many).
"""

from .core.elicit import check_ask as question  # noqa: F401 - prompt and choices of `elicit ask`
from .core.lifecycle import valid_request_id as request_id, valid_title as title  # noqa: F401
from .core.limits import parse_rate as rate  # noqa: F401 - N/DUR of `limit hit`
from .core.memory import check_set as fact  # noqa: F401 - KEY, VALUE, --source, --confirmed of `memory set`
from .core.sessions import (  # noqa: F401
    check_invite as invite,  # USER and --role of `session invite`
    plan_finish as finish,  # the rows `session finish` appends: --rows, then --reply with its --meta
    valid_attempt as attempt,  # --attempt of renew, finish, release
    valid_policy as lease_policy,  # --on-expiry and --max-attempts of `session next`
)
from .core.transcript import (  # noqa: F401
    check_summary_request as summary_request,  # TEXT or --command, and --input, of summarize and compact
    check_text as text,  # a prompt's text, a reply: not empty, within transcript.max_turn_bytes
    parse_json as json_option,  # --meta, --data, --tool-calls: RFC 8259 JSON, exit 2 naming the option
    prepare as row,  # one row of `transcript append`
    prepare_batch as rows,  # the JSONL lines of `append --batch` and `finish --rows`
)


def fork_request(new, new_title, at):
    """NEW, --title and --at of `durable fork`, before the source is opened."""
    from .core.fork import check_request

    return check_request(new, new_title, at)


def search_query(query) -> None:
    """QUERY of `durable search`: FTS5 syntax checked before any object is read or a request sent."""
    from .across.search import check_query

    check_query(query)


def export_records(lines) -> list:
    """The lines of an export file as (line number, record): a line that is not a record is exit 2 before
    anything is imported (each record's own fields are checked at import)."""
    from .across.rights import parse_records

    return parse_records(lines)
