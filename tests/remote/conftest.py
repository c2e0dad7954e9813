"""A real workerd serving the Worker (`durable remote dev`), one per test module, with its own storage.

Skipped with the reason where workerd or the built Worker is absent (`npm ci && npm run build` in
worker/); under CI=true their absence is a failure, so CI always runs both backends.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

WORKER = os.path.join(ROOT, "worker")
ALICE_TOKEN = "token-alice"


def _missing():
    for path in (os.path.join(WORKER, "node_modules", ".bin", "workerd"), os.path.join(WORKER, "dist", "index.js")):
        if not os.path.exists(path):
            return f"{path} is missing (run 'npm ci && npm run build' in worker/)"
    return None


class Dev:
    """One `durable remote dev` process: its URL, admin token, process and storage."""

    def __init__(self, storage, *extra, wait=True):
        self.storage = str(storage)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", self.storage,
             "--token", f"{ALICE_TOKEN}=alice", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        )
        if wait:
            self.wait_ready()

    def wait_ready(self):
        """Block until `remote dev` printed its JSON line (the Worker answers); sets url and admin_token."""
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.stop()
            raise RuntimeError(f"durable remote dev did not start: {self.proc.stderr.read().decode()}")
        doc = json.loads(line)
        self.url, self.admin_token = doc["url"], doc["admin_token"]

    def workerd_pid(self) -> int:
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return int(f.read().split()[0])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def require_workerd():
    """Skip (fail under CI=true) where workerd or the built Worker is absent."""
    reason = _missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"remote tests cannot run under CI: {reason}")
        pytest.skip(reason)


def start_dev(tmp_path_factory, *extra) -> Dev:
    require_workerd()
    return Dev(tmp_path_factory.mktemp("remote-storage"), *extra)


class DevPool:
    """Fresh `remote dev` processes, each with its own new storage (hence its own secret and objects),
    one started ahead so a test taking one waits little: the isolation of a fresh data directory."""

    def __init__(self, tmp_path_factory):
        self.factory = tmp_path_factory
        self.spare = None
        self.stopping = []

    def _spawn(self):
        return Dev(self.factory.mktemp("remote-storage"), wait=False)

    def take(self) -> Dev:
        dev = self.spare or self._spawn()
        self.spare = self._spawn()
        dev.wait_ready()
        return dev

    def release(self, dev: Dev):
        """SIGTERM now; reaped later, so a test does not wait for workerd to exit."""
        if dev.proc.poll() is None:
            dev.proc.send_signal(signal.SIGTERM)
        self.stopping = [d for d in self.stopping if d.proc.poll() is None] + [dev]

    def close(self):
        if self.spare is not None:
            self.stopping.append(self.spare)
            self.spare.wait_ready()
            self.spare.proc.send_signal(signal.SIGTERM)
            self.spare = None
        for dev in self.stopping:
            dev.stop()


@pytest.fixture(scope="module")
def remote_dev(tmp_path_factory):
    dev = start_dev(tmp_path_factory)
    yield dev
    dev.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{time.time_ns()}"
