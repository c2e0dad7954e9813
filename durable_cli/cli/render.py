"""Output: the only module that imports rich, and only when stdout (or stderr, for progress) is a TTY.

Piped output is plain and stable: a created id or NAME bare on one line; records and listings as one
tab-separated row per item in the key order of SPEC §10 (\\t \\n \\\\ escaped, null empty, arrays and
objects as compact JSON). --json prints one document; --jsonl one object per line, streamed.
"""

import json
import os
import sys


def _dumps(value) -> str:
    """Compact strict JSON (SPEC §6: no NaN or Infinity in any output, even for a value stored before durable
    refused them on the way in: such a number is printed as null)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))


def _finite(value):
    if isinstance(value, float):
        return value if value - value == 0 else None  # inf - inf and nan - nan are nan
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def pretty() -> bool:
    """Tables for people: stdout is a terminal. NO_COLOR removes colour, not the layout (SPEC §4)."""
    return sys.stdout.isatty()


def console(stderr: bool = False):
    """A rich Console; with NO_COLOR set it writes no escape codes at all."""
    from rich.console import Console

    return Console(stderr=stderr, color_system=None if os.environ.get("NO_COLOR") else "auto")


def field(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        value = _dumps(value)
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def tsv(item: dict) -> str:
    return "\t".join(field(v) for v in item.values())


class PipeClosed(BaseException):
    """stdout's reader went away (`durable ls | head -1`): stop quietly, exit 0.

    A BaseException, so the argument parser's own handler (which exits 1) does not catch it."""


class OutputFailed(BaseException):
    """stdout could not be written (a full device): exit 7, saying whether the change was committed."""

    def __init__(self, error: OSError):
        super().__init__(error)
        self.error = error


def out(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
    except BrokenPipeError:
        raise PipeClosed()
    except OSError as e:
        raise OutputFailed(e)


def flush() -> None:
    """Push what was printed to the reader now (a follower's rows must not wait in a pipe's buffer)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise PipeClosed()


def document(doc, mode: str = "plain") -> None:
    """One record (or a receipt): JSON, a vertical table on a TTY, or one TSV row."""
    if mode in ("json", "jsonl"):
        out(_dumps(doc))
    elif isinstance(doc, dict) and pretty() and {"deleted", "skipped", "changed"} <= doc.keys():
        receipt_table(doc)  # a receipt printed on the way to a non-zero exit
    elif isinstance(doc, dict) and pretty():
        from rich.table import Table

        table = Table(show_header=False, box=None)
        table.add_column(style="bold cyan")
        table.add_column()
        for k, v in doc.items():
            table.add_row(k, "" if v is None else (_dumps(v) if isinstance(v, (dict, list)) else str(v)))
        console().print(table)
    elif isinstance(doc, dict):
        out(tsv(doc))
    else:
        out(field(doc))


def listing(items, mode: str = "plain", columns=None) -> None:
    """Many records: a JSON array, JSON lines (streamed), a rich table on a TTY, or TSV rows."""
    if mode == "json":
        out(_dumps(list(items)))
        return
    if mode == "jsonl":
        for item in items:
            out(_dumps(item))
        return
    if pretty():
        items = list(items)
        from rich.table import Table

        if not items:
            return
        table = Table()
        keys = columns or list(items[0].keys())
        for k in keys:
            table.add_column(k)
        for item in items:
            table.add_row(*[field(item.get(k)) for k in keys])
        console().print(table)
        return
    for item in items:
        out(tsv(item))


def receipt(doc: dict, mode: str = "plain") -> None:
    """delete/purge/forget/sweep/import receipts: JSON, or one TSV line per item (action, id, owner, name, detail)."""
    if mode in ("json", "jsonl"):
        out(_dumps(doc))
        return
    if pretty():
        receipt_table(doc)
        return
    for action in ("deleted", "skipped", "changed"):
        for item in doc[action]:
            detail = item.get("reason") or item.get("what") or ""
            verb = ("would " + {"deleted": "delete", "changed": "change"}[action]) if doc.get("dry_run") and action != "skipped" else action
            out("\t".join(field(x) for x in (verb, item["id"], item["owner"], item["name"], detail or None)))


def text_turns(turns) -> None:
    for t in turns:
        label = "summary" if t["kind"] == "summary" else t["role"]
        out(f"{label}: {t['content']}")


def error(message: str, code: str, exit_status: int, as_json: bool) -> None:
    if sys.stderr is None:
        return
    try:
        if as_json:
            sys.stderr.write(_dumps({"error": {"code": code, "message": message, "exit_status": exit_status}}) + "\n")
        else:
            sys.stderr.write(f"durable: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or full: the exit status still tells
        pass


class Progress:
    """A rich progress bar on stderr, only when stderr is a TTY; otherwise it does nothing."""

    def __init__(self, label: str):
        self.label = label
        self.bar = None

    def start(self, total: int) -> None:
        if not sys.stderr.isatty() or total == 0:
            return
        from rich.progress import Progress as Bar

        self.bar = Bar(console=console(stderr=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task(self.label, total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def progress(label: str) -> Progress:
    return Progress(label)


def confirm(question: str) -> bool:
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def ago(iso_time, now_ms=None) -> str:
    """A relative time for people ("3h ago", "just now"); "" for null."""
    if not iso_time:
        return ""
    import calendar
    import time

    from .. import clock

    then = calendar.timegm(time.strptime(iso_time[:19], "%Y-%m-%dT%H:%M:%S"))
    seconds = int(((now_ms if now_ms is not None else clock.now()) / 1000) - then)
    future = seconds < 0
    seconds = abs(seconds)
    if seconds < 45:
        return "just now"
    for size, unit in ((31536000, "y"), (2592000, "mo"), (604800, "w"), (86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            n = seconds // size
            return f"in {n}{unit}" if future else f"{n}{unit} ago"
    return "just now"  # pragma: no cover - seconds >= 45 always has a unit above


SESSION_COLUMNS = (("name", "NAME"), ("status", "STATUS"), ("title", "TITLE"), ("turns", "TURNS"),
                   ("tokens", "TOKENS"), ("last_active_at", "LAST ACTIVE"))


def session_table(rows, *, wide: bool = False) -> None:
    """`ls` on a terminal: the columns a person reads, fitted to the width (--wide: every field).

    Short columns keep their full width, NAME all but 5 columns of the rest (folded, never cut), and
    TITLE takes what is left (at least 5), cut with an ellipsis.
    """
    from rich.table import Table

    if not rows:
        sys.stderr.write("no sessions; 'durable session create NAME' starts one (--all shows archived ones)\n")
        return
    columns = [(k, k.upper().replace("_", " ")) for k in rows[0]] if wide else SESSION_COLUMNS
    cells = []
    for row in rows:
        line = []
        for key, _ in columns:
            value = row.get(key)
            if key.endswith("_at") and not wide:
                value = ago(value)
            line.append("" if value is None else str(value))
        cells.append(line)
    out_console = console()
    widths = [max(len(label), *(len(c[i]) for c in cells)) for i, (_, label) in enumerate(columns)]
    table = Table(box=None, header_style="bold", pad_edge=False)
    if not wide:
        gaps = 2 * (len(columns) - 1)
        name_i, title_i = 0, 2
        fixed = sum(w for i, w in enumerate(widths) if i not in (name_i, title_i))
        room = max(out_console.width - gaps - fixed, 10)
        widths[name_i] = min(widths[name_i], max(len("NAME"), room - min(widths[title_i], 5)))
        widths[title_i] = max(min(widths[title_i], room - widths[name_i]), 5)
    for i, (key, label) in enumerate(columns):
        table.add_column(label, justify="right" if key in ("turns", "tokens") else "left", width=widths[i],
                         no_wrap=key != "name", overflow="fold" if key == "name" else "ellipsis")
    for line in cells:
        table.add_row(*line)
    out_console.print(table)


def _short(object_id) -> str:
    """An id as a person reads it: the first 12 hex digits (the full one is in --json)."""
    return "" if not object_id else object_id[:12]


def session(doc: dict, mode: str = "plain") -> None:
    """A session record: the card on a terminal, else as `document` prints it."""
    if mode == "plain" and pretty():
        session_card(doc)
    else:
        document(doc, mode)


def transcript(rows, mode: str = "plain") -> None:
    """Transcript rows: a conversation on a terminal, else as `listing` prints them."""
    if mode == "plain" and pretty():
        conversation(rows)
    else:
        listing(rows, mode)


def session_card(doc: dict) -> None:
    """`session show` on a terminal: a short card (status, queue, participants, last activity)."""
    from rich.table import Table
    from rich.text import Text

    out_console = console()
    head = Text(doc["name"], style="bold")
    if doc.get("title"):
        head.append(f"  {doc['title']}")
    out_console.print(head)
    queue = doc.get("queue") or {}
    people = ", ".join(f"{p['user']} ({p['role']})" for p in doc.get("participants") or [])
    turns = f"{doc['turns']} ({doc['tokens']} tokens)"
    rows = [("status", doc["status"]),
            ("queue", f"{queue.get('pending', 0)} pending, {queue.get('processing', 0)} processing"),
            ("turns", turns), ("participants", people),
            ("last active", ago(doc.get("last_active_at"))), ("created", ago(doc.get("created_at")))]
    if doc.get("expires_at"):
        rows.append(("expires", ago(doc["expires_at"])))
    if doc.get("scope") != "user":
        rows.append(("scope", doc["scope"] + ("" if doc.get("scope") == "session" else f" {doc['owner']}")))
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for k, v in rows:
        table.add_row(k, v)
    out_console.print(table)


def conversation(rows) -> None:
    """`transcript show` on a terminal: role and time, the text wrapped under it, tool calls as
    `→ name(args)` with their results under them, summaries marked with what they cover."""
    from rich.padding import Padding
    from rich.text import Text

    rows = list(rows)
    if not rows:
        sys.stderr.write("no rows; 'durable transcript append NAME --role user TEXT' adds one\n")
        return
    out_console = console()
    shown_calls = {c["id"] for r in rows for c in (r.get("tool_calls") or [])}
    results = {}
    for r in rows:
        if r["role"] == "tool" and r.get("call_id") in shown_calls:
            results.setdefault(r["call_id"], []).append(r)
    styles = {"user": "bold green", "assistant": "bold blue", "system": "bold magenta", "developer": "bold magenta",
              "tool": "bold yellow"}
    for r in rows:
        if r["role"] == "tool" and r.get("call_id") in shown_calls:
            continue  # printed under its call
        head = Text(f"#{r['seq']} ", style="dim")
        if r["kind"] == "summary":
            covers = r.get("covers")
            head.append("summary", style="bold magenta")
            if covers:
                head.append(f" of #{covers[0]}–#{covers[1]}")
        else:
            head.append(r["role"], style=styles.get(r["role"], "bold"))
            if r["role"] == "tool":
                head.append(f" {r.get('name') or ''} ← {r.get('call_id')}".replace("  ", " "))
        if r.get("superseded_by") is not None:
            head.append(f" (superseded by #{r['superseded_by']})", style="dim")
        head.append(f" · {ago(r['created_at'])}", style="dim")
        out_console.print(head)
        if r.get("content"):
            out_console.print(Padding(Text(r["content"]), (0, 0, 0, 2), expand=False))
        for call in r.get("tool_calls") or []:
            out_console.print(Padding(Text(f"→ {call['name']}({call.get('arguments', '')})", style="cyan"), (0, 0, 0, 2), expand=False))
            for result in results.get(call["id"], []):
                out_console.print(Padding(Text(f"← {result['content']}"), (0, 0, 0, 4), expand=False))
    return


REPAIRS = {
    "secret": "nothing: restore secret.key from a backup",
    "secret_mismatch": "nothing: restore the matching secret.key",
    "index_corrupt": "rebuild index.db from the objects",
    "unfinished_purge": "finish the interrupted purge",
    "busy": "nothing: run it again when the object is free",
    "missing_index_row": "add the index row from the object",
    "index_mismatch": "rewrite the index row from the object",
    "orphan_index_row": "drop the index row",
    "half_made": "delete the half-made file",
    "corrupt": "move it into quarantine/",
    "mode": "set the mode",
    "stale_lock": "remove the lock file",
    "symlink": "nothing: replace the symlink by hand",
    "stray_file": "nothing: move it out of the data directory",
    "quarantined": "",
}


def doctor_report(doc: dict, objects: int) -> None:
    """`doctor` on a terminal: a summary line, then a table of problems and what --repair does (or did)."""
    from rich.table import Table

    problems = doc["problems"]
    index = [p for p in problems if p["kind"] == "index_corrupt"]
    index_state = "ok" if not index else ("rebuilt" if all(p["repaired"] for p in index) else "corrupt")
    left = sum(1 for p in problems if not p["repaired"])
    fixed = len(problems) - left
    line = f"{objects} object{'' if objects == 1 else 's'}, index.db: {index_state}, {left} problem{'' if left == 1 else 's'}"
    if fixed:
        line += f" ({fixed} repaired)"
    out_console = console()
    out_console.print(line)
    if not problems:
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("OBJECT", no_wrap=True)
    table.add_column("PROBLEM", no_wrap=True)
    table.add_column("DETAIL", overflow="fold", ratio=3)
    table.add_column("REPAIR", overflow="fold", ratio=2)
    for p in problems:
        what = REPAIRS.get(p["kind"], "")
        table.add_row(_short(p["id"]) or "-", p["kind"], p["detail"], ("done: " + what) if p["repaired"] and what else what)
    out_console.print(table)


def receipt_table(doc: dict) -> None:
    """A receipt on a terminal: one line per object (what happened, NAME, owner, id, detail)."""
    from rich.table import Table

    items = [(action, item) for action in ("deleted", "skipped", "changed") for item in doc[action]]
    if not items:
        sys.stderr.write("nothing would be deleted or changed\n" if doc.get("dry_run") else "nothing was deleted or changed\n")
        return
    verbs = {"deleted": "would delete", "changed": "would change"} if doc.get("dry_run") else {}
    table = Table(box=None, header_style="bold", pad_edge=False)
    for label in ("", "NAME", "OWNER", "ID", "DETAIL"):
        table.add_column(label, no_wrap=label != "DETAIL", overflow="fold")
    for action, item in items:
        table.add_row(verbs.get(action, action), item["name"] or "", item["owner"] or "", _short(item["id"]),
                      item.get("reason") or item.get("what") or "")
    console().print(table)


def preview(doc: dict, doing: str, limit: int = 10) -> None:
    """Before asking: how many objects DOING would touch, and which (up to LIMIT), on stderr."""
    items = sorted(doc["deleted"] + doc["changed"], key=lambda i: (i.get("owner") or "", i.get("name") or "", i["id"]))
    n = len(items)
    sys.stderr.write(f"{doing} {n} object{'' if n == 1 else 's'}:\n")
    for item in items[:limit]:
        owner = f" ({item['owner']})" if item.get("owner") else ""
        sys.stderr.write(f"  {item['name'] or item['id'][:12]}{owner}\n")
    if n > limit:
        sys.stderr.write(f"  … and {n - limit} more\n")
