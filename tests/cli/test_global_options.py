"""docs/reference/output.md §4: the global options (--as, --tenant, --home, --lock-timeout, --remote) are taken before or after
the command, with the same meaning, the last one on the command line winning; recognised only where an
option may stand and only before `--`, never as an option's value or a TEXT/VALUE positional."""

import pytest

pytestmark = pytest.mark.both_backends


def test_global_options_after_the_command_mean_what_they_mean_before_it(durable):
    assert durable("--as", "bob", "session", "create", "bobs").status == 0
    assert durable("session", "create", "alices").status == 0  # the environment's user: alice

    def names(*args):
        r = durable(*args)
        assert r.status == 0, (args, r.err)
        return [row["name"] for row in r.json()]

    assert names("ls", "--as", "bob", "--json") == ["bobs"]  # was "No such option: --as"
    assert names("ls", "--json", "--as=bob") == ["bobs"]
    assert names("--as", "alice", "ls", "--as", "bob", "--json") == ["bobs"]  # the last one wins
    assert names("--as", "bob", "ls", "--json", "--as", "alice") == ["alices"]
    assert names("ls", "--as", "bob", "--as", "alice", "--json") == ["alices"]
    assert durable("session", "show", "bobs", "--as", "bob", "--json").json()["owner"] == "bob"
    assert durable("session", "--as", "bob", "show", "bobs", "--json").json()["owner"] == "bob"  # after a group, too
    assert durable("session", "show", "bobs").status == 3  # alice has no such session
    r = durable("ls", "--lock-timeout", "5x")
    assert r.status == 2 and "--lock-timeout" in r.err
    assert durable("ls", "--as").status == 2  # an option without its value


def test_what_looks_like_a_global_option_in_a_value_is_a_value(durable):
    # after `--`: TEXT, even for bob
    assert durable("session", "prompt", "s", "--as", "bob", "--", "--home").status == 0
    taken = durable("--as", "bob", "session", "next", "s", "--json").json()
    assert taken["content"] == "--home"
    # an option's value
    assert durable("session", "finish", "s", str(taken["id"]), "--reply", "--as", "--as", "bob").status == 0
    rows = durable("transcript", "show", "s", "--as", "bob", "--json").json()
    assert [r["content"] for r in rows] == ["--home", "--as"]
    assert durable("transcript", "show", "s").status == 3  # none of it went to alice


def test_a_config_value_that_begins_with_a_dash_is_a_value(durable):
    """docs/reference/retention.md §7: `config set queue.max_attempts -5` said "No such option: -5"; it is a value, judged by the key's
    rules (exit 2 naming the key), and the file is untouched."""
    r = durable("config", "set", "queue.max_attempts", "-5")
    assert r.status == 2 and r.err == "durable: error: config queue.max_attempts must be a positive integer, not '-5'\n"
    r = durable("config", "set", "retention.draft_expiry", "-1d")
    assert r.status == 2 and "retention.draft_expiry" in r.err and "No such option" not in r.err
    assert durable("config", "set", "queue.max_attempts", "5", "--json").json() == {"key": "queue.max_attempts", "value": 5}


@pytest.mark.local_only("about the click commands built in this process, whatever the backend")
def test_one_process_builds_each_kind_of_command_once(durable):
    """cli/app.py keeps the click command it built per command group (and per late global option or
    not): a second `ls` in this process reuses the first's, and a late `--as` never leaks into the next."""
    from durable_cli.cli import app

    assert durable("--as", "bob", "session", "create", "bobs").status == 0
    assert durable("ls", "--json").status == 0
    built = app._BUILT[("retention", False)]
    assert durable("ls", "--as", "bob", "--json").json()[0]["name"] == "bobs"
    assert app._BUILT[("retention", True)] is not built
    assert durable("ls", "--json").json() == [] and app._BUILT[("retention", False)] is built
