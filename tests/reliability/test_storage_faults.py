"""Storage faults: file size limit, full disk, read-only directory, lost or unreadable secret.

Each fault is exit 7 with a clear one-line message, and the data written before it is intact.
"""

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

CMD = [sys.executable, "-m", "durable_cli"]


def run(args, env, preexec=None, user=None, input=None):
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if user == "nobody" else []
    proc = subprocess.run(prefix + CMD + args, env=env, capture_output=True, text=True, preexec_fn=preexec, input=input, timeout=60)
    return proc


@pytest.fixture
def world_home(monkeypatch):
    """A data directory on a path an unprivileged user can reach."""
    top = tempfile.mkdtemp(dir="/tmp")
    os.chmod(top, 0o755)
    home = os.path.join(top, "home")
    monkeypatch.setenv("DURABLE_HOME", home)
    monkeypatch.setenv("DURABLE_CONFIG", os.path.join(top, "config.toml"))
    yield home
    subprocess.run(["chmod", "-R", "u+rwX", top])
    shutil.rmtree(top, ignore_errors=True)


def one_line_error(proc):
    lines = proc.stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("durable: error: ") and "Traceback" not in proc.stderr


def test_file_size_limit(durable, home):
    for i in range(5):
        durable("transcript", "append", "big", "--role", "user", f"before {i}")
    size = max(os.path.getsize(p) for p in home.rglob("*.sqlite3"))

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 8192, size + 8192))

    proc = run(["transcript", "append", "big", "--role", "user", "-"], dict(os.environ), preexec=limit, input="x" * 200_000)
    assert proc.returncode == 7, proc.stderr
    assert one_line_error(proc) and ("limit" in proc.stderr or "I/O" in proc.stderr)
    rows = durable("transcript", "show", "big", "--json").json()
    assert [r["content"] for r in rows] == [f"before {i}" for i in range(5)]
    assert durable("doctor").status == 0


def test_disk_full(tmp_path, monkeypatch, durable):
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True, text=True)
    if mounted.returncode != 0:  # the machine, not durable: without CAP_SYS_ADMIN there is no small disk to fill
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.strip()}); disk-full is covered where root may mount")
    try:
        monkeypatch.setenv("DURABLE_HOME", str(mount / "home"))
        assert durable("transcript", "append", "d", "--role", "user", "first words").status == 0
        failed = None
        for i in range(40):
            r = run(["transcript", "append", "d", "--role", "user", "-"], dict(os.environ), input=f"{i} " + "y" * 30_000)
            if r.returncode != 0:
                failed = r
                break
        assert failed is not None, "the disk never filled"
        assert failed.returncode == 7 and one_line_error(failed) and "full" in failed.stderr, failed.stderr
        rows = durable("transcript", "show", "d", "--json").json()
        assert rows[0]["content"] == "first words" and len(rows) == i + 1  # the failed append left nothing
        assert [r["seq"] for r in rows] == list(range(1, i + 2))
    finally:
        subprocess.run(["umount", "-l", str(mount)])


def test_read_only_data_directory(durable, world_home):
    durable("transcript", "append", "ro", "--role", "user", "kept")
    subprocess.run(["chown", "-R", "65534:65534", world_home], check=True)
    env = dict(os.environ, DURABLE_USER="alice")
    assert run(["transcript", "show", "ro", "--json"], env, user="nobody").returncode == 0  # sanity: nobody owns it
    subprocess.run(["chmod", "-R", "a-w", world_home], check=True)
    proc = run(["transcript", "append", "ro", "--role", "user", "lost?"], env, user="nobody")
    assert proc.returncode == 7 and one_line_error(proc), proc.stderr
    assert "read-only" in proc.stderr or "cannot write" in proc.stderr or "permission" in proc.stderr.lower()
    proc = run(["session", "create", "new"], env, user="nobody")
    assert proc.returncode == 7 and one_line_error(proc)
    subprocess.run(["chmod", "-R", "u+w", world_home], check=True)
    assert [r["content"] for r in durable("transcript", "show", "ro", "--json").json()] == ["kept"]


def test_unreadable_secret(durable, world_home):
    durable("session", "create", "s")
    subprocess.run(["chown", "-R", "65534:65534", world_home], check=True)
    os.chown(os.path.join(world_home, "secret.key"), 0, 0)  # root's 0600 file: nobody cannot read it
    proc = run(["session", "show", "s"], dict(os.environ), user="nobody")
    assert proc.returncode == 7 and one_line_error(proc) and "secret" in proc.stderr and "cannot be resolved" in proc.stderr
    assert os.stat(os.path.join(world_home, "secret.key")).st_uid == 0  # not replaced


def test_lost_secret_never_replaced(durable, home):
    durable("transcript", "append", "s", "--role", "user", "x")
    os.unlink(home / "secret.key")
    for args in (["session", "create", "t"], ["transcript", "append", "u", "--role", "user", "x"], ["session", "show", "s"], ["memory", "set", "k", "v"]):
        r = durable(*args)
        assert r.status == 7 and "secret" in r.err, args
    assert not (home / "secret.key").exists()
    r = durable("doctor", "--json")
    assert r.status == 7 and r.json()["problems"][0]["kind"] == "secret"


def test_secret_race_publishes_one_secret(tmp_path, monkeypatch):
    """Many first-time processes at once: exactly one secret, and every object addressable by all."""
    monkeypatch.setenv("DURABLE_HOME", str(tmp_path / "race"))
    procs = [subprocess.Popen(CMD + ["transcript", "append", "same", "--role", "user", f"p{i}"]) for i in range(6)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    assert len(list((tmp_path / "race" / "objects").rglob("*.sqlite3"))) == 1
    assert not [p for p in (tmp_path / "race").iterdir() if p.name.endswith(".tmp")]
