"""A remote `transcript append --batch` and `session finish --rows` bigger than the isolate (docs/reference/remote.md §13: a request
holds one row; a body over DURABLE_MAX_BODY_BYTES goes in parts, committed by the last part in one transaction).

workerd's V8 heap is capped at 16 MB (Cloudflare's isolate: 128 MB) and the body limit at 1 MiB: a 34 MB batch
goes in ~35 parts and its last part reads the staged rows one at a time (an eager one, every staged row in an
array, ends workerd with "Reached heap limit"). It stores what the file backend stores; a bad row in an early
part or in the last refuses the whole batch with the message a local one gives, and nothing is stored.
"""

import json
import os
import subprocess
import sys

import pytest

from durable_cli import Store
from durable_cli.errors import DurableError
from durable_cli.remote.backend import _fields
from tests.remote.conftest import token
from tests.remote.test_remote_fork_parts import _heap_fleet

ROWS = 140
ROW_KB = 240  # 140 rows of 240 KB: a 34 MB batch, over twice the heap


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    fleet = _heap_fleet(tmp_path_factory, 16, {"DURABLE_MAX_BODY_BYTES": str(1024 * 1024)})
    yield fleet
    fleet.stop()


def _batch(path, rows=ROWS, role=lambda i: "user" if i % 2 == 0 else "assistant"):
    with open(path, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"role": role(i), "content": f"{i} " + "x" * (ROW_KB * 1000 - 16),
                                "meta": {"model": "m", "usage": {"input_tokens": i, "output_tokens": 1}}, "data": {"i": i}}) + "\n")


def _durable(env, *args):
    return subprocess.run([sys.executable, "-m", "durable_cli", *args], env=env, capture_output=True, text=True, timeout=120)


def _stored(rows):
    return [(r["seq"], r["role"], r["content"], r["tokens"], r["meta"], r["data"]) for r in rows]


def test_a_batch_over_twice_the_heap_is_stored_whole_as_locally(fleet, tmp_path):
    """--json's answer, every row made, is read in pages (the Worker answers the batch's seqs): the same rows as
    the file backend's."""
    batch = tmp_path / "batch.jsonl"
    _batch(batch)
    local = dict(os.environ, DURABLE_HOME=str(tmp_path / "home"), DURABLE_USER="alice")
    remote = dict(os.environ, DURABLE_REMOTE=fleet.free[0].url, DURABLE_TOKEN=token("alice"))
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        remote.pop(key, None)
    answers = [_durable(env, "transcript", "append", "big", "--batch", str(batch), "--json") for env in (local, remote)]
    assert [a.returncode for a in answers] == [0, 0], answers[1].stderr
    here, there = (json.loads(a.stdout) for a in answers)
    assert len(there) == ROWS and _stored(here) == _stored(there)
    assert fleet.proc.poll() is None


@pytest.mark.parametrize("bad", [3, 24])  # in the first part, in the last
def test_a_bad_row_refuses_the_whole_batch(fleet, bad):
    """The Worker checks every row again (the client's own check skipped here): row BAD's refusal, nothing
    stored (a 6 MB batch in 6 parts: the last reads the staged rows as the big one's does)."""
    from durable_cli import checks

    store = Store(remote=fleet.free[0].url, token=token("alice"))
    try:
        with store.open(f"refused{bad}", create=True) as s:
            s.append("before", role="user")
            fields = [_fields(checks.row(store.config, {"role": "user", "content": f"{i} " + "x" * (ROW_KB * 1000 - 16)}))
                      for i in range(24)]
            fields[bad - 1]["role"] = "narrator"
            with pytest.raises(DurableError) as e:
                s._call("append_many", rows=fields, seqs_only=True)
            assert e.value.code == "invalid_input" and e.value.message.startswith(f"row {bad}: ")
            del fields
            assert fleet.proc.poll() is None
            assert [r["content"] for r in s.rows(all=True)] == ["before"]
    finally:
        store.close()


def test_a_finish_with_rows_over_the_heap(fleet, tmp_path):
    """`session finish --rows` takes the same path: 80 rows (19 MB) appended and the prompt finished at once."""
    rows = tmp_path / "rows.jsonl"
    _batch(rows, 80, role=lambda i: "assistant")
    env = dict(os.environ, DURABLE_REMOTE=fleet.free[0].url, DURABLE_TOKEN=token("alice"))
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        env.pop(key, None)
    assert _durable(env, "session", "create", "turn").returncode == 0
    assert _durable(env, "session", "prompt", "turn", "go").returncode == 0
    taken = _durable(env, "session", "next", "turn", "--json")
    assert taken.returncode == 0, taken.stderr
    prompt = json.loads(taken.stdout)["id"]
    done = _durable(env, "session", "finish", "turn", str(prompt), "--rows", str(rows))
    assert done.returncode == 0, done.stderr
    assert fleet.proc.poll() is None
    store = Store(remote=fleet.free[0].url, token=token("alice"))
    try:
        with store.open("turn") as s:
            got = s.rows(all=True)
        assert len(got) == 81 and got[-1]["content"].startswith("79 x")
    finally:
        store.close()
