"""docs/reference/concepts.md §2: a tenant object a user cannot see answers exactly as a missing one, in every command.

Only the creating commands cannot hide that a tenant NAME is taken: they answer exit 4 "name is
taken" and nothing more. Visibility comes from index.db before the lock, so a busy or a corrupt
object a user cannot see answers as missing too.
"""

import os

import pytest

from tests.helpers import hold_lock, leaf_commands

pytestmark = pytest.mark.both_backends

# Arguments after NAME for every leaf command that addresses a session (several forms for some).
SESSION_COMMANDS = {
    "ttl": [[], ["1d"], ["--clear"]],
    "delete": [["--yes"]],
    "export": [[]],
    "session create": [[]],
    "session show": [[]],
    "session prompt": [["hello"], ["hello", "--no-create"]],
    "session next": [[], ["--wait", "1s"]],
    "session renew": [["1"]],
    "session finish": [["1", "--reply", "done"]],
    "session release": [["1"]],
    "work": [["--command", "true", "--once", "--wait", "0"]],
    "session stop": [[]],
    "session cancel": [[]],
    "session archive": [[]],
    "session unarchive": [[]],
    "session title": [["A title"]],
    "session tag": [["k=v"], []],
    "session invite": [["carol"]],
    "session dequeue": [["1"]],
    "session fork": [["copy"], ["copy", "--at", "1"]],
    "session queue": [[]],
    "session events": [[]],
    "session participants": [[]],
    "transcript append": [["hello", "--role", "user"], ["hello", "--role", "user", "--no-create"]],
    "transcript show": [[]],
    "transcript recent": [[]],
    "transcript summarize": [["--through", "1", "--text", "short"]],
    "transcript compact": [["--max-tokens", "10", "--keep-tokens", "5", "--text", "short"]],
    "transcript prune": [["--older-than", "1d"]],
    "transcript redact": [["1"]],
    "transcript pop": [[], ["--count", "2"]],
    "transcript clear": [["--yes"]],
    "path": [[]],
    "elicit ask": [["--prompt", "ship it?"]],
    "elicit list": [[]],
    "elicit answer": [["1", "--choice", "yes"]],
    "elicit wait": [["1"], ["1", "--wait", "1s"]],
    "step": [["k", "--", "true"]],
    "session steps": [[]],
    "session schedules": [[]],
    "session unschedule": [["1"]],
    "session hook": [["--url", "https://example.com/hook"]],
    "session hooks": [[]],
    "session unhook": [["1"]],
    "session deliveries": [[]],
}
CREATING = {("session create", ()), ("session prompt", ("hello",)), ("transcript append", ("hello", "--role", "user"))}
# `import` creates from a file rather than a NAME argument; its visibility is Store.visible (see the report).
NOT_BY_NAME = {"ls", "purge", "sweep", "forget", "import", "backup", "doctor", "config get", "config set",
               "config unset", "config list", "config path", "memory set", "memory get", "memory list",
               "memory confirm", "memory forget", "limit hit", "search", "usage", "remote dev",
               "remote install", "remote token", "remote revoke", "remote reindex", "mcp", "ui"}

TENANT = ["--tenant", "acme"]
HIDDEN = ("zkept", "zlocked", "zbroken")  # bob's objects, invisible to mallory


def test_every_command_that_takes_a_name_is_covered():
    seen = {" ".join(path) for path, _ in leaf_commands()}
    assert seen == set(SESSION_COMMANDS) | NOT_BY_NAME, "a new command: add it to SESSION_COMMANDS or NOT_BY_NAME"
    for path, cmd in leaf_commands():
        assert any(p.name in ("name", "names") for p in cmd.params) == (" ".join(path) in SESSION_COMMANDS), path


def _bob_makes(durable, name):
    bob = ["--as", "bob", *TENANT]
    assert durable(*bob, "transcript", "append", name, "--role", "user", "secret plans").status == 0
    assert durable(*bob, "session", "prompt", name, "do it").status == 0
    assert durable(*bob, "elicit", "ask", name, "--prompt", "ok?", "--choice", "yes").status == 0
    assert durable(*bob, "session", "invite", name, "dave").status == 0


@pytest.fixture
def hidden_objects(durable, backend, home, monkeypatch):
    """bob's tenant objects: one with rows, one whose lock another process holds, one corrupt (the
    last two are states of object files: remote, bob's object with rows only). Yields their names."""
    from durable_cli import Store

    if backend == "remote":
        _bob_makes(durable, HIDDEN[0])
        yield HIDDEN[:1]
        return
    for name in HIDDEN:
        _bob_makes(durable, name)
    store = Store(user="bob", tenant="acme")
    broken = store.objects.paths.object_file(store.objects.object_id("tenant", "acme", "zbroken"))
    store.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(broken + suffix):
            os.unlink(broken + suffix)
    with open(broken, "wb") as f:
        f.write(b"this is not a database\n" * 200)
    monkeypatch.setenv("DURABLE_TENANT", "acme")
    holder = hold_lock("zlocked", 600, user="bob")
    monkeypatch.delenv("DURABLE_TENANT")
    # a visibility check that waited for the lock would exit 6 after this, not answer "not found"
    monkeypatch.setenv("DURABLE_LOCK_TIMEOUT", "1s")
    yield HIDDEN
    holder.kill()
    holder.wait()


def _normal(result, name):
    return result.status, result.out.replace(name, "NAME"), result.err.replace(name, "NAME")


def test_an_invisible_tenant_object_answers_as_a_missing_one(durable, backend, hidden_objects):
    commands = dict((" ".join(p), c) for p, c in leaf_commands())
    before = durable("--as", "bob", *TENANT, "session", "show", "zkept", "--json").out
    events = durable("--as", "bob", *TENANT, "session", "events", "zkept", "--json").out
    ghost = 0
    for command, variants in SESSION_COMMANDS.items():
        has_json = any("--json" in p.opts for p in commands[command].params)
        for extra in variants:
            for json_flag in ([[], ["--json"]] if has_json else [[]]):
                args = [*command.split()]
                tail = [*extra, *json_flag]
                ghost += 1
                never = f"zghost{ghost}"
                missing = durable("--as", "mallory", *TENANT, *args, never, *tail)
                answers = {name: _normal(durable("--as", "mallory", *TENANT, *args, name, *tail), name) for name in hidden_objects}
                label = " ".join(args + ["NAME"] + tail)
                if (command, tuple(extra)) in CREATING:
                    assert missing.status == 0, (label, missing)  # a never-made NAME is created
                    for name, (status, out, err) in answers.items():
                        assert status == 4 and out == "" and "name is taken" in err, (label, name, err)
                        assert "busy" not in err and "corrupt" not in err, (label, name, err)
                    assert len(set(answers.values())) == 1, (label, answers)
                else:
                    expected = _normal(missing, never)
                    # with --remote, `path` has no meaning: exit 2 for any NAME
                    assert expected[0] == (2 if backend == "remote" and command == "path" else 3), (label, missing)
                    for name, answer in answers.items():
                        assert answer == expected, (label, name)
    # nothing was changed by any of it
    assert durable("--as", "bob", *TENANT, "session", "show", "zkept", "--json").out == before
    assert durable("--as", "bob", *TENANT, "session", "events", "zkept", "--json").out == events
    # and a participant still sees hers (dave was invited)
    assert durable("--as", "dave", *TENANT, "session", "show", "zkept").status == 0


def test_the_same_words_for_a_missing_session_whatever_the_scope(durable):
    """One message for "not found", whichever layer finds it missing (user scope too)."""
    assert durable("session", "create", "other").status == 0
    a = durable("session", "show", "nope")
    b = durable("transcript", "show", "nope")
    c = durable("session", "next", "nope")
    assert a.status == b.status == c.status == 3
    assert a.err == b.err == c.err == "durable: error: session \"nope\" not found; 'durable ls' lists your sessions (a tenant's sessions need --tenant ORG)\n"


@pytest.mark.local_only("Store.visible reads index.db (remote: the Worker decides, covered above)")
def test_store_visible_is_decided_from_the_index(durable):
    from durable_cli import Store

    _bob_makes(durable, "zkept")
    store = Store(user="mallory", tenant="acme")
    try:
        assert not store.visible(store.address("zkept"))
        assert store.visible(store.address("zkept"), user="bob")
        assert store.visible(store.address("zkept"), user="dave")
        assert not store.visible(store.address("never-made"))
    finally:
        store.close()
    store = Store(user="mallory")
    try:
        assert store.visible(store.address("anything"))  # a user's own scope is always hers
    finally:
        store.close()
