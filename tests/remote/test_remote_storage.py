"""Cloudflare's SQL limits hold on workerd too (docs/reference/remote.md §13): the Worker's storage layer refuses a value or row
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
    """table -> the largest value (bytes) any column of it stores, over every Durable Object's SQLite file."""
    out = {}
    for path in object_files(storage):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            # a virtual table stores nothing of its own (turns_fts reads its text through a view: its shadow tables count)
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
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
    # a batch over one page of rows is answered with its seqs (the Worker holds no answer of 3 MB), the same
    # seqs again for the retry, which stored nothing more
    assert first == list(range(1, 31)) and again == first
    with store.open(name) as s:
        assert [r["content"] for r in s.rows()] == [r["content"] for r in rows]
    store.close()
    sizes = largest_values(env.storage)
    assert sizes["_durable_requests"] < 2_000, sizes  # was 2,977,463 bytes: the rows themselves


def test_a_remembered_answer_keeps_no_text_a_redact_or_a_forget_removed(env):
    """The answers of release, decline and memory forget were remembered whole for a day: a prompt's text redacted
    since (or a forgotten fact's value) stayed in _durable_requests, and a retry of the request id printed it."""
    from durable_cli import Store

    store = Store(remote=env.url, token=ALICE_TOKEN)
    name = unique("kept")

    def call(op, args, request_id=None, scope="user"):
        body = {"op": op, "args": args, "scope": scope, "label": "session", "name": name, "create": True, "request_id": request_id}
        return store.client.call(body, write=True)

    call("prompt", {"content": "secret words", "created": True})
    call("next_prompt", {"lease_seconds": 60})  # the prompt is turn 1
    assert call("release", {"prompt_id": 1}, "a" * 32)["content"] == "secret words"
    call("redact", {"seq": 1})
    assert call("release", {"prompt_id": 1}, "a" * 32)["content"] == "[redacted]"  # the retry: as stored now
    call("ask", {"prompt": "secret words?", "choices": ["yes"]})
    assert call("decline", {"request_id": 1, "action": "decline"}, "b" * 32)["prompt"] == "secret words?"
    call("set_fact", {"key": unique("k"), "value": "secret words"}, scope="reserved")
    key = call("facts", {"all_facts": True}, scope="reserved")[-1]["key"]
    forgotten = call("forget_fact", {"key": key}, "c" * 32, scope="reserved")
    assert call("forget_fact", {"key": key}, "c" * 32, scope="reserved") == dict(forgotten, value=None)
    store.close()
    for path in object_files(env.storage):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            kept = db.execute("SELECT id FROM _durable_requests WHERE body LIKE '%secret words%'").fetchall()
        except sqlite3.DatabaseError:
            kept = []
        finally:
            db.close()
        assert kept == [], path


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


def chunk_bytes(storage, name) -> int:
    """The bytes in chunks of the objects named NAME (the DO files whose object row has that name; "": memory)."""
    total = 0
    for path in object_files(storage):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if db.execute("SELECT name FROM object").fetchone() == (name,):
                total += db.execute("SELECT coalesce(sum(length(text)), 0) FROM _durable_chunks").fetchone()[0]
        except sqlite3.DatabaseError:
            continue
        finally:
            db.close()
    return total


def test_a_langgraph_value_over_a_cloudflare_value_is_stored_in_chunks(env):
    """A LangGraph checkpoint and a pending write whose serialized bytes are over Cloudflare's 2,000,000-byte
    value are stored in chunks and read back whole, as the file store keeps them (the put was exit 7, code
    storage); the chunks of a checkpoint keep_checkpoints drops go with it."""
    from durable_cli import Store

    store = Store(remote=env.url, token=ALICE_TOKEN)
    name = unique("bigcp")
    blobs = [os.urandom(2_050_000), os.urandom(2_100_000)]
    with store.open(name, create=True) as s:
        for i, blob in enumerate(blobs):
            s.put_checkpoint(external_id=name, ns="", checkpoint_id=f"{i:04}", parent_id=None, type_="bytes", blob=blob,
                             metadata="{}", keep=1)
            s.put_checkpoint_writes(external_id=name, ns="", checkpoint_id=f"{i:04}", writes=[("t", "", 0, "ch", "bytes", blob)],
                                    replace=False)
            latest, writes = s.checkpoint_latest(ns="")
            assert (latest[1], latest[4], writes[0][3]) == (f"{i:04}", blob, blob)
    assert max(largest_values(env.storage).values()) <= 2_000_000
    assert chunk_bytes(env.storage, name) == 2 * len(blobs[1])  # the first checkpoint's chunks and its write's went
    # put again under the same ids (a replaced checkpoint, a write replaced, one kept): no chunk left behind
    with store.open(name) as s:
        s.put_checkpoint(external_id=name, ns="", checkpoint_id="0001", parent_id=None, type_="bytes", blob=blobs[0], metadata="{}")
        s.put_checkpoint_writes(external_id=name, ns="", checkpoint_id="0001", writes=[("t", "", 0, "ch", "bytes", blobs[0])],
                                replace=True)
        s.put_checkpoint_writes(external_id=name, ns="", checkpoint_id="0001", writes=[("t", "", 0, "ch", "bytes", blobs[1])],
                                replace=False)
        latest, writes = s.checkpoint_latest(ns="")
        assert (latest[4], writes[0][3]) == (blobs[0], blobs[0])
    assert chunk_bytes(env.storage, name) == 2 * len(blobs[0])
    with store.open_reserved(create=True) as memory:  # a fact set again: its old value's chunks go
        for value in ("a" * 2_050_000, "b" * 2_000_500):
            memory.set_fact(name, value)
        assert memory.get_fact(name, all_facts=True)["value"] == "b" * 2_000_500
        memory.forget_fact(name)
    assert chunk_bytes(env.storage, "") == 0
    store.delete(name)
    store.close()


def test_a_graph_step_reads_its_latest_checkpoint_alone(env):
    """DurableSaver's get_tuple asks for the latest checkpoint (limit 1): the Worker reads that one, as the file
    store does, not the whole thread (each answer held every checkpoint of the thread with its bytes, so a step's
    time and the isolate's memory grew with the thread: 0.76 s for 40 checkpoints of 300 KB)."""
    from durable_cli import Store

    store = Store(remote=env.url, token=ALICE_TOKEN)
    name = unique("steps")
    with store.open(name, create=True) as s:
        for i in range(12):
            s.put_checkpoint(external_id=name, ns="", checkpoint_id=f"{i:04}", parent_id=None, type_="bytes",
                             blob=os.urandom(100_000), metadata="{}")
        answers, call = [], store.client.call
        store.client.call = lambda body, write: answers.append(call(body, write=write)) or answers[-1]
        assert s.checkpoint_latest(ns="")[0][1] == "0011"
        assert [len(a["rows"]) for a in answers] == [1]  # one request, one checkpoint in its answer
        # the whole thread (list(), get_state_history) comes in pages of about 512 KB, newest first, each with its writes
        s.put_checkpoint_writes(external_id=name, ns="", checkpoint_id="0003", writes=[("t", "", 0, "ch", "bytes", b"w")], replace=False)
        answers.clear()
        rows = s.checkpoint_rows(ns="")
        assert [r[1] for r in rows] == [f"{i:04}" for i in reversed(range(12))]
        assert len(answers) > 1 and all(len(json.dumps(a)) < 1_000_000 for a in answers)
        assert s.checkpoint_writes("", "0003")[0][3] == b"w"
    store.close()


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


def index_has(storage, term) -> bool:
    """Whether TERM is a token of any object's search index (turns_fts, read through fts5vocab)."""
    for path in object_files(storage):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'turns_fts'").fetchone():
                continue
            db.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, turns_fts, 'row')")
            if db.execute("SELECT 1 FROM temp.vocab WHERE term = ?", (term,)).fetchone():
                return True
        finally:
            db.close()
    return False


def test_a_chunked_turn_is_searched_whole_and_leaves_no_token(env, monkeypatch):
    """docs/reference/retention.md §7 over a turn stored in chunks (2,000,050 bytes): a word near its end is found, with the same hit
    as locally, and pop, redact, clear and prune leave no token of it in the object's search index."""
    name = unique("chunky")
    words = "lorem ipsum dolor sit amet " * 80_000  # 2,160,000 bytes: cut below
    big = ("zqstartword " + words)[: 2_000_050 - len(" zqendword tail.")] + " zqendword tail."
    assert len(big.encode()) == 2_000_050
    commands = [["transcript", "append", name, "--role", "user", "-"],
                ["transcript", "append", name, "--role", "assistant", "zqendword in a small row"],
                ["search", "zqendword", "--json"], ["search", "zqstartword", "--json"], ["search", "\"zqendword tail\"", "--json"]]

    def hits(remote: bool):
        found = []
        for args in commands:
            r = run_inprocess(*args, input=big.encode() if args[-1] == "-" else None)
            assert r.status == 0, (args, r.err)
            if args[0] == "search":
                found.append(sorted((h["name"], h["seq"], h["role"], h["snippet"]) for h in r.json()))
        return found

    remote = hits(True)
    for key in ("DURABLE_REMOTE", "DURABLE_TOKEN"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("DURABLE_USER", "alice")
    local = hits(False)
    assert remote == local
    assert [len(h) for h in remote] == [2, 1, 1]
    assert "[zqendword]" in remote[0][0][3] or "[zqendword]" in remote[0][1][3]
    monkeypatch.setenv("DURABLE_REMOTE", env.url)
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    monkeypatch.delenv("DURABLE_USER")
    assert index_has(env.storage, "zqendword") and index_has(env.storage, "zqstartword")
    # redact: the row is rewritten, its old text's tokens leave the index
    assert run_inprocess("transcript", "redact", name, "1").status == 0
    assert [h["seq"] for h in run_inprocess("search", "zqendword", "--json").json()] == [2]
    assert not index_has(env.storage, "zqstartword")
    # pop and clear: the row goes, and every token of it
    for remove in (["transcript", "pop", name], ["transcript", "clear", name, "--yes"]):
        assert run_inprocess("transcript", "append", name, "--role", "user", "-", input=big.encode()).status == 0
        assert len(run_inprocess("search", "zqstartword", "--json").json()) == 1
        assert run_inprocess(*remove).status == 0, remove
        assert run_inprocess("search", "zqstartword", "--json").json() == []
        assert not index_has(env.storage, "zqstartword") and not index_has(env.storage, "tail")
    # prune: the same, for rows older than a second (delete, forget, TTL and purge erase the whole storage)
    assert run_inprocess("transcript", "append", name, "--role", "user", "-", input=big.encode()).status == 0
    time.sleep(1.1)
    assert run_inprocess("transcript", "prune", name, "--older-than", "1s").status == 0
    assert run_inprocess("search", "zqstartword", "--json").json() == []
    assert not index_has(env.storage, "zqstartword") and not index_has(env.storage, "tail")


def test_a_meta_stored_in_chunks_counts_in_usage_as_locally(env, tmp_path, monkeypatch):
    """A row whose meta is big enough to be stored in chunks: its usage figures count on the Worker as in the
    file store, through append, redact, pop and clear (json_extract read the chunk marker as malformed JSON:
    the append was an internal error, HTTP 500)."""
    name, model = unique("bigmeta"), unique("model")  # (other tests write as alice on this Worker too)
    row = {"role": "user", "content": "hi", "meta": {"model": model, "usage": {"input_tokens": 5, "output_tokens": 7},
                                                     "cost_usd": 0.25, "pad": "x" * 1_900_000}}
    line = json.dumps(row).encode()

    def run_steps():
        seen = []
        for step in (("transcript", "append", name, "--batch", "-"), ("transcript", "append", name, "--role", "user", "two"),
                     ("transcript", "redact", name, "1"), ("transcript", "pop", name),
                     ("transcript", "append", name, "--batch", "-"), ("transcript", "pop", name),
                     ("transcript", "append", name, "--batch", "-"), ("transcript", "clear", name, "--yes")):
            out = run_inprocess(*step, input=line if step[-1] == "-" else None)
            assert out.status == 0, (step, out.err)
            if step[-1] == "-" and "DURABLE_REMOTE" in os.environ:
                assert largest_values(env.storage).get("_durable_chunks", 0) > 0  # the meta went into chunks
            usage = run_inprocess("usage", "--by", "model", "--json")
            assert usage.status == 0, usage.err
            seen.append([g for g in usage.json()["groups"] if g["key"] == model])
        return seen

    remote = run_steps()
    [group] = remote[0]
    assert (group["turns"], group["input_tokens"], group["output_tokens"], group["cost_usd"]) == (1, 5, 7, 0.25)
    assert remote[-1] == []
    monkeypatch.delenv("DURABLE_REMOTE")
    monkeypatch.delenv("DURABLE_TOKEN")
    monkeypatch.setenv("DURABLE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DURABLE_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("DURABLE_USER", "alice")
    assert run_steps() == remote
