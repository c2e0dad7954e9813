"""The CLI as the generators see it: the typer app walked through click, and the tables its pages share.

gen_man.py renders this as roff, gen_docs.py as Markdown; neither walks the parser nor keeps a table of its own.
Text here is plain (no roff, no Markdown): each renderer escapes it.
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import typer  # noqa: E402

from durable_cli.cli.app import build_app  # noqa: E402

SUMMARY = "keep AI-agent sessions on local disk, one single-writer SQLite object per session"

DESCRIPTION = [
    "Every session is an object: one SQLite file, named by an HMAC of its scope, owner and NAME. "
    "Each run of durable wakes the object (takes its exclusive lock, opens it, fires due alarms), does one "
    "thing in one transaction, and lets it sleep (commit with fsync, update index.db, unlock). Nothing lives "
    "in memory between runs, so durable is correct across processes, crashes and shell scripts.",
    "Scopes: a user object belongs to the acting user (--as); a tenant object (--tenant ORG) is shared by its "
    "participants and invisible to others; an ephemeral session gets a random NAME and a 24h TTL.",
]

OUTPUT = (
    "Piped output is plain: a created id or NAME on one line; records and listings as one tab-separated row per "
    "item (tab, newline and backslash escaped; null empty; arrays and objects as compact JSON). --json prints one "
    "JSON document, --jsonl one object per line. Tables and colour only on a terminal without NO_COLOR. Errors are "
    "one line on stderr, \"durable: error: ...\", or with --json a JSON object {\"error\": {\"code\", \"message\", \"exit_status\"}}.")

# what each error code of the contract means to a user; the statuses come from contract.json "errors"
MEANINGS = {
    "internal": "a bug",
    "invalid_input": "bad option or argument, bad duration, invalid UTF-8 on stdin, too large, empty content",
    "not_found": "no such object, prompt or request, or no access to it",
    "conflict": "transition not allowed in this state, queue full, request id reused with other content, object exists",
    "permission_denied": "a participant without the right role",
    "busy": "the object's lock was not obtained within the lock timeout; forget had to skip a busy object",
    "storage": "corrupt object or index, disk full, read-only, missing secret, symlinked path, newer schema",
    "misconfigured": "with --remote: the Worker's configuration is wrong (the message names the variable)",
    "outcome_unknown": "with --remote: a write whose outcome is unknown after the retries (retry it with the request id given)",
    "rate_limited": "durable limit hit refused",
    "timeout": "a --wait ended with nothing (session next, elicit wait)",
    "not_approved": "durable step --approval: the request does not approve this call (pending, unbound, another call or arguments, used by another step)",
    "refused": "durable step --approval: the request was declined or expired",
}
SUCCESS = (0, None, "success; also a confirmation answered no (nothing deleted, said on stderr)")
SIGNALS = [(75, None, "durable step: CMD exited 75 (or 128+N: was ended by signal N); nothing recorded, the step abandoned"),
           (130, None, "interrupted by SIGINT; nothing changed"), (143, None, "interrupted by SIGTERM; nothing changed")]

ENVIRONMENT = [
    ("DURABLE_HOME", "Data directory (below --home, above config defaults.home; default: the platform's user data directory, e.g. ~/.local/share/durable)."),
    ("DURABLE_USER", "Acting user (below --as, above config defaults.user; default: the login name from getpass)."),
    ("DURABLE_TENANT", "Tenant for tenant-scoped objects (below --tenant)."),
    ("DURABLE_LOCK_TIMEOUT", "How long to wait for an object's lock (below --lock-timeout; default 10s)."),
    ("DURABLE_CONFIG", "Config file (default: the platform's user config directory, e.g. ~/.config/durable/config.toml)."),
    ("DURABLE_REMOTE", "URL of a durable Worker: run against Cloudflare Durable Objects (below --remote, above config remote.url)."),
    ("DURABLE_TOKEN", "Token for the Worker (above config remote.token)."),
    ("DURABLE_DEBUG", "Set to 1 to let a bug's traceback through."),
    ("NO_COLOR", "Plain output even on a terminal."),
]

FILES = [
    ("$DURABLE_HOME/secret.key", "The installation secret (32 random bytes, mode 0600). Without it, names cannot be resolved."),
    ("$DURABLE_HOME/objects/ID[:2]/ID.sqlite3", "One object (and its .lock sidecar, -wal and -shm files)."),
    ("$DURABLE_HOME/index.db", "The side index used by ls, purge, sweep and completion; rebuilt by doctor --repair."),
    ("~/.config/durable/config.toml", "Settings (see durable-config(1))."),
]

EXAMPLES = [
    ("Append to a transcript and read the context window as chat messages:",
     'durable transcript append chat --role user "What changed?"\ndurable transcript recent chat --tokens 4000 --format messages | jq .'),
    ("A worker loop:",
     "while p=$(durable session next jobs --wait 30s --json); do\n  id=$(jq -r .id <<<\"$p\")\n  jq -r .content <<<\"$p\" | llm |\n    durable session finish jobs \"$id\" --reply -\ndone"),
    ("Nightly retention from cron:", "durable purge --older-than 90d --yes --json"),
]


def contract() -> dict:
    with open(os.path.join(ROOT, "durable_cli", "contract", "contract.json"), encoding="utf-8") as f:
        return json.load(f)


def exit_table() -> list:
    """(status, code or None, meaning), in status order: the contract's codes with their meanings, then the signals."""
    errors = contract()["errors"]
    assert set(errors) == set(MEANINGS), "every error code of contract.json has its meaning in scripts/cli_tree.py"
    return [SUCCESS] + [(e["exit"], code, MEANINGS[code]) for code, e in errors.items()] + SIGNALS


def root():
    """The whole CLI (every command loaded) as a click group."""
    return typer.main.get_command(build_app(full=True))


def groups(top):
    """(name, command, {sub name: subcommand} or None) for each top-level command, in the parser's order."""
    for name, cmd in top.commands.items():
        yield name, cmd, getattr(cmd, "commands", None) or None


def summary(cmd) -> str:
    return (cmd.help or "").strip().splitlines()[0]


def paragraphs(text):
    """The help text as (kind, text) blocks: ("text", joined lines) or ("example", the command)."""
    for block in (text or "").strip().split("\n\n"):
        block = " ".join(line.strip() for line in block.strip().splitlines())
        if block.startswith("Example:"):
            yield "example", block[len("Example:"):].strip()
        elif block:
            yield "text", block


def is_argument(param) -> bool:
    return param.param_type_name == "argument"


def metavar(param) -> str:
    return param.metavar or param.name.upper()


def option_names(param) -> list:
    return param.opts + param.secondary_opts
