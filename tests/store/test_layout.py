"""Modes, symlinks and names: what the data directory looks like on disk."""

import os
import stat
import subprocess
import sys


def walk(root):
    for base, dirs, files in os.walk(root):
        for d in dirs:
            yield os.path.join(base, d)
        for f in files:
            yield os.path.join(base, f)


def test_modes_under_umask_000(home, durable_proc):
    code = "import os, sys; os.umask(0); from durable_cli.cli.app import main; sys.argv=['durable']+sys.argv[1:]; main()"
    for args in (["transcript", "append", "m", "--role", "user", "hi"], ["memory", "set", "k", "v"]):
        assert subprocess.run([sys.executable, "-c", code, *args]).returncode == 0
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    seen = 0
    for path in walk(home):
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        assert mode == (0o700 if os.path.isdir(path) else 0o600), (path, oct(mode))
        seen += 1
    assert seen >= 5


def test_symlinked_home_is_refused(tmp_path, durable, monkeypatch):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setenv("DURABLE_HOME", str(link))
    r = durable("transcript", "append", "x", "--role", "user", "hi")
    assert r.status == 7 and "symlink" in r.err
    assert os.listdir(real) == []


def test_symlinked_object_and_lock_are_refused(home, durable, tmp_path):
    durable("transcript", "append", "x", "--role", "user", "hi")
    object_id = durable("session", "show", "x", "--json").json()["id"]
    shard = home / "objects" / object_id[:2]
    target = tmp_path / "elsewhere.sqlite3"
    os.rename(shard / f"{object_id}.sqlite3", target)
    (shard / f"{object_id}.sqlite3").symlink_to(target)
    assert durable("session", "show", "x").status == 7
    os.unlink(shard / f"{object_id}.sqlite3")
    os.rename(target, shard / f"{object_id}.sqlite3")
    os.unlink(shard / f"{object_id}.lock")
    (shard / f"{object_id}.lock").symlink_to(tmp_path / "lock")
    r = durable("session", "show", "x")
    assert r.status == 7 and "symlink" in r.err


def test_no_user_tenant_or_name_in_any_path(home, durable):
    durable("--as", "useralpha", "transcript", "append", "namebeta", "--role", "user", "hi")
    durable("--as", "useralpha", "--tenant", "tenantgamma", "transcript", "append", "namedelta", "--role", "user", "hi")
    durable("--as", "useralpha", "memory", "set", "k", "v")
    for path in walk(home):
        rel = os.path.relpath(path, home)
        for word in ("useralpha", "namebeta", "tenantgamma", "namedelta"):
            assert word not in rel


def test_missing_object_creates_nothing(home, durable):
    durable("session", "create", "exists")
    before = sorted(walk(home))
    for args in (["session", "show", "nope"], ["transcript", "show", "nope"], ["session", "next", "nope"],
                 ["elicit", "list", "nope"], ["ttl", "nope"], ["session", "prompt", "nope", "x", "--no-create"]):
        r = durable(*args)
        assert r.status == 3, (args, r.err)
    assert sorted(walk(home)) == before


def test_read_command_on_empty_home_creates_nothing(home, durable):
    assert durable("session", "show", "x").status == 3
    assert durable("ls", "--json").out.strip() == "[]"
    assert not home.exists()


def test_secret_missing_with_objects_is_exit_7(home, durable):
    durable("session", "create", "x")
    os.unlink(home / "secret.key")
    r = durable("session", "create", "y")
    assert r.status == 7 and "secret" in r.err
    assert not (home / "secret.key").exists()


def test_damaged_secret_is_exit_7(home, durable):
    durable("session", "create", "x")
    (home / "secret.key").write_bytes(b"short")
    assert durable("session", "show", "x").status == 7


def test_newer_schema_is_refused(home, durable):
    import sqlite3

    durable("session", "create", "x")
    object_id = durable("session", "show", "x", "--json").json()["id"]
    db = sqlite3.connect(home / "objects" / object_id[:2] / f"{object_id}.sqlite3")
    db.execute("PRAGMA user_version=99")
    db.close()
    r = durable("session", "show", "x")
    assert r.status == 7 and "newer" in r.err
