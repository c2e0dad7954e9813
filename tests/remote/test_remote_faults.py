"""The remote path when things go wrong: tokens, URLs, dropped connections, slow and dead Workers."""

import json
import os
import signal
import time

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import ALICE_TOKEN, start_dev, unique
from tests.remote.proxy import Proxy


@pytest.fixture
def remote(remote_dev, monkeypatch):
    monkeypatch.setenv("DURABLE_USER", "alice")
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    return remote_dev


def rows(name):
    r = run_inprocess("transcript", "show", name, "--json")
    assert r.status == 0, r.err
    return r.json()


def test_user_token_acts_as_its_user_only(remote, monkeypatch):
    name = unique("mine")
    assert run_inprocess("session", "create", name).status == 0
    r = run_inprocess("--as", "bob", "session", "show", name)
    assert r.status == 5 and "acts as user \"alice\"" in r.err
    monkeypatch.setenv("DURABLE_USER", "bob")  # any means of naming another user
    assert run_inprocess("session", "show", name).status == 5
    monkeypatch.delenv("DURABLE_USER")  # no user named: the token's user acts
    assert run_inprocess("session", "show", name, "--json").json()["owner"] == "alice"


def test_wrong_token_is_exit_5_and_changes_nothing(remote, monkeypatch):
    name = unique("guarded")
    monkeypatch.setenv("DURABLE_TOKEN", "not-a-token")
    r = run_inprocess("transcript", "append", name, "--role", "user", "x", "--json")
    assert r.status == 5
    assert json.loads(r.err)["error"]["code"] == "permission_denied"
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    assert run_inprocess("session", "show", name).status == 3


def test_tampered_url_is_refused(remote):
    r = run_inprocess("--remote", remote.url + "/elsewhere", "session", "show", "x")
    assert r.status == 2 and "no such endpoint" in r.err
    r = run_inprocess("--remote", "ftp://example", "session", "show", "x")
    assert r.status == 2


def test_dropped_connection_after_a_write_is_retried_and_applied_once(remote, monkeypatch):
    name = unique("dropped")
    proxy = Proxy(remote.url, "drop_once")
    try:
        r = run_inprocess("--remote", proxy.url, "transcript", "append", name, "--role", "user", "once", "--json")
    finally:
        proxy.close()
    assert proxy.dropped == 1 and proxy.requests >= 2  # the answer was lost, the retry was answered
    assert r.status == 0, r.err
    assert r.json()["seq"] == 1
    assert [row["content"] for row in rows(name)] == ["once"]


def test_slow_worker_times_out_with_outcome_unknown(remote, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text('[remote]\ntimeout = "1s"\n')
    monkeypatch.setenv("DURABLE_CONFIG", str(config))
    proxy = Proxy(remote.url, "hold")
    try:
        start = time.monotonic()
        r = run_inprocess("--remote", proxy.url, "session", "prompt", unique("slow"), "hi", "--json")
        elapsed = time.monotonic() - start
        read = run_inprocess("--remote", proxy.url, "session", "show", "x")
    finally:
        proxy.close()
    assert r.status == 7
    error = json.loads(r.err)["error"]
    assert error["code"] == "outcome_unknown" and "request id" in error["message"]
    assert elapsed < 5
    assert read.status == 7 and "did not answer" in read.err


def test_workerd_killed_then_restarted_keeps_what_was_committed(tmp_path_factory, monkeypatch):
    dev = start_dev(tmp_path_factory)
    monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
    name = unique("survivor")
    try:
        monkeypatch.setenv("DURABLE_REMOTE", dev.url)
        assert run_inprocess("transcript", "append", name, "--role", "user", "kept").status == 0
        os.kill(dev.workerd_pid(), signal.SIGKILL)
        r = run_inprocess("transcript", "append", name, "--role", "user", "lost", "--json")
        assert r.status == 7
        assert json.loads(r.err)["error"]["code"] in ("storage", "outcome_unknown")
    finally:
        dev.stop()
    again = type(dev)(dev.storage)  # the same storage (and secret): the same objects
    try:
        monkeypatch.setenv("DURABLE_REMOTE", again.url)
        monkeypatch.setenv("DURABLE_TOKEN", again.admin_token)
        assert [row["content"] for row in rows(name)] == ["kept"]
    finally:
        assert again.stop() == 0


def test_remote_dev_without_workerd_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("DURABLE_WORKERD", str(tmp_path / "no-workerd"))
    r = run_inprocess("remote", "dev")
    assert r.status == 2 and "npm ci" in r.err and r.out == ""


def test_remote_dev_stops_workerd_on_sigterm(tmp_path_factory):
    dev = start_dev(tmp_path_factory)
    pid = dev.workerd_pid()
    assert dev.stop() == 0
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_a_write_is_in_flight_waits_for_its_answer(remote, sig):
    """SPEC §13: once a write request has been sent, SIGINT/SIGTERM wait for its answer, so 130/143
    still mean nothing changed. The proxy lets the Worker commit and holds the answer back."""
    import subprocess
    import sys

    name = unique("inflight")
    proxy = Proxy(remote.url, "delay", delay=1.5)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "--remote", proxy.url, "transcript", "append", name,
                                 "--role", "user", "committed before the signal"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while proxy.answered == 0 and time.monotonic() < deadline:  # the Worker has answered: committed
            time.sleep(0.01)
        assert proxy.answered == 1
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proxy.close()
    assert proc.returncode == 0, (proc.returncode, err)
    assert out.strip() == "1" and "Traceback" not in err
    assert [r["content"] for r in rows(name)] == ["committed before the signal"]


def test_a_client_cannot_raise_the_workers_turn_ceiling(remote_dev, monkeypatch):
    """The client sends its transcript.max_turn_bytes with each call; the Worker never goes above its own
    ceiling (DURABLE_MAX_TURN_BYTES, default 2 MiB as SPEC §3), so a client configured higher is refused."""
    from tests.conftest import run_inprocess
    from tests.remote.conftest import unique

    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", remote_dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", unique("raiser"))
    assert run_inprocess("config", "set", "transcript.max_turn_bytes", str(64 * 1024 * 1024)).status == 0
    big = "x" * (2 * 1024 * 1024 + 1)
    r = run_inprocess("transcript", "append", "big", "--role", "user", "-", input=big)
    assert r.status == 2 and "over the limit of 2097152" in r.err, r.err
    assert run_inprocess("session", "show", "big").status == 3  # nothing stored, not even the object
    r = run_inprocess("transcript", "append", "big", "--role", "user", "-", input="x" * 1000)
    assert r.status == 0, r.err
