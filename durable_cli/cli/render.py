"""Output: the only module that imports rich, and only when stdout (or stderr, for progress) is a TTY.

Piped output is plain and stable: a created id or NAME bare on one line; records and listings as one
tab-separated row per item in the key order of docs/reference/json.md §10 (\\t \\n \\\\ escaped, null empty, arrays and
objects as compact JSON). --json prints one document; --jsonl one object per line, streamed.
"""

import json
import os
import sys
from typing import Any


def _dumps(value) -> str:
    """Compact strict JSON (docs/reference/transcript.md §6: no NaN or Infinity in any output, even for a value stored before durable
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
    """Tables for people: stdout is a terminal. NO_COLOR removes colour, not the layout (docs/reference/output.md §4)."""
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
        raise PipeClosed() from None
    except OSError as e:
        raise OutputFailed(e) from e


def flush() -> None:
    """Push what was printed to the reader now (a follower's rows must not wait in a pipe's buffer)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise PipeClosed() from None


def document(doc, mode: str = "plain") -> None:
    """One record (or a receipt): JSON, a vertical table on a TTY, or one TSV row."""
    if mode in ("json", "jsonl"):
        out(_dumps(doc))
    elif isinstance(doc, dict) and pretty() and {"deleted", "skipped", "changed"} <= doc.keys():
        receipt_table(doc)  # a receipt printed on the way to a non-zero exit
    elif isinstance(doc, dict) and pretty():
        from rich.table import Table
        from rich.text import Text

        table = Table(show_header=False, box=None)
        table.add_column(style="bold cyan")
        table.add_column()
        for k, v in doc.items():  # Text: user text is never read as rich markup
            table.add_row(k, Text(_record_cell(k, v)))
        console().print(table)
    elif isinstance(doc, dict):
        out(tsv(doc))
    else:
        out(field(doc))


def _record_cell(key, value) -> str:
    """A value of a record as a person reads it on a terminal: yes/no, a time relative with its exact value beside it
    (a record is where one copies it from), nested JSON as JSON, text whole."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return _dumps(value)
    if (key.endswith("_at") or key == "at") and _is_time(value):
        return f"{ago(value)} ({value})"
    return str(value)


def listing(items, mode: str = "plain", columns=None, table=None) -> None:
    """Many records: a JSON array, JSON lines (streamed), a rich table on a TTY (TABLE(items) when given), or
    TSV rows."""
    if mode == "json":
        out(_dumps(list(items)))
        return
    if mode == "jsonl":
        for item in items:
            out(_dumps(item))
        return
    if pretty():
        items = list(items)
        if not items:
            return
        if table is not None:
            table(items)
            return
        keys = columns or list(items[0].keys())
        cols = []
        for rank, k in enumerate(keys):
            hex_ids = all(_is_object_id(item.get(k)) for item in items)
            free = k in FREE_TEXT or isinstance(items[0].get(k), (dict, list))
            cols.append(Col(k.upper().replace("_", " "), rank + (100 if hex_ids else 0), flex=free, min=20, wrap=free,
                            right=all(isinstance(item.get(k), (int, float)) and not isinstance(item.get(k), bool)
                                      for item in items)))
        cells = [[_cell(k, item.get(k)) for k in keys] for item in items]
        fitted(cols, cells)
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


def text_lines(turns) -> list:
    """`transcript recent`'s text window (docs/reference/transcript.md §6), as (indent, line) pairs: each row as `role: content`, a
    tool row with the call it answers (`tool NAME ← CALL_ID: content`), each tool call of an assistant row on
    a line of its own under it (`→ name(arguments)`), as `transcript show` shows them."""
    lines = []
    for t in turns:
        if t["kind"] == "summary":
            label = "summary"
        elif t["role"] == "tool":
            label = " ".join(x for x in ("tool", t.get("name"), f"← {t.get('call_id')}" if t.get("call_id") else None) if x)
        else:
            label = t["role"]
        content = t.get("content") or ""
        lines.append((0, f"{label}: {content}" if content else f"{label}:"))
        for call in t.get("tool_calls") or []:
            arguments = call.get("arguments")
            lines.append((2, f"→ {call['name']}({'' if arguments is None else arguments})"))
    return lines


def text_turns(turns) -> None:
    lines = text_lines(turns)
    if not pretty():
        for indent, line in lines:
            out(" " * indent + line)
        return
    from rich.padding import Padding
    from rich.text import Text

    out_console = console()
    for indent, line in lines:  # rich wraps at word boundaries, under the line's own indent
        out_console.print(Padding(Text(line), (0, 0, 0, indent)) if indent else Text(line))


last_code = None  # the §4 code of this run's last error (an operation span's error.type, docs/reference/traces.md §15.6)


def error(message: str, code: str, exit_status: int, as_json: bool, extra=None) -> None:
    """The one-line error of docs/reference/output.md §4; EXTRA: fields the JSON form adds (`reason`, `request` of a step's approval)."""
    global last_code
    last_code = code
    if sys.stderr is None:
        return
    try:
        if as_json:
            sys.stderr.write(_dumps({"error": {"code": code, "message": message, "exit_status": exit_status, **(extra or {})}}) + "\n")
        else:
            sys.stderr.write(f"durable: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or full: the exit status still tells
        pass


class Progress:
    """A rich progress bar on stderr, only when stderr is a TTY; otherwise it does nothing."""

    def __init__(self, label: str):
        self.label = label
        self.bar: Any = None  # a rich Progress while a bar is shown (a TTY only)

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


EMPTY_RECEIPT = {"deleted": [], "skipped": [], "changed": [], "dry_run": False}


def declined(empty: dict, json_out: bool) -> None:
    """A confirmation answered no (docs/reference/output.md §4): exit 0, nothing deleted, said on stderr; with --json the
    command's document with nothing in it on stdout."""
    sys.stderr.write("nothing was deleted\n")
    if json_out:
        out(_dumps(empty))


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


class Col:
    """A column of a table for people: its LABEL, its RANK (0 is read first; at a narrow width the
    highest ranks are left out), FLEX (may be cut to fit, with an ellipsis; other columns keep their
    width), RIGHT (numbers), MIN (a flexible column is never cut below this), SHAPE (text, width) -> text
    (how a cell is cut, e.g. around a search match)."""

    def __init__(self, label, rank, *, flex=False, right=False, min=10, shape=None, wrap=False):  # noqa: A002 - a column's minimum width
        self.label, self.rank, self.flex, self.right, self.min, self.shape = label, rank, flex, right, min, shape
        self.wrap = wrap  # a flexible column of free text wrapped at words rather than cut


def layout(cols, cells, width):
    """Which columns fit WIDTH and how wide each is: [(index, width)] in the columns' order. Every column
    but the flexible ones keeps its full width; columns are left out from the highest rank while even
    the cut-down table is too wide; the room left is given to the flexible columns in rank order. Only
    free text is flexible (docs/reference/output.md §4): a NAME, id or key keeps its width."""
    from rich.cells import cell_len

    natural = [max([cell_len(c.label)] + [cell_len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    least = [min(natural[i], max(c.min, cell_len(c.label))) if c.flex else natural[i] for i, c in enumerate(cols)]
    keep = list(range(len(cols)))

    def needed(indexes):
        return sum(least[i] for i in indexes) + 2 * (len(indexes) - 1)

    while len(keep) > 1 and needed(keep) > width:
        keep.remove(max(keep, key=lambda i: (cols[i].rank, i)))
    widths = {i: least[i] for i in keep}
    room = width - needed(keep)
    # the room left goes to the flexible columns, the first read first: each first up to a third of the
    # width (a NAME is kept whole when it can be, and a very long one does not starve TITLE), then what
    # is still left, again the first read first
    flexible = sorted((i for i in keep if cols[i].flex), key=lambda i: (cols[i].rank, i))
    for cap in (max(width // 3, 1), None):
        for i in flexible:
            want = natural[i] if cap is None else min(natural[i], max(cap, least[i]))
            more = max(0, min(room, want - widths[i]))
            widths[i] += more
            room -= more
    if room < 0:  # one column alone wider than the screen
        widths[keep[0]] = max(1, widths[keep[0]] + room)
    return [(i, widths[i]) for i in keep]


def fitted(cols, cells, out_console=None) -> None:
    """A table for people: never wider than the terminal, no cell ever wrapped (cut with an ellipsis),
    user text shown as it is (never read as rich markup)."""
    from rich.table import Table
    from rich.text import Text

    out_console = out_console or console()
    shown = layout(cols, cells, out_console.width)
    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    for i, w in shown:
        table.add_column(cols[i].label, justify="right" if cols[i].right else "left", width=w, min_width=w, max_width=w,
                         no_wrap=not cols[i].wrap, overflow="fold" if cols[i].wrap else "ellipsis")
    for row in cells:
        table.add_row(*[Text(row[i], overflow="fold") if cols[i].wrap else
                        Text(cols[i].shape(row[i], w) if cols[i].shape else row[i], no_wrap=True, overflow="ellipsis")
                        for i, w in shown])
    out_console.print(table)


def _is_object_id(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


_RFC3339 = None


def _is_time(value) -> bool:
    global _RFC3339
    if _RFC3339 is None:
        import re

        _RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
    return isinstance(value, str) and _RFC3339.fullmatch(value) is not None


def _cell(key, value) -> str:
    """A value as a person reads it in a table: times relative, object ids short, true/false as yes/no,
    a list of words as words, one line."""
    if (key.endswith("_at") or key == "at") and isinstance(value, str) or _is_time(value):
        return ago(value)
    if _is_object_id(value):
        return _short(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return field(value).replace("\\n", " ").replace("\\t", " ")


# free text in a table (docs/reference/output.md §4): given the room the other columns leave, wrapped at words
FREE_TEXT = ("title", "prompt", "question", "value", "detail", "reason", "error", "comment", "content", "reply",
             "text", "snippet", "answer")


# `ls` on a terminal: (key, label, rank, flexible); --wide adds the rest, the short id first
SESSION_COLUMNS = (("name", "NAME", 0, True), ("status", "STATUS", 1, False), ("title", "TITLE", 2, True),
                   ("turns", "TURNS", 4, False), ("tokens", "TOKENS", 5, False), ("last_active_at", "LAST ACTIVE", 3, False))
WIDE_COLUMNS = (("id", "ID", 3), ("scope", "SCOPE", 6), ("owner", "OWNER", 7), ("external_id", "EXTERNAL ID", 8),
                ("created_at", "CREATED", 9), ("updated_at", "UPDATED", 10), ("expires_at", "EXPIRES", 11))


def session_table(rows, *, wide: bool = False) -> None:
    """`ls` on a terminal: NAME, STATUS, TITLE, TURNS, TOKENS, LAST ACTIVE (docs/reference/retention.md §7's order), fitted to the width (--wide:
    every field, the short id among the first). At a narrow width the last read are left out first."""
    if not rows:
        sys.stderr.write("no sessions; 'durable session create NAME' starts one (--all shows archived ones)\n")
        return
    spec = [(k, label, rank, flex) for k, label, rank, flex in SESSION_COLUMNS]
    if wide:
        known = {k for k, *_ in spec} | {k for k, *_ in WIDE_COLUMNS}
        spec += [(k, label, rank, k == "external_id") for k, label, rank in WIDE_COLUMNS if k in rows[0]]
        spec += [(k, k.upper().replace("_", " "), 20 + n, True) for n, k in enumerate(rows[0]) if k not in known]
    if wide:  # asked for: the short id is read right after NAME and STATUS (TITLE gives way first)
        spec = [(k, label, 1.5 if k == "id" else rank, flex) for k, label, rank, flex in spec]
    order = [k for k, *_ in SESSION_COLUMNS[:3]] + (["id"] if wide else []) + [k for k, *_ in SESSION_COLUMNS[3:]]
    spec.sort(key=lambda c: order.index(c[0]) if c[0] in order else len(order) + c[2])
    cols = [Col(label, rank, flex=flex and k != "name", right=k in ("turns", "tokens"), min=20) for k, label, rank, flex in spec]
    fitted(cols, [[_cell(k, row.get(k)) for k, *_ in spec] for row in rows])


def usage_table(doc: dict, by: str) -> None:
    """`usage` on a terminal: one line per group (the session's NAME, the day or the model first, no
    ids), then the total; the counts keep their width, the cost first among them."""
    key_label = {"session": "NAME", "day": "DAY", "model": "MODEL"}[by]
    spec = [("key", key_label, 0, False), ("cost_usd", "COST USD", 1, False), ("tokens", "TOKENS", 2, False),
            ("input_tokens", "INPUT", 3, False), ("output_tokens", "OUTPUT", 4, False), ("turns", "TURNS", 5, False),
            ("sessions", "SESSIONS", 7, False)]
    if by == "session":
        spec.insert(1, ("owner", "OWNER", 6, False))  # a NAME or user is never cut (docs/reference/output.md §4)
    order = ["key", "owner", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "sessions"]
    spec.sort(key=lambda c: order.index(c[0]))
    cells = []
    for group in doc["groups"] + [dict(doc["total"], key="total", name="total", owner="")]:
        row = []
        for k, *_ in spec:
            value = group.get("name") if (k == "key" and by == "session") else group.get(k)
            if k == "key" and value is None:
                value = "(none)"  # rows that name no model
            row.append(_money(value) if k == "cost_usd" else ("" if value is None else str(value)))
        cells.append(row)
    fitted([Col(label, rank, flex=flex, right=k not in ("key", "owner")) for k, label, rank, flex in spec], cells)
    if doc["total"].get("priced_turns"):  # docs/reference/retention.md §7: a computed cost says how old its prices are
        dates = ", ".join(dict.fromkeys(s["as_of"] for s in doc.get("prices", []) if s.get("as_of"))) or "an undated table"
        out(f"computed from prices as of {dates}; prices drift")


def _when_request(r) -> str:
    """An elicit request's one time: when it was answered, else when it expires, else when it was asked."""
    if r.get("answered_at"):
        return f"answered {ago(r['answered_at'])}"
    if r.get("expires_at") and r.get("status") == "pending":
        return f"expires {ago(r['expires_at'])}"
    return f"asked {ago(r.get('created_at'))}"


def elicit_table(requests) -> None:
    """`elicit list` on a terminal: ID, STATUS, the question (wrapped), the choices as words, the answer with
    who gave it and their comment, and one time."""
    cols = [Col("ID", 0, right=True), Col("STATUS", 1), Col("QUESTION", 2, flex=True, wrap=True, min=20),
            Col("CHOICES", 3, flex=True, wrap=True, min=12), Col("ANSWER", 4, flex=True, wrap=True, min=12), Col("WHEN", 5)]
    cells = []
    for r in requests:
        answer = r.get("answer") or ""
        if answer and r.get("answered_by"):
            answer += f" ({r['answered_by']})"
        if r.get("comment"):
            answer += f": {r['comment']}"
        question = r.get("prompt")
        if r.get("call_id") is not None:  # the call a bound request approves, shown to whoever answers (docs/reference/hitl.md §8)
            question = f"{question} [call {r['call_id']}: {_dumps(r.get('args'))}]"
        cells.append([str(r["id"]), r["status"], _cell("prompt", question), ", ".join(r.get("choices") or []),
                      _cell("answer", answer), _when_request(r)])
    fitted(cols, cells)


def _event_detail(data) -> str:
    """An event's data as words: `key: value` pairs, text (an error) as it is."""
    if not isinstance(data, dict):
        return "" if data is None else _cell("data", data)
    return ", ".join(f"{k.replace('_', ' ')}: {v if isinstance(v, str) else _dumps(v)}" for k, v in data.items())


def events_table(events) -> None:
    """`session events` on a terminal: SEQ, TYPE, ACTOR, when (relative), and what happened (wrapped: a
    failure's reason is read whole)."""
    cols = [Col("SEQ", 0, right=True), Col("TYPE", 1), Col("ACTOR", 3), Col("WHEN", 4),
            Col("DETAIL", 2, flex=True, wrap=True, min=20)]
    fitted(cols, [[str(e["seq"]), e["type"], e.get("actor") or "", ago(e.get("at")),
                   _event_detail(e.get("data")).replace("\n", " ")] for e in events])


def memory_table(facts) -> None:
    """`memory list` on a terminal: KEY (never cut), VALUE (wrapped), SOURCE, CONFIRMED, SET, EXPIRES."""
    cols = [Col("KEY", 0), Col("VALUE", 1, flex=True, wrap=True, min=20), Col("SOURCE", 3), Col("CONFIRMED", 2),
            Col("SET", 4)]
    expiring = any(f.get("expires_at") for f in facts)
    if expiring:
        cols.append(Col("EXPIRES", 5))
    cells = []
    for f in facts:
        row = [f["key"], _cell("value", f.get("value")), f.get("source") or "", "yes" if f.get("confirmed") else "no",
               ago(f.get("created_at"))]
        cells.append(row + ([ago(f.get("expires_at"))] if expiring else []))
    fitted(cols, cells)


def config_table(values: dict, origins: dict | None = None) -> None:
    """`config list` on a terminal: KEY, VALUE (wrapped), and ORIGIN with --origin."""
    cols = [Col("KEY", 0), Col("VALUE", 1, flex=True, wrap=True, min=20)] + ([Col("ORIGIN", 2)] if origins else [])
    cells = [[k, "" if v is None else field(v)] + ([origins[k]] if origins else []) for k, v in values.items()]
    fitted(cols, cells)


def _money(value) -> str:
    if value is None:
        return ""
    return f"{value:.4f}".rstrip("0").rstrip(".") if value else "0"


def around_match(text: str, width: int) -> str:
    """A search snippet cut to WIDTH so that its first [match] shows: cut before it (…) and after it (…)."""
    from rich.cells import cell_len

    if cell_len(text) <= width or width < 3:
        return text
    start = text.find("[")
    end = text.find("]", start) + 1 if start >= 0 else 0
    if start <= 0 or end <= 0:
        return text
    # keep about a third of the room before the match, the rest after it
    lead = max(0, min(start, (width - (end - start)) // 3))
    if start - lead <= 1:
        return text
    cut = "…" + text[start - lead:]
    return cut


def search_table(hits) -> None:
    """`search` on a terminal: NAME, the row (#seq), ROLE, WHEN (relative), and the snippet with its
    [match] kept in view; "no matches" when there are none."""
    hits = list(hits)
    if not hits:
        sys.stderr.write("no matches\n")
        return
    cols = [Col("NAME", 1, flex=True, min=12), Col("ROW", 3, right=True), Col("ROLE", 4), Col("WHEN", 2),
            Col("MATCH", 0, flex=True, min=24, shape=around_match)]  # the match is what was looked for
    fitted(cols, [[h.get("name") or _short(h.get("id")), f"#{h['seq']}", h.get("role") or "", ago(h.get("created_at")),
                   field(h.get("snippet")).replace("\\n", " ")] for h in hits])


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
    if doc.get("tags"):
        rows.append(("tags", " ".join(f"{k}={v}" for k, v in doc["tags"].items())))
    if doc.get("scope") != "user":
        rows.append(("scope", doc["scope"] + ("" if doc.get("scope") == "session" else f" {doc['owner']}")))
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for k, v in rows:
        table.add_row(k, Text(v))
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
    results: dict = {}
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
    "stale_sidecar": "remove the file",
    "search_leftover": "finish the erasure in the search index",
    "symlink": "nothing: replace the symlink by hand",
    "stray_file": "nothing: move it out of the data directory",
    "quarantined": "",
}


def doctor_report(doc: dict, objects: int) -> None:
    """`doctor` on a terminal: a summary line, then a table of problems and what --repair does (or did)."""
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
    cols = [Col("OBJECT", 0), Col("PROBLEM", 1), Col("DETAIL", 2, flex=True, min=20), Col("REPAIR", 3, flex=True, min=16)]
    cells = []
    for p in problems:
        what = REPAIRS.get(p["kind"], "")
        cells.append([_short(p["id"]) or "-", p["kind"], field(p["detail"]), ("done: " + what) if p["repaired"] and what else what])
    fitted(cols, cells, out_console)


def receipt_table(doc: dict) -> None:
    """A receipt on a terminal: one line per object (what happened, NAME, owner, id, detail)."""
    items = [(action, item) for action in ("deleted", "skipped", "changed") for item in doc[action]]
    if not items:
        sys.stderr.write("nothing would be deleted or changed\n" if doc.get("dry_run") else "nothing was deleted or changed\n")
        return
    verbs = {"deleted": "would delete", "changed": "would change"} if doc.get("dry_run") else {}
    cols = [Col("", 0), Col("NAME", 1, flex=True, min=12), Col("OWNER", 3, flex=True), Col("ID", 4),
            Col("DETAIL", 2, flex=True, min=16)]
    fitted(cols, [[verbs.get(action, action), item["name"] or "", item["owner"] or "", _short(item["id"]),
                   field(item.get("reason") or item.get("what") or "")] for action, item in items])


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
