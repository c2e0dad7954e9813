"""A data directory the user may read but not write: reads work, writes are exit 7 without a traceback.

Root ignores file modes, so the commands run as nobody (setpriv) on a data directory owned by root
with modes a+rX: nobody can read everything there and write nothing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.helpers import file_stats

NOBODY = 65534


def _can_drop_privileges():
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


pytestmark = pytest.mark.skipif(not _can_drop_privileges(), reason="needs root and setpriv to run a command as nobody")


@pytest.fixture
def shared_home(monkeypatch):
    """A data directory under a path nobody can traverse (pytest's tmp_path is 0700 root)."""
    base = tempfile.mkdtemp(prefix="durable-ro-")
    os.chmod(base, 0o755)
    home = os.path.join(base, "home")
    monkeypatch.setenv("DURABLE_HOME", home)
    monkeypatch.setenv("DURABLE_CONFIG", os.path.join(base, "config.toml"))
    yield home
    shutil.rmtree(base)


def readable_by_all(root):
    for base, dirs, files in os.walk(root):
        os.chmod(base, 0o755)
        for name in files:
            os.chmod(os.path.join(base, name), 0o644)


def as_nobody(*args):
    proc = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-m", "durable_cli", *args],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, HOME="/nonexistent"),
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_reads_work_on_a_data_directory_nobody_can_write(shared_home, durable):
    for i in range(3):
        assert durable("transcript", "append", "s", "--role", "user", f"turn {i}").status == 0
    assert durable("session", "prompt", "s", "queued work").status == 0
    assert durable("--tenant", "acme", "transcript", "append", "t", "--role", "user", "hi").status == 0
    readable_by_all(shared_home)
    before = file_stats(shared_home)

    status, out, err = as_nobody("session", "show", "s", "--json")
    assert status == 0, err
    assert json.loads(out)["turns"] == 3
    status, out, err = as_nobody("transcript", "show", "s", "--json")
    assert status == 0, err
    assert [row["content"] for row in json.loads(out)] == ["turn 0", "turn 1", "turn 2"]
    status, out, err = as_nobody("transcript", "recent", "s", "--json")
    assert status == 0, err
    status, out, err = as_nobody("ls", "--json")
    assert status == 0, err
    assert sorted(row["name"] for row in json.loads(out)) == ["s", "t"]
    status, out, err = as_nobody("session", "queue", "s", "--json")
    assert status == 0, err
    status, out, err = as_nobody("--tenant", "acme", "session", "show", "t", "--json")
    assert status == 0, err

    for args in (["transcript", "append", "s", "--role", "user", "more"], ["session", "create", "new"],
                 ["session", "title", "s", "x"]):
        status, out, err = as_nobody(*args)
        assert status == 7, (args, status, err)
        assert "Traceback" not in err and err.startswith("durable: error: ") and len(err.splitlines()) == 1, err
    assert file_stats(shared_home) == before


LEAVE_WAL = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA wal_autocheckpoint=0")
db.execute("UPDATE turns SET content = 'only in the WAL'")
os._exit(0)  # killed: the WAL and -shm stay, with a committed write not yet in the file
"""


def test_a_committed_write_still_in_the_wal_is_read_too(shared_home, durable):
    assert durable("transcript", "append", "s", "--role", "user", "first").status == 0
    object_id = durable("session", "show", "s", "--json").json()["id"]
    path = os.path.join(shared_home, "objects", object_id[:2], object_id + ".sqlite3")
    subprocess.run([sys.executable, "-c", LEAVE_WAL, path], check=True)
    assert os.path.getsize(path + "-wal") > 0
    readable_by_all(shared_home)
    status, out, err = as_nobody("transcript", "show", "s", "--json")
    assert status == 0, err
    assert json.loads(out)[0]["content"] == "only in the WAL"
    os.unlink(path + "-shm")
    status, out, err = as_nobody("transcript", "show", "s", "--json")
    assert status == 7 and "WAL" in err and "Traceback" not in err
