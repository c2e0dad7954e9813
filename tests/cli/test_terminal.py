"""What a person sees: help text, terminal views, previews and receipts; what a script sees stays as it was."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.both_backends

BIN = os.path.dirname(sys.executable)
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def env(**extra):
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    return dict(base, PATH=BIN + os.pathsep + os.environ["PATH"], TERM="xterm", **extra)


def on_terminal(command, **extra):
    """Run COMMAND with stdin, stdout and stderr on a pseudo-terminal (script); the screen, without colour."""
    r = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, env=env(**extra), timeout=60)
    return r.returncode, ANSI.sub("", r.stdout).replace("\r", "")


def test_usage_lines_name_arguments_and_options_show_their_choices():
    import typer

    from durable_cli.cli.app import build_app
    from tests.helpers import leaf_commands

    root = typer.main.get_command(build_app(full=True))  # once: making a context does not change it
    for path, cmd in leaf_commands():
        ctx = root.make_context("durable", list(path) + ["--help"], resilient_parsing=True)
        usage = cmd.get_usage(ctx)
        assert not re.search(r"[{}]", usage), usage
        text = cmd.get_help(ctx)
        assert "<str>" not in text and "<int>" not in text, (path, text)
    choices = {
        ("transcript", "append"): "--role [system|developer|user|assistant|tool]",
        ("transcript", "recent"): "--format [text|json|jsonl|messages|responses|anthropic|gemini]",
        ("session", "next"): "--format [messages|responses|anthropic|gemini|json]",
        ("session", "invite"): "--role [owner|member]",
        ("ls",): "--status [created|active|completed|failed|cancelled|archived]",
        ("purge",): "--status [created|active|completed|failed|cancelled|archived]",
        ("memory", "set"): "--source [user|model|external]",
        ("transcript", "summarize"): "--input [text|jsonl]",
    }
    for path, shown in choices.items():
        r = subprocess.run([sys.executable, "-m", "durable_cli", *path, "--help"], capture_output=True, text=True, env=env())
        assert shown in r.stdout, (path, r.stdout)
    r = subprocess.run([sys.executable, "-m", "durable_cli", "session", "prompt", "--help"], capture_output=True, text=True, env=env())
    assert r.stdout.startswith("Usage: durable session prompt [OPTIONS] NAME TEXT|-\n")


@pytest.mark.local_only("freezes the clock (freezegun/faketime), which cannot reach the Worker's clock")
def test_ttl_help_says_what_reschedules_it_and_that_is_what_happens(durable):
    from freezegun import freeze_time

    r = subprocess.run([sys.executable, "-m", "durable_cli", "ttl", "--help"], capture_output=True, text=True, env=env())
    said = " ".join(r.stdout.split())
    assert "Every activity reschedules it" in said and "a title, a pop" in said and "do not" in said
    assert "every write" not in said
    with freeze_time("2026-01-01 00:00:00"):
        durable("transcript", "append", "t", "--role", "user", "hi")
        first = durable("ttl", "t", "7d", "--json").json()["expires_at"]
    with freeze_time("2026-01-02 00:00:00"):
        durable("session", "invite", "t", "bob")  # not activity (and refused: a user-scoped session)
        durable("transcript", "prune", "t", "--older-than", "30d")  # not activity
        assert durable("ttl", "t", "--json").json()["expires_at"] == first
        durable("session", "title", "t", "A title")  # activity (docs/reference/storage.md §3)
        assert durable("ttl", "t", "--json").json()["expires_at"] == "2026-01-09T00:00:00.000Z"
    with freeze_time("2026-01-03 00:00:00"):
        durable("transcript", "redact", "t", "1")  # activity (docs/reference/storage.md §3)
        assert durable("ttl", "t", "--json").json()["expires_at"] == "2026-01-10T00:00:00.000Z"


def test_archive_help_does_not_say_finished():
    r = subprocess.run([sys.executable, "-m", "durable_cli", "session", "archive", "--help"], capture_output=True, text=True, env=env())
    assert "finished" not in r.stdout and "any status but cancelled" in " ".join(r.stdout.split())


def test_json_with_jsonl_is_exit_2_before_the_name_is_looked_up(durable):
    from tests.helpers import leaf_commands

    both = [path for path, cmd in leaf_commands()
            if {"--json", "--jsonl"} <= {o for p in cmd.params for o in p.opts}]
    assert len(both) >= 8
    for path in both:
        needs_name = path[0] in ("session", "transcript", "elicit", "search")  # search: the QUERY
        for flags in (["--json", "--jsonl"], ["--jsonl", "--json"]):
            r = durable(*path, *(["never-made"] if needs_name else []), *flags)
            assert r.status == 2 and r.out == "" and '"invalid_input"' in r.err, (path, flags, r)
    r = durable("transcript", "recent", "never-made", "--format", "jsonl", "--json")
    assert r.status == 2
    assert durable("ls", "--jsonl").status == 0 and durable("ls", "--json").status == 0
    assert not os.path.exists(os.path.join(os.environ["DURABLE_HOME"], "objects"))


def test_not_found_has_one_hint_whatever_the_scope(durable):
    durable("--as", "bob", "--tenant", "acme", "session", "create", "hidden")
    user_scope = durable("session", "show", "nope").err
    missing = durable("--tenant", "acme", "session", "show", "nope").err
    invisible = durable("--tenant", "acme", "session", "show", "hidden").err
    hint = "; 'durable ls' lists your sessions (a tenant's sessions need --tenant ORG)\n"
    assert user_scope.endswith(hint) and missing.endswith(hint)
    assert invisible == missing.replace("nope", "hidden")


def test_archive_and_unarchive_complete_only_what_they_can_act_on(durable):
    durable("session", "create", "a-draft")
    durable("session", "create", "a-shelved")
    durable("session", "archive", "a-shelved")
    durable("session", "create", "a-dropped")
    durable("session", "cancel", "a-dropped")

    def complete(command):
        r = subprocess.run(["bash", "-c", f'source completions/durable.bash; COMP_WORDS=(durable session {command} a); COMP_CWORD=3; '
                            '_durable_completion durable; echo "${COMPREPLY[@]}"'], capture_output=True, text=True, env=env(), cwd=ROOT)
        return sorted(r.stdout.split())

    assert complete("archive") == ["a-draft"]
    assert complete("unarchive") == ["a-shelved"]
    assert complete("show") == ["a-draft", "a-dropped", "a-shelved"]


def test_forget_dry_run_lists_what_would_go_and_changes_nothing(durable):
    durable("--as", "bob", "session", "create", "bobs")
    durable("--as", "bob", "--tenant", "acme", "session", "create", "shared")
    durable("--as", "bob", "--tenant", "acme", "session", "invite", "shared", "alice")
    durable("--as", "bob", "--tenant", "acme", "session", "create", "alone")
    r = durable("forget", "bob", "--dry-run", "--json")
    assert r.status == 0
    doc = r.json()
    assert doc["dry_run"] is True
    assert sorted(d["name"] for d in doc["deleted"]) == ["alone", "bobs"]
    assert [(c["name"], c["what"]) for c in doc["changed"]] == [("shared", "participant removed")]
    piped = durable("forget", "bob", "--dry-run").out.splitlines()
    assert sorted(line.split("\t")[0] for line in piped) == ["would change", "would delete", "would delete"]
    assert durable("--as", "bob", "session", "show", "bobs").status == 0
    assert durable("--as", "bob", "--tenant", "acme", "session", "show", "alone").status == 0
    done = durable("forget", "bob", "--yes", "--json").json()
    assert sorted(d["name"] for d in done["deleted"]) == ["alone", "bobs"] and len(done["changed"]) == 1


def test_forget_of_nobody_says_nothing_matched(durable):
    r = durable("forget", "nobody", "--yes")
    assert r.status == 0 and r.out == ""
    assert r.err == "durable: nothing matched user 'nobody': no session, memory or participation; nothing was erased\n"
    r = durable("forget", "nobody", "--yes", "--json")
    assert r.status == 0 and r.json() == {"deleted": [], "skipped": [], "changed": [], "dry_run": False}


@pytest.mark.local_only("freezes the clock (freezegun/faketime), which cannot reach the Worker's clock")
def test_receipts_are_a_table_on_a_terminal_and_tsv_when_piped(durable):
    from freezegun import freeze_time

    with freeze_time("2020-01-01"):
        durable("session", "create", "ancient")
    status, screen = on_terminal("durable purge --older-than 30d --yes", COLUMNS="100")
    assert status == 0
    lines = [line for line in screen.splitlines() if line.strip() and "purge" not in line]
    assert lines[0].split() == ["NAME", "OWNER", "ID", "DETAIL"]
    assert lines[1].split()[:3] == ["deleted", "ancient", "alice"]
    status, screen = on_terminal("durable sweep")
    assert status == 0 and "nothing was deleted or changed" in screen
    durable("session", "create", "gone")
    piped = durable("delete", "gone", "--yes")
    assert piped.out.startswith("deleted\t") and piped.out.count("\t") == 4


def test_purge_on_a_terminal_with_nothing_to_do_does_not_ask(durable):
    durable("session", "create", "fresh")
    status, screen = on_terminal("durable purge --older-than 30d")
    assert status == 0 and "nothing to delete" in screen and "[y/N]" not in screen


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_on_a_terminal_summarizes_and_piped_stays_silent(durable):
    durable("session", "create", "one")
    durable("session", "create", "two")
    status, screen = on_terminal("durable doctor", NO_COLOR="1")
    assert status == 0 and screen.strip().splitlines()[-1] == "2 objects, index.db: ok, 0 problems"
    piped = subprocess.run(["durable", "doctor"], capture_output=True, text=True, env=env())
    assert piped.returncode == 0 and piped.stdout == ""


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_piped_is_one_row_per_problem_before_and_after_repair(durable, home):
    """docs/reference/retention.md §7/§10 (issue 33 item 16): piped, one TSV row per problem in §10's keys (id, kind, detail,
    repaired), whatever the outcome: not a JSON document squeezed into one field, nothing when healthy."""
    durable("session", "create", "one")
    stale = home / "objects" / "ab" / ("ab" + "0" * 62 + ".sqlite3.lock")
    os.makedirs(stale.parent, mode=0o700, exist_ok=True)
    os.close(os.open(stale, os.O_WRONLY | os.O_CREAT, 0o600))
    r = durable("doctor")
    assert r.status == 7 and r.err.startswith("durable: error: unhealthy: stale_lock"), r
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert [(x[0], x[1], x[3]) for x in rows] == [(stale.name[:-5], "stale_lock", "false")] and len(rows[0]) == 4, r.out
    want = durable("doctor", "--json").json()
    assert r.out == "".join(f"{p['id']}\t{p['kind']}\t{p['detail']}\tfalse\n" for p in want["problems"])
    r = durable("doctor", "--repair")
    assert r.status == 0 and r.out.splitlines() == [f"{stale.name[:-5]}\tstale_lock\t{want['problems'][0]['detail']}\ttrue"], r
    r = durable("doctor")
    assert (r.status, r.out) == (0, "")


def test_session_card_and_conversation_without_colour(durable):
    durable("session", "prompt", "card", "do it")
    durable("transcript", "append", "card", "--role", "assistant", "--tool-calls", '[{"id": "c1", "name": "look", "arguments": "{}"}]')
    durable("transcript", "append", "card", "--role", "tool", "--call-id", "c1", "found it")
    r = subprocess.run(["script", "-qec", "durable session show card; durable transcript show card", "/dev/null"],
                       capture_output=True, text=True, env=env(NO_COLOR="1", COLUMNS="80"), timeout=60)
    assert "\x1b[" not in ANSI.sub("", r.stdout) and not re.search(r"\x1b\[[0-9;]*m", r.stdout)
    screen = "\n".join(line.rstrip() for line in r.stdout.replace("\r", "").splitlines()) + "\n"
    assert "queue         1 pending, 0 processing" in screen and "participants  alice (owner)" in screen
    assert "  → look({})\n    ← found it\n" in screen
    # piped: the record and the rows as before
    assert durable("session", "show", "card").out.startswith("card\t")
    assert durable("transcript", "show", "card").out.count("\n") == 2


def answered(args, answer: bytes):
    """`durable ARGS` with stdin and stderr on a pseudo-terminal and stdout piped: waits for the question,
    types ANSWER; (status, stdout, what the terminal showed)."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", *args], stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE, env=env())
    os.close(slave)
    screen, deadline, typed = b"", time.monotonic() + 60, False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the process ended: the terminal is gone
                break
            if not chunk:
                break
            screen += chunk
        if not typed and b"[y/N]" in screen:
            os.write(master, answer)
            typed = True
        if typed and proc.poll() is not None and not select.select([master], [], [], 0.1)[0]:
            break
    out = proc.stdout.read().decode()
    status = proc.wait(timeout=60)
    os.close(master)
    assert typed, screen
    return status, out, screen.decode().replace("\r", "")


@pytest.mark.local_only("a person's answer at the terminal, not a backend")
def test_a_confirmation_answered_no_is_exit_0_and_deletes_nothing(durable):
    """docs/reference/output.md §4 "Confirmations": answered no (n, anything but y/yes, or end of input) is exit 0, stderr says
    `nothing was deleted`, --json prints the command's document with nothing in it; it was `error:
    cancelled` with exit 2 (a status the table did not list). Without a terminal, `delete` no longer
    suggests a --dry-run it does not have."""
    from freezegun import freeze_time

    with freeze_time("2020-01-01"):
        durable("transcript", "append", "keep", "--role", "user", "still here")
        durable("--as", "bob", "session", "create", "bobs")
    empty = {"deleted": [], "skipped": [], "changed": [], "dry_run": False}
    cases = [
        (["delete", "keep"], b"n\r", None),
        (["delete", "keep", "--json"], b"no\r", empty),
        (["delete", "keep", "--json"], b"\x04", empty),  # end of input
        (["purge", "--older-than", "30d", "--json"], b"n\r", empty),
        (["forget", "bob", "--json"], b"maybe\r", empty),
        (["transcript", "clear", "keep", "--json"], b"n\r", {"deleted": 0}),
        (["transcript", "clear", "keep"], b"\r", None),
    ]
    for args, answer, document in cases:
        status, out, screen = answered(args, answer)
        assert status == 0, (args, screen)
        assert "nothing was deleted" in screen and "error" not in screen, (args, screen)
        assert (json.loads(out) if document is not None else out) == (document if document is not None else ""), (args, out)
        assert "\n" not in out.rstrip("\n") and " " not in out  # compact, one line
    assert [r["content"] for r in durable("transcript", "show", "keep", "--json").json()] == ["still here"]
    assert durable("--as", "bob", "session", "show", "bobs").status == 0
    r = durable("delete", "keep")  # no terminal: --yes, and no mention of a --dry-run delete lacks
    assert r.status == 2 and "--yes" in r.err and "--dry-run" not in r.err
    status, out, screen = answered(["delete", "keep"], b"y\r")
    assert status == 0 and out.startswith("deleted\t")


def test_a_record_on_a_terminal_says_yes_no_and_how_long_ago_beside_the_exact_time(durable):
    """`memory set` (any one record) on a terminal: no `False`, no bare RFC 3339 a person must work out; piped it
    stays one TSV row of the raw values."""
    status, screen = on_terminal("durable memory set tz Europe/Paris --expires 2h", COLUMNS="100")
    assert status == 0
    lines = {line.split()[0]: line.split(None, 1)[1].strip() if len(line.split()) > 1 else "" for line in screen.splitlines() if line.strip()}
    assert lines["confirmed"] == "no" and lines["value"] == "Europe/Paris"
    assert re.fullmatch(r"just now \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)", lines["created_at"]), lines
    assert re.fullmatch(r"in 1h \(\d{4}-.*Z\)", lines["expires_at"]), lines
    piped = durable("memory", "set", "tz", "Europe/Paris").out.rstrip("\n").split("\t")
    assert piped[:4] == ["tz", "Europe/Paris", "user", "false"] and re.fullmatch(r"\d{4}-.*Z", piped[4])
