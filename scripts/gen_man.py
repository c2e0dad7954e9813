#!/usr/bin/env python3
"""Generate man/*.1 (roff) from the CLI's own definitions: the typer app, walked through click.

    python scripts/gen_man.py            write man/
    python scripts/gen_man.py --check    exit 1 when man/ is stale (the drift test runs this)

click-man cannot read typer's vendored click, so this walks typer.main.get_command(app) itself.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cli_tree
from cli_tree import ROOT

from durable_cli import __version__
from durable_cli.errors import EXIT_CODES

FOOTER = f'"durable {__version__}" "durable manual"'


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
    for kind, block in cli_tree.paragraphs(text):
        if kind == "example":
            out.append(".PP\nExample:\n.PP\n.RS 4\n.nf\n" + esc(fold(block)) + "\n.fi\n.RE")
        else:
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
    lines = ["'\\\" t", page_header("durable", cli_tree.SUMMARY)]
    lines.append(".SH SYNOPSIS\n\\fBdurable\\fR [\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...")
    lines.append(".SH DESCRIPTION")
    lines.append(paragraphs(root.help))
    for text in cli_tree.DESCRIPTION:
        lines.append(".PP\n" + esc(text))
    lines.append(".SH GLOBAL OPTIONS")
    lines.append(".PP\n" + esc(
        "--home, --as, --tenant, --lock-timeout and --remote go before or after the command (durable ls --as bob "
        "is durable --as bob ls); given twice, the last one wins. Where a value is expected (an option's value, a "
        "TEXT or VALUE argument, anything after --) they are that value."))
    lines.append(options_section(root.params))
    lines.append(".SH COMMANDS")
    for name, cmd in sorted(root.commands.items()):
        lines.append(f".TP\n\\fB{esc(name)}\\fR\n{esc(cli_tree.summary(cmd))} See \\fBdurable\\-{esc(name)}\\fR(1).")
    lines.append(".SH OUTPUT")
    lines.append(".PP\n" + esc(cli_tree.OUTPUT))
    lines.append(".SH ENVIRONMENT")
    for var, text in cli_tree.ENVIRONMENT:
        lines.append(f".TP\n\\fB{esc(var)}\\fR\n{esc(text)}")
    lines.append(".SH FILES")
    for path, text in cli_tree.FILES:
        lines.append(f".TP\n\\fI{esc(path)}\\fR\n{esc(text)}")
    lines.append(".SH EXIT STATUS\n.TS\nl l lx.\nStatus\tCode\tMeaning")
    table = cli_tree.exit_table()
    for status, code, meaning in table:
        lines.append(f"{status}\t{esc(code) if code else chr(92) + '(em'}\tT{{\n{esc(meaning)}\nT}}")
    lines.append(".TE")
    lines.append(".SH EXAMPLES")
    for caption, text in cli_tree.EXAMPLES:
        lines.append(f".PP\n{esc(caption)}\n.PP\n.RS 4\n.nf\n{esc(text)}\n.fi\n.RE")
    lines.append(".SH SEE ALSO\n" + ",\n".join(f".BR durable\\-{esc(n)} (1)" for n in sorted(root.commands)))
    assert set(code for _, code, _ in table if code) == set(EXIT_CODES)
    return "\n".join(lines) + "\n"


def pages() -> dict:
    root = cli_tree.root()
    out = {"durable.1": main_page(root)}
    for name, cmd, _ in cli_tree.groups(root):
        out[f"durable-{name}.1"] = group_page(name, cmd)
    return out


def main() -> int:
    from generated import sync

    return sync(os.path.join(ROOT, "man"), pages(), suffix=".1", what="man pages", script="gen_man.py")


if __name__ == "__main__":
    sys.exit(main())
