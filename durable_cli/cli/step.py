"""durable step: one piece of a prompt's work, run at most once per (prompt, KEY) and replayed after (docs/reference/sessions.md §5.2)."""

import sys

import typer

from ..errors import DurableError, invalid
from . import render
from .options import G, complete_name, store


def register(app: typer.Typer) -> None:
    app.command("step", context_settings={"allow_interspersed_args": True})(step)


def step(
    name: str = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=complete_name),
    key: str = typer.Argument(..., metavar="KEY", help="The step's key, unique within its prompt."),
    cmd: list[str] = typer.Argument(None, metavar="-- CMD [ARG]...", help="The command, run without a shell."),
    prompt: int = typer.Option(None, "--prompt", metavar="ID", help="The prompt (default: DURABLE_PROMPT_ID, else NAME's processing prompt)."),
    attempt: int = typer.Option(None, "--attempt", metavar="N", help="The start the caller holds (default: DURABLE_ATTEMPT, else the current start)."),
    call_id: str = typer.Option(None, "--call-id", metavar="ID", help="Bind the step to this tool call (with --args)."),
    args: str = typer.Option(None, "--args", metavar="JSON", help="The tool call's arguments (with --call-id)."),
    approval: int = typer.Option(None, "--approval", metavar="REQ", help="Run only if elicit request REQ approved this very call."),
    json_out: bool = typer.Option(False, "--json", help="Print the step object; exit 0 whatever CMD's status."),
):
    """Run CMD at most once per prompt and KEY; later calls print its recorded stdout and exit status.

    Example: durable step "$DURABLE_SESSION" charge -- curl -fsS -H "Idempotency-Key: $DURABLE_STEP_ID" https://api.example/charge
    """
    from ..steps import Abandoned, step_command

    argv: list = G.argv or []
    if "--" not in argv:
        raise invalid("durable step needs '--' before CMD (durable step NAME KEY -- CMD [ARG]...)")
    if not cmd:
        raise invalid("no command to run: give it after '--' (durable step NAME KEY -- CMD [ARG]...)")
    try:
        doc, stdout, status = step_command(store(), name, key, list(cmd), prompt=prompt, attempt=attempt,
                                           call_id=call_id, args=args, approval=approval)
    except Abandoned as e:
        if json_out and e.step is not None:
            render.document({**e.step, "replayed": False}, "json")
        _note(e.message)
        G.cmd_status = True  # 75 or 128+N: CMD's, not one of durable's own (docs/reference/traces.md §15.6)
        return e.exit_status
    if json_out:
        render.document(doc, "json")
        return 0
    try:
        out = getattr(sys.stdout, "buffer", None)
        if out is None:  # a text stream (the tests' in-process runs)
            sys.stdout.write(stdout.decode("utf-8", "replace"))
        else:
            sys.stdout.flush()
            out.write(stdout)
            out.flush()
    except BrokenPipeError:
        pass
    G.cmd_status = status != 0  # CMD's own status, run or replayed: no §4 code (docs/reference/traces.md §15.6)
    return status


def _note(message: str) -> None:
    try:
        sys.stderr.write(f"durable: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


__all__ = ["DurableError", "step"]
