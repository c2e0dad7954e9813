"""The committed Worker bundle (durable_cli/remote/worker.js, package data of the wheel: docs/reference/remote.md §13) is what
`npm run build` makes from worker/src today, for the workerd version worker/package-lock.json pins, as the
man pages are what scripts/gen_man.py makes. After a change to worker/src: `npm run build` in worker/."""

import json
import os
import subprocess

import pytest

from tests.conftest import ROOT

WORKER = os.path.join(ROOT, "worker")
BUNDLE = os.path.join(ROOT, "durable_cli", "remote", "worker.js")


def test_the_committed_bundle_is_current(tmp_path):
    esbuild = os.path.join(WORKER, "node_modules", ".bin", "esbuild")
    if not os.path.exists(esbuild):
        if os.environ.get("CI") == "true":
            pytest.fail("esbuild is missing under CI (npm ci in worker/)")
        pytest.skip("esbuild is missing (npm ci in worker/)")
    with open(os.path.join(WORKER, "package.json"), encoding="utf-8") as f:
        build = json.load(f)["scripts"]["build"]
    command = build.split(" && ")[0].replace("--outfile=../durable_cli/remote/worker.js", f"--outfile={tmp_path / 'worker.js'}")
    assert str(tmp_path) in command
    subprocess.run(command.replace("esbuild ", f"{esbuild} ", 1), shell=True, cwd=WORKER, check=True)
    with open(BUNDLE, "rb") as a, open(tmp_path / "worker.js", "rb") as b:
        assert a.read() == b.read(), "durable_cli/remote/worker.js is stale: run 'npm run build' in worker/ and commit it"
    with open(os.path.join(WORKER, "package-lock.json"), encoding="utf-8") as f:
        pinned = json.load(f)["packages"]["node_modules/workerd"]["version"]
    with open(os.path.join(ROOT, "durable_cli", "remote", "worker.json"), encoding="utf-8") as f:
        assert json.load(f) == {"workerd": pinned}
