"""Every test gets its own data directory and config file; CLI helpers call the real entry point."""

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Result:
    status: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)

    def lines(self):
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A fresh DURABLE_HOME (and config file) per test; no inherited identity."""
    data = tmp_path / "home"
    monkeypatch.setenv("DURABLE_HOME", str(data))
    monkeypatch.setenv("DURABLE_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("DURABLE_USER", "alice")
    for var in ("DURABLE_TENANT", "DURABLE_LOCK_TIMEOUT", "DURABLE_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    return data


def run_inprocess(*args, input=None, monkeypatch=None):
    """Run `durable ARGS` in this process (fast; freezegun works); returns a Result."""
    from durable_cli.cli import run

    stdin = io.TextIOWrapper(io.BytesIO(input.encode() if isinstance(input, str) else (input or b"")), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        status = run([str(a) for a in args])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Result(status, out.getvalue(), err.getvalue())


@pytest.fixture
def durable():
    return run_inprocess


def run_process(*args, input=None, env=None, timeout=60):
    """Run the installed console script in a real process."""
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-m", "durable_cli", *[str(a) for a in args]],
        input=input.encode() if isinstance(input, str) else input,
        capture_output=True, env=full_env, timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def durable_proc():
    return run_process
