"""Output: the only module that imports rich, and only when stdout (or stderr, for progress) is a TTY.

Piped output is plain and stable: a created id or NAME bare on one line; records and listings as one
tab-separated row per item in the key order of SPEC §10 (\\t \\n \\\\ escaped, null empty, arrays and
objects as compact JSON). --json prints one document; --jsonl one object per line, streamed.
"""

import json
import os
import sys


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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


def out(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
    except BrokenPipeError:
        raise PipeClosed()


def document(doc, mode: str = "plain") -> None:
    """One record (or a receipt): JSON, a vertical table on a TTY, or one TSV row."""
    if mode in ("json", "jsonl"):
        out(_dumps(doc))
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
    for action in ("deleted", "skipped", "changed"):
        for item in doc[action]:
            detail = item.get("reason") or item.get("what") or ""
            verb = "would delete" if doc.get("dry_run") and action == "deleted" else action
            out("\t".join(field(x) for x in (verb, item["id"], item["owner"], item["name"], detail or None)))


def text_turns(turns) -> None:
    for t in turns:
        label = "summary" if t["kind"] == "summary" else t["role"]
        out(f"{label}: {t['content']}")


def error(message: str, code: str, exit_status: int, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(_dumps({"error": {"code": code, "message": message, "exit_status": exit_status}}) + "\n")
    else:
        sys.stderr.write(f"durable: error: {message}\n")
    sys.stderr.flush()


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
