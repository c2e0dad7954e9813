"""Golden screens: the real binary in a real terminal (tmux), at 80 and 120 columns (the tables: 80 and 160).

Each screen is compared with tests/cli/screens/NAME-COLS.txt, as a person would see it (no colour:
capture-pane drops the attributes). Ids are stable (a known secret.key), times are stable (the data
is written under freezegun, the screen runs under libfaketime), so a screen only changes when what
durable shows changes. After an intended change: DURABLE_UPDATE_SCREENS=1 python -m pytest tests/cli/test_screens.py
"""

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.cli.tools import require
from tests.conftest import ROOT
from tests.helpers import copy_home, faketime_env, home_made_once

SCREENS = os.path.join(ROOT, "tests", "cli", "screens")
NOW = "2026-01-02 12:00:00"
WIDTHS = (80, 120)


@pytest.fixture
def scene(_scene, home):
    """A data directory with a known secret, a worked session, a conversation with tool calls and a
    summary, a dozen idle sessions, and one stale lock file for doctor: the module's one, copied to this
    test's DURABLE_HOME (a test may change its copy; made once, ~40 commands, not once per screen)."""
    return copy_home(_scene, home)


@pytest.fixture(scope="module")
def _scene(tmp_path_factory):
    from tests.conftest import run_inprocess

    return home_made_once(tmp_path_factory, lambda home: _make_scene(run_inprocess, home))[0]


def _make_scene(durable, home):
    from freezegun import freeze_time

    os.makedirs(home, mode=0o700)
    fd = os.open(home / "secret.key", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, bytes(range(32)))
    os.close(fd)

    def ok(*args):
        r = durable(*args)
        assert r.status == 0, (args, r.err)

    with freeze_time("2025-06-01 08:00:00"):
        for i in range(1, 13):
            ok("session", "create", f"old-{i}", "--title", f"An idle draft number {i}")
    with freeze_time("2026-01-01 09:00:00"):
        ok("session", "create", "fix-login", "--title", "Login bug: the form rejects valid emails")
        ok("session", "prompt", "fix-login", "The login form rejects valid emails; find out why")
        ok("session", "prompt", "fix-login", "Also check the password reset page")
    with freeze_time("2026-01-02 08:30:00"):
        ok("session", "next", "fix-login", "--lease", "1d")
    with freeze_time("2026-01-02 09:00:00"):
        calls = '[{"id": "call_1", "name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}]'
        ok("transcript", "append", "trip", "--role", "system", "You are a terse travel assistant.")
        ok("transcript", "append", "trip", "--role", "user", "Weather in Paris?")
        ok("transcript", "append", "trip", "--role", "assistant", "--tool-calls", calls)
        ok("transcript", "append", "trip", "--role", "tool", "--call-id", "call_1", "--name", "get_weather", '{"temp_c": 18}')
        ok("transcript", "append", "trip", "--role", "assistant", "18 °C and sunny.")
    with freeze_time("2026-01-02 10:30:00"):
        ok("transcript", "append", "trip", "--role", "user",
           "And tomorrow? I am walking from the Louvre to the Eiffel Tower in the afternoon and would rather "
           "not carry an umbrella all day if I can avoid it.")
        ok("transcript", "append", "trip", "--role", "assistant", "--tool-calls",
           '[{"id": "call_2", "name": "forecast", "arguments": "{\\"city\\": \\"Paris\\", \\"day\\": \\"tomorrow\\"}"}]')
        ok("transcript", "append", "trip", "--role", "tool", "--call-id", "call_2", '{"rain_mm": 0, "temp_c": 21}')
        ok("transcript", "append", "trip", "--role", "assistant", "Dry and 21 °C: leave the umbrella at home.")
    with freeze_time("2026-01-02 11:00:00"):
        ok("transcript", "summarize", "trip", "--through", "5", "--text", "The user asked for the weather in Paris: 18 °C and sunny.")
    with freeze_time("2026-01-02 11:30:00"):  # user text with rich markup in it, and usage with a cost
        ok("session", "create", "q3-[draft]-budget-review-for-the-finance-team", "--title", "[bold]Q3[/bold] budget: the [red]numbers[/red]")
        ok("transcript", "append", "q3-[draft]-budget-review-for-the-finance-team", "--role", "user",
           "Before the review on Friday, please check every line of the [budget] numbers for Q3 against the ledger, "
           "and flag the travel costs that went over the umbrella policy")
        ok("transcript", "append", "q3-[draft]-budget-review-for-the-finance-team", "--role", "assistant",
           "Travel went over by 12%; the rest of the budget matches the ledger.",
           "--meta", '{"model": "gpt-4o-mini", "usage": {"input_tokens": 1234, "output_tokens": 56}, "cost_usd": 0.00987}')
    with freeze_time("2026-01-02 11:40:00"):  # elicit requests, a failure with a long reason, remembered facts
        ok("elicit", "ask", "fix-login", "--prompt", "Ship the fix to production now that the login tests pass against "
           "staging and the security review has signed it off?", "--choice", "yes", "--choice", "no", "--choice", "later")
        ok("elicit", "ask", "fix-login", "--prompt", "Email the affected users?", "--choice", "yes", "--choice", "no")
        ok("elicit", "ask", "fix-login", "--prompt", "Roll back the hotfix?", "--choice", "yes", "--choice", "no", "--timeout", "1h")
        ok("elicit", "answer", "fix-login", "2", "--choice", "yes", "--comment", "only those who failed to log in twice")
        ok("session", "finish", "fix-login", "1", "--failed", "--error",
           "the command exited 1 after the database migration step timed out waiting for a lock on the accounts table")
        ok("memory", "set", "editor", "The user prefers vim keybindings in every editor, including the notebook in the browser")
        ok("memory", "set", "tz", "Europe/Paris", "--confirmed")
    stale = home / "objects" / "ab" / ("ab" + "0" * 62 + ".sqlite3.lock")
    os.makedirs(stale.parent, mode=0o700, exist_ok=True)
    os.close(os.open(stale, os.O_WRONLY | os.O_CREAT, 0o600))
    return home


class Terminal:
    """One tmux server on a private socket, a pane of COLS x 50 running one durable command."""

    def __init__(self, tmp_path, cols, command, *, fake_time=True, env_over=None):
        self.socket = str(tmp_path / f"tmux-{cols}.sock")
        fake = faketime_env(NOW) if fake_time else {}
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX", "NO_COLOR")}
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
        pass_on = {k: env[k] for k in ("DURABLE_HOME", "DURABLE_CONFIG", "DURABLE_USER", "PATH")}
        for k, v in (env_over or {}).items():  # None: not set in the pane
            pass_on.pop(k, None) if v is None else pass_on.__setitem__(k, v)
            env.pop(k, None)
        pass_on.update({k: fake[k] for k in ("LD_PRELOAD", "FAKETIME", "FAKETIME_DONT_FAKE_MONOTONIC") if k in fake})
        args = [a for k, v in pass_on.items() for a in ("-e", f"{k}={v}")]
        shell = f"{command}; echo \"[exit $?]\"; exec sleep 600"
        subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", "50",
                        *args, "sh", "-c", shell], check=True, env=env, timeout=30)

    def capture(self) -> str:
        r = subprocess.run(["tmux", "-S", self.socket, "capture-pane", "-p"], capture_output=True, text=True, check=True, timeout=30)
        return r.stdout

    def wait_for(self, pattern, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.capture()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never appeared:\n{self.capture()}")

    def keys(self, *keys):
        subprocess.run(["tmux", "-S", self.socket, "send-keys", *keys], check=True, timeout=30)

    def close(self):
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30)


def tidy(screen: str) -> str:
    lines = [line.rstrip() for line in screen.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def finished(screen):
    """The screen without the exit line, and the exit status."""
    text = tidy(screen)
    found = re.search(r"^\[exit (\d+)\]$", text, re.M)
    return tidy(text[:found.start()]), int(found.group(1))


def golden(name, cols, screen):
    path = os.path.join(SCREENS, f"{name}-{cols}.txt")
    if os.environ.get("DURABLE_UPDATE_SCREENS") == "1":
        os.makedirs(SCREENS, exist_ok=True)
        with open(path, "w") as f:
            f.write(screen)
    with open(path) as f:
        expected = f.read()
    assert screen == expected, f"{path} differs:\n{screen}"
    assert all(len(line) <= cols for line in screen.splitlines())


def run_screen(tmp_path, cols, command, env_over=None):
    require("tmux")
    term = Terminal(tmp_path, cols, command, env_over=env_over)
    try:
        return finished(term.wait_for(r"\[exit \d+\]"))
    finally:
        term.close()


SIMPLE = {
    "session-show": ("durable session show fix-login", 0),
    "transcript-show": ("durable transcript show trip", 0),
    "transcript-recent": ("durable transcript recent trip", 0),  # tool calls shown, lines wrapped at words
    "help": ("durable session prompt --help", 0),
}
# tables (docs/reference/output.md §4: on a terminal the columns a person reads first, no cell wrapped, ids only with --wide)
TABLES = {
    "ls": ("durable ls", 0),
    "ls-wide": ("durable ls --wide", 0),
    "usage": ("durable usage", 0),
    "usage-by-model": ("durable usage --by model", 0),
    "search": ("durable search budget", 0),
    "search-none": ("durable search nothingsaysthis", 0),
    "doctor": ("durable doctor", 7),
    # issue 33 item 13: names, ids and keys never cut; free text wrapped; choices as words; relative times
    "elicit-list": ("durable elicit list fix-login", 0),
    "session-events": ("durable session events fix-login", 0),
    "memory-list": ("durable memory list --all", 0),
    "config-list": ("durable config list --origin", 0),
}
SCREENS_AT = [(name, cols) for name in sorted(SIMPLE) for cols in WIDTHS] + [(name, cols) for name in sorted(TABLES) for cols in (80, 160)]


@pytest.mark.parametrize("name,cols", SCREENS_AT)
def test_screen(scene, tmp_path, name, cols):
    command, status = {**SIMPLE, **TABLES}[name]
    env_over = None
    if name == "config-list":  # the data directory's path is the test's own: the config file names a fixed one
        config = tmp_path / "screens.toml"
        config.write_text('[defaults]\nhome = "/var/lib/durable-screens"\nlock_timeout = "30s"\n\n[work]\n'
                          'command = "jq -r .content | llm -m gpt-4o-mini -s \'You are a careful release engineer\'"\n')
        env_over = {"DURABLE_HOME": None, "DURABLE_CONFIG": str(config)}
    screen, got = run_screen(tmp_path, cols, command, env_over=env_over)
    assert got == status, screen
    golden(name, cols, screen)


@pytest.mark.parametrize("cols", WIDTHS)
def test_purge_prompt_says_how_many_and_which_before_asking(scene, durable, tmp_path, cols):
    require("tmux")
    before = durable("ls", "--all", "--json").json()
    term = Terminal(tmp_path, cols, "durable purge --older-than 30d")
    try:
        screen = tidy(term.wait_for(r"\[y/N\]"))
        golden("purge-prompt", cols, screen)
        term.keys("n", "Enter")
        after, status = finished(term.wait_for(r"\[exit \d+\]"))
    finally:
        term.close()
    assert status == 0 and "nothing was deleted" in after and "error" not in after  # answered no: exit 0 (docs/reference/output.md §4)
    assert durable("ls", "--all", "--json").json() == before


def test_the_text_window_shows_tool_calls_and_the_calls_they_answer(scene, durable):
    """`transcript recent` piped: each call of a tool-calling turn on a line of its own (issue 33 item 11)."""
    r = durable("transcript", "recent", "trip")
    assert r.status == 0, r.err
    assert r.out.splitlines()[-4:] == [
        "assistant:",
        '  → forecast({"city": "Paris", "day": "tomorrow"})',
        'tool ← call_2: {"rain_mm": 0, "temp_c": 21}',
        "assistant: Dry and 21 °C: leave the umbrella at home.",
    ]


def test_the_docs_show_the_screens_as_they_are():
    """The pictures in the README and the docs are the golden screens themselves."""
    from tests.helpers import prose

    text = prose()
    for name, body in re.findall(r"<!-- screen: (\S+) -->\n```\n\$ [^\n]*\n(.*?)```\n<!-- /screen -->", text, re.S):
        with open(os.path.join(SCREENS, f"{name}.txt")) as f:
            assert body == f.read(), name
    assert "<!-- screen: transcript-show-80 -->" in text


def test_tmux_is_in_ci():
    assert "tmux" in open(os.path.join(ROOT, ".ci", "run")).read()
    assert shutil.which("tmux") or os.environ.get("DURABLE_CI") != "1"


def test_tables_never_cut_a_name_and_show_user_text_as_it_is():
    """What the golden tables promise (docs/reference/output.md §4), said once more so a regenerated screen cannot lose it: a
    NAME, id or key is never cut; free text is wrapped or cut only after the rest has its width; choices
    are words; times are relative."""
    for name in TABLES:
        for cols in (80, 160):
            with open(os.path.join(SCREENS, f"{name}-{cols}.txt")) as f:
                screen = f.read()
            if name in ("ls", "ls-wide", "usage", "search"):
                assert re.search(r"^NAME ", screen, re.M), (name, cols)
                assert "q3-[draft]" in screen, (name, cols)  # brackets shown, not read as markup
            if name in ("ls", "search", "usage"):
                assert not re.search(r"\b[0-9a-f]{12}\b", screen), (name, cols)  # no ids without --wide
    with open(os.path.join(SCREENS, "ls-wide-80.txt")) as f:
        wide = f.read()
    assert wide.splitlines()[0].split()[:3] == ["NAME", "STATUS", "ID"] and re.search(r"\b[0-9a-f]{12}\b", wide)
    for name in ("ls", "ls-wide", "usage"):
        for cols in (80, 160):
            with open(os.path.join(SCREENS, f"{name}-{cols}.txt")) as f:
                assert "q3-[draft]-budget-review-for-the-finance-team" in f.read(), (name, cols)  # whole
    for name in ("elicit-list", "session-events", "memory-list", "config-list"):
        for cols in (80, 160):
            with open(os.path.join(SCREENS, f"{name}-{cols}.txt")) as f:
                screen = f.read()
            assert "…" not in screen and not re.search(r"\d{4}-\d\d-\d\dT", screen), (name, cols)
            assert "[" not in screen or name != "elicit-list", screen  # choices as words, not JSON
            words = " ".join(screen.split())
            for whole in ("Ship the fix to production", "only those who failed to log in twice", "yes, no, later",
                          "waiting for a lock on the accounts table", "including the notebook in the browser",
                          "defaults.lock_timeout", "transcript.max_turn_bytes"):
                if whole in {"elicit-list": "Ship the fix to production only those who failed to log in twice yes, no, later",
                             "session-events": "waiting for a lock on the accounts table",
                             "memory-list": "including the notebook in the browser",
                             "config-list": "defaults.lock_timeout transcript.max_turn_bytes"}[name]:
                    # wrapped cells interleave with their neighbours' lines: at 80 columns, every word is there
                    assert whole in words if cols == 160 else set(whole.split()) <= set(words.split()), (name, cols, whole)
    for cols in (80, 160):
        with open(os.path.join(SCREENS, f"search-{cols}.txt")) as f:
            assert "[budget]" in f.read()  # the match stays in view
    with open(os.path.join(SCREENS, "search-none-80.txt")) as f:
        assert f.read() == "no matches\n"
