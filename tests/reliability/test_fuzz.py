"""Bad input fuzz: random argv and random bytes on stdin against every command.

Only documented exit statuses, never a traceback, and no object changed by a rejected command.
"""


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import export_snapshot

DOCUMENTED = {0, 2, 3, 4, 5, 6, 7, 8, 9}


# What runs until something happens or a signal comes (a server; `work`, `--follow` and `--wait`, waiting for
# ever or for a drawn `1h`): a drawn run of one hung the suite (`remote dev`, hypothesis's pick). Their own
# bad input is tested where they are (tests/remote/, tests/cli/test_work.py, test_follow.py).
LONG_RUNNING = {("remote", "dev"), ("work",), ("ui",)}
WAITING = {"--follow", "-f", "--wait"}


def command_table():
    from tests.helpers import leaf_commands

    return [(path, [o for p in cmd.params if p.param_type_name == "option" for o in p.opts if o not in WAITING])
            for path, cmd in leaf_commands() if tuple(path) not in LONG_RUNNING]


COMMANDS = command_table()
VALUES = ["s", "t", "x", "-", "0", "1", "2", "-1", "99", "1s", "2s", "30", "0s", "05m", "1.5h", "1h", "5/1h", "0/1h",
          "user", "owner", "member", "archived", "active", "text", "jsonl", "messages", "system", "tool",
          "'; DROP TABLE turns; --", "é" * 3, " padded ", "a\tb", "x" * 300, "", "--json", "--yes", "--all"]


@st.composite
def argv(draw):
    path, options = draw(st.sampled_from(COMMANDS))
    words = list(path)
    for _ in range(draw(st.integers(0, 6))):
        if options and draw(st.booleans()):
            words.append(draw(st.sampled_from(options)))
        words.append(draw(st.sampled_from(VALUES)))
    if draw(st.booleans()):
        words = draw(st.sampled_from([["--as"], ["--tenant"], ["--lock-timeout"]])) + [draw(st.sampled_from(VALUES))] + words
    return words


@pytest.fixture
def seeded(durable, home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    durable("transcript", "append", "s", "--role", "system", "rules")
    durable("session", "prompt", "s", "hello")
    durable("session", "create", "t")
    durable("elicit", "ask", "t", "--prompt", "ok?", "--choice", "y")
    durable("memory", "set", "k", "v")
    return home


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=argv(), stdin=st.binary(max_size=64))
def test_random_argv_and_stdin(durable, seeded, words, stdin):
    before = export_snapshot(seeded)
    r = durable(*words, input=stdin)
    assert r.status in DOCUMENTED, (words, r.status, r.err)
    assert "Traceback" not in r.err and "Traceback" not in r.out, words
    if r.status != 0:
        assert r.err.strip(), words
        if r.status not in (8,):  # limit hit refuses after recording the refill time, by design
            assert export_snapshot(seeded) == before, f"rejected {words} changed an object"


@pytest.mark.parametrize("data", [b"\xff", b"\xc3\x28", b"ok\x80", b"\xed\xa0\x80"])
def test_invalid_utf8_on_every_stdin_reader(durable, seeded, data):
    before = export_snapshot(seeded)
    for args in (["transcript", "append", "s", "--role", "user", "-"], ["session", "prompt", "s", "-"],
                 ["session", "finish", "s", "1", "--reply", "-"], ["transcript", "summarize", "s", "-", "--through", "2"],
                 ["import", "-"]):
        r = durable(*args, input=data)
        assert r.status == 2 and "UTF-8" in r.err, (args, r.err)
    assert export_snapshot(seeded) == before
