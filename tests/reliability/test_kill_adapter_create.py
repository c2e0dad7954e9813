"""kill -9 an adapter (openai-agents DurableSession) at its Nth unlink, rename, fsync or fdatasync (strace) while
it makes a session over the remains of a deleted one (its WAL, full of the deleted text, left beside no file
by a removal killed between its unlinks). Afterwards, with `doctor --repair`: every acknowledged add_items
is there, whole and in order, an acknowledged pop took its item, none of the deleted text is back (in the
session or any file), nothing unacknowledged lingers in a file the session does not show, and doctor is
healthy. The fast form kills at the steps that matter most; `pytest -m soak` walks every call."""

import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

CMD = [sys.executable, "-m", "durable_cli"]
ADAPTER = """
import asyncio, sys
from durable_cli.integrations.openai_agents import DurableSession
s = DurableSession("s", home=sys.argv[1], user="alice")
async def main():
    for i in range(int(sys.argv[2])):
        await s.add_items([{"role": "user", "content": f"fresh{i}"}, {"role": "assistant", "content": f"reply{i}"}])
        print(f"ACK {i}", flush=True)
    await s.pop_item()
    print("ACKPOP", flush=True)
asyncio.run(main())
s.close()
"""


def cli(home, *args):
    return subprocess.run(CMD + list(args), capture_output=True, text=True, timeout=120)


def leftover_of_deleted(home, template):
    """TEMPLATE once: a session of five 'oldtoken' rows, deleted, its full WAL put back beside no file."""
    if not template.exists():
        cli(home, "transcript", "append", "other", "--role", "user", "kept")
        rows = "".join(json.dumps({"role": "user", "content": f"oldtoken {i}"}) + "\n" for i in range(5))
        assert subprocess.run(CMD + ["transcript", "append", "s", "--batch", "-"], input=rows, text=True).returncode == 0
        [path] = [p for p in glob.glob(f"{home}/objects/*/*.sqlite3") if b"oldtoken" in open(p, "rb").read()]
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute("UPDATE turns SET content = content || ' again'")
        db.commit()
        wal = open(path + "-wal", "rb").read()
        db.close()
        assert cli(home, "delete", "s", "--yes").returncode == 0
        open(path + "-wal", "wb").write(wal)
        shutil.copytree(home, template, symlinks=True)
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(template, home, symlinks=True)


def killed_at(call, n, home):
    """Run the adapter under strace, SIGKILLed at its Nth CALL: (killed, stdout)."""
    log = f"{home}.strace"
    run = subprocess.run(["strace", "-f", "-qq", "-o", log, "-e", f"trace={call}", "-e", f"inject={call}:signal=KILL:when={n}",
                          sys.executable, "-c", ADAPTER, str(home), "3"], capture_output=True, text=True, timeout=120)
    return "killed by SIGKILL" in open(log).read(), run.stdout


def files_with(home, word: bytes):
    return [os.path.join(b, f) for b, _, fs in os.walk(home) for f in fs if word in open(os.path.join(b, f), "rb").read()]


def check(home, out):
    acks = [int(line.split()[1]) for line in out.splitlines() if line.startswith("ACK ")]
    cli(home, "doctor", "--repair")
    doctor = cli(home, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    shown = cli(home, "transcript", "show", "s", "--json")
    rows = [r["content"] for r in json.loads(shown.stdout)] if shown.returncode == 0 else []
    assert shown.returncode in (0, 3) and (shown.returncode == 0 or not acks), shown.stderr
    made = len([r for r in rows if r.startswith("fresh")])
    whole = [v for i in range(made) for v in (f"fresh{i}", f"reply{i}")]
    assert rows in (whole, whole[:-1]), rows  # whole add_items calls, in order (and perhaps the pop)
    assert not acks or made >= acks[-1] + 1, (acks, rows)
    assert "ACKPOP" not in out or rows == whole[:-1], rows
    assert files_with(home, b"oldtoken") == []
    for i in range(made, 3):  # what the session does not show is in no file
        assert files_with(home, f"fresh{i}".encode()) == [], (i, rows)
    assert [r["content"] for r in json.loads(cli(home, "transcript", "show", "other", "--json").stdout)] == ["kept"]


@pytest.fixture
def walk(home, tmp_path):
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    template = tmp_path / "template"

    def run(call, n):
        leftover_of_deleted(home, template)
        killed, out = killed_at(call, n, home)
        check(home, out)
        return killed
    return run


@pytest.mark.parametrize("call, n", [("rename", 1), ("unlink", 1)])
def test_an_adapter_killed_making_a_session_over_a_deleted_ones_wal(walk, call, n):
    assert walk(call, n)


@pytest.mark.soak
@pytest.mark.parametrize("call", ["unlink", "rename", "fsync", "fdatasync"])
def test_an_adapter_killed_at_every_call_making_a_session(walk, call):
    n = 1
    while walk(call, n):
        n += 1
    assert n > 1
