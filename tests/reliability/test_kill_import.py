"""kill -9 landed inside `durable import` at each of its syncs (strace's fault injection: the Nth
fdatasync gets SIGKILL), then a plain re-run, without --replace, completes the import.

After each kill every object is either absent or exactly as exported (never half imported), and the
re-run exits 0. A kill on an object's WAL sync lands inside a transaction's COMMIT (after its BEGIN);
those are counted as "died after BEGIN" (the import's own transaction: not the object's first commit
in the run, which creates the schema).
"""

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.reliability.stats import count

CMD = [sys.executable, "-m", "durable_cli"]
NAMES = [f"k{i}" for i in range(3)]

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


def syncs(log: str):
    """The fdatasync targets in an strace -y log, in order, and whether the last one was killed."""
    targets = re.findall(r"fdatasync\(\d+<([^>]*)>", log)
    return targets, "killed by SIGKILL" in log


def import_under_strace(dump, tmp_path, when=None):
    log = tmp_path / "strace.log"
    inject = ["-e", f"inject=fdatasync:signal=KILL:when={when}"] if when else []
    proc = subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=fdatasync", *inject, "-o", str(log), *CMD, "import", str(dump)],
                          capture_output=True)
    return proc.returncode, log.read_text()


def after_begin(targets) -> bool:
    """The killed sync was an object's WAL sync that was not the object's first commit of the run."""
    last = targets[-1]
    if "/objects/" not in last or not last.endswith("-wal"):
        return False
    return targets[:-1].count(last) >= 1


def run_kills(durable, tmp_path, step):
    for name in NAMES:
        for j in range(3):
            durable("transcript", "append", name, "--role", "user", f"{name} row {j}")
    dump = tmp_path / "all.jsonl"
    assert durable("export", "--all", "--output", dump).status == 0
    expected = {n: durable("transcript", "show", n, "--all", "--json").json() for n in NAMES}
    for n in NAMES:
        durable("delete", n, "--yes")
    code, log = import_under_strace(dump, tmp_path)
    assert code == 0, log
    total = len(syncs(log)[0])
    assert total > 5
    died_after_begin = 0
    for when in range(1, total + 1, step):
        for n in NAMES:
            durable("delete", n, "--yes")
        code, log = import_under_strace(dump, tmp_path, when)
        targets, killed = syncs(log)
        assert killed and code != 0, f"the kill at sync {when} did not land"
        if after_begin(targets):
            died_after_begin += 1
            count("import (strace kill at a sync)", "died after BEGIN")
        else:
            count("import (strace kill at a sync)", "died elsewhere")
        for n in NAMES:
            r = durable("transcript", "show", n, "--all", "--json")
            assert r.status == 3 or r.json() == expected[n], f"{n} half imported after the kill at sync {when}"
        rerun = durable("import", dump, "--json")
        assert rerun.status == 0, rerun.err
        doc = rerun.json()
        assert sorted(c["name"] for c in doc["changed"]) + sorted(s["name"] for s in doc["skipped"]) != []
        assert all(s["reason"] == "already imported" for s in doc["skipped"])
        for n in NAMES:
            assert durable("transcript", "show", n, "--all", "--json").json() == expected[n]
        assert sorted(r["name"] for r in durable("ls", "--json").json()) == NAMES  # the index caught up too
        assert durable("doctor").status == 0
    return died_after_begin


def test_kill_inside_import_then_plain_rerun_completes_it(durable, tmp_path):
    assert run_kills(durable, tmp_path, step=3) >= 1


@pytest.mark.soak
def test_kill_inside_import_at_every_sync(durable, tmp_path):
    died = run_kills(durable, tmp_path, step=1)
    print(json.dumps({"import kills after BEGIN": died}))
    assert died >= 3
