"""Live follow on hibernatable WebSockets (docs/reference/remote.md §13 "Live follow"), against a real workerd: one socket per
follower and no polling; rows pushed after each commit; a restart of workerd mid-follow loses and repeats
no row; a socket the object has no mapping for is closed with 4002 and the follower reconnects; the end of
the stream exits 0; `websockets` is imported by --follow --remote only."""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from durable_cli.remote.client import RemoteClient
from tests.conftest import run_inprocess
from tests.remote.conftest import ALICE_TOKEN, start_dev, token


def _start(tmp_path_factory):
    from durable_cli.remote.dev import free_port

    mp = pytest.MonkeyPatch()
    mp.setenv("DURABLE_DEV_FAULTS", "1")
    port = str(free_port())
    d = start_dev(tmp_path_factory, "--port", port)
    d.port = port
    mp.undo()
    return d


@pytest.fixture(scope="module")
def shared_dev(tmp_path_factory):
    d = _start(tmp_path_factory)
    yield d
    d.stop()


@pytest.fixture
def dev(shared_dev, monkeypatch):
    monkeypatch.setenv("DURABLE_REMOTE", shared_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    return shared_dev


@pytest.fixture
def own_dev(tmp_path_factory, monkeypatch):
    d = _start(tmp_path_factory)
    monkeypatch.setenv("DURABLE_REMOTE", d.url)
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    yield d
    d.stop()


def follower(*args):
    return subprocess.Popen([sys.executable, "-m", "durable_cli", "transcript", "show", *args, "--follow", "--jsonl"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))


class Lines:
    def __init__(self, proc):
        self.proc, self.buffer = proc, b""

    def next(self, timeout=20.0) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"no line from the follower within {timeout}s (got {self.buffer!r})"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                assert chunk, f"the follower ended (exit {self.proc.wait()}): {self.proc.stderr.read().decode()}"
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)


def append(text, name="chat"):
    r = run_inprocess("transcript", "append", name, "--role", "user", text, "--json")
    assert r.status == 0, r.err
    return json.loads(r.out)["seq"]


def admin(dev, op, **args):
    client = RemoteClient(dev.url, dev.admin_token, 10)
    try:
        return client.call({"op": op, "args": args, "scope": "index", "actor": None}, write=False)
    finally:
        client.close()


def test_one_socket_pushes_each_row_and_an_idle_follower_sends_no_requests(dev):
    append("first", "idle")
    proc = follower("idle")
    lines = Lines(proc)
    try:
        assert lines.next()["content"] == "first"
        seqs = [append(f"row {i}", "idle") for i in range(3)]
        assert [lines.next()["seq"] for _ in seqs] == seqs
        admin(dev, "served")
        time.sleep(1.0)  # idle: a polling follower would have made ~10 requests by now
        assert admin(dev, "served") == 1  # only this question itself
        assert run_inprocess("session", "archive", "idle").status == 0  # the end of the stream: exit 0
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_follow_since_the_largest_seq_waits_as_locally(dev):
    """`--follow --since N` takes any N up to 2^63 - 1 as the file store does (the object refused one past 2^53:
    exit 2 "since must be a non-negative integer"); no row is newer, and the end of the stream is exit 0."""
    append("first", "far")
    proc = follower("far", "--since", "9223372036854775807")
    try:
        time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read()
        assert run_inprocess("session", "archive", "far").status == 0
        assert proc.wait(timeout=20) == 0 and proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_workerd_restart_mid_follow_loses_and_repeats_no_row(own_dev):
    dev = own_dev
    append("first")
    proc = follower("chat")
    lines = Lines(proc)
    got = [lines.next()["seq"]]
    written = list(got)
    again = None
    try:
        for i in range(3):
            written.append(append(f"before {i}"))
        os.kill(dev.workerd_pid(), signal.SIGKILL)  # the sockets drop (1006): the follower reconnects
        dev.stop()
        again = type(dev)(dev.storage, "--port", dev.port)  # the same storage and address
        for i in range(3):
            written.append(append(f"after {i}"))
        while len(got) < len(written):
            got.append(lines.next()["seq"])
        assert got == written  # each row once, in order, across the restart
        assert run_inprocess("delete", "chat", "--yes").status == 0  # deleted: the stream ends, exit 0
        assert proc.wait(timeout=20) == 0
        assert lines.buffer == b"" and proc.stdout.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if again is not None:
            again.stop()


def test_a_socket_without_a_mapping_is_closed_with_4002_and_the_follower_reconnects(dev):
    from durable_cli import Store

    append("first", "lost")
    proc = follower("lost")
    lines = Lines(proc)
    try:
        assert lines.next()["content"] == "first"
        store = Store()
        with store.open("lost") as session:
            session._call("dev_forget_followers", write=False)  # the object loses the mapping (a dev hook)
        store.close()
        seqs = [append(f"row {i}", "lost") for i in range(3)]  # the first push finds no mapping: 4002, reconnect
        assert [lines.next()["seq"] for _ in seqs] == seqs
        assert run_inprocess("session", "cancel", "lost").status == 0
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_follower_no_longer_visible_ends_with_exit_0(dev, monkeypatch):
    run = lambda *a: run_inprocess("--tenant", "acme", *a)
    assert run("session", "create", "team").status == 0
    assert run("session", "invite", "team", "bob").status == 0
    assert run("transcript", "append", "team", "--role", "user", "hello").status == 0
    env = dict(os.environ, DURABLE_TOKEN=token("bob"), DURABLE_USER="bob")
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "--tenant", "acme", "transcript", "show", "team", "--follow",
                             "--jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert Lines(proc).next()["content"] == "hello"  # following
        monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
        assert run_inprocess("forget", "bob", "--yes").status == 0  # bob leaves the tenant object
        assert proc.wait(timeout=20) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


PROBE = """
import sys
from durable_cli.cli.app import run
status = run(sys.argv[1:])
print(status, 'websockets' in sys.modules)
"""


def test_only_follow_imports_websockets(dev):
    append("first", "probe")

    def probe(*args):
        out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=dict(os.environ)).stdout
        return out.strip().splitlines()[-1]

    for args in (["transcript", "show", "probe"], ["transcript", "append", "probe", "--role", "user", "x"], ["ls"],
                 ["session", "show", "probe"], ["transcript", "recent", "probe"]):
        assert probe(*args) == "0 False", args


def test_a_worker_that_does_not_come_back_is_exit_7_after_remote_timeout(own_dev, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text('[remote]\ntimeout = "2s"\n')
    monkeypatch.setenv("DURABLE_CONFIG", str(config))
    append("first", "gone")
    proc = follower("gone")
    lines = Lines(proc)
    try:
        assert lines.next()["content"] == "first"
        os.kill(own_dev.workerd_pid(), signal.SIGKILL)
        own_dev.stop()
        started = time.monotonic()
        assert proc.wait(timeout=30) == 7
        assert time.monotonic() - started < 10
        err = json.loads(proc.stderr.read())["error"]
        assert err["code"] == "storage" and "reconnect" in err["message"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
