"""What a token may learn and hold on real workerd (docs/reference/remote.md §13): a LangGraph thread's tombstone answers only
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


class _Stalled:
    """A WebSocket follower that reads nothing until asked (a raw socket with a small receive buffer, the
    handshake by hand): what a client that never reads leaves the object to hold."""

    def __init__(self, url, tok, name, since):
        import base64
        import socket

        host, port = url[len("http://"):].split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        self.sock.connect((host, int(port)))
        call = {"op": "follow", "scope": "user", "label": "session", "name": name, "tenant": None, "actor": None,
                "args": {"since": since}, "config": {}}
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /v1/follow HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {tok}\r\n"
                           f"x-durable-call: {json.dumps(call)}\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            assert chunk, self.buffer
            self.buffer += chunk
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head

    def _take(self, n):
        while len(self.buffer) < n:
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                raise AssertionError("no close frame after the rows: the object buffered them all") from None
            assert chunk, "the connection ended without a close frame"
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def drain(self):
        """Every message until the close frame: (the seqs of the rows, the close code)."""
        import struct

        self.sock.settimeout(30)
        seqs, message = [], b""
        while True:
            b0, b1 = self._take(2)
            size = b1 & 0x7F
            if size == 126:
                size = struct.unpack(">H", self._take(2))[0]
            elif size == 127:
                size = struct.unpack(">Q", self._take(8))[0]
            payload = self._take(size)
            if b0 & 0x0F == 8:
                self.sock.close()
                return seqs, struct.unpack(">H", payload[:2])[0]
            message += payload
            if b0 & 0x80:
                seqs.append(json.loads(message)["row"]["seq"])
                message = b""


def test_a_follower_that_reads_nothing_is_closed_past_its_backlog_and_resumes_losing_nothing(frank, monkeypatch):
    """Rows of 1.9 MB pushed to followers that do not read: the object buffers at most 4 MiB unsent per socket
    and then closes it with 4003 (it used to hold every row: three such followers and 40 rows grew workerd
    by 230 MB); a `--follow` client stopped meanwhile then prints what it was sent, reconnects from its last
    seq and prints every row exactly once, in order."""
    import signal

    from durable_cli import Store
    from tests.remote.test_remote_follow import Lines

    alice, name = token("alice"), unique("big")
    first = _append(monkeypatch, alice, name, "first")
    stalled = _Stalled(frank.url, alice, name, first)
    proc = _follower(name, alice)
    try:
        lines = Lines(proc)
        assert lines.next()["seq"] == first
        os.kill(proc.pid, signal.SIGSTOP)  # reads nothing from now on
        store = Store(remote=frank.url, token=alice, user="alice")
        seqs = [first]
        with store.open(name) as s:
            for i in range(12):
                seqs.append(s.append(f"{i:02d}" + "x" * 1_900_000, role="user")["seq"])
        store.close()
        sent, code = stalled.drain()
        assert code == 4003, (code, sent)
        assert sent == seqs[1:len(sent) + 1] and len(sent) < 12, sent  # rows in order, then the close, not all 12
        os.kill(proc.pid, signal.SIGCONT)
        assert [lines.next(timeout=60)["seq"] for _ in seqs[1:]] == seqs[1:]  # each once, in order
        tail = _append(monkeypatch, alice, name, "tail")
        assert lines.next()["seq"] == tail and proc.poll() is None  # still following, on a new socket
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()


@pytest.fixture
def limited(tmp_path_factory, monkeypatch):
    """A `remote dev --rate-limit 12` of its own: each token may make 12 requests a minute (one each 5 s)."""
    d = start_dev(tmp_path_factory, "--rate-limit", "12")
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", d.url)
    yield d
    d.stop()


def test_a_token_over_its_rate_is_429_and_the_client_waits_or_exits_8(limited, monkeypatch, tmp_path):
    """Each token (its jti) has DURABLE_RATE_LIMIT requests a minute (one token could drive unlimited requests,
    searches and objects): past it HTTP 429 `rate_limited` with `retry_after`, nothing done, while another token
    of the same user is served; the client waits retry_after within remote.timeout (a write keeps its request
    id: stored once), else exits 8 in one line."""
    name, busy, other = unique("s"), token("alice"), token("alice")
    answers = [post_call(limited.url, busy, {"op": "whoami", "scope": "user"}) for _ in range(12)]
    assert all(status == 200 for status, _ in answers), answers
    for _ in range(3):  # (the bucket refills one request each 5 s meanwhile)
        status, doc = post_call(limited.url, busy, {"op": "whoami", "scope": "user"})
        if status != 200:
            break
    assert status == 429 and doc["error"]["code"] == "rate_limited", doc
    assert 1 <= doc["error"]["retry_after"] <= 5, doc
    assert post_call(limited.url, other, {"op": "whoami", "scope": "user"})[0] == 200  # per token
    config = tmp_path / "config.toml"
    config.write_text('[remote]\ntimeout = "1s"\n')
    monkeypatch.setenv("DURABLE_CONFIG", str(config))
    monkeypatch.setenv("DURABLE_TOKEN", busy)
    r = run_inprocess("transcript", "append", name, "--role", "user", "refused")
    assert r.status == 8 and "rate limit" in r.err and r.err.count("\n") == 1, r.err
    monkeypatch.setenv("DURABLE_TOKEN", other)
    assert run_inprocess("transcript", "show", name).status == 3  # nothing was done
    config.write_text('[remote]\ntimeout = "20s"\n')  # time to wait
    for _ in range(20):  # empty the other token's bucket too
        if post_call(limited.url, other, {"op": "whoami", "scope": "user"})[0] == 429:
            break
    assert _append(monkeypatch, other, name, "waited") == 1
    r = run_inprocess("transcript", "show", name, "--json")
    assert r.status == 0 and [row["content"] for row in json.loads(r.out)] == ["waited"], r.err


def test_remote_dev_takes_a_rate_limit_from_0():
    r = run_inprocess("remote", "dev", "--rate-limit", "-1")
    assert r.status == 2 and "--rate-limit" in r.err and r.err.count("\n") == 1, r.err


def test_a_16_mib_body_goes_to_its_object_unparsed(tmp_path_factory):
    """A body just under the default 16 MiB limit (8 rows of 1.9 MB in one append_many) is committed by a Worker
    whose V8 heap is capped at 40 MB: the Worker reads only its envelope and forwards the bytes, which the object
    parses once (the Worker held it 4-5 times -- chunks, their join, the text, the parsed value, the call's JSON --
    and such a body needed more than 56 MB). A big body is still checked as a small one: strict JSON, each
    argument's type, valid UTF-8 -- HTTP 400, nothing stored."""
    from durable_cli import Store
    from tests.remote.test_remote_fork_parts import _heap_fleet

    fleet = _heap_fleet(tmp_path_factory, 40)
    slot, alice = fleet.free[0], token("alice")
    store = Store(remote=slot.url, token=alice)
    try:
        with store.open("big", create=True) as s:
            seqs = s.append_many([{"role": "user", "content": f"{j} " + "x" * 1_900_000} for j in range(8)], seqs_only=True)
        assert seqs == list(range(1, 9)) and fleet.proc.poll() is None
        row = {"role": "user", "content": "y" * 1_200_000, "tool_calls_json": None, "call_id": None, "name": None,
               "meta_json": None, "data_json": None, "tokens": None}
        call = {"op": "append_many", "scope": "user", "label": "session", "name": "big", "args": {"rows": [row]}}
        crafted = {
            "a row of the wrong type": json.dumps(dict(call, args={"rows": [dict(row, tokens="many")]})).encode(),
            "a duplicate key": json.dumps(call).encode().replace(b'"role": "user"', b'"role": "user", "role": "user"', 1),
            "1e400": json.dumps(dict(call, args={"rows": [dict(row, tokens=1)]})).encode().replace(b'"tokens": 1', b'"tokens": 1e400', 1),
            "invalid UTF-8": json.dumps(call).encode().replace(b"yyyy", b"y\xff\xfey", 1),
            "not JSON": json.dumps(call).encode()[:-2],
        }
        for why, body in crafted.items():
            assert len(body) > 1_000_000
            status, doc = post_call(slot.url, alice, body)
            assert status == 400 and doc["error"]["code"] == "invalid_input", (why, doc)
        with store.open("big") as s:
            assert [r["seq"] for r in s.rows()] == seqs  # nothing stored
    finally:
        store.close()
        fleet.stop()
