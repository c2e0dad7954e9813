"""Shell integration: completions in real shells, man pages, drift, TTY vs piped output, examples."""

import os
import re
import subprocess
import sys

import pytest

from tests.cli.tools import require
from tests.conftest import ROOT

BIN = os.path.dirname(sys.executable)


def shell_env(**extra):
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"], **extra)


def bash(script):
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=shell_env(), cwd=ROOT, timeout=60)


def test_bash_completes_commands_and_names(durable):
    durable("session", "create", "fix-login")
    durable("session", "create", "fix-logout")
    durable("--as", "bob", "session", "create", "bobs-thing")
    r = bash('source completions/durable.bash; COMP_WORDS=(durable ses); COMP_CWORD=1; _durable_completion durable; echo "${COMPREPLY[@]}"')
    assert r.stdout.split() == ["session"], r.stderr
    r = bash('source completions/durable.bash; COMP_WORDS=(durable session show ""); COMP_CWORD=3; _durable_completion durable; echo "${COMPREPLY[@]}"')
    assert sorted(r.stdout.split()) == ["fix-login", "fix-logout"], r.stderr
    r = bash('source completions/durable.bash; COMP_WORDS=(durable session invite x y --role ""); COMP_CWORD=6; _durable_completion durable; echo "${COMPREPLY[@]}"')
    assert sorted(r.stdout.split()) == ["member", "owner"]
    r = bash('source completions/durable.bash; complete -p durable')
    assert "_durable_completion" in r.stdout


@pytest.mark.parametrize("shell,script", [
    ("zsh", "autoload -U compinit; compinit -u; source completions/_durable; echo loaded"),
    ("fish", "source completions/durable.fish; and echo loaded"),
])
def test_zsh_and_fish_load_their_scripts(shell, script):
    path = require(shell)
    r = subprocess.run([path, "-c", script], capture_output=True, text=True, env=shell_env(), cwd=ROOT, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "loaded", r.stderr


def test_fish_completes_names(durable):
    require("fish")
    durable("session", "create", "fish-one")
    r = subprocess.run(["fish", "-c", "source completions/durable.fish; complete -C 'durable session show '"],
                       capture_output=True, text=True, env=shell_env(), cwd=ROOT, timeout=60)
    assert "fish-one" in r.stdout, r.stderr


@pytest.mark.parametrize("script", ["gen_man.py", "gen_completions.py", "gen_docs.py"])
def test_generated_files_are_not_stale(script):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_man_pages_render_without_warnings():
    require("groff")
    require("man")
    pages = sorted(p for p in os.listdir(os.path.join(ROOT, "man")) if p.endswith(".1"))
    assert "durable.1" in pages and "durable-session.1" in pages and "durable-transcript.1" in pages
    for page in pages:
        r = subprocess.run(["groff", "-ww", "-t", "-man", "-Tutf8", os.path.join(ROOT, "man", page)], capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", (page, r.stderr)
    r = subprocess.run(["man", "-l", os.path.join(ROOT, "man", "durable.1")], capture_output=True, text=True, env=dict(os.environ, MANPAGER="cat", MANWIDTH="80"))
    assert r.returncode == 0 and "EXIT STATUS" in r.stdout and "ENVIRONMENT" in r.stdout and "DURABLE_HOME" in r.stdout
    assert "rate_limited" in r.stdout


def test_no_man_page_line_wraps_at_80_columns():
    """`man -l` at 80 columns: every line fits, examples included (issue 33 item 17: they wrapped)."""
    require("man")
    for page in sorted(p for p in os.listdir(os.path.join(ROOT, "man")) if p.endswith(".1")):
        r = subprocess.run(["man", "-l", os.path.join(ROOT, "man", page)], capture_output=True, text=True,
                           env=dict(os.environ, MANPAGER="cat", MANWIDTH="80"))
        assert r.returncode == 0, (page, r.stderr)
        assert [line for line in r.stdout.splitlines() if len(line) > 80] == [], page


def test_every_command_help_has_summary_and_example():
    from tests.helpers import leaf_commands

    commands = leaf_commands()
    for path, cmd in commands:
        text = cmd.help or ""
        assert text.strip().splitlines()[0], path
        assert "Example:" in text, f"{' '.join(path)} --help has no example"
    assert len(commands) >= 40


def test_tty_gets_a_table_pipe_gets_tsv(durable):
    durable("session", "create", "tty-one", "--title", "Hello")
    r = subprocess.run(["script", "-qec", "durable ls", "/dev/null"], capture_output=True, text=True, env=shell_env(TERM="xterm", COLUMNS="120"))
    assert r.returncode == 0
    header = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout).splitlines()[0].split()
    assert header[:3] == ["NAME", "STATUS", "TITLE"] and "ACTIVE" in header and "tty-one" in r.stdout
    assert "just now" in r.stdout and "ID" not in header  # relative times; the id only with --wide
    # NO_COLOR removes colour, not the table (docs/reference/output.md §4)
    r = subprocess.run(["script", "-qec", "durable ls", "/dev/null"], capture_output=True, text=True, env=shell_env(TERM="xterm", NO_COLOR="1"))
    assert "\x1b[" not in r.stdout and "tty-one\t" not in r.stdout and r.stdout.split()[:2] == ["NAME", "STATUS"]
    r = subprocess.run(["script", "-qec", "durable ls --wide", "/dev/null"], capture_output=True, text=True, env=shell_env(TERM="xterm", COLUMNS="400"))
    # --wide: the columns read first stay first, then the short id, then the rest (tests/cli/test_screens.py)
    assert re.sub(r"\x1b\[[0-9;]*m", "", r.stdout).split()[:4] == ["NAME", "STATUS", "TITLE", "ID"]
    piped = subprocess.run(["durable", "ls"], capture_output=True, text=True, env=shell_env())
    assert "\x1b[" not in piped.stdout and piped.stdout.startswith("tty-one\t")


def test_ls_table_fits_80_columns_and_keeps_names_whole(durable):
    name = "refactor-the-login-flow"
    durable("session", "create", name, "--title", "Refactor login so that it supports SSO, passkeys and magic links")
    r = subprocess.run(["script", "-qec", "durable ls", "/dev/null"], capture_output=True, text=True, env=shell_env(TERM="xterm", COLUMNS="80", NO_COLOR="1"))
    lines = r.stdout.replace("\r", "").splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert len(lines) == 2 and name in lines[1]


def test_tsv_escaping(durable):
    durable("transcript", "append", "esc", "--role", "user", "tab\there\nnew line \\ backslash")
    line = durable("transcript", "show", "esc").out
    assert line.count("\n") == 1
    assert "tab\\there\\nnew line \\\\ backslash" in line


def test_example_worker_loop(durable):
    for text in ("alpha", "beta"):
        durable("session", "prompt", "jobs", text)
    r = subprocess.run([os.path.join(ROOT, "examples", "worker.sh"), "jobs", "tr a-z A-Z"], capture_output=True, text=True,
                       env=shell_env(WAIT="1s"), timeout=60)
    assert r.returncode == 0, r.stderr
    rows = durable("transcript", "show", "jobs", "--json").json()
    assert [(x["role"], x["content"]) for x in rows] == [("user", "alpha"), ("assistant", "ALPHA"),
                                                          ("user", "beta"), ("assistant", "BETA")]
    assert durable("session", "show", "jobs", "--json").json()["status"] == "completed"


def test_example_nightly_retention(durable):
    from freezegun import freeze_time

    with freeze_time("2020-01-01"):
        durable("session", "create", "ancient")
    durable("session", "create", "fresh")
    r = subprocess.run([os.path.join(ROOT, "examples", "nightly-retention.sh")], capture_output=True, text=True, env=shell_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "purged 1 objects, skipped 0 busy ones"
    assert [x["name"] for x in durable("ls", "--json").json()] == ["fresh"]


def test_example_export_user(durable, tmp_path):
    durable("transcript", "append", "mine", "--role", "user", "hello")
    durable("memory", "set", "k", "v")
    r = subprocess.run([os.path.join(ROOT, "examples", "export-user.sh"), "alice", str(tmp_path)], capture_output=True, text=True,
                       env=shell_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    out = r.stdout.strip()
    assert out.startswith(str(tmp_path / "alice-")) and os.path.exists(out)
    assert "user\tmine\t1 turns" in r.stderr and "reserved" in r.stderr


def test_install_completion_for_the_current_user(tmp_path):
    r = subprocess.run(["durable", "--install-completion"], capture_output=True, text=True,
                       env=shell_env(HOME=str(tmp_path), SHELL="/bin/bash"), timeout=60)
    assert r.returncode == 0, r.stderr
    installed = (tmp_path / ".bash_completions" / "durable.sh").read_text()
    assert "_durable_completion" in installed and "durable.sh" in (tmp_path / ".bashrc").read_text()


def test_closed_pipe_is_quiet_and_exit_0(durable):
    for i in range(3):
        durable("transcript", "append", "pipe", "--role", "user", "-", input="x\n" * 20000)
    for fmt in ("--jsonl", "--json", ""):
        r = bash(f"set -o pipefail; durable transcript show pipe {fmt} | head -c 10 >/dev/null")
        assert r.returncode == 0 and r.stderr == "", (fmt, r.stderr)


def test_progress_bar_only_when_stderr_is_a_terminal(durable):
    from freezegun import freeze_time

    with freeze_time("2020-01-01"):
        for i in range(5):
            durable("session", "create", f"old{i}")
    piped = subprocess.run(["durable", "purge", "--older-than", "30d", "--dry-run"], capture_output=True, text=True, env=shell_env())
    assert piped.returncode == 0 and piped.stderr == ""
    r = subprocess.run(["script", "-qec", "durable purge --older-than 30d --yes", "/dev/null"], capture_output=True, text=True,
                       env=shell_env(TERM="xterm"))
    assert r.returncode == 0 and "purge" in r.stdout and "100%" in r.stdout
    assert durable("ls", "--all", "--json").json() == []
