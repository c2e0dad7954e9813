"""Abuse and overload on real workerd (docs/reference/remote.md §13): a body over DURABLE_MAX_BODY_BYTES is HTTP 413 before it
is parsed; the client sends a larger batch in parts under one request id, staged by the object and
committed by the last part in one transaction (a batch that works locally works remotely, all or nothing);
an error marked `overloaded` is exit 6 with no retry, and only one marked `retryable` is retried.
"""

import json

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import Fleet, post_call, require_workerd, token, unique
from tests.remote.proxy import Proxy

LIMIT = 1024 * 1024  # this Worker's DURABLE_MAX_BODY_BYTES (the default is 16 MiB)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    require_workerd()
    fleet = Fleet(tmp_path_factory.mktemp("body"), 1, variables={"DURABLE_MAX_BODY_BYTES": str(LIMIT), "DURABLE_DEV_FAULTS": "1"})
    fleet.wait_ready()
    yield fleet.free[0]
    fleet.stop()


@pytest.fixture
def env(worker, monkeypatch):
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", worker.url)
    monkeypatch.setenv("DURABLE_TOKEN", token("alice"))
    return worker


def post(url, data: bytes):
    return post_call(url, token("alice"), data)


def test_a_body_over_the_limit_is_413_before_it_is_parsed(env):
    status, doc = post(env.url, b"{" + b"x" * LIMIT)  # not even JSON: refused by its size, not its syntax
    assert status == 413 and doc["error"]["document"] == {"max_body_bytes": LIMIT}, doc
    status, doc = post(env.url, b"{not json}")
    assert status == 400


def test_a_batch_over_the_limit_goes_in_parts_all_or_nothing(env, tmp_path):
    from durable_cli import Store

    name = unique("batch")
    rows = [{"role": "user" if i % 2 else "assistant", "content": f"row {i} " + "é" * 60_000} for i in range(40)]  # ~4.8 MB
    batch = tmp_path / "rows.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = run_inprocess("transcript", "append", name, "--batch", str(batch), "--json")
    assert out.status == 0, out.err
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert [r["content"] for r in shown] == [r["content"] for r in rows]
    assert [r["seq"] for r in shown] == list(range(1, 41))
    # a batch whose last part never came: nothing of it is visible
    store = Store(remote=env.url, token=token("alice"))
    other = unique("half")
    fields = [{"role": "user", "content": "x" * 600_000, "tool_calls_json": None, "call_id": None, "name": None,
               "meta_json": None, "data_json": None, "tokens": None}]
    body = {"op": "append_many", "scope": "user", "label": "session", "name": other, "create": True, "request_id": "ab" * 8 + "00000000",
            "args": {"rows": fields, "part": {"batch": "ab" * 8, "index": 0, "count": 2, "first": {}}}}
    assert store.client.call(body, write=True) == {"staged": 1}
    assert run_inprocess("transcript", "show", other).status == 3
    # its last part alone cannot commit a batch it lacks a part of
    body = dict(body, request_id="cd" * 8, args={"rows": fields, "part": {"batch": "cd" * 8, "index": 1, "count": 2, "first": {"rows": 1}}})
    with pytest.raises(Exception) as e:
        store.client.call(body, write=True)
    assert getattr(e.value, "exit_status", None) == 4
    store.close()


@pytest.mark.parametrize("fault, status, requests", [("overloaded", 6, 1), ("retryable", 0, 2)])
def test_only_retryable_errors_are_retried(env, fault, status, requests):
    from durable_cli import Store
    from durable_cli.errors import DurableError

    proxy = Proxy(env.url, "pass")
    try:
        store = Store(remote=proxy.url, token=token("alice"))
        body = {"op": "append_many", "scope": "user", "label": "session", "name": unique("o"), "create": True,
                "dev_fault": fault, "args": {"rows": [{"role": "user", "content": "hi", "tool_calls_json": None, "call_id": None,
                                                        "name": None, "meta_json": None, "data_json": None, "tokens": None}]}}
        try:
            store.client.call(body, write=True)
            got = 0
        except DurableError as e:
            got = e.exit_status
        store.close()
        assert (got, proxy.requests) == (status, requests)
    finally:
        proxy.close()


def _big_rows(n, size=60_000):
    """N rows of about SIZE characters (2 bytes of UTF-8 each): together well over the 1 MiB limit."""
    return [{"role": "user" if i % 2 else "assistant", "content": f"row {i} " + "é" * size} for i in range(n)]


def test_import_of_a_record_over_the_limit_goes_in_parts(env, tmp_path):
    """`durable import FILE` (durable's own export form): a record over the Worker's body limit is sent in parts
    and written in one transaction, as it is locally; imported again, it is the same record."""
    name = unique("imp")
    batch = tmp_path / "rows.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in _big_rows(12)), encoding="utf-8")  # ~1.4 MB
    assert run_inprocess("transcript", "append", name, "--batch", str(batch)).status == 0
    exported = run_inprocess("export", name)
    assert exported.status == 0, exported.err
    record = tmp_path / "record.jsonl"
    record.write_text(exported.out, encoding="utf-8")
    assert len(exported.out.encode()) > LIMIT
    before = run_inprocess("transcript", "show", name, "--json").json()
    assert run_inprocess("delete", name, "--yes").status == 0
    out = run_inprocess("import", str(record), "--json")
    assert out.status == 0, out.err
    assert [c["name"] for c in out.json()["changed"]] == [name]
    assert run_inprocess("transcript", "show", name, "--json").json() == before
    assert run_inprocess("export", name).out == exported.out
    again = run_inprocess("import", str(record), "--json")  # the same record: nothing to do
    assert again.status == 0 and [s["reason"] for s in again.json()["skipped"]] == ["already imported"]


def test_an_import_whose_last_part_never_came_leaves_nothing(env):
    """All or nothing: the parts of an import before its last are staged, not an object."""
    from durable_cli import Store

    store = Store(remote=env.url, token=token("alice"))
    name = unique("half")
    record = {"turns": [{"seq": 1, "content": "x" * 600_000}]}  # checked only once whole, by the last part
    body = {"op": "import", "scope": "user", "label": "session", "name": name, "create": True, "request_id": "ef" * 8 + "00000000",
            "args": {"record": record, "part": {"batch": "ef" * 8, "index": 0, "count": 2, "first": {}}}}
    assert store.client.call(body, write=True) == {"staged": 1}
    store.close()
    assert run_inprocess("transcript", "show", name).status == 3
    assert run_inprocess("ls", "--all", "--json").json() is not None
    assert name not in run_inprocess("ls", "--all").out


def test_import_from_llm_of_a_conversation_over_the_limit(env, tmp_path):
    """`durable import --from llm`: a conversation whose record is over the Worker's body limit arrives whole."""
    import sqlite3

    from tests.core.test_llm_import import OLD_SCHEMA

    path = tmp_path / "llm" / "logs.db"
    path.parent.mkdir()
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    conversation = "01j0" + unique("c").replace("-", "")[-22:].lower().rjust(22, "a")
    db.execute("INSERT INTO conversations VALUES (?, 'long talk', 'm')", (conversation,))
    for i in range(4):  # 4 exchanges of ~200 KB each way: ~1.6 MB of UTF-8
        db.execute("INSERT INTO responses (id, model, prompt, response, conversation_id, datetime_utc) VALUES (?, 'm', ?, ?, ?, ?)",
                   (f"r{i:02d}", f"question {i} " + "ü" * 100_000, f"answer {i} " + "ß" * 100_000, conversation,
                    f"2024-07-01T10:{i:02d}:00"))
    db.commit()
    db.close()
    out = run_inprocess("import", "--from", "llm", str(path), "--json")
    assert out.status == 0, out.err
    assert [c["name"] for c in out.json()["changed"]] == [conversation]
    shown = run_inprocess("transcript", "show", conversation, "--json").json()
    assert len(shown) == 8 and shown[-1]["content"] == "answer 3 " + "ß" * 100_000


def _started(name):
    assert run_inprocess("session", "prompt", name, "go").status == 0
    taken = run_inprocess("session", "next", name, "--json")
    assert taken.status == 0, taken.err
    return taken.json()


def test_finish_with_rows_over_the_limit_goes_in_parts(env, tmp_path):
    """`session finish --rows FILE`: the turn's rows and the finish in one transaction, in parts when over the
    Worker's body limit; a bad row leaves the prompt processing and nothing recorded."""
    name = unique("fin")
    prompt = _started(name)
    rows = [{"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "name": "read", "arguments": json.dumps({"n": i})}]}
            for i in range(3)]
    rows = [r for i, call in enumerate(rows) for r in (call, {"role": "tool", "call_id": f"c{i}", "content": f"out {i} " + "ø" * 250_000})]
    rows.append({"role": "assistant", "content": "done " + "å" * 250_000})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows[:-1]) + json.dumps({"role": "assistant", "content": "x", "meta": "no"}) + "\n",
                   encoding="utf-8")
    refused = run_inprocess("session", "finish", name, str(prompt["id"]), "--rows", str(bad))
    assert refused.status == 2, refused.err
    assert run_inprocess("session", "queue", name, "--json").json()[0]["status"] == "processing"
    good = tmp_path / "rows.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert len(good.read_bytes()) > 2 * LIMIT
    out = run_inprocess("session", "finish", name, str(prompt["id"]), "--rows", str(good), "--json")
    assert out.status == 0, out.err
    assert out.json()["status"] == "completed"
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert [r["content"] for r in shown] == ["go"] + [r["content"] for r in rows]
    assert run_inprocess("session", "finish", name, str(prompt["id"]), "--rows", str(good)).status == 4  # finished already


def test_work_records_rows_over_the_limit(env, tmp_path):
    """`durable work` whose command prints rows over the Worker's body limit: recorded and finished as one."""
    name = unique("work")
    assert run_inprocess("session", "prompt", name, "go").status == 0
    script = tmp_path / "cmd.py"
    script.write_text("import json\n"
                      "print(json.dumps({'role': 'assistant', 'content': '', 'tool_calls': [{'id': 'c1', 'name': 'r', 'arguments': '{}'}]}))\n"
                      "print(json.dumps({'role': 'tool', 'call_id': 'c1', 'content': 'þ' * 400000}))\n"
                      "print(json.dumps({'role': 'assistant', 'content': 'fin ' + 'þ' * 400000}))\n", encoding="utf-8")
    import sys

    out = run_inprocess("work", name, "--command", f"{sys.executable} {script}", "--once", "--wait", "0", "--json")
    assert out.status == 0, out.err
    assert json.loads(out.out.splitlines()[-1])["outcome"] == "completed" and json.loads(out.out.splitlines()[-1])["rows"] == 3
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert [len(r["content"]) for r in shown] == [2, 0, 400000, 400004]


def test_a_summary_by_command_of_rows_over_the_limit(env, tmp_path):
    """`transcript summarize --command`: the covered rows the client sends back to be checked unchanged
    (commit_summary) go in parts when over the Worker's body limit; the summary is committed once."""
    name = unique("sum")
    batch = tmp_path / "rows.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in _big_rows(10)), encoding="utf-8")  # ~1.2 MB
    assert run_inprocess("transcript", "append", name, "--batch", str(batch)).status == 0
    out = run_inprocess("transcript", "summarize", name, "--through", "10", "--command", "echo the gist", "--json")
    assert out.status == 0, out.err
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert [(r["kind"], r["content"]) for r in shown] == [("summary", "the gist")]


def test_langgraph_pending_writes_over_the_limit(env):
    """A LangGraph saver's pending writes (put_checkpoint_writes) over the Worker's body limit go in parts and
    are stored together."""
    import os

    from durable_cli import Store

    store = Store(remote=env.url, token=token("alice"))
    name = unique("lg")
    blobs = [os.urandom(300_000) for _ in range(4)]  # 1.6 MB as base64
    with store.open(name, create=True) as s:
        s.put_checkpoint_writes(external_id=name, ns="", checkpoint_id="1", writes=[("t", "", i, "ch", "bytes", b) for i, b in enumerate(blobs)],
                                replace=False)
        assert [w[3] for w in s.checkpoint_writes("", "1")] == blobs
    store.close()


def test_a_finish_in_parts_retried_is_applied_once(env):
    """Each part of a finish in parts is a write of its own request id, the last one the batch's: sent again
    (a retry after a lost answer), every part is answered as the first time and the turn is recorded once."""
    from durable_cli import Store

    name = unique("retry")
    prompt = _started(name)
    store = Store(remote=env.url, token=token("alice"))
    client = store.client
    sent, plain = [], client.call

    def twice(body, *, write):  # every part arrives twice, as after a dropped answer
        first = plain(dict(body), write=write)
        again = plain(dict(body), write=write) if "part" in (body.get("args") or {}) else first
        sent.append(body.get("args", {}).get("part"))
        assert again == first
        return again

    client.call = twice
    rows = [{"role": "assistant", "content": f"part {i} " + "ç" * 200_000} for i in range(5)]
    with store.open(name) as s:
        done = s.finish(prompt["id"], rows=rows)
    store.close()
    assert done["status"] == "completed"
    assert sum(1 for p in sent if p) >= 3  # it did go in parts
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert [r["content"] for r in shown] == ["go"] + [r["content"] for r in rows]


def test_one_row_over_the_limit_is_exit_2_and_prints_no_document(env):
    """A body that cannot be split (one row over the Worker's limit) is refused, exit 2, saying which limit;
    the Worker's 413 document is the client's to read, not output."""
    out = run_inprocess("transcript", "append", unique("one"), "--role", "user", "-", input=("ŵ" * 600_000).encode())
    assert (out.status, out.out) == (2, ""), out
    assert "DURABLE_MAX_BODY_BYTES (1048576)" in out.err


def test_a_batch_with_one_row_over_the_limit_sends_nothing(env, tmp_path):
    """A batch in parts one of whose rows could not be sent even alone: refused before any part is sent."""
    name = unique("onebig")
    rows = _big_rows(10) + [{"role": "user", "content": "ŵ" * 600_000}]
    batch = tmp_path / "rows.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = run_inprocess("transcript", "append", name, "--batch", str(batch))
    assert (out.status, out.out) == (2, "")
    assert "item 11 of rows" in out.err and "nothing was sent" in out.err
    assert run_inprocess("transcript", "show", name).status == 3


def test_a_langgraph_checkpoint_with_a_mirror_over_the_limit(env):
    """A LangGraph checkpoint whose mirrored messages take it over the Worker's body limit: the mirror goes in
    parts and the checkpoint and its rows are stored together."""
    import os

    from durable_cli import Store

    store = Store(remote=env.url, token=token("alice"))
    name = unique("lgm")
    blob = os.urandom(200_000)
    mirror = [(f"m{i}", {"role": "assistant" if i % 2 else "user", "content": f"message {i} " + "ĳ" * 150_000}) for i in range(6)]
    with store.open(name, create=True) as s:
        s.put_checkpoint(external_id=name, ns="", checkpoint_id="1", parent_id=None, type_="msgpack", blob=blob, metadata="{}",
                         mirror=mirror)
        assert s.checkpoint_latest(ns="")[0][4] == blob
        assert [r["content"] for r in s.rows()] == [fields["content"] for _, fields in mirror]
    store.close()
