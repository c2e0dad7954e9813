"""Static checks in the test suite (README's test command and .ci/run run them): ruff over the Python tree
(config in pyproject.toml) and `tsc --noEmit` over the Worker. mypy runs in .ci/run
(scripts/check_types.py, a baseline), node's test runner in tests/test_vectors.py."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

WORKER = os.path.join(ROOT, "worker")
IN_CI = os.environ.get("DURABLE_CI") == "1"


def _ruff():
    try:
        import ruff  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def test_ruff_check_passes():
    command = _ruff()
    if command is None:
        if IN_CI:
            pytest.fail("ruff is a test dependency: pip install -e '.[test]'")
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    proc = subprocess.run(command + ["check", "durable_cli", "tests", "scripts", "examples", "bench"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_worker_typechecks():
    tsc = os.path.join(WORKER, "node_modules", ".bin", "tsc")
    if shutil.which("node") is None or not os.path.exists(tsc):
        if IN_CI:
            pytest.fail("node and worker/node_modules are needed (cd worker && npm ci)")
        pytest.skip("node and worker/node_modules are needed (cd worker && npm ci)")
    proc = subprocess.run([tsc, "--noEmit"], cwd=WORKER, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
