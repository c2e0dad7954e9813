"""durable session: lifecycle and prompt queue (docs/reference/sessions.md §5)."""

import io
import sys

import typer

from ..errors import DurableError
from . import render
from .options import complete_choices, complete_name, mode, one_output, read_content, seconds, store
from .signals import STOPPED, unless_interrupted

app = typer.Typer(help="Session lifecycle and prompt queue.\n\nExample: durable session prompt fix-login \"Fix the login bug\"", no_args_is_help=True)

NAME = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=complete_name)
JSON = typer.Option(False, "--json", help="Print one JSON document.", callback=one_output)
JSONL = typer.Option(False, "--jsonl", help="Print one JSON object per line.", callback=one_output)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="session")


def _on(name, method, *args, create=False, **kwargs):
    with store().open(name, create=create) as session:
        return method(session, *args, **kwargs)


@app.command()
def create(
    name: str = typer.Argument(None, metavar="[NAME]", help="Session NAME (omit with --ephemeral).", show_default=False),
    title: str = typer.Option(None, "--title", metavar="T", help="A title (1-200 characters)."),
    ephemeral: bool = typer.Option(False, "--ephemeral", help="Make a fresh random NAME with a TTL (retention.ephemeral_ttl, 24h)."),
    ttl: str = typer.Option(None, "--ttl", metavar="DUR", help="Delete the session DUR after its last activity."),
    tag: list[str] = typer.Option(None, "--tag", metavar="KEY=VALUE", help="Set a tag (repeatable; at most tags.max, 32)."),
    json_out: bool = JSON,
):
    """Create a session (status created); prints its NAME.

    Example: durable session create fix-login --title "Login bug" --tag pr=42
    """
    from .. import checks

    tags = dict(checks.tag_pairs(tag or ()))
    doc = store().create_session(name, title=title, ttl_seconds=seconds(ttl, what="--ttl"), ephemeral=ephemeral, tags=tags or None)
    if json_out:
        render.document(doc, "json")
    else:
        render.out(doc["name"])


@app.command()
def show(name: str = NAME, json_out: bool = JSON):
    """Show a session: status, queue, turns, tokens, participants.

    Example: durable session show fix-login --json | jq .status
    """
    render.session(_on(name, lambda s: s.show()), mode(json_out))


@app.command()
def prompt(
    name: str = NAME,
    text: str = typer.Argument(..., metavar="TEXT|-", help="The prompt, or - to read it from stdin."),
    source: str = typer.Option(None, "--source", metavar="S", help="Where the prompt came from (free text)."),
    request_id: str = typer.Option(None, "--request-id", metavar="ID", help="Idempotency key: a retry with the same ID stores nothing new."),
    wait: str = typer.Option(None, "--wait", metavar="DUR", help="When the queue is full, wait up to DUR for room (the lock is not held while waiting)."),
    no_create: bool = typer.Option(False, "--no-create", help="Exit 3 instead of creating a missing session."),
    at: str = typer.Option(None, "--at", metavar="TIME", help="Schedule it instead: once at TIME (RFC 3339 with an offset), or the first time of --every."),
    after: str = typer.Option(None, "--in", metavar="DUR", help="Schedule it instead: once, DUR from now."),
    every: str = typer.Option(None, "--every", metavar="DUR", help="Schedule it instead: every DUR (at least 1m), the first time DUR from now or at --at TIME."),
    cron: str = typer.Option(None, "--cron", metavar="EXPR", help="Schedule it instead: at the times the five-field cron EXPR names (or @hourly, @daily, ...)."),
    tz: str = typer.Option(None, "--tz", metavar="TZ", help="The IANA time zone of --cron (default UTC), e.g. Europe/Paris."),
    json_out: bool = JSON,
):
    """Queue a prompt (creates the session if needed); prints the prompt id. With --at, --in, --every or
    --cron, stores a schedule instead (nothing is queued now); prints the schedule's id.

    Example: echo "Summarize the logs" | durable session prompt ops -
    """
    from .. import checks, seam

    if any(v is not None for v in (at, after, every, cron, tz)):
        return _schedule(name, text, source=source, request_id=request_id, wait=wait, no_create=no_create, at=at,
                         after=after, every=every, cron=cron, tz=tz, json_out=json_out)
    wait_seconds = seconds(wait, allow_zero=True, what="--wait") or 0
    content = read_content(text)
    checks.text(store().config, content)  # input first: a rejected prompt creates nothing
    args = seam.bind("prompt", content, source=source, request_id=request_id, created=not no_create, waiting=wait_seconds > 0)
    doc = store().poll(name, lambda s, more: s.run("prompt", args), wait_seconds=wait_seconds, create=not no_create)
    if doc is None:
        raise DurableError(f"the queue of session \"{name}\" is still full after waiting {wait}; nothing was stored "
                           "(raise the cap with 'durable config set queue.max_unfinished N')", "conflict")
    render.document(doc, "json") if json_out else render.out(str(doc["id"]))


@app.command("next")
def next_(
    name: str = NAME,
    wait: str = typer.Option(None, "--wait", metavar="DUR", help="Wait up to DUR for a prompt (0 = do not wait); the lock is not held while waiting."),
    lease: str = typer.Option(None, "--lease", metavar="DUR", help="Lease for the taken prompt (default queue.lease, 2h)."),
    context: int = typer.Option(None, "--context", metavar="TOKENS", help="Add \"window\": the context window for this budget, taken after the user turn."),
    fmt: str = typer.Option(None, "--format", metavar="[messages|responses|anthropic|gemini|json]", help="The window's format with --context: messages (default), responses, anthropic, gemini or json.",
                            autocompletion=complete_choices("messages", "responses", "anthropic", "gemini", "json")),
    json_out: bool = JSON,
):
    """Take the oldest pending prompt for work: it becomes processing and its text the user turn.

    Example: durable session next fix-login --wait 30s --context 8000 --json | jq .window
    """
    wait_seconds = seconds(wait, allow_zero=True, what="--wait") or 0
    if fmt is not None and context is None:
        raise DurableError("--format goes with --context TOKENS", "invalid_input")
    if context is not None and context < 0:
        raise DurableError("--context must be a non-negative token budget", "invalid_input")
    fmt = fmt or "messages"
    if fmt not in ("messages", "responses", "anthropic", "gemini", "json"):
        raise DurableError(f"invalid --format {fmt!r}: use messages, responses, anthropic, gemini or json", "invalid_input")
    s = store()
    lease_seconds = seconds(lease, what="--lease") or s.config.seconds("queue.lease")
    waiting = wait_seconds > 0
    doc = s.poll(name, lambda session, _more: unless_interrupted(
        session.next_prompt(lease_seconds=lease_seconds, waiting=waiting, context=context, format=fmt)), wait_seconds=wait_seconds)
    if doc is None or doc is STOPPED:
        if json_out:
            render.out("null")
        raise DurableError(f"no pending prompt in session \"{name}\"" + (f" after waiting {wait}" if waiting else ""), "timeout")
    render.document(doc, mode(json_out))


ATTEMPT = typer.Option(None, "--attempt", metavar="N", help="The start you hold, by its start number (the prompt's \"start\" when you took it): another start is exit 4, nothing changed.")


@app.command()
def renew(
    name: str = NAME,
    prompt_id: int = typer.Argument(..., metavar="PROMPT_ID", help="The processing prompt's id."),
    lease: str = typer.Option(None, "--lease", metavar="DUR", help="New lease from now (default queue.lease)."),
    attempt: int = ATTEMPT,
    json_out: bool = JSON,
):
    """Extend the lease of a processing prompt from now.

    Example: durable session renew fix-login 3 --lease 1h --attempt 1
    """
    s = store()
    lease_seconds = seconds(lease, what="--lease") or s.config.seconds("queue.lease")
    render.document(s.run(name, "renew", prompt_id, lease_seconds=lease_seconds, attempt=attempt), mode(json_out))


def read_rows(source: str) -> list:
    """`--rows FILE|-`: JSONL rows as `append --batch` reads them (exit 2 naming the bad line)."""
    from .. import checks

    if source == "-":
        lines = (sys.stdin.buffer if sys.stdin is not None else io.BytesIO()).read().split(b"\n")
    else:
        try:
            with open(source, "rb") as f:
                lines = f.read().split(b"\n")
        except (OSError, ValueError) as e:  # ValueError: a NUL in the path
            raise DurableError(f"cannot read --rows {source!r}: {getattr(e, 'strerror', None) or e}", "invalid_input") from e
    return checks.rows(store().config, lines)


@app.command()
def finish(
    name: str = NAME,
    prompt_id: int = typer.Argument(..., metavar="PROMPT_ID", help="The processing prompt's id."),
    reply: str = typer.Option(None, "--reply", metavar="TEXT|-", help="The assistant's reply (- reads stdin); appended as the last assistant turn."),
    meta: str = typer.Option(None, "--meta", metavar="JSON", help="Meta (model, usage, cost_usd, ...) for the reply, or without --reply for the last assistant row of --rows."),
    rows: str = typer.Option(None, "--rows", metavar="FILE|-", help="The turn's rows (JSONL, assistant and tool rows, as append --batch reads them), appended before the reply."),
    failed: bool = typer.Option(False, "--failed", help="Mark the prompt failed instead of completed (rows given are recorded: the partial turn)."),
    error: str = typer.Option(None, "--error", metavar="MSG", help="Why it failed (implies --failed)."),
    attempt: int = ATTEMPT,
    json_out: bool = JSON,
):
    """Finish a processing prompt, completed or failed: the turn's rows, then the reply, in one transaction.

    Example: llm "$prompt" | durable session finish fix-login 3 --reply - --meta '{"model": "gpt-4o"}'
    """
    from .. import checks

    if rows == "-" and reply == "-":
        raise DurableError("--rows - and --reply - cannot both read stdin; give one of them as a FILE or TEXT", "invalid_input")
    checks.attempt(attempt)
    content = read_content(reply, "--reply") if reply is not None else None
    turn_rows = read_rows(rows) if rows is not None else None
    turn = checks.finish(store().config, reply=content, meta=meta, rows=turn_rows, failed=failed or error is not None)
    render.document(_on(name, lambda s: s.finish(prompt_id, rows=turn, failed=failed, error=error, attempt=attempt)), mode(json_out))


@app.command()
def release(
    name: str = NAME,
    prompt_id: int = typer.Argument(..., metavar="PROMPT_ID", help="The processing prompt's id."),
    delay: str = typer.Option(None, "--delay", metavar="DUR", help="Not startable again before DUR (default 0); later prompts may start meanwhile."),
    not_an_attempt: bool = typer.Option(False, "--not-an-attempt", help="Hand back the start too (a worker that was stopped, not one that failed): attempts lowered by one."),
    attempt: int = ATTEMPT,
    json_out: bool = JSON,
):
    """Hand a processing prompt back: pending again, first in the queue.

    Example: durable session release fix-login 3 --delay 30s --attempt 1
    """
    delay_seconds = seconds(delay, allow_zero=True, what="--delay") or 0
    render.document(store().run(name, "release", prompt_id, delay_seconds=delay_seconds, not_an_attempt=not_an_attempt,
                                attempt=attempt), mode(json_out))


def _names_in(*statuses):
    """TAB completion of NAME limited to sessions in STATUSES (what archive/unarchive can act on)."""
    def complete(incomplete: str):
        try:
            return [row["name"] for row in store().ls(all_objects=True)
                    if row["status"] in statuses and row["name"].startswith(incomplete)]
        except Exception:  # noqa: BLE001 - completion must never print a traceback into the shell
            return []
    return complete


ARCHIVABLE = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=_names_in("created", "active", "completed", "failed"))
ARCHIVED = typer.Argument(..., metavar="NAME", help="Session NAME.", autocompletion=_names_in("archived"))


def _transition(method_name, help_text, name_argument=NAME):
    def command(name: str = name_argument, json_out: bool = JSON):
        render.document(_on(name, lambda s: getattr(s, method_name)()), mode(json_out))

    command.__doc__ = help_text
    return command


app.command("stop")(_transition("stop", "Fail the processing prompt (\"stopped\"); pending prompts stay.\n\nExample: durable session stop fix-login"))
app.command("cancel")(_transition("cancel", "Cancel a created or active session; its queued prompts fail (\"cancelled\").\n\nExample: durable session cancel fix-login"))
app.command("archive")(_transition("archive", "Archive a session in any status but cancelled, once its queue is empty (owners only): it becomes read-only.\n\nExample: durable session archive fix-login", ARCHIVABLE))
app.command("unarchive")(_transition("unarchive", "Bring an archived session back to active.\n\nExample: durable session unarchive fix-login", ARCHIVED))


@app.command()
def title(name: str = NAME, text: str = typer.Argument(..., metavar="TITLE", help="The new title."), json_out: bool = JSON):
    """Set a session's title (1-200 characters).

    Example: durable session title fix-login "Login bug, take two"
    """
    render.document(store().run(name, "set_title", text), mode(json_out))  # the title checked first (docs/reference/output.md §4)


@app.command()
def tag(
    name: str = NAME,
    pairs: list[str] = typer.Argument(None, metavar="[KEY=VALUE]...", help="Set KEY to VALUE (replacing its value).", show_default=False),
    untag: list[str] = typer.Option(None, "--untag", metavar="KEY", help="Remove the tag KEY (repeatable)."),
    json_out: bool = JSON,
):
    """Set and remove a session's tags; prints its tags, one KEY=VALUE a line, sorted by KEY.

    With neither KEY=VALUE nor --untag, prints the tags and changes nothing. A KEY is 1-64 characters
    from A-Z a-z 0-9 . _ - : / (beginning with a letter or a digit); a VALUE 1-256 printable characters.
    Example: durable session tag fix-login pr=42 team=auth --untag draft
    """
    from .. import checks

    changes = dict(checks.tag_pairs(pairs or ()))
    doc = store().run(name, "tag", set=changes, untag=list(untag or ()))  # checked before NAME is opened (docs/reference/output.md §4)
    if json_out:
        render.document(doc, "json")
    else:
        for key, value in doc["tags"].items():
            render.out(f"{key}={value}")


@app.command()
def invite(
    name: str = NAME,
    user: str = typer.Argument(..., metavar="USER", help="The user to add."),
    role: str = typer.Option("member", "--role", metavar="[owner|member]", help="owner or member (default member).", autocompletion=complete_choices("owner", "member")),
    json_out: bool = JSON,
):
    """Add a participant to a tenant session (owners only).

    Example: durable --tenant acme session invite incident-42 bob --role member
    """
    render.document(store().run(name, "invite", user, role), mode(json_out))  # USER and --role checked first (docs/reference/output.md §4)


@app.command()
def dequeue(name: str = NAME, prompt_id: int = typer.Argument(..., metavar="PROMPT_ID", help="The pending prompt's id."), json_out: bool = JSON):
    """Remove a pending prompt from the queue.

    Example: durable session dequeue fix-login 4
    """
    render.document(_on(name, lambda s: s.dequeue(prompt_id)), mode(json_out))


@app.command()
def fork(
    name: str = NAME,
    new: str = typer.Argument(..., metavar="NEW", help="The new session's NAME (in your own scope)."),
    at: int = typer.Option(None, "--at", metavar="SEQ", help="Copy the live rows up to this one (default: all)."),
    title: str = typer.Option(None, "--title", metavar="T", help="The new session's title (default: NAME's)."),
    json_out: bool = JSON,
):
    """Start a new session from NAME's transcript (up to --at SEQ); prints NEW. NAME is not changed.

    Example: durable session fork chat chat-retry --at 12 && durable transcript show chat-retry
    """
    doc = store().fork(name, new, at=at, title=title)
    render.document(doc, "json") if json_out else render.out(doc["name"])


def _schedule(name, text, *, source, request_id, wait, no_create, at, after, every, cron, tz, json_out):
    """`session prompt ... --at/--in/--every/--cron` (docs/reference/sessions.md §5.3): every input is checked
    before NAME is opened, so a bad one stores nothing and creates no session."""
    from .. import checks, clock

    if wait is not None:
        raise DurableError("--wait is for queueing now, not with --at, --in, --every or --cron", "invalid_input")
    content = read_content(text)
    checks.text(store().config, content)
    checks.schedule(clock.now(), at=at, after=after, every=every, cron=cron, tz=tz)
    doc = store().run(name, "schedule", content, source=source, request_id=request_id, at=at, after=after, every=every,
                      cron=cron, tz=tz, created=not no_create, create=not no_create)
    render.document(doc, "json") if json_out else render.out(str(doc["id"]))


# `session schedules` on a terminal: what a person looks for first (what, when next) before how it was made; a
# narrow terminal leaves out the last ones (--json has every field)
SCHEDULE_COLUMNS = ("id", "content", "kind", "next_at", "cron", "every", "at", "tz", "fired", "missed", "last_fired_at",
                    "source", "author")
# `session deliveries` on a terminal: which outcome, whether it arrived, and when it is tried next
DELIVERY_COLUMNS = ("id", "type", "prompt_id", "status", "attempts", "next_attempt_at", "last_response", "last_error",
                    "delivered_at", "hook_id", "webhook_id", "created_at", "last_attempt_at")


@app.command()
def schedules(
    name: str = NAME,
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the session's schedules, oldest first.

    Example: durable session schedules nightly --json | jq '.[].next_at'
    """
    render.listing(store().run(name, "schedules"), mode(json_out, jsonl), columns=SCHEDULE_COLUMNS)


@app.command()
def unschedule(
    name: str = NAME,
    schedule_id: int = typer.Argument(..., metavar="ID", help="The schedule's id (see 'durable session schedules')."),
    json_out: bool = JSON,
):
    """Delete a schedule (the prompts it already queued stay); its author or an owner.

    Example: durable session unschedule nightly 3
    """
    doc = store().run(name, "unschedule", schedule_id)
    # docs/reference/json.md §10: `{"deleted": ID}`, as `transcript clear` answers what it removed
    render.document({"deleted": doc["id"]}, "json") if json_out else render.out(str(doc["id"]))


@app.command()
def hook(
    name: str = NAME,
    url: str = typer.Option(..., "--url", metavar="URL", help="Where each outcome is POSTed (http or https)."),
    events: str = typer.Option(None, "--events", metavar="LIST", help="Comma-separated: completed, failed, cancelled (default all three)."),
    include_reply: bool = typer.Option(False, "--include-reply", help="Put the reply that ended the turn in the body (up to 64 KiB)."),
    secret_file: str = typer.Option(None, "--secret-file", metavar="F", help="The signing secret (whsec_...) from file F instead of a new random one."),
    json_out: bool = JSON,
):
    """Tell URL about each prompt's outcome (Standard Webhooks, signed); owners only. Prints the hook's id
    (--json: the hook, its secret included).

    Example: durable session hook fix-login --url https://example.com/done --events completed,failed
    """
    secret = None
    if secret_file is not None:
        try:
            with open(secret_file, encoding="utf-8") as f:
                secret = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise DurableError(f"cannot read --secret-file {secret_file}: {getattr(e, 'strerror', None) or e}", "invalid_input") from None
        secret = secret[:-1] if secret.endswith("\n") else secret
    doc = store().run(name, "hook", url, events=events, include_reply=include_reply, secret=secret)
    render.document(doc, "json") if json_out else render.out(str(doc["id"]))


@app.command()
def hooks(name: str = NAME, json_out: bool = JSON, jsonl: bool = JSONL):
    """List the session's hooks, oldest first; owners only.

    Example: durable session hooks fix-login --json
    """
    render.listing(store().run(name, "hooks"), mode(json_out, jsonl))


@app.command()
def unhook(
    name: str = NAME,
    hook_id: int = typer.Argument(..., metavar="ID", help="The hook's id (see 'durable session hooks')."),
    json_out: bool = JSON,
):
    """Delete a hook and its deliveries (pending ones are never sent); owners only.

    Example: durable session unhook fix-login 1
    """
    doc = store().run(name, "unhook", hook_id)
    render.document({"deleted": doc["id"]}, "json") if json_out else render.out(str(doc["id"]))  # docs/reference/json.md §10


@app.command()
def deliveries(
    name: str = NAME,
    hook_id: int = typer.Option(None, "--hook", metavar="ID", help="Only hook ID's deliveries."),
    status: str = typer.Option(None, "--status", metavar="STATUS", help="Only pending, delivered or failed ones."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the outcome deliveries of the session's hooks, oldest first; owners only.

    Example: durable session deliveries fix-login --status failed
    """
    from ..deliver import listing

    render.listing(listing(store(), name, hook_id=hook_id, status=status), mode(json_out, jsonl), columns=DELIVERY_COLUMNS)


@app.command()
def queue(
    name: str = NAME,
    pending: bool = typer.Option(False, "--pending", help="Only pending prompts."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the session's prompts (finished ones too unless --pending).

    Example: durable session queue fix-login --pending --jsonl | jq -r .content
    """
    render.listing(_on(name, lambda s: s.queue(pending_only=pending)), mode(json_out, jsonl))


@app.command()
def steps(
    name: str = NAME,
    prompt: int = typer.Option(None, "--prompt", metavar="ID", help="Only this prompt's steps."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the session's step journal: every step by prompt, then in the order each KEY was first reserved.

    Example: durable session steps fix-login --jsonl | jq -r '.key + " " + .status'
    """
    items = store().steps(name, prompt=prompt)
    if mode(json_out, jsonl) == "plain":
        items = [{**i, "stdout": None, "stdout_base64": None} for i in items]  # the stdout fields are read with --json
    render.listing(items, mode(json_out, jsonl))


@app.command()
def events(
    name: str = NAME,
    since: int = typer.Option(0, "--since", metavar="SEQ", help="Only events after SEQ."),
    json_out: bool = JSON,
    jsonl: bool = JSONL,
):
    """List the session's append-only event log.

    Example: durable session events fix-login --since 10 --jsonl | jq -r .type
    """
    render.listing(_on(name, lambda s: s.events(since=since)), mode(json_out, jsonl), table=render.events_table)


@app.command()
def participants(name: str = NAME, json_out: bool = JSON, jsonl: bool = JSONL):
    """List the session's participants and their roles.

    Example: durable --tenant acme session participants incident-42 --json
    """
    render.listing(_on(name, lambda s: s.participants()), mode(json_out, jsonl))
