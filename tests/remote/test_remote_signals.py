"""Interrupted remote waits (docs/reference/remote.md §13): SIGINT/SIGTERM during `session next --wait`, `session prompt --wait`
or `elicit wait` against real workerd exit 130/143 at once, never 9, and nothing changed (was: exit 9
"no pending prompt … after waiting" once the wait ran out, each poll being a guarded write); a take
whose answer was already on its way is printed with exit 0."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, run_inprocess
from tests.remote.conftest import ALICE_TOKEN, unique


@pytest.fixture
def env(remote_dev, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text("[queue]\nmax_unfinished = 1\n")
    values = {"DURABLE_REMOTE": remote_dev.url, "DURABLE_TOKEN": ALICE_TOKEN, "DURABLE_CONFIG": str(config)}
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


def _talks(pid) -> bool:
    """Whether process PID holds a socket (it has connected to the Worker)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                return True
        except OSError:
            continue
    return False


def interrupted(args, sig, env, after=0.5, url=None):
    env = dict(env, DURABLE_REMOTE=url) if url else env
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT, env=dict(os.environ, **env))
    # in its wait: it has talked to the Worker (a socket is open), then polls on (a loaded machine can take
    # seconds to start Python; a signal before the handlers exist would not test the wait)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _talks(proc.pid):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    time.sleep(after)
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, time.monotonic() - sent, out.decode(), err.decode()


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_next_wait_interrupted(env, sig, status):
    name = unique("next")
    assert run_inprocess("session", "create", name).status == 0
    code, took, out, err = interrupted(["session", "next", name, "--wait", "1h", "--json"], sig, env)
    assert (code, out) == (status, ""), err
    assert took < 5
    assert run_inprocess("session", "queue", name, "--json").json() == []


def test_prompt_wait_on_a_full_queue_interrupted(env):
    name = unique("full")
    assert run_inprocess("session", "prompt", name, "first").status == 0
    code, took, out, err = interrupted(["session", "prompt", name, "second", "--wait", "1h"], signal.SIGTERM, env)
    assert (code, out) == (143, ""), err
    assert took < 5
    assert [p["content"] for p in run_inprocess("session", "queue", name, "--json").json()] == ["first"]


def test_elicit_wait_interrupted(env):
    name = unique("ask")
    assert run_inprocess("session", "create", name).status == 0
    doc = run_inprocess("elicit", "ask", name, "--prompt", "Deploy?", "--json")
    assert doc.status == 0, doc.err
    code, took, out, err = interrupted(["elicit", "wait", name, str(doc.json()["id"]), "--wait", "1h"], signal.SIGINT, env)
    assert (code, out) == (130, ""), err
    assert took < 5
    assert json.loads(run_inprocess("elicit", "list", name, "--json").out)[0]["status"] == "pending"


def test_a_take_already_on_its_way_is_printed_with_exit_0(env):
    """The signal comes while the poll that takes the prompt waits for its answer (held 2 s by a proxy):
    the prompt is the caller's, processing, so it is printed and the exit is 0, not 130."""
    from tests.remote.proxy import Proxy

    name = unique("take")
    assert run_inprocess("session", "prompt", name, "work on it").status == 0
    proxy = Proxy(env["DURABLE_REMOTE"], "delay", delay=2.0)
    try:
        code, took, out, err = interrupted(["session", "next", name, "--wait", "1h", "--json"], signal.SIGINT, env,
                                           after=0.3, url=proxy.url)
    finally:
        proxy.close()
    assert code == 0, err
    assert json.loads(out)["status"] == "processing" and json.loads(out)["content"] == "work on it"
    assert run_inprocess("session", "queue", name, "--json").json()[0]["status"] == "processing"
