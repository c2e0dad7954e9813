"""docs/reference/sessions.md §5.3 "a process killed after the commit and before the delivery loses nothing": `session finish`
with a hook, SIGKILLed by strace at one syscall of its run (`-e inject=SET:signal=KILL:when=N`), then a later `sweep`:
the outcome is delivered, once per webhook-id, signed (the Standard Webhooks reference library checks it), whatever the
syscall the kill landed on. A kill before the commit leaves the prompt processing (a clean retry finishes it). The
suite kills at the delivery's socket() and at its connect(); `pytest -m soak` walks every write, sync, socket and
connect of the run, the outcome's commit and the claim's included."""

import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
from freezegun import freeze_time

from tests.conftest import run_inprocess as durable
from tests.helpers import Receiver
from tests.reliability.stats import count

standardwebhooks = pytest.importorskip("standardwebhooks")
pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")

CMD = [sys.executable, "-m", "durable_cli"]
WALKED = "fdatasync,fsync,write,pwrite64,socket,connect"


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _ready(name, receiver) -> str:
    """Session NAME with a hook to RECEIVER and a processing prompt 1; the hook's secret."""
    durable("session", "create", name)
    secret = durable("session", "hook", name, "--url", receiver.url, "--json").json()["secret"]
    durable("session", "prompt", name, "x")
    durable("session", "next", name)
    return secret


def _finish_under_strace(home, name, trace, inject=None):
    """`session finish NAME 1` under strace; (killed, the strace log's lines)."""
    log = home.parent / f"strace-{name}.log"
    args = ["strace", "-f", "-qq", "-o", str(log), "-e", f"trace={trace}"]
    if inject is not None:
        args += ["-e", f"inject={inject}"]
    subprocess.run([*args, *CMD, "session", "finish", name, "1", "--reply", "ok"], env=dict(os.environ),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    text = log.read_text()
    return "killed by SIGKILL" in text, text.splitlines()


def _delivered_once(name, receiver, secret):
    """After the kill: a clean retry when it never committed, then a sweep past any claim's hold: the one delivery
    of the outcome arrived, every attempt with the same webhook-id and a valid signature."""
    if durable("session", "queue", name, "--json").json()[0]["status"] == "processing":
        assert durable("session", "finish", name, "1", "--reply", "ok").status == 0
        outcome = "killed before its commit"
    else:
        outcome = "killed after its commit"
    with freeze_time(datetime.now(timezone.utc) + timedelta(seconds=11)):  # past a claim's 10 s hold
        assert durable("sweep").status == 0
    [d] = durable("session", "deliveries", name, "--json").json()
    assert d["status"] == "delivered", d
    assert {h["webhook-id"] for h, _ in receiver.requests} == {d["webhook_id"]}  # at least once, one id
    wh = standardwebhooks.Webhook(secret)
    assert all(wh.verify(body, headers)["data"]["prompt_id"] == 1 for headers, body in receiver.requests)
    return outcome


def _point(home, receiver, n, syscall):
    name = f"k-{syscall}-{n}".replace(",", "_")
    receiver.requests.clear()
    secret = _ready(name, receiver)
    killed, _ = _finish_under_strace(home, name, syscall, f"{syscall}:signal=KILL:when={n}")
    outcome = _delivered_once(name, receiver, secret) if killed else "finished first"
    count("finish with a hook", outcome)
    return killed


def test_a_finish_killed_at_its_deliverys_socket_or_connect_loses_nothing(home, receiver):
    # after the outcome's commit, its stdout and the claim's commit: no socket of any kind is made before the commit
    for syscall in ("socket", "connect"):
        assert _point(home, receiver, 1, syscall), f"strace did not kill the finish at its first {syscall}"


@pytest.mark.soak
def test_a_kill_at_each_write_sync_and_connect_of_a_finish_loses_nothing(home, receiver):
    n = 1
    while _point(home, receiver, n, WALKED):  # until the finish runs to its end before the Nth call
        n += 1
    assert n > 10
