"""durable ls, ttl, delete, purge, sweep: enumeration and expiry (docs/reference/retention.md §7)."""

import sys

import typer

from ..contract.vocabulary import STATUSES
from ..errors import DurableError
from . import render
from .options import complete_choices, complete_name, mode, one_output, seconds, store

JSON = typer.Option(False, "--json", help="Print one JSON document.", callback=one_output)
JSONL = typer.Option(False, "--jsonl", help="Print one JSON object per line.", callback=one_output)
TAG = typer.Option(None, "--tag", metavar="KEY=VALUE|KEY", help="Only sessions with tag KEY (equal to VALUE when given); repeated, all must hold.")
STATUS = typer.Option(None, "--status", metavar="[created|active|completed|failed|cancelled|archived]", help="Only this status (repeatable).", autocompletion=complete_choices(*STATUSES))


def _statuses(values):
    for s in values or ():
        if s not in STATUSES:
            raise DurableError(f"invalid --status {s!r}: use one of {', '.join(STATUSES)}", "invalid_input")
    return tuple(values or ())


def register(app: typer.Typer) -> None:
    app.command("ls")(ls)
    app.command("ttl")(ttl)
    app.command("delete")(delete)
    app.command("purge")(purge)
    app.command("sweep")(sweep)


def ls(
    status: list[str] = STATUS,
    tag: list[str] = TAG,
    all_objects: bool = typer.Option(False, "--all", help="Archived sessions too (here --all widens the statuses listed, not the users: see --user)."),
    user: str = typer.Option(None, "--user", metavar="U", help="Sessions of user U instead of the acting user."),
    older_than: str = typer.Option(None, "--older-than", metavar="DUR", help="Only sessions idle for longer than DUR."),
    limit: int = typer.Option(None, "--limit", metavar="N", help="At most N sessions."),
    wide: bool = typer.Option(False, "--wide", help="On a terminal, add the short id and every other field, as far as the width allows (piped output always has them all)."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List your sessions, newest activity first (from index.db; archived and expired hidden).

    Example: durable ls --status active --jsonl | jq -r .name
    """
    statuses = _statuses(status)
    older = seconds(older_than, what="--older-than")
    if limit is not None and limit < 0:
        raise DurableError("--limit must be non-negative", "invalid_input")
    if user is not None:
        from ..config import valid_name

        valid_name(user, "user")
    from .. import checks

    tags = checks.tag_pairs(tag or (), values_required=False)
    rows = store().ls(statuses=statuses, all_objects=all_objects, user=user, older_than=older, limit=limit, **({"tags": tags} if tags else {}))
    if mode(json_out, jsonl) == "plain" and render.pretty():
        render.session_table(list(rows), wide=wide)
    else:
        render.listing(rows, mode(json_out, jsonl))


def ttl(
    name: str = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=complete_name),
    duration: str = typer.Argument(None, metavar="[DUR]", help="Expire DUR after the last activity.", show_default=False),
    clear: bool = typer.Option(False, "--clear", help="Remove the TTL."),
    json_out: bool = JSON,
):
    """Show, set or clear a session's TTL: it is deleted DUR after its last activity.

    Every activity reschedules it: a turn, a prompt or queue change (next, finish, dequeue, stop), a
    status transition (cancel, archive, unarchive), a title, a pop, clear, summary or redaction, an
    elicitation asked or answered. Reading, an invite, a prune, a lease renewal and setting the TTL
    itself do not.

    Example: durable ttl scratch 7d
    """
    if clear and duration is not None:
        raise DurableError("give either DUR or --clear, not both", "invalid_input")
    doc = store().ttl(name, seconds=seconds(duration, what="TTL"), clear=clear)
    render.document(doc, mode(json_out))


def _consented(yes: bool, dry_run, what: str, json_out: bool) -> bool:
    """Go ahead: --yes (or --dry-run, for a command that has it: DRY_RUN None when it has not), or a person
    at the terminal said yes. Answered no: False, said as docs/reference/output.md §4 says (exit 0, nothing deleted)."""
    if yes or dry_run:
        return True
    if not sys.stdin.isatty():
        or_dry_run = "" if dry_run is None else " (or --dry-run to see what it would do)"
        raise DurableError(f"{what} needs --yes when not run from a terminal{or_dry_run}", "invalid_input")
    if not render.confirm(f"{what}?"):
        render.declined(render.EMPTY_RECEIPT, json_out)
        return False
    return True


def delete(
    name: str = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=complete_name),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask (required without a terminal)."),
    json_out: bool = JSON,
):
    """Delete one session: its file, WAL/SHM, lock and index row.

    Example: durable delete scratch --yes
    """
    s = store()
    s.address(name)  # bad NAME is exit 2 before anything is asked
    if _consented(yes, None, f"delete session {name!r}", json_out):
        render.receipt(s.delete(name), mode(json_out))


def purge(
    older_than: str = typer.Option(..., "--older-than", metavar="DUR", help="Delete objects idle for longer than DUR."),
    user: str = typer.Option(None, "--user", metavar="U", help="Only objects user U owns."),
    status: list[str] = STATUS,
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; change nothing."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask (required without a terminal)."),
    json_out: bool = JSON,
):
    """Delete every object idle past the cutoff (installation-wide unless --user/--tenant).

    Example: durable purge --older-than 90d --yes --json | jq '.deleted | length'
    """
    older = seconds(older_than, what="--older-than")
    statuses = _statuses(status)
    if user is not None:
        from ..config import valid_name

        valid_name(user, "user")
    if not (yes or dry_run) and sys.stdin.isatty():  # a person is asked: show how many and which first
        planned = store().purge(older_than=older, user=user, statuses=statuses, dry_run=True)
        if not planned["deleted"]:
            sys.stderr.write(f"no object has been idle for more than {older_than}; nothing to delete\n")
            render.receipt(planned, "json") if json_out else None
            return
        render.preview(planned, "purge would delete")
    if not _consented(yes, dry_run, f"purge objects idle for more than {older_than}", json_out):
        return
    bar = render.progress("purge")
    try:
        doc = store().purge(older_than=older, user=user, statuses=statuses, dry_run=dry_run, progress=bar)
    finally:
        bar.stop()
    render.receipt(doc, mode(json_out))


def sweep(json_out: bool = JSON):
    """Fire every due alarm (TTL, leases, requests, schedules), send due deliveries and archive expired drafts.

    Example: durable sweep --json  # from cron, every few minutes
    """
    bar = render.progress("sweep")
    try:
        doc = store().sweep(progress=bar)
    finally:
        bar.stop()
    render.receipt(doc, mode(json_out))
    if "durable_cli.deliver" in sys.modules:  # docs/reference/sessions.md §5.3: every due delivery the sweep's wakes found
        render.flush()
        sys.modules["durable_cli.deliver"].after_commit(budget=300.0)
