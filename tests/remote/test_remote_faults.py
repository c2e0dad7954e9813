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
    assert r.status == 2 and "DURABLE_WORKERD" in r.err and r.out == ""


def test_remote_dev_stops_workerd_on_sigterm(tmp_path_factory):
    dev = start_dev(tmp_path_factory)
    pid = dev.workerd_pid()
    assert dev.stop() == 0
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_a_write_is_in_flight_waits_for_its_answer(remote, sig):
    """docs/reference/remote.md §13: once a write request has been sent, SIGINT/SIGTERM wait for its answer, so 130/143
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
    ceiling (DURABLE_MAX_TURN_BYTES, default 2 MiB as docs/reference/storage.md §3), so a client configured higher is refused."""
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


def test_a_queue_cap_past_2_to_the_53_is_the_clients_as_locally(remote_dev, monkeypatch):
    """queue.max_unfinished = 2^63 - 1 (no cap, as the file store reads it): the Worker fell back to the default
    (10 unfinished prompts, a queue "full" where the file store took any number) for any value past 2^53."""
    from tests.conftest import run_inprocess
    from tests.remote.conftest import unique

    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", remote_dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", unique("queuer"))
    assert run_inprocess("config", "set", "queue.max_unfinished", str(2 ** 63 - 1)).status == 0
    for i in range(11):
        r = run_inprocess("session", "prompt", "q", f"prompt {i}")
        assert r.status == 0, (i, r.err)


@pytest.mark.parametrize("moment", ["request_held", "answer_held", "racing", "answer_held_no_restart"])
def test_workerd_killed_while_a_write_is_in_flight(moment, tmp_path_factory, tmp_path, monkeypatch):
    """SIGKILL of workerd with a write on its way, then workerd restarted on the same storage and port.
    request_held: the request had not reached the Worker (the proxy held it; it is delivered to the new
    workerd). answer_held: the Worker committed it and died before its answer left (the client retries
    with the same request id; the restarted object answers it from its request table). racing: the kill
    comes just as the request is forwarded (committed or not). answer_held_no_restart: as answer_held,
    but workerd comes back only after remote.timeout ran out (exit 7 outcome_unknown). Whatever the moment, the client answers
    exit 0 with the row's seq, or exit 7 saying so; the row is then there once, or (exit 7 only) not
    at all: never twice, never a success without it."""
    import subprocess
    import sys

    from durable_cli.remote.dev import free_port

    port = str(free_port())
    dev = start_dev(tmp_path_factory, "--port", port)
    config = tmp_path / "config.toml"
    config.write_text('[remote]\ntimeout = "%s"\n' % ("2s" if moment == "answer_held_no_restart" else "20s"))
    monkeypatch.setenv("DURABLE_CONFIG", str(config))
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)  # a user token: the same after the restart
    monkeypatch.setenv("DURABLE_REMOTE", dev.url)
    name = unique("inflight-kill")
    assert run_inprocess("session", "create", name).status == 0  # the object exists: only the row is at stake
    proxy = Proxy(dev.url, {"request_held": "hold_request", "answer_held": "hold_answer", "racing": "pass",
                            "answer_held_no_restart": "hold_answer"}[moment])
    again = None
    try:
        proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "--remote", proxy.url, "transcript", "append", name,
                                 "--role", "user", "the only row", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not (proxy.requests if moment == "racing" else proxy.held.is_set()) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert proxy.requests, "the write never came"
        workerd = dev.workerd_pid()
        os.kill(workerd, signal.SIGKILL)
        dev.stop()  # `remote dev` ends once its workerd is gone
        if moment.startswith("answer_held"):
            proxy.go.set()  # the client's connection closes without the answer; its retries find no Worker
        if moment == "answer_held_no_restart":
            out, err = proc.communicate(timeout=60)
        again = type(dev)(dev.storage, "--port", port)  # the same storage (objects, secret) and address
        proxy.go.set()
        if moment != "answer_held_no_restart":
            out, err = proc.communicate(timeout=60)
    finally:
        proxy.close()
    try:
        rows_now = [row["content"] for row in rows(name)]
    finally:
        assert again.stop() == 0
    assert "Traceback" not in err
    if proc.returncode == 0:
        assert json.loads(out)["seq"] == 1 and rows_now == ["the only row"]
    else:
        assert proc.returncode == 7, err
        assert json.loads(err)["error"]["code"] in ("outcome_unknown", "storage"), err
        assert rows_now in ([], ["the only row"])
    if moment == "request_held":  # it never reached the dead Worker: the new one applies it
        assert proc.returncode == 0, err
    if moment.startswith("answer_held"):  # committed before the kill: never lost
        assert rows_now == ["the only row"]
    if moment == "answer_held_no_restart":  # and the client says it cannot know, naming the request id
        assert proc.returncode == 7 and json.loads(err)["error"]["code"] == "outcome_unknown", err
        assert "request id" in json.loads(err)["error"]["message"]
