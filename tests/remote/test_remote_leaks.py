"""What a token may learn and hold on real workerd (SPEC §13): a LangGraph thread's tombstone answers only
who may see the thread; a live follower is closed at the first push after its token was revoked or expired
(4001, exit 5) or once it is too far behind (4003, reconnect); requests are served from the last good
revocation list while it cannot be read, then 503 `retryable`; a token over its rate is 429 (exit 8); an
internal error answers only an id."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import post_call, start_dev, token, unique


def _put_thread(store, name, tenant=None, invite=()):
    with store.open(name, create=True, tenant=tenant) as s:
        s.put_checkpoint(external_id=name, ns="", checkpoint_id="0001", parent_id=None, type_="bytes", blob=b"x", metadata="{}")
        for user in invite:
            s.invite(user)


def test_a_tombstone_answers_only_who_may_see_the_thread(remote_dev):
    """A tenant thread deleted: its participants then read the tombstone; any other token gets exactly what a
    name never made gets (the object id, last checkpoint and time of deletion used to reach anyone naming it)."""
    from durable_cli import Store

    alice = Store(remote=remote_dev.url, token=token("alice"), user="alice")
    name = unique("thread")
    _put_thread(alice, name, tenant="acme", invite=["carol"])
    with alice.open(name, tenant="acme") as s:
        s.delete_thread()
    mine = unique("own")
    _put_thread(alice, mine)
    with alice.open(mine) as s:
        s.delete_thread()
    for user in ("alice", "carol"):  # the participants the thread had
        grave = Store(remote=remote_dev.url, token=token(user), user=user).tombstone(name, tenant="acme")
        assert grave is not None and grave["last_checkpoint"] == "0001", user
    assert alice.tombstone(mine)["last_checkpoint"] == "0001"
    bob = token("bob")
    assert Store(remote=remote_dev.url, token=bob, user="bob").tombstone(name, tenant="acme") is None
    never = unique("never")
    for tenant_name in (name, never):  # on the wire too: the same answer as for a name never made
        status, doc = post_call(remote_dev.url, bob, {"op": "tombstone", "scope": "tenant", "tenant": "acme", "name": tenant_name})
        assert (status, doc) == (200, {"result": None}), tenant_name


def _follower(name, tok):
    env = dict(os.environ, DURABLE_TOKEN=tok)
    env.pop("DURABLE_USER", None)
    return subprocess.Popen([sys.executable, "-m", "durable_cli", "transcript", "show", name, "--follow", "--jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _append(monkeypatch, tok, name, text):
    monkeypatch.setenv("DURABLE_TOKEN", tok)
    r = run_inprocess("transcript", "append", name, "--role", "user", text, "--json")
    assert r.status == 0, r.err
    return json.loads(r.out)["seq"]


@pytest.fixture
def frank(remote_dev, monkeypatch):
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    return remote_dev


@pytest.mark.parametrize("ends", ["revoked", "expired"])
def test_a_live_follow_ends_at_the_first_push_after_its_token_ends(frank, monkeypatch, ends):
    """The token is checked at the upgrade and again at each push: a follower whose token was revoked or expired
    receives no newer row; the object closes it with 4001 and the client says why and exits 5."""
    import base64
    import time

    from durable_cli.remote import tokens
    from tests.remote.conftest import TOKEN_KEY
    from tests.remote.test_remote_follow import Lines

    user, name = unique("frank"), unique("watched")
    other = token(user)  # the user's other token keeps writing
    following = token(user) if ends == "revoked" else tokens.issue(TOKEN_KEY.encode(), user, expires=6)
    first = _append(monkeypatch, other, name, "first")
    proc = _follower(name, following)
    try:
        lines = Lines(proc)
        assert lines.next()["seq"] == first
        second = _append(monkeypatch, other, name, "second")  # a row that came through the socket: it is open
        assert lines.next()["seq"] == second
        if ends == "revoked":
            jti = json.loads(base64.urlsafe_b64decode(following.split(".")[1] + "==="))["jti"]
            monkeypatch.setenv("DURABLE_TOKEN", frank.admin_token)
            assert run_inprocess("remote", "revoke", jti).status == 0
        else:
            exp = json.loads(base64.urlsafe_b64decode(following.split(".")[1] + "==="))["exp"]
            from tests.waiting import wait_until

            wait_until(lambda: time.time() > exp + 0.1, f"the follower's token expired at {exp}")
        _append(monkeypatch, other, name, "after")
        assert proc.wait(timeout=20) == 5
        assert proc.stdout.read() == b"" and lines.buffer == b""  # the row after was not pushed
        err = proc.stderr.read().decode()
        assert f"token {ends}" in err and err.count("\n") == 1, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def faulty(tmp_path_factory, monkeypatch):
    """A `remote dev` of its own with the tests' fault hooks (DURABLE_DEV_FAULTS=1)."""
    monkeypatch.setenv("DURABLE_DEV_FAULTS", "1")
    d = start_dev(tmp_path_factory)
    monkeypatch.delenv("DURABLE_DEV_FAULTS")
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", d.url)
    yield d
    d.stop()


def test_requests_are_served_from_the_last_good_revocation_list_then_503_retryable(faulty, monkeypatch, tmp_path):
    """The revocation list's object unreadable: requests are served from the isolate's last list for up to 60 s
    after it was read (they were all HTTP 500 before), then HTTP 503 `busy` marked retryable, which the client
    retries within remote.timeout before exit 6 -- never 500."""
    from durable_cli import Store

    alice, name = token("alice"), unique("s")
    first = _append(monkeypatch, alice, name, "first")
    admin = Store(remote=faulty.url, token=faulty.admin_token, user="alice")
    admin._index("fault", write=True, shard="auth:0", refuse=True, stale_seconds=6)  # reads fail; the copy is due for one
    for _ in range(3):
        r = run_inprocess("transcript", "show", name, "--json")
        assert r.status == 0 and [row["seq"] for row in json.loads(r.out)] == [first], r.err
    assert _append(monkeypatch, alice, name, "second") == first + 1
    admin._index("fault", write=True, shard="auth:0", refuse=True, stale_seconds=61)  # the last list is past its bound
    admin.close()
    status, doc = post_call(faulty.url, alice, {"op": "whoami", "scope": "user"})
    assert status == 503 and doc["error"]["code"] == "busy" and doc["error"]["retryable"] is True, doc
    config = tmp_path / "config.toml"
    config.write_text('[remote]\ntimeout = "3s"\n')
    monkeypatch.setenv("DURABLE_CONFIG", str(config))
    r = run_inprocess("transcript", "show", name)
    assert r.status == 6 and "revocation list" in r.err and r.err.count("\n") == 1, r.err


def test_a_write_waits_for_no_root_shard_and_a_failed_update_backs_off(faulty, monkeypatch):
    """The root shards' copy is the object's alarm's, off the write path: with the object's root shard refusing
    every update, 12 writes are answered and read back from the user's shard at once, and the root shard is
    tried from the alarm with exponential backoff (a handful of tries, where each write used to try it again);
    once it takes updates again, installation-wide listings catch up without another write."""
    from durable_cli import Store
    from tests.waiting import wait_until

    alice, name = token("alice"), unique("s")
    _append(monkeypatch, alice, name, "first")
    status, doc = post_call(faulty.url, alice, {"op": "object_id", "scope": "user", "name": name})
    assert status == 200, doc
    root = f"root:{doc['result']['id'][0]}"
    admin = Store(remote=faulty.url, token=faulty.admin_token, user="alice")

    def turns(everyone):
        rows = [r for r in admin._index_rows(all_users=everyone) if r["name"] == name]
        return rows[0]["turns"] if rows else None

    wait_until(lambda: turns(True) == 1, "the alarm copied the row to its root shard")
    admin._index("fault", write=True, shard=root, refuse=True)
    for i in range(12):
        _append(monkeypatch, alice, name, f"row {i}")
    assert turns(False) == 13  # the user's shard has every write at once
    tries = admin._index("fault", write=True, shard=root, refuse=False)
    assert 1 <= tries <= 5, tries  # the alarm's tries, backing off (each write tried it before: 12 or more)
    wait_until(lambda: turns(True) == 13, "the alarm's retry brought the root copy up to date")
    admin.close()


def _workerd_log(dev) -> str:
    """What workerd has written to its log so far (`remote dev` sends its stdout and stderr to one file)."""
    with open(f"/proc/{dev.workerd_pid()}/fd/2", "rb") as f:
        return f.read().decode("utf-8", "replace")


@pytest.mark.parametrize("where", ["internal", "internal_worker"])
def test_an_internal_error_answers_only_an_id_and_logs_its_message(faulty, monkeypatch, where):
    """An error no rule foresaw, in the object's transaction or in the Worker itself: the caller gets HTTP 500
    `internal` with only `internal error <id>` (its message used to reach the caller whole); the message goes
    to the Worker's log under that id; nothing was written."""
    import re

    alice, name = token("alice"), unique("s")
    first = _append(monkeypatch, alice, name, "first")
    import secrets

    row = {"role": "user", "content": "never stored", "tool_calls_json": None, "call_id": None, "name": None,
           "meta_json": None, "data_json": None, "tokens": None}
    call = {"op": "append_many", "scope": "user", "label": "session", "name": name, "request_id": secrets.token_hex(12),
            "dev_fault": where, "args": {"rows": [row]}}
    status, doc = post_call(faulty.url, alice, call)
    assert status == 500 and doc["error"]["code"] == "internal", doc
    message = doc["error"]["message"]
    assert re.fullmatch(r"internal error [0-9a-f]{16}", message), message
    assert "dev fault" not in json.dumps(doc)
    incident = message.split()[-1]
    from tests.waiting import wait_until

    wait_until(lambda: f"internal error {incident} in " in _workerd_log(faulty), "the error's message logged under its id")
    logged = [line for line in _workerd_log(faulty).splitlines() if incident in line]
    assert "dev fault" in logged[0], logged
    r = run_inprocess("transcript", "show", name, "--json")
    assert r.status == 0 and [row["seq"] for row in json.loads(r.out)] == [first], r.err  # nothing was written
