"""durable transcript: append, show, the context window, summaries, prune and redact (docs/reference/transcript.md §6)."""

import typer

from ..contract.messages import say
from ..errors import DurableError
from . import render
from .options import complete_choices, complete_name, mode, one_output, read_content, seconds, store

app = typer.Typer(help="The transcript and its context window.\n\nExample: durable transcript recent chat --tokens 4000 --format messages", no_args_is_help=True)

NAME = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=complete_name)
JSON = typer.Option(False, "--json", help="Print one JSON document.", callback=one_output)
JSONL = typer.Option(False, "--jsonl", help="Print one JSON object per line.", callback=one_output)
from ..contract.vocabulary import ROW_ROLES as ROLES  # noqa: E402

FORMATS = ("text", "json", "jsonl", "messages", "responses", "anthropic", "gemini")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="transcript")


def _batch_lines(source: str):
    import sys

    if source == "-":
        return sys.stdin.buffer.read().splitlines()
    try:
        with open(source, "rb") as f:
            return f.read().splitlines()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise DurableError(f"cannot read --batch {source!r}: {getattr(e, 'strerror', None) or e}; nothing was stored", "invalid_input") from e


@app.command()
def append(
    name: str = NAME,
    text: str = typer.Argument(None, metavar="[TEXT|-]", help="The row's content, or - to read it from stdin (may be omitted with --tool-calls or --data).", show_default=False),
    role: str = typer.Option(None, "--role", metavar="[system|developer|user|assistant|tool]", help="system, developer, user, assistant or tool.", autocompletion=complete_choices(*ROLES)),
    tool_calls: str = typer.Option(None, "--tool-calls", metavar="JSON", help='Assistant rows: a JSON array of {"id", "name", "arguments"}.'),
    call_id: str = typer.Option(None, "--call-id", metavar="ID", help="Tool rows (required there): the id of the call this result answers."),
    tool_name: str = typer.Option(None, "--name", metavar="TOOL", help="Tool rows: the tool's name."),
    meta: str = typer.Option(None, "--meta", metavar="JSON", help="A JSON object about the turn (model, usage, cost_usd, anything else)."),
    data: str = typer.Option(None, "--data", metavar="JSON", help="The caller's own form of the item, stored and returned verbatim."),
    tokens: int = typer.Option(None, "--tokens", metavar="N", help="Token count, 0 to 1000000000 (overrides the estimate)."),
    batch: str = typer.Option(None, "--batch", metavar="FILE|-", help="Append many rows from JSONL (one JSON object a line) in one transaction."),
    request_id: str = typer.Option(None, "--request-id", metavar="ID", help="Idempotency key: a retry with the same ID stores nothing new."),
    no_create: bool = typer.Option(False, "--no-create", help="Exit 3 instead of creating a missing session."),
    json_out: bool = JSON,
):
    """Append one row, or a --batch of rows (creates the session if needed); prints the new seq(s).

    Example: durable transcript append chat --role user "What changed in v2?"
    """
    from .. import checks

    config = store().config
    checks.request_id(request_id)
    if batch is not None:
        given = [o for o, v in (("TEXT", text), ("--role", role), ("--tool-calls", tool_calls), ("--call-id", call_id),
                                ("--name", tool_name), ("--meta", meta), ("--data", data), ("--tokens", tokens)) if v is not None]
        if given:
            raise DurableError(f"--batch takes its rows from FILE; {given[0]} does not go with it", "invalid_input")
        rows = checks.rows(config, _batch_lines(batch))
    else:
        if role is None:
            raise DurableError("missing --role: use one of " + ", ".join(ROLES), "invalid_input")
        fields = {
            "role": role, "content": read_content(text) if text is not None else "",
            "tool_calls": checks.json_option(tool_calls, "--tool-calls"), "call_id": call_id, "name": tool_name,
            "meta": checks.json_option(meta, "--meta"), "data": checks.json_option(data, "--data"), "tokens": tokens,
        }
        for option, key, kind, what in (("--tool-calls", "tool_calls", list, "an array"), ("--meta", "meta", dict, "an object")):
            if fields[key] is not None and not isinstance(fields[key], kind):
                raise DurableError(f"{option} must be {what}", "invalid_input")
        rows = [checks.row(config, fields)]
    with store().open(name, create=not no_create) as s:
        made = s.append_many(rows, request_id=request_id, create=not no_create, seqs_only=not json_out)
    if json_out:
        render.document(made if batch is not None else made[0], "json")
    else:
        render.out("\n".join(str(seq) for seq in made))


@app.command()
def show(
    name: str = NAME,
    all_rows: bool = typer.Option(False, "--all", help="Every row ever written (the audit view): superseded rows too, in seq order."),
    since: int = typer.Option(0, "--since", metavar="SEQ", help="Only rows with seq > SEQ."),
    last: int = typer.Option(None, "--last", metavar="N", help="Only the last N live rows in logical order."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Then print each new row as it is appended, until the session is archived, cancelled or deleted (Ctrl-C stops)."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the live rows in logical order (--all: the audit view; --follow: keep printing new rows).

    Example: durable transcript show chat --jsonl | jq -r '.role + ": " + .content'
    """
    if last is not None and (last < 0 or all_rows):
        raise DurableError("--last takes a non-negative N and lists live rows (not with --all)", "invalid_input")
    if follow:
        if json_out:
            raise DurableError("--json prints one document and --follow never ends one; use --jsonl with --follow", "invalid_input")
        for batch in store().follow(name, all_rows=all_rows, since=since, last=last):
            if batch:
                render.transcript(batch, mode(False, jsonl))
                render.flush()
        return
    with store().open(name) as s:
        render.transcript(s.show_transcript(all_rows=all_rows, since=since, last=last), mode(json_out, jsonl))


@app.command()
def recent(
    name: str = NAME,
    tokens: int = typer.Option(None, "--tokens", metavar="N", help="Token budget (default transcript.token_budget, 4000)."),
    limit: int = typer.Option(None, "--limit", metavar="N", help="At most N rows after the pinned system and developer turns."),
    fmt: str = typer.Option(None, "--format", metavar="[text|json|jsonl|messages|responses|anthropic|gemini]", help="text (default), json, jsonl, messages, responses, anthropic or gemini.", autocompletion=complete_choices(*FORMATS)),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """Print the context window: pinned turns, then the newest rows within the budget.

    Example: durable transcript recent chat --tokens 4000 --format messages | jq length
    """
    fmt = _window_format(fmt, json_out, jsonl)
    if (tokens is not None and tokens < 0) or (limit is not None and limit < 0):
        raise DurableError(say("window_negative"), "invalid_input")
    with store().open(name) as s:
        if fmt in ("json", "jsonl", "text"):
            window = s.context_window(budget=tokens, limit=limit)
        else:  # a provider's input document (messages, responses, anthropic, gemini), rendered by the library
            window = s.window(tokens=tokens, limit=limit, format=fmt)
    if fmt == "json":
        render.document(window, "json")
    elif fmt == "jsonl":
        render.listing(window["turns"], "jsonl")
    elif fmt == "text":
        render.text_turns(window["turns"])
    else:
        render.document(window, "json")


def _window_format(fmt, json_out, jsonl) -> str:
    if json_out or jsonl:
        implied = "json" if json_out else "jsonl"
        if (fmt is not None and fmt != implied) or (json_out and jsonl):
            raise DurableError(f"--{implied} is --format {implied}; it does not go with --format {fmt or 'json'}", "invalid_input")
        return implied
    fmt = fmt or "text"
    if fmt not in FORMATS:
        raise DurableError(f"invalid --format {fmt!r}: use {', '.join(FORMATS)}", "invalid_input")
    return fmt


@app.command()
def pop(
    name: str = NAME,
    count: int = typer.Option(1, "--count", metavar="N", help="Pop N rows (default 1)."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """Remove the newest live row (a summary counts as one, and brings back what it covered); prints what went.

    Example: durable transcript pop chat --count 2 --json
    """
    if count < 1:
        raise DurableError(say("pop_count"), "invalid_input")
    with store().open(name) as s:
        removed = s.pop(count)
    render.listing(removed, mode(json_out, jsonl))


@app.command()
def clear(
    name: str = NAME,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask (required without a terminal)."),
    json_out: bool = JSON,
):
    """Delete every row of the transcript; the session, its queue and events stay.

    Example: durable transcript clear chat --yes
    """
    import sys

    if not yes:
        if not sys.stdin.isatty():
            raise DurableError("clear needs --yes when not run from a terminal", "invalid_input")
        if not render.confirm(f"delete every row of session {name!r}?"):
            render.declined({"deleted": 0}, json_out)
            return
    with store().open(name) as s:
        doc = s.clear()
    render.document(doc, "json") if json_out else render.out(str(doc["deleted"]))


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


INPUT = typer.Option("text", "--input", metavar="[text|jsonl]", help="What --command reads on stdin: text or jsonl.", autocompletion=complete_choices("text", "jsonl"))
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
    doc = store().summarize(name, through=through, text=content, command=command, input_format=input_format, timeout=timeout_seconds)
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
    if max_tokens < 0 or keep_tokens < 0 or max_tokens < keep_tokens:
        raise DurableError(say("compact_negative") + ", and N at least K", "invalid_input")
    timeout_seconds = _summarizer_options(input_format, timeout)
    doc = store().compact(name, max_tokens=max_tokens, keep_tokens=keep_tokens, text=text, command=command,
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
def redact(name: str = NAME, seq: int = typer.Argument(..., metavar="SEQ", help="The row to redact."), json_out: bool = JSON):
    """Replace one row's content (and its prompt's) with [redacted].

    Example: durable transcript redact chat 17
    """
    with store().open(name) as s:
        render.document(s.redact(seq), mode(json_out))
