"""durable forget, export, import, backup, doctor, config: data rights, repair and settings (docs/reference/retention.md §7)."""

import sys

import typer

from ..errors import DurableError
from . import render
from .options import complete_name, mode, store

JSON = typer.Option(False, "--json", help="Print one JSON document.")
config_app = typer.Typer(help="Read and write settings (TOML).\n\nExample: durable config set transcript.token_budget 8000", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("forget")(forget)
    app.command("export")(export)
    app.command("import")(import_)
    app.command("backup")(backup)
    app.command("doctor")(doctor)
    app.command("path")(path)
    app.add_typer(config_app, name="config")


def forget(
    user: str = typer.Argument(..., metavar="USER", help="The user to erase."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask (required without a terminal)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted or changed; change nothing."),
    json_out: bool = JSON,
):
    """Erase everything of USER: their sessions, memory and limits, and their traces in tenant sessions.

    Example: durable forget bob --dry-run && durable forget bob --yes --json
    """
    from ..config import valid_name

    valid_name(user, "user")
    if not yes and not dry_run:
        if not sys.stdin.isatty():
            raise DurableError("forget needs --yes when not run from a terminal (or --dry-run to see what it would do)", "invalid_input")
        planned = store().forget(user, dry_run=True)
        if _nothing_of(user, planned, json_out):
            return
        render.preview(planned, f"forget {user!r} would delete or change")
        if not render.confirm(f"erase everything of user {user!r}?"):
            render.declined(render.EMPTY_RECEIPT, json_out)
            return
    bar = render.progress("forget")
    try:
        doc = store().forget(user, progress=bar, dry_run=dry_run)
    finally:
        bar.stop()
    if _nothing_of(user, doc, json_out):
        return
    render.receipt(doc, mode(json_out))


def _nothing_of(user, doc, json_out) -> bool:
    """Say on stderr that USER matched nothing (exit 0); the receipt still goes to stdout with --json."""
    if doc["deleted"] or doc["changed"] or doc["skipped"]:
        return False
    sys.stderr.write(f"durable: nothing matched user {user!r}: no session, memory or participation; nothing was erased\n")
    if json_out:
        render.receipt(doc, "json")
    return True


def export(
    names: list[str] = typer.Argument(None, metavar="[NAME]...", help="Session NAMEs (or --user / --all).", autocompletion=complete_name, show_default=False),
    user: str = typer.Option(None, "--user", metavar="U", help="Every object user U owns, their memory included."),
    all_objects: bool = typer.Option(False, "--all", help="Every object of every user and tenant: the whole installation."),
    format_: str = typer.Option("durable", "--format", metavar="durable|otlp", help="durable: versioned JSONL records; otlp: OpenTelemetry GenAI traces (needs the otel extra)."),
    output: str = typer.Option(None, "--output", "-o", metavar="FILE", help="Write to FILE (mode 0600, not inside the data directory), renamed into place when complete, instead of stdout."),
    since: str = typer.Option(None, "--since", metavar="DUR|TIME", help="otlp: only the turns that ended at or after this (a duration back from now, or an RFC 3339 time)."),
    content: bool = typer.Option(None, "--content/--no-content", help="otlp: record text, arguments, results, names and users in the spans (default: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)."),
    endpoint: str = typer.Option(None, "--endpoint", metavar="URL", help="otlp: send the spans by OTLP/HTTP to URL (as is) instead of writing them."),
    send: bool = typer.Option(False, "--send", help="otlp: send the spans to the configured endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, telemetry.endpoint)."),
    json_out: bool = typer.Option(False, "--json", help="Also print the receipt (what was exported or skipped) as JSON on stderr."),
):
    """Export objects as versioned JSONL, one record per object with all its rows, or as OTLP traces.

    Example: durable export --user alice --output alice.jsonl
    """
    import json

    names = list(names or [])
    if sum(x for x in (bool(names), user is not None, bool(all_objects))) != 1:
        raise DurableError("give exactly one of NAME, --user U or --all", "invalid_input")
    if format_ not in ("durable", "otlp"):
        raise DurableError(f"unknown --format {format_!r}: use durable or otlp", "invalid_input")
    otlp = format_ == "otlp"
    if not otlp:
        given = [o for o, v in (("--since", since is not None), ("--content/--no-content", content is not None),
                                ("--endpoint", endpoint is not None), ("--send", send)) if v]
        if given:
            raise DurableError(f"{given[0]} needs --format otlp", "invalid_input")
    settings: dict = _otlp_settings(output, since, content, endpoint, send) if otlp else {}
    if user is not None:
        from ..config import valid_name

        valid_name(user, "user")
    sending = otlp and settings["url"] is not None
    target = _export_target(output) if output is not None and not sending else None  # before anything is read
    bar = render.progress("export")
    if len(names) > 1 or (otlp and names):  # every NAME is resolved (read) before anything is written or sent
        records = [r for n in names for r in store().export(name=n)]
    else:
        cut = {"updated_since": settings["since_ns"] // 1_000_000} if otlp and settings["since_ns"] is not None else {}
        records = store().export(name=names[0] if names else None, user=user, all_objects=all_objects, progress=bar, **cut)
    failure = None
    exported: list = []
    counts = {"spans": 0, "traces": 0}
    try:
        if sending:
            failure = _send_otlp(records, settings, exported, counts)
        else:
            with _Output(output, target) as write:
                try:
                    for record in records:
                        if otlp:
                            for line in _otlp_lines(record, settings, counts):
                                write(line)
                        else:
                            write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
                        exported.append({"id": record["id"], "owner": record["owner"], "name": record["name"], "what": "exported"})
                except DurableError as e:
                    if not getattr(e, "after_output", False):
                        raise
                    failure = e  # busy or corrupt objects skipped: the others are written, then the exit says so
        if json_out:  # stdout holds the records: the receipt goes to stderr (docs/reference/json.md §10)
            skipped = getattr(failure, "receipt", None) or {}
            doc = {"deleted": [], "skipped": skipped.get("skipped", []), "changed": exported, "dry_run": False}
            if otlp:
                doc.update(counts)
            sys.stderr.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
        if failure is not None:
            raise failure
    finally:
        bar.stop()


class _Output:
    """Where export writes its lines: stdout, a pipe or device written directly, or a regular file written
    beside itself and renamed into place when complete (mode 0600; docs/reference/retention.md §7)."""

    def __init__(self, output, target):
        self.output, self.target, self.tmp, self.stream = output, target, None, None

    def __enter__(self):
        import os

        output, target = self.output, self.target
        if output is None:
            return render.out
        if target is None:  # a pipe, a terminal, /dev/stdout: written directly
            try:
                self.stream = open(output, "w", encoding="utf-8")
            except OSError as e:
                raise DurableError(f"cannot write --output {output!r}: {e.strerror}", "invalid_input") from e
        else:
            tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.durable-export-{os.urandom(6).hex()}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as e:
                raise DurableError(f"cannot write --output {output!r}: {e.strerror}", "invalid_input") from e
            self.tmp = tmp
            self.stream = os.fdopen(fd, "w", encoding="utf-8")
        stream = self.stream
        return lambda line: stream.write(line + "\n")

    def __exit__(self, kind, error, tb):
        import os

        stream, tmp = self.stream, self.tmp
        if stream is None:
            return False
        if kind is not None:
            if not stream.closed:
                stream.close()
            if tmp is not None:
                os.unlink(tmp)
            return False
        if tmp is None:
            stream.close()
            return False
        stream.flush()
        os.fsync(stream.fileno())
        stream.close()
        try:
            os.replace(tmp, self.target)
        except OSError as e:
            os.unlink(tmp)
            raise DurableError(f"cannot write --output {self.output}: {e.strerror}", "invalid_input") from e
        return False


def _otlp_settings(output, since, content, endpoint, send) -> dict:
    """Every check of `export --format otlp` that needs no object (docs/reference/traces.md §15.3): exit 2 before
    anything is read or sent."""
    import os

    from .. import clock

    if output is not None and (endpoint is not None or send):
        raise DurableError("--output cannot be combined with --endpoint or --send", "invalid_input")
    if endpoint is not None and send:
        raise DurableError("give --endpoint URL or --send, not both", "invalid_input")
    since_ns = _since_ns(since, clock.now()) if since is not None else None
    from ..telemetry import otlp

    url = None
    if endpoint is not None:
        url = otlp.check_url(endpoint, "--endpoint")
    elif send:
        url = otlp.configured_endpoint(store().config)
        if not url:
            raise DurableError("--send needs an endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (or "
                               "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or config telemetry.endpoint)", "invalid_input")
        otlp.check_url(url, "the OTLP endpoint")
    if url is not None:
        otlp.check_protocol()
    if content is None:
        flag = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
        content = flag in ("true", "span_only", "span_and_event")
    builder = otlp.Builder()  # exit 2 naming the extra when the SDK is missing, before anything is read
    return {"url": url, "since_ns": since_ns, "content": content, "builder": builder,
            "timeout": otlp.request_timeout() if url is not None else None}


def _since_ns(text: str, now_ms: int) -> int:
    """--since: a duration back from now, or an RFC 3339 time with a zone, as epoch nanoseconds; else exit 2."""
    from .. import durations
    from ..telemetry import traces

    at = traces.rfc3339_ns(text)
    if at is not None:
        return at
    if text and text[0].isdigit() and not text.isdigit() and "-" not in text and ":" not in text:
        return (now_ms - durations.parse(text, what="--since duration") * 1000) * 1_000_000
    raise DurableError(f"invalid --since {text!r}: use a duration back from now (30m, 7d) or an RFC 3339 time "
                       "with a zone (2026-12-01T09:00:00Z)", "invalid_input")


def _spans_of(record, settings, counts) -> list:
    from ..telemetry import traces

    spans = traces.session_spans(record, content=settings["content"], since_ns=settings["since_ns"])
    counts["spans"] += len(spans)
    counts["traces"] += sum(1 for s in spans if s.parent_id is None)
    return spans


def _otlp_lines(record, settings, counts):
    """The OTLP/JSON lines of one session: one ExportTraceServiceRequest per 10,000 spans, none without spans."""
    import json

    from ..telemetry import otlp

    spans = _spans_of(record, settings, counts)
    builder = settings["builder"]
    for i in range(0, len(spans), otlp.LINE):
        yield json.dumps(builder.json_line(builder(spans[i:i + otlp.LINE])), ensure_ascii=False, separators=(",", ":"))


def _send_otlp(records, settings, exported, counts):
    """Every session's spans to the endpoint, BATCH a request; the first request not accepted is exit 7."""
    from ..telemetry import otlp

    sender = otlp.Sender(settings["builder"], settings["url"], settings["timeout"])
    failure = None
    try:
        try:
            for record in records:
                spans = _spans_of(record, settings, counts)
                try:
                    sender.send(spans)
                except otlp.NotSent as e:
                    counts["spans"] = sender.sent
                    raise otlp.storage_error(settings["url"], str(e), sender.sent) from None
                exported.append({"id": record["id"], "owner": record["owner"], "name": record["name"], "what": "exported"})
        except DurableError as e:
            if not getattr(e, "after_output", False):
                raise
            failure = e
    finally:
        sender.close()
    return failure


def _export_target(output: str):
    """Where `export --output` renames its file into place: OUTPUT resolved (symlinks at any level), or None
    for a FILE that is not a regular file (a pipe, /dev/stdout: written directly). A FILE inside the data
    directory is exit 2: an export written over an object file or secret.key would destroy them (docs/reference/retention.md §7)."""
    import os
    import stat

    from ..config import user_dir

    if "\0" in output or output == "":
        raise DurableError(f"cannot write --output {output!r}: not a file name", "invalid_input")
    s = store()
    home = getattr(s, "home", None) or s.config.get("defaults.home") or user_dir("data")
    real_home = os.path.realpath(os.path.abspath(os.path.expanduser(home)))
    real = os.path.realpath(os.path.abspath(output))
    if real == real_home or real.startswith(real_home.rstrip(os.sep) + os.sep):
        raise DurableError(f"--output {output} is inside the data directory {home}; choose a file outside it",
                           "invalid_input")
    try:
        st = os.stat(output)  # through symlinks: /dev/stdout resolves to no path ("pipe:[…]")
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise DurableError(f"cannot write --output {output!r}: {e.strerror}", "invalid_input") from e
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise DurableError(f"cannot write --output {output!r}: it is a directory", "invalid_input")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return None
    if not os.path.isdir(os.path.dirname(real)):
        raise DurableError(f"cannot write --output {output!r}: {os.path.dirname(output) or '.'} is not a directory",
                           "invalid_input")
    return real


def import_(
    file: str = typer.Argument(None, metavar="FILE|PATH", help="A durable export (JSONL), or - for stdin; with --from llm, llm's logs.db (default: llm's own).", show_default=False),
    source: str = typer.Option(None, "--from", metavar="SOURCE", help="Import another tool's history instead of an export: llm (its logs.db, read-only).",
                               autocompletion=lambda incomplete: [c for c in ("llm",) if c.startswith(incomplete)]),
    replace: bool = typer.Option(False, "--replace", help="Overwrite objects that exist with other content."),
    all_users: bool = typer.Option(False, "--all-users", help="Installation restore: every user's and tenant's records, whoever acts."),
    json_out: bool = JSON,
):
    """Re-create exported objects, each all or nothing; an existing one with other content is exit 4 unless --replace.

    Only your own records and tenant sessions you own are imported, unless --all-users. A record that
    fails is listed as skipped and the others go on; records already imported identically are skipped,
    so re-running an interrupted import completes it. With --from llm, each conversation of llm's
    logs.db becomes an active session named by its conversation id; conversations imported before are
    skipped unless --replace.

    Example: durable import alice.jsonl --replace; durable import --from llm --json | jq '.changed | length'
    """
    from .. import checks

    if source is not None:
        if source != "llm":
            raise DurableError(f"invalid --from {source!r}: durable imports from llm", "invalid_input")
        if all_users:
            raise DurableError("--all-users restores durable exports; --from llm imports into your own sessions", "invalid_input")
        try:
            doc = store().import_llm(file, replace=replace)
        except DurableError as e:
            if e.document is not None:
                render.receipt(e.document, mode(json_out))
                e.document = None
            raise
        render.receipt(doc, mode(json_out))
        return
    if file is None:
        raise DurableError("missing FILE: give a durable export (or - for stdin), or --from llm", "invalid_input")

    try:
        data = sys.stdin.buffer.read() if file == "-" else open(file, "rb").read()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise DurableError(f"cannot read {file!r}: {getattr(e, 'strerror', None) or e}", "invalid_input") from e
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DurableError(f"{file} is not valid UTF-8", "invalid_input") from None
    try:
        doc = store().import_records(checks.export_records(text.splitlines()), replace=replace, all_users=all_users)
    except DurableError as e:
        if e.document is not None:  # the receipt still goes to stdout, then the first failure's exit
            render.receipt(e.document, mode(json_out))
            e.document = None
        raise
    render.receipt(doc, mode(json_out))


def backup(dest: str = typer.Argument(..., metavar="DEST", help="A new or empty directory outside the data directory."), json_out: bool = JSON):
    """Copy the whole data directory to DEST, usable as --home DEST.

    Example: durable backup /backups/durable-$(date +%F)
    """
    bar = render.progress("backup")
    try:
        doc = store().backup(dest, progress=bar)
    finally:
        bar.stop()
    render.document(doc, "json") if json_out else render.out(doc["dest"])


def doctor(
    repair: bool = typer.Option(False, "--repair", help="Rebuild index.db from the objects, finish interrupted purges and move corrupt objects into quarantine/."),
    purge_quarantine: bool = typer.Option(False, "--purge-quarantine", help="Delete the corrupt objects an earlier --repair moved into quarantine/."),
    json_out: bool = JSON,
):
    """Check every object and index.db; exit 7 when something is wrong (6 when only busy objects were left unchecked).

    Example: durable doctor --repair --json | jq '.problems[] | .kind'
    """
    bar = render.progress("doctor")
    try:
        doc = store().doctor(repair=repair, purge_quarantine=purge_quarantine, progress=bar)
    finally:
        bar.stop()
    on_screen = not json_out and render.pretty()
    if on_screen:
        render.doctor_report(doc, _count_objects())
    elif not json_out:  # piped: one row per problem in §10's key order, healthy or not, repaired or not (docs/reference/retention.md §7)
        for p in doc["problems"]:
            render.out(render.tsv({k: p[k] for k in ("id", "kind", "detail", "repaired")}))
    if not doc["healthy"]:
        kinds = sorted({p["kind"] for p in doc["problems"] if not p["repaired"]})
        if kinds == ["busy"]:
            raise DurableError("some objects are busy (locked by another process) and were not checked; run it again",
                               "busy", document=doc if json_out else None)
        raise DurableError(
            f"unhealthy: {', '.join(kinds)}" + ("" if repair else "; run 'durable doctor --repair'"), "storage",
            document=doc if json_out else None,
        )
    if json_out:
        render.document(doc, "json")


def _count_objects() -> int:
    """How many object files the data directory holds (doctor's summary line on a terminal)."""
    paths = store().objects.paths
    return sum(1 for _ in paths.iter_object_ids(skip_symlinks=True)) if paths.home_exists() else 0


def path(
    name: str = typer.Argument(None, metavar="[NAME]", help="Session NAME (default: print the data directory).", autocompletion=complete_name, show_default=False),
    json_out: bool = JSON,
):
    """Print the data directory, or NAME's object file (open it read-only: sqlite3 -readonly).

    Example: sqlite3 -readonly "$(durable path chat)" 'SELECT role, content FROM turns'
    """
    found = store().path(name)
    render.document({"path": found}, "json") if json_out else render.out(found)


@config_app.command("get")
def config_get(key: str = typer.Argument(..., metavar="KEY", help="The key, e.g. transcript.token_budget."), json_out: bool = JSON):
    """Print a key's effective value (empty when it has none).

    Example: durable config get queue.lease
    """
    from ..config import KEYS

    if key not in KEYS:
        raise DurableError(f"unknown config key {key!r}; see 'durable config list'", "invalid_input")
    value = _config().effective()[key]
    if json_out:
        render.document({"key": key, "value": value}, "json")
    else:
        render.out("" if value is None else str(value))


def _config():
    from ..config import Config
    from .options import G

    return Config({"defaults.home": G.home, "defaults.user": G.user, "defaults.lock_timeout": G.lock_timeout})


@config_app.command("set", context_settings={"ignore_unknown_options": True})  # VALUE -5 is a value (docs/reference/retention.md §7)
def config_set(key: str = typer.Argument(..., metavar="KEY", help="The key, e.g. queue.lease."),
               value: str = typer.Argument(..., metavar="VALUE", help="Its new value."), json_out: bool = JSON):
    """Set a key in the config file (--json: print the key's effective value afterwards).

    The value is checked with the rules of what reads it before it is written (transcript.tokenizer must
    load); a VALUE that begins with - (-5) is a value, not an option.

    Example: durable config set retention.draft_expiry 1d
    """
    _config().write(key, value)
    _print_key(key, json_out)


@config_app.command("unset")
def config_unset(key: str = typer.Argument(..., metavar="KEY", help="The key to remove."), json_out: bool = JSON):
    """Remove a key from the config file (back to its default).

    Example: durable config unset transcript.tokenizer
    """
    _config().write(key, unset=True)
    _print_key(key, json_out)


def _print_key(key, json_out):
    if json_out:
        render.document({"key": key, "value": _config().effective()[key]}, "json")


@config_app.command("list")
def config_list(
    origin: bool = typer.Option(False, "--origin", help="Also say where each value comes from: option, env, file or default."),
    json_out: bool = JSON,
):
    """Print every key's effective value (--origin: and where it comes from).

    Example: durable config list --origin --json | jq -r 'to_entries[] | select(.value.origin == "file") | .key'
    """
    config = _config()
    values = config.effective()
    if not json_out and render.pretty():  # a table on a terminal (docs/reference/output.md §4), TSV rows when piped
        render.config_table(values, {k: config.origin(k) for k in values} if origin else None)
        return
    if origin:
        doc = {k: {"value": v, "origin": config.origin(k)} for k, v in values.items()}
        if json_out:
            render.document(doc, "json")
        else:
            for k, v in doc.items():
                render.out(f"{k}\t{render.field(v['value'])}\t{v['origin']}")
    elif json_out:
        render.document(values, "json")
    else:
        for k, v in values.items():
            render.out(f"{k}\t{render.field(v)}")


@config_app.command("path")
def config_path(json_out: bool = JSON):
    """Print the config file's path (it may not exist yet).

    Example: $EDITOR "$(durable config path)"
    """
    path = _config().path
    render.document({"path": path}, "json") if json_out else render.out(path)
