"""durable work: the supervised worker loop of docs/reference/sessions.md §5.1 (durable_cli/work.py)."""

import json

import typer

from ..errors import DurableError
from . import render
from .options import complete_choices, complete_name, one_output, store, units


def register(app: typer.Typer) -> None:
    app.command("work")(work)


def work(
    name: str = typer.Argument(None, metavar="[NAME]", help="The session to work on (or --all).", autocompletion=complete_name, show_default=False),
    everywhere: bool = typer.Option(False, "--all", help="Work on every session 'ls' lists for you (or the tenant's), oldest pending prompt first."),
    command: str = typer.Option(None, "--command", metavar="CMD", help="Run for each prompt with sh -c, the prompt document (JSON) on its stdin (default config work.command)."),
    context: int = typer.Option(None, "--context", metavar="TOKENS", help="The window's token budget (default transcript.token_budget)."),
    fmt: str = typer.Option(None, "--format", metavar="[messages|responses|anthropic|gemini|json]", help="The window's format (default messages).",
                            autocompletion=complete_choices("messages", "responses", "anthropic", "gemini", "json")),
    lease: str = typer.Option(None, "--lease", metavar="DUR", help="Lease of each start (default queue.lease), renewed every third of it while CMD runs."),
    wait: str = typer.Option(None, "--wait", metavar="DUR", help="Stop after DUR with nothing startable (default: wait for ever); 0 = do not wait."),
    once: bool = typer.Option(False, "--once", help="Handle at most one prompt, then exit."),
    attempts: int = typer.Option(None, "--attempts", metavar="N", help="Starts a prompt gets before it fails (default queue.max_attempts, 3)."),
    grace: str = typer.Option(None, "--grace", metavar="DUR", help="After a signal or a lost lease, how long CMD has before it is killed (default 10s)."),
    output: str = typer.Option(None, "--output", metavar="[auto|text|rows]", help="CMD's stdout: text (the reply), rows (JSONL rows) or auto (default).",
                               autocompletion=complete_choices("auto", "text", "rows")),
    model: str = typer.Option(None, "--model", metavar="NAME", help="The model of a text reply, in its meta (default config work.model): usage --by model and traces name it."),
    json_out: bool = typer.Option(False, "--json", help="One JSON line per prompt handled on stdout.", callback=one_output),
):
    """Work on a session's prompt queue: take each prompt, run CMD on it, record its turn.

    CMD gets the prompt (with its context window) as JSON on stdin and DURABLE_SESSION, DURABLE_PROMPT_ID,
    DURABLE_ATTEMPT, DURABLE_USER, DURABLE_HOME (or DURABLE_REMOTE, DURABLE_TOKEN), DURABLE_TENANT in its
    environment. Exit 0: its stdout is the reply, or JSONL rows (assistant/tool) ending with the answer.
    Otherwise the prompt is released and retried after 1s, 2s, 4s ... (at most 5m) until --attempts, then
    failed with CMD's last stderr line. SIGINT/SIGTERM go to CMD; the prompt is handed back (exit 130/143).
    Exits 0 after --wait with nothing to do once a prompt was handled (else 9).

    Example: durable work chat --command 'jq -r .content | llm -m gpt-4o-mini' --wait 10m
    """
    from ..work import Settings, Supervisor, _note

    if everywhere == (name is not None):
        raise DurableError("give a session NAME or --all (one of them)", "invalid_input")
    s = store()
    settings = Settings(s, command=command, context=context, format=fmt, lease=lease, wait=wait, once=once,
                        attempts=attempts, grace=grace, output=output, model=model)
    settings.units = units(live=settings.live)  # a span per prompt with telemetry.traces = all (traces.md §15.6)
    def report(line, note=None):
        if json_out:
            render.out(json.dumps(line, ensure_ascii=False, separators=(",", ":")))  # compact, as every --json (docs/reference/output.md §4)
            render.flush()
            if note or line["outcome"] == "lost":  # said on stderr whatever the output
                _note(f"{line['name']} prompt {line['prompt']}: {line['outcome']}: {note or line['error']}")
        else:
            what = f"{line['name']} prompt {line['prompt']}: {line['outcome']} (attempt {line['attempts']}"
            what += f", {line['rows']} row{'s' if line['rows'] != 1 else ''})" if line["outcome"] == "completed" else ")"
            if line["error"]:
                what += f": {note or line['error']}"
            ran, replayed = len(line["steps"]["ran"]), len(line["steps"]["replayed"])
            if ran or replayed:
                what += f", {ran} step{'s' if ran != 1 else ''} ran, {replayed} replayed"
            _note(what)

    return Supervisor(s, settings, name=name, everywhere=everywhere, report=report).run()
