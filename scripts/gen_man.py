#!/usr/bin/env python3
"""Generate man/*.1 (roff) from the CLI's own definitions: the typer app, walked through click.

    python scripts/gen_man.py            write man/
    python scripts/gen_man.py --check    exit 1 when man/ is stale (the drift test runs this)

click-man cannot read typer's vendored click, so this walks typer.main.get_command(app) itself.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import typer  # noqa: E402

from durable_cli import __version__  # noqa: E402
from durable_cli.cli import build_app  # noqa: E402
from durable_cli.errors import EXIT_CODES  # noqa: E402

FOOTER = f'"durable {__version__}" "durable manual"'

EXIT_TABLE = [
    (0, "\\(em", "success"),
    (1, "internal", "a bug"),
    (2, "invalid_input", "bad option or argument, bad duration, invalid UTF-8 on stdin, too large, empty content"),
    (3, "not_found", "no such object, prompt or request, or no access to it"),
    (4, "conflict", "transition not allowed in this state, queue full, request id reused with other content, object exists"),
    (5, "permission_denied", "a participant without the right role"),
    (6, "busy", "the object's lock was not obtained within the lock timeout; forget had to skip a busy object"),
    (7, "storage", "corrupt object or index, disk full, read-only, missing secret, symlinked path, newer schema"),
    (7, "misconfigured", "with \\-\\-remote: the Worker's configuration is wrong (the message names the variable)"),
    (7, "outcome_unknown", "with \\-\\-remote: a write whose outcome is unknown after the retries (retry it with the request id given)"),
    (8, "rate_limited", "durable limit hit refused"),
    (9, "timeout", "a \\-\\-wait ended with nothing (session next, elicit wait)"),
    (130, "\\(em", "interrupted by SIGINT; nothing changed"),
    (143, "\\(em", "interrupted by SIGTERM; nothing changed"),
]

ENVIRONMENT = [
    ("DURABLE_HOME", "Data directory (below \\-\\-home, above config defaults.home; default: the platform's user data directory, e.g. ~/.local/share/durable)."),
    ("DURABLE_USER", "Acting user (below \\-\\-as, above config defaults.user; default: the login name from getpass)."),
    ("DURABLE_TENANT", "Tenant for tenant-scoped objects (below \\-\\-tenant)."),
    ("DURABLE_LOCK_TIMEOUT", "How long to wait for an object's lock (below \\-\\-lock\\-timeout; default 10s)."),
    ("DURABLE_CONFIG", "Config file (default: the platform's user config directory, e.g. ~/.config/durable/config.toml)."),
    ("DURABLE_REMOTE", "URL of a durable Worker: run against Cloudflare Durable Objects (below \\-\\-remote, above config remote.url)."),
    ("DURABLE_TOKEN", "Token for the Worker (above config remote.token)."),
    ("DURABLE_DEBUG", "Set to 1 to let a bug's traceback through."),
    ("NO_COLOR", "Plain output even on a terminal."),
]

EXAMPLES = [
    ("Append to a transcript and read the context window as chat messages:",
     'durable transcript append chat \\-\\-role user "What changed?"\ndurable transcript recent chat \\-\\-tokens 4000 \\-\\-format messages | jq .'),
    ("A worker loop:",
     "while p=$(durable session next jobs \\-\\-wait 30s \\-\\-json); do\n  id=$(jq \\-r .id <<<\"$p\")\n  jq \\-r .content <<<\"$p\" | llm |\n    durable session finish jobs \"$id\" \\-\\-reply \\-\ndone"),
    ("Nightly retention from cron:", "durable purge \\-\\-older\\-than 90d \\-\\-yes \\-\\-json"),
]


def esc(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.split("\n"))


# An example is shown indented (12 columns in a command's page): a line longer than this wraps on an
# 80-column terminal, so fold() breaks it, as a shell reads it, with ` \\` at a space outside quotes.
EXAMPLE_WIDTH = 80 - 12


def _words(line: str) -> tuple:
    """LINE split at the spaces outside quotes (the shell's words, quotes kept), and its trailing `# comment`."""
    words, cur, quote = [], "", None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch == "#" and not cur:
            return words, line[i:]
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if cur:
                words.append(cur)
            cur = ""
            continue
        cur += ch
    return words + ([cur] if cur else []), ""


def _units(words: list) -> list:
    """Words kept on one line: an option with its value, `|` or `&&` with the command after it."""
    units, i = [], 0
    while i < len(words):
        unit = [words[i]]
        if words[i] in ("|", "&&", "||") and i + 1 < len(words):
            unit.append(words[i + 1])
            i += 1
        elif words[i].startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-") \
                and words[i + 1] not in ("|", "&&", "||") and not words[i + 1].endswith(";"):
            unit.append(words[i + 1])
            i += 1
        units.append(" ".join(unit))
        i += 1
    return units


def _pack(lead: str, items: list, width: int, first: str, more: str, end: str) -> list:
    lines, cur = [], lead + first + items[0]
    for item in items[1:]:
        if len(cur) + 1 + len(item) + len(end) > width:
            lines.append(cur + end)
            cur = lead + more + item
        else:
            cur += " " + item
    return lines + [cur]


def fold(example: str, width: int = EXAMPLE_WIDTH) -> str:
    """Each line of EXAMPLE within WIDTH where a shell can break it: a trailing `# comment` goes on lines of
    its own above the command; then the command's words are packed (an option with its value, a `|` with
    what follows), each continued line ending in ` \\` and indented 2."""
    out = []
    for line in example.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip())]
        words, comment = _words(line.lstrip())
        if comment:
            out += _pack(lead, comment.lstrip("# ").split(), width, "# ", "# ", "")
        if words:
            out += _pack(lead, _units(words), width, "", "  ", " \\")
    return "\n".join(out)


def paragraphs(text: str) -> str:
    out = []
    for block in (text or "").strip().split("\n\n"):
        block = " ".join(line.strip() for line in block.strip().splitlines())
        if block.startswith("Example:"):
            out.append(".PP\nExample:\n.PP\n.RS 4\n.nf\n" + esc(fold(block[len("Example:"):].strip())) + "\n.fi\n.RE")
        elif block:
            out.append(".PP\n" + esc(block))
    return "\n".join(out)


def param_synopsis(param) -> str:
    if param.param_type_name == "argument":
        name = param.metavar or param.name.upper()
        name = esc(name)
        return f"\\fI{name}\\fR" if param.required else f"[\\fI{name}\\fR]"
    opt = esc(param.opts[0])
    if param.is_flag:
        return f"[\\fB{opt}\\fR]"
    metavar = esc(param.metavar or param.name.upper())
    text = f"\\fB{opt}\\fR \\fI{metavar}\\fR"
    if getattr(param, "multiple", False):
        text += "..."
    return text if param.required else f"[{text}]"


def options_section(params) -> str:
    out = []
    for p in params:
        if p.param_type_name == "argument":
            head = f"\\fI{esc(p.metavar or p.name.upper())}\\fR"
        else:
            names = ", ".join(f"\\fB{esc(o)}\\fR" for o in p.opts + p.secondary_opts)
            head = names if p.is_flag else f"{names} \\fI{esc(p.metavar or p.name.upper())}\\fR"
        out.append(f".TP\n{head}\n{esc(p.help or '')}")
    return "\n".join(out)


def command_block(path: str, cmd) -> str:
    synopsis = " ".join([f"\\fBdurable {esc(path)}\\fR"] + [param_synopsis(p) for p in cmd.params])
    parts = [f".SS {esc(path)}", synopsis, paragraphs(cmd.help)]
    if cmd.params:
        parts.append(options_section(cmd.params))
    return "\n".join(p for p in parts if p)


def page_header(name: str, summary: str) -> str:
    title = esc(name.upper())
    return f'.TH {title} 1 "" {FOOTER}\n.SH NAME\n{esc(name)} \\- {esc(summary)}'


def group_page(name: str, cmd) -> str:

    summary = (cmd.help or "").strip().splitlines()[0].rstrip(".")
    lines = [page_header(f"durable-{name}", summary), ".SH SYNOPSIS"]
    subcommands = getattr(cmd, "commands", None)
    if subcommands:
        lines.append(f"\\fBdurable\\fR [\\fIGLOBAL OPTIONS\\fR] \\fB{esc(name)}\\fR \\fICOMMAND\\fR [\\fIARGS\\fR]...")
        lines.append(".SH DESCRIPTION")
        lines.append(paragraphs(cmd.help))
        lines.append(".SH COMMANDS")
        for sub_name, sub in subcommands.items():
            lines.append(command_block(f"{name} {sub_name}", sub))
    else:
        lines.append(" ".join([f"\\fBdurable\\fR [\\fIGLOBAL OPTIONS\\fR] \\fB{esc(name)}\\fR"] + [param_synopsis(p) for p in cmd.params]))
        lines.append(".SH DESCRIPTION")
        lines.append(paragraphs(cmd.help))
        if cmd.params:
            lines.append(".SH OPTIONS")
            lines.append(options_section(cmd.params))
    lines.append(".SH SEE ALSO\n.BR durable (1)")
    return "\n".join(lines) + "\n"


def main_page(root) -> str:
    lines = ["'\\\" t", page_header("durable", "keep AI-agent sessions on local disk, one single-writer SQLite object per session")]
    lines.append(".SH SYNOPSIS\n\\fBdurable\\fR [\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...")
    lines.append(".SH DESCRIPTION")
    lines.append(paragraphs(root.help))
    lines.append(".PP\n" + esc(
        "Every session is an object: one SQLite file, named by an HMAC of its scope, owner and NAME. "
        "Each run of durable wakes the object (takes its exclusive lock, opens it, fires due alarms), does one "
        "thing in one transaction, and lets it sleep (commit with fsync, update index.db, unlock). Nothing lives "
        "in memory between runs, so durable is correct across processes, crashes and shell scripts."))
    lines.append(".PP\n" + esc(
        "Scopes: a user object belongs to the acting user (--as); a tenant object (--tenant ORG) is shared by its "
        "participants and invisible to others; an ephemeral session gets a random NAME and a 24h TTL."))
    lines.append(".SH GLOBAL OPTIONS")
    lines.append(options_section(root.params))
    lines.append(".SH COMMANDS")
    for name, cmd in sorted(root.commands.items()):
        summary = (cmd.help or "").strip().splitlines()[0]
        lines.append(f".TP\n\\fB{esc(name)}\\fR\n{esc(summary)} See \\fBdurable\\-{esc(name)}\\fR(1).")
    lines.append(".SH OUTPUT")
    lines.append(".PP\n" + esc(
        "Piped output is plain: a created id or NAME on one line; records and listings as one tab-separated row per "
        "item (tab, newline and backslash escaped; null empty; arrays and objects as compact JSON). --json prints one "
        "JSON document, --jsonl one object per line. Tables and colour only on a terminal without NO_COLOR. Errors are "
        "one line on stderr, \"durable: error: ...\", or with --json a JSON object {\"error\": {\"code\", \"message\", \"exit_status\"}}."))
    lines.append(".SH ENVIRONMENT")
    for var, text in ENVIRONMENT:
        lines.append(f".TP\n\\fB{esc(var)}\\fR\n{text}")
    lines.append(".SH FILES")
    for path, text in [
        ("$DURABLE_HOME/secret.key", "The installation secret (32 random bytes, mode 0600). Without it, names cannot be resolved."),
        ("$DURABLE_HOME/objects/ID[:2]/ID.sqlite3", "One object (and its .lock sidecar, -wal and -shm files)."),
        ("$DURABLE_HOME/index.db", "The side index used by ls, purge, sweep and completion; rebuilt by doctor \\-\\-repair."),
        ("~/.config/durable/config.toml", "Settings (see durable\\-config(1))."),
    ]:
        lines.append(f".TP\n\\fI{esc(path)}\\fR\n{text}")
    lines.append(".SH EXIT STATUS\n.TS\nl l lx.\nStatus\tCode\tMeaning")
    for status, code, meaning in EXIT_TABLE:
        lines.append(f"{status}\t{code if code.startswith(chr(92)) else esc(code)}\tT{{\n{meaning}\nT}}")
    lines.append(".TE")
    lines.append(".SH EXAMPLES")
    for caption, text in EXAMPLES:
        lines.append(f".PP\n{esc(caption)}\n.PP\n.RS 4\n.nf\n{text}\n.fi\n.RE")
    lines.append(".SH SEE ALSO\n" + ",\n".join(f".BR durable\\-{esc(n)} (1)" for n in sorted(root.commands)))
    assert set(c for _, c, _ in EXIT_TABLE if not c.startswith("\\")) == set(EXIT_CODES)
    return "\n".join(lines) + "\n"


def pages() -> dict:
    root = typer.main.get_command(build_app(full=True))
    out = {"durable.1": main_page(root)}
    for name, cmd in root.commands.items():
        out[f"durable-{name}.1"] = group_page(name, cmd)
    return out


def main() -> int:
    from generated import sync

    return sync(os.path.join(ROOT, "man"), pages(), suffix=".1", what="man pages", script="gen_man.py")


if __name__ == "__main__":
    sys.exit(main())
