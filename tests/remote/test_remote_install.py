"""`durable remote dev` from any install (docs/reference/remote.md §13): the package carries the built Worker, and workerd is
found in DURABLE_WORKERD, then PATH, then the copy `durable remote install` put in the user cache; without
one, exit 2 naming the command that installs it. Run here from a copy of the package alone (as a wheel
installs it: no worker/ beside it), against real workerd."""

import json
import os
import select
import shutil
import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.remote.conftest import require_workerd

PACKAGE = os.path.join(ROOT, "durable_cli")


@pytest.fixture
def installed(tmp_path):
    """The package as a wheel installs it (site/durable_cli, nothing else), a cache and a PATH of our own."""
    require_workerd()
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "durable_cli", ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "cache"), PATH=str(bin_dir), HOME=str(tmp_path))
    return site, bin_dir, env


def durable(env, *args, **kw):
    return subprocess.run([sys.executable, "-m", "durable_cli", *args], env=env, capture_output=True, text=True, cwd="/", **kw)


def test_remote_dev_from_an_installed_package(installed, tmp_path):
    from durable_cli.remote.dev import workerd_binary, workerd_version

    site, bin_dir, env = installed
    real = workerd_binary()
    r = durable(env, "remote", "dev")
    assert r.returncode == 2 and "durable remote install" in r.stderr and r.stdout == "", r.stderr
    r = durable(env, "remote", "install")  # no npm on PATH
    assert r.returncode == 2 and "npm" in r.stderr
    (bin_dir / "npm").write_text("#!/bin/sh\necho 'npm ERR! 404 Not Found' >&2\nexit 1\n")
    (bin_dir / "npm").chmod(0o755)
    r = durable(env, "remote", "install")
    assert r.returncode == 7 and "404" in r.stderr, r.stderr
    # what `remote install` leaves: workerd at the bundle's version in the user cache
    cached = tmp_path / "cache" / "durable" / "workerd" / workerd_version() / "node_modules" / ".bin"
    cached.mkdir(parents=True)
    os.symlink(real, cached / "workerd")
    storage = tmp_path / "objects"
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", str(storage)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else b""
        assert line, proc.stderr.read1().decode() if proc.poll() is not None else "no line"
        doc = json.loads(line)
        assert set(doc) == {"url", "admin_token", "token_key_file"}
        user = dict(env, DURABLE_REMOTE=doc["url"])
        token = durable(user, "remote", "token", "alice", "--key-file", doc["token_key_file"]).stdout.strip()
        user["DURABLE_TOKEN"] = token
        assert durable(user, "transcript", "append", "demo", "--role", "user", "hello").returncode == 0
        shown = durable(user, "transcript", "show", "demo", "--json")
        assert json.loads(shown.stdout)[0]["content"] == "hello", shown.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    # DURABLE_WORKERD comes first, PATH next
    r = durable(dict(env, DURABLE_WORKERD=str(tmp_path / "none")), "remote", "dev")
    assert r.returncode == 2 and "DURABLE_WORKERD" in r.stderr
