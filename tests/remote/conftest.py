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

    def __init__(self, storage, *extra):
        self.storage = str(storage)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", self.storage,
             "--token", f"{ALICE_TOKEN}=alice", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        )
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


def start_dev(tmp_path_factory, *extra) -> Dev:
    reason = _missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"remote tests cannot run under CI: {reason}")
        pytest.skip(reason)
    return Dev(tmp_path_factory.mktemp("remote-storage"), *extra)


@pytest.fixture(scope="module")
def remote_dev(tmp_path_factory):
    dev = start_dev(tmp_path_factory)
    yield dev
    dev.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{time.time_ns()}"
