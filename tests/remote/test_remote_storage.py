"""Cloudflare's SQL limits hold on workerd too (SPEC §13): the Worker's storage layer refuses a value or row
over 2,000,000 bytes, a statement over 100 KB and more than 100 bound parameters; a turn between 2,000,000
bytes and the 2 MiB ceiling is stored in chunks and read back whole; a write's remembered answer holds ids
and seqs, never row contents. Checked in the Durable Objects' own SQLite files.
"""

import glob
import json
import os
import sqlite3
import time

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import ALICE_TOKEN, Fleet, require_workerd, token, unique

MiB = 1024 * 1024


def object_files(storage):
    return glob.glob(os.path.join(storage, "**", "*.sqlite"), recursive=True)


def largest_values(storage) -> dict:
    """table -> the largest value (bytes) any column of it holds, over every Durable Object's SQLite file."""
    out = {}
    for path in object_files(storage):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for t in tables:
                try:
                    cols = [r[1] for r in db.execute(f'PRAGMA table_info("{t}")')]
                    for c in cols:
                        n = db.execute(f'SELECT max(length(CAST("{c}" AS BLOB))) FROM "{t}"').fetchone()[0] or 0
                        out[t] = max(out.get(t, 0), n)
                except sqlite3.DatabaseError:
                    continue
        finally:
            db.close()
    return out


@pytest.fixture
def env(remote_dev, monkeypatch):
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    return remote_dev


def test_the_storage_layer_refuses_what_cloudflare_refuses(tmp_path):
    require_workerd()
    fleet = Fleet(tmp_path, 1, variables={"DURABLE_DEV_FAULTS": "1"})
    try:
        fleet.wait_ready()
        from durable_cli import Store

        store = Store(remote=fleet.free[0].url, token=token("admin", admin=True))
        got = store.client.call({"op": "sql_limits", "scope": "dev"}, write=False)
        store.close()
    finally:
        fleet.stop()
    assert "2,000,000 bytes" in got["value"] and "value of 2000001 bytes" in got["value"]
    assert "row of 2000001 bytes" in got["row"]
    assert "100 KB" in got["statement"]
    assert "101 bound parameters" in got["parameters"]
    assert got["within"] is None  # 100 parameters and a row of 1,999,792 bytes pass


def test_a_batch_remembers_seqs_not_rows(env):
    from durable_cli import Store

    name = unique("batch")
    store = Store(remote=env.url, token=ALICE_TOKEN)
    rows = [{"role": "user", "content": f"{i:03d}" + "b" * 99_000} for i in range(30)]
    body = {"op": "append_many", "scope": "user", "label": "session", "name": name, "create": True,
            "args": {"rows": [{"role": r["role"], "content": r["content"], "tool_calls_json": None, "call_id": None,
                               "name": None, "meta_json": None, "data_json": None, "tokens": None} for r in rows]},
            "request_id": "f" * 32}
    first = store.client.call(dict(body), write=True)
    again = store.client.call(dict(body), write=True)  # a retry of the same request id: applied once
    assert [r["content"] for r in first] == [r["content"] for r in rows]
    assert again == first
    with store.open(name) as s:
        assert len(s.rows()) == 30
    store.close()
    sizes = largest_values(env.storage)
    assert sizes["_durable_requests"] < 2_000, sizes  # was 2,977,463 bytes: the rows themselves


def test_a_turn_between_a_cloudflare_row_and_the_ceiling_is_stored_in_chunks(env):
    name = unique("big")
    big = "é" * 50 + "x" * (2 * MiB - 200) + "🙂" * 10  # 2,097,102 bytes of UTF-8: over a Cloudflare value
    assert 2_000_000 < len(big.encode()) <= 2 * MiB
    out = run_inprocess("transcript", "append", name, "--role", "user", "-", input=big.encode())
    assert out.status == 0, out.err
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert shown[0]["content"] == big
    window = run_inprocess("transcript", "recent", name, "--tokens", "10000000", "--json").json()
    assert big in json.dumps(window, ensure_ascii=False)
    exported = [json.loads(line) for line in run_inprocess("export", name).out.splitlines()]
    assert any(t["content"] == big for rec in exported for t in rec.get("turns", []))
    # a prompt that size too: queued, taken (its turn), answered whole
    assert run_inprocess("session", "prompt", name + "-p", "-", input=big.encode()).status == 0
    taken = run_inprocess("session", "next", name + "-p", "--json").json()
    assert taken["content"] == big
    assert run_inprocess("transcript", "show", name + "-p", "--json").json()[-1]["content"] == big
    sizes = largest_values(env.storage)
    assert max(sizes.values()) <= 2_000_000, {t: n for t, n in sizes.items() if n > 2_000_000}
    assert sizes.get("_durable_chunks", 0) > 0
    # one byte over the ceiling: refused on both backends, nothing stored
    over = run_inprocess("transcript", "append", name, "--role", "user", "-", input=(big + "x" * (2 * MiB)).encode()[: 2 * MiB + 1])
    assert over.status == 2
    # the chunks go with their rows (pop, delete): nothing of the text stays behind
    assert run_inprocess("transcript", "pop", name).status == 0
    assert run_inprocess("delete", name + "-p", "--yes").status == 0
    assert largest_values(env.storage).get("_durable_chunks", 0) == 0


def test_prune_of_more_than_100_summaries_stays_within_the_parameter_limit(env):
    from durable_cli import Store

    name = unique("prune")
    store = Store(remote=env.url, token=ALICE_TOKEN)
    with store.open(name, create=True) as s:
        s.append_many([{"role": "user", "content": f"row {i}"} for i in range(1, 102)])
        for i in range(1, 102):  # each summary covers the one before and the next row: 101 old summaries
            s.summarize(through=i, text=f"s{i}")
    store.close()
    time.sleep(1.1)
    out = run_inprocess("transcript", "prune", name, "--older-than", "1s", "--json")
    assert out.status == 0, out.err
    assert out.json()["deleted"] == 202
