"""durable transcript: append, show, the context window, summaries, prune and redact (SPEC §6)."""

import typer

from ..errors import DurableError
from . import complete_choices, complete_name, mode, read_content, seconds, store
from . import render

app = typer.Typer(help="The transcript and its context window.\n\nExample: durable transcript recent chat --tokens 4000 --format messages", no_args_is_help=True)

NAME = typer.Argument(..., help="Session NAME.", autocompletion=complete_name)
JSON = typer.Option(False, "--json", help="Print one JSON document.")
JSONL = typer.Option(False, "--jsonl", help="Print one JSON object per line.")
ROLES = ("system", "user", "assistant", "tool")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="transcript")


@app.command()
def append(
    name: str = NAME,
    text: str = typer.Argument(..., help="The turn's content, or - to read it from stdin."),
    role: str = typer.Option(..., "--role", help="system, user, assistant or tool.", autocompletion=complete_choices(*ROLES)),
    tokens: int = typer.Option(None, "--tokens", help="Token count (overrides the estimate)."),
    call_id: str = typer.Option(None, "--call-id", metavar="ID", help="Links a tool result to the call it answers."),
    request_id: str = typer.Option(None, "--request-id", metavar="ID", help="Idempotency key: a retry with the same ID stores nothing new."),
    no_create: bool = typer.Option(False, "--no-create", help="Exit 3 instead of creating a missing session."),
    json_out: bool = JSON,
):
    """Append one turn (creates the session if needed); prints its seq.

    Example: durable transcript append chat --role user "What changed in v2?"
    """
    if role not in ROLES:
        raise DurableError(f"invalid --role {role!r}: use one of {', '.join(ROLES)}", "invalid_input")
    content = read_content(text)
    with store().open(name, create=not no_create) as s:
        row = s.append(content, role=role, tokens=tokens, call_id=call_id, request_id=request_id, create=not no_create)
    render.document(row, "json") if json_out else render.out(str(row["seq"]))


@app.command()
def show(
    name: str = NAME,
    all_rows: bool = typer.Option(False, "--all", help="Every row ever written, superseded ones included, in seq order."),
    since: int = typer.Option(0, "--since", metavar="SEQ", help="Only rows with seq > SEQ."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the live rows in logical order (--all: the audit view).

    Example: durable transcript show chat --jsonl | jq -r '.role + ": " + .content'
    """
    with store().open(name) as s:
        render.listing(s.show_transcript(all_rows=all_rows, since=since), mode(json_out, jsonl))


@app.command()
def recent(
    name: str = NAME,
    tokens: int = typer.Option(None, "--tokens", metavar="N", help="Token budget (default transcript.token_budget, 4000)."),
    limit: int = typer.Option(None, "--limit", metavar="N", help="At most N rows after the pinned system turns."),
    fmt: str = typer.Option("text", "--format", help="text, json, jsonl or messages.", autocompletion=complete_choices("text", "json", "jsonl", "messages")),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """Print the context window: pinned system turns, then the newest rows within the budget.

    Example: durable transcript recent chat --tokens 4000 --format messages | jq length
    """
    fmt = "json" if json_out else "jsonl" if jsonl else fmt
    if fmt not in ("text", "json", "jsonl", "messages"):
        raise DurableError(f"invalid --format {fmt!r}: use text, json, jsonl or messages", "invalid_input")
    if (tokens is not None and tokens < 0) or (limit is not None and limit < 0):
        raise DurableError("--tokens and --limit must be non-negative", "invalid_input")
    with store().open(name) as s:
        window = s.context_window(budget=tokens, limit=limit)
    if fmt == "json":
        render.document(window, "json")
    elif fmt == "jsonl":
        render.listing(window["turns"], "jsonl")
    elif fmt == "messages":
        from ..core.transcript import as_messages

        render.document(as_messages(window["turns"]), "json")
    else:
        render.text_turns(window["turns"])


def _summary_source(dash, text, command):
    given = [x for x in (dash, text, command) if x is not None]
    if len(given) != 1:
        raise DurableError("give exactly one of --text T, - (stdin) or --command CMD", "invalid_input")
    if dash is not None:
        if dash != "-":
            raise DurableError(f"unexpected argument {dash!r}: use - to read the summary from stdin", "invalid_input")
        return read_content("-", "the summary")
    return text


def _summarizer_options(input_format: str, timeout: str) -> int:
    """Check --input and --timeout up front (exit 2 before anything is opened); the timeout in seconds."""
    if input_format not in ("text", "jsonl"):
        raise DurableError(f"invalid --input {input_format!r}: use text or jsonl", "invalid_input")
    return seconds(timeout, what="--timeout")


INPUT = typer.Option("text", "--input", help="What --command reads on stdin: text or jsonl.", autocompletion=complete_choices("text", "jsonl"))
TIMEOUT = typer.Option("120s", "--timeout", metavar="DUR", help="Kill --command's process group after DUR.")


@app.command()
def summarize(
    name: str = NAME,
    dash: str = typer.Argument(None, metavar="[-]", help="- reads the summary from stdin.", show_default=False),
    through: int = typer.Option(..., "--through", metavar="SEQ", help="Summarize every live row up to this one."),
    text: str = typer.Option(None, "--text", metavar="T", help="The summary text."),
    command: str = typer.Option(None, "--command", metavar="CMD", help="Shell command that reads the rows on stdin and prints the summary."),
    input_format: str = INPUT,
    timeout: str = TIMEOUT,
    json_out: bool = JSON,
):
    """Replace live rows up to SEQ with one summary row (nothing is deleted).

    Example: durable transcript summarize chat --through 40 --command 'llm -s "Summarize"'
    """
    content = _summary_source(dash, text, command)
    timeout_seconds = _summarizer_options(input_format, timeout)
    with store().open(name) as s:
        doc = s.summarize(through=through, text=content, command=command, input_format=input_format, timeout=timeout_seconds)
    render.document(doc, "json") if json_out else render.out(str(doc["summary"]["seq"]))


@app.command()
def compact(
    name: str = NAME,
    max_tokens: int = typer.Option(..., "--max-tokens", metavar="N", help="Compact only when the live total exceeds N tokens."),
    keep_tokens: int = typer.Option(..., "--keep-tokens", metavar="K", help="Keep the newest rows worth at least K tokens."),
    text: str = typer.Option(None, "--text", metavar="T", help="The summary text."),
    command: str = typer.Option(None, "--command", metavar="CMD", help="Shell command that prints the summary."),
    input_format: str = INPUT,
    timeout: str = TIMEOUT,
    json_out: bool = JSON,
):
    """Summarize the oldest rows when the transcript outgrows MAX tokens.

    Example: durable transcript compact chat --max-tokens 8000 --keep-tokens 2000 --command ./summarize.sh
    """
    if (text is None) == (command is None):
        raise DurableError("give exactly one of --text T or --command CMD", "invalid_input")
    if max_tokens < 0 or keep_tokens < 0:
        raise DurableError("--max-tokens and --keep-tokens must be non-negative", "invalid_input")
    timeout_seconds = _summarizer_options(input_format, timeout)
    with store().open(name) as s:
        doc = s.compact(max_tokens=max_tokens, keep_tokens=keep_tokens, text=text, command=command,
                        input_format=input_format, timeout=timeout_seconds)
    if json_out:
        render.document(doc, "json")
    elif doc["summary"] is not None:
        render.out(str(doc["summary"]["seq"]))


@app.command()
def prune(
    name: str = NAME,
    older_than: str = typer.Option(..., "--older-than", metavar="DUR", help="Delete rows created more than DUR ago."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count only; change nothing."),
    json_out: bool = JSON,
):
    """Delete old turns and summaries of one session (pinned system turns stay); prints how many.

    Example: durable transcript prune chat --older-than 30d --dry-run
    """
    older = seconds(older_than, what="--older-than")
    with store().open(name) as s:
        doc = s.prune(older_than=older, dry_run=dry_run)
    render.document(doc, "json") if json_out else render.out(str(doc["deleted"]))


@app.command()
def redact(name: str = NAME, seq: int = typer.Argument(..., help="The row to redact."), json_out: bool = JSON):
    """Replace one row's content (and its prompt's) with [redacted].

    Example: durable transcript redact chat 17
    """
    with store().open(name) as s:
        render.document(s.redact(seq), mode(json_out))
