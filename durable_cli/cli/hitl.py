"""durable elicit, memory, limit: human-in-the-loop requests, remembered facts, rate limits (docs/reference/hitl.md §8)."""

import typer

from ..contract.messages import say
from ..errors import DurableError
from . import render
from .options import complete_choices, complete_name, mode, one_output, seconds, store
from .signals import unless_interrupted

JSON = typer.Option(False, "--json", help="Print one JSON document.", callback=one_output)
JSONL = typer.Option(False, "--jsonl", help="Print one JSON object per line.", callback=one_output)
NAME = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=complete_name)

elicit_app = typer.Typer(help="Questions for a person, stored in the session.\n\nExample: durable elicit ask deploy --prompt 'Ship it?' --choice yes --choice no", no_args_is_help=True)
memory_app = typer.Typer(help="Per-user facts with provenance.\n\nExample: durable memory set editor vim --confirmed", no_args_is_help=True)
limit_app = typer.Typer(help="Per-user token-bucket rate limits.\n\nExample: durable limit hit api --rate 5/1m", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(elicit_app, name="elicit")
    app.add_typer(memory_app, name="memory")
    app.add_typer(limit_app, name="limit")


@elicit_app.command("ask")
def ask(
    name: str = NAME,
    prompt: str = typer.Option(..., "--prompt", metavar="TEXT", help="The question."),
    choice: list[str] = typer.Option(None, "--choice", metavar="C", help="An allowed answer (repeatable)."),
    timeout: str = typer.Option(None, "--timeout", metavar="DUR", help="Expire the request after DUR."),
    request_id: str = typer.Option(None, "--request-id", metavar="ID", help="Idempotency key: the same ID and question returns the request it made, asking nothing again."),
    approver: list[str] = typer.Option(None, "--approver", metavar="USER", help="Only USER may answer (repeatable; at most 32)."),
    call_id: str = typer.Option(None, "--call-id", metavar="ID", help="Bind the request to this tool call (with --args), for 'durable step --approval'."),
    args: str = typer.Option(None, "--args", metavar="JSON", help="The tool call's arguments (with --call-id)."),
    approve: list[str] = typer.Option(None, "--approve", metavar="C", help="A choice that approves the call (repeatable; default: approve)."),
    json_out: bool = JSON,
):
    """Ask a person something; prints the request id.

    Example: id=$(durable elicit ask deploy --prompt "Ship v2?" --choice yes --choice no --timeout 1h)
    """
    timeout_seconds = seconds(timeout, what="--timeout")
    value = None
    if args is not None:
        from ..steps import parse_args

        value = parse_args(args)
    # input first (docs/reference/output.md §4): the question, choices and --request-id are checked before NAME is looked for
    doc = store().run(name, "ask", prompt, choices=choice or [], timeout_seconds=timeout_seconds, request_id=request_id,
                      call_id=call_id, args=value, approve=approve or None, approvers=approver or None)
    render.document(doc, "json") if json_out else render.out(str(doc["id"]))


@elicit_app.command("list")
def list_(name: str = NAME, pending: bool = typer.Option(False, "--pending", help="Only pending requests."), json_out: bool = JSON, jsonl: bool = JSONL):
    """List the session's requests.

    Example: durable elicit list deploy --pending --jsonl | jq -r .prompt
    """
    with store().open(name) as s:
        render.listing(s.requests(pending_only=pending), mode(json_out, jsonl), table=render.elicit_table)


@elicit_app.command("answer")
def answer(
    name: str = NAME,
    request_id: int = typer.Argument(..., metavar="REQ", help="The request id."),
    choice: str = typer.Option(..., "--choice", metavar="C", help="The answer (one of the offered choices)."),
    comment: str = typer.Option(None, "--comment", metavar="T", help="A comment."),
    json_out: bool = JSON,
):
    """Answer a pending request.

    Example: durable elicit answer deploy 1 --choice yes --comment "after 5pm"
    """
    with store().open(name) as s:
        render.document(s.answer(request_id, choice, comment=comment), mode(json_out))


@elicit_app.command("wait")
def wait(
    name: str = NAME,
    request_id: int = typer.Argument(..., metavar="REQ", help="The request id."),
    wait_for: str = typer.Option(None, "--wait", metavar="DUR", help="Wait up to DUR for the answer (0 = do not wait)."),
    json_out: bool = JSON,
):
    """Wait for an answer; prints the request, exit 9 if no answer came.

    Example: durable elicit wait deploy "$id" --wait 10m --json | jq -r .answer
    """
    wait_seconds = seconds(wait_for, allow_zero=True, what="--wait") or 0
    last = {}

    def attempt(session, _more):
        # Only a pending request can still be answered: any other status ends the wait at once.
        last["doc"] = session.request(request_id)
        return unless_interrupted(None if last["doc"]["status"] == "pending" else last["doc"])

    doc = store().poll(name, attempt, wait_seconds=wait_seconds)
    if doc is None or doc is not last["doc"] or doc["status"] != "answered":
        raise DurableError(
            f"request {request_id} of session \"{name}\" is {last['doc']['status']}: no answer came", "timeout", document=last["doc"],
        )
    render.document(doc, mode(json_out))


SOURCES = ("user", "model", "external")


@memory_app.command("set")
def memory_set(
    key: str = typer.Argument(..., metavar="KEY", help="The fact's key."),
    value: str = typer.Argument(..., metavar="VALUE", help="The fact."),
    source: str = typer.Option("user", "--source", metavar="[user|model|external]", help="Where the fact came from (default user).", autocompletion=complete_choices(*SOURCES)),
    confirmed: bool = typer.Option(False, "--confirmed", help="Store it confirmed (not for --source model)."),
    expires: str = typer.Option(None, "--expires", metavar="DUR", help="Forget it after DUR."),
    json_out: bool = JSON,
):
    """Remember a fact (unconfirmed unless --confirmed).

    Example: durable memory set timezone Europe/Paris --source user --confirmed
    """
    expires_seconds = seconds(expires, what="--expires")
    render.document(store().run_reserved("set_fact", key, value, source=source, confirmed=confirmed,
                                         expires_seconds=expires_seconds, create=True), mode(json_out))


def _reserved(fn, *, empty=None):
    try:
        with store().open_reserved() as m:
            return fn(m)
    except DurableError as e:
        if e.code == "not_found" and empty is not None:
            return empty()
        raise


@memory_app.command("get")
def memory_get(key: str = typer.Argument(..., metavar="KEY", help="The fact's key."), all_facts: bool = typer.Option(False, "--all", help="Print the fact even when it is unconfirmed or expired."), json_out: bool = JSON):
    """Print a confirmed, unexpired fact (exit 3 otherwise, unless --all).

    Example: durable memory get timezone --json | jq -r .value
    """
    doc = _reserved(lambda m: m.get_fact(key, all_facts=all_facts))
    render.document(doc, "json") if json_out else render.out(doc["value"])


@memory_app.command("list")
def memory_list(all_facts: bool = typer.Option(False, "--all", help="Unconfirmed and expired facts too (every fact you have)."), json_out: bool = JSON, jsonl: bool = JSONL):
    """List confirmed, unexpired facts (--all: every fact).

    Example: durable memory list --all --jsonl | jq -r 'select(.confirmed | not) | .key'
    """
    render.listing(_reserved(lambda m: m.facts(all_facts=all_facts), empty=list), mode(json_out, jsonl),
                   table=render.memory_table)


@memory_app.command("confirm")
def memory_confirm(key: str = typer.Argument(..., metavar="KEY", help="The fact's key."), json_out: bool = JSON):
    """Confirm a fact (how a person vouches for what a model remembered).

    Example: durable memory confirm timezone
    """
    render.document(_reserved(lambda m: m.confirm_fact(key)), mode(json_out))


@memory_app.command("forget")
def memory_forget(key: str = typer.Argument(..., metavar="KEY", help="The fact's key."), json_out: bool = JSON):
    """Forget one fact.

    Example: durable memory forget timezone
    """
    render.document(_reserved(lambda m: m.forget_fact(key)), mode(json_out))


@limit_app.command("hit")
def hit(
    key: str = typer.Argument(..., metavar="KEY", help="The bucket's name."),
    rate: str = typer.Option(..., "--rate", metavar="N/DUR", help="Refill N tokens per DUR, e.g. 5/1h."),
    burst: int = typer.Option(None, "--burst", metavar="B", help="Bucket capacity (default N)."),
    json_out: bool = JSON,
):
    """Take one token from a bucket: exit 0 with the remaining count, or 8 with retry_after.

    Example: durable limit hit openai --rate 60/1m --json | jq .remaining
    """
    from .. import checks
    from ..config import valid_name

    valid_name(key, "limit key")
    checks.rate(rate)
    if burst is not None and burst < 1:
        raise DurableError(say("invalid_burst"), "invalid_input")
    with store().open_reserved(create=True) as m:
        doc = m.hit(key, rate=rate, burst=burst)
    render.document(doc, mode(json_out))
