"""Remote `session fork` of a session bigger than a request (docs/reference/remote.md §13: no request holds more than one row
plus one page of its answer; a body over DURABLE_MAX_BODY_BYTES is 413, so a larger batch goes in parts
under one request id, staged by the object and committed by the last part in one transaction).

The source's Durable Object answers the plan in pages read from a lazy cursor (the first page checks --at
and fixes the seq copied up to); NEW's receives the rows in parts and creates NEW with all of them in one
transaction. Against a Worker whose body limit is 128 KiB, a 1.4 MB session forks whole and as the file
backend forks it; rows appended to the source during the fork are not copied; a rewrite of the copied
rows during the fork makes the client plan it again; a fork killed between parts leaves no NEW.
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from durable_cli import Store
from durable_cli.errors import DurableError
from tests.conftest import ROOT
from tests.remote.conftest import Fleet, require_workerd, token, unique
from tests.remote.proxy import Proxy

LIMIT = 128 * 1024  # this Worker's DURABLE_MAX_BODY_BYTES (the default is 16 MiB)
ROW = "é" * 45_000  # 90 KB of UTF-8: two rows are over the limit, a page of the plan holds twelve


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    require_workerd()
    fleet = Fleet(tmp_path_factory.mktemp("fork-parts"), 1, variables={"DURABLE_MAX_BODY_BYTES": str(LIMIT)})
    fleet.wait_ready()
    yield fleet.free[0]
    fleet.stop()


@pytest.fixture
def remote(worker, monkeypatch):
    for key in ("DURABLE_USER", "DURABLE_TENANT", "DURABLE_REMOTE", "DURABLE_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    store = Store(remote=worker.url, token=token("alice"))
    yield store
    store.close()


def _fill(store, name, rows=16):
    """A session of ROWS big rows (1.4 MB at 16: a plan of two pages, a fork of 17 parts), with a tool call and its result, meta, data and a summary."""
    with store.open(name, create=True) as s:
        s.append_many([{"role": "user" if i % 2 == 0 else "assistant", "content": f"row {i} {ROW}",
                        "meta": {"model": "m", "usage": {"input_tokens": i, "output_tokens": 1}} if i % 2 else None,
                        "data": {"i": i}} for i in range(rows)])
        s.append_many([{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "f", "arguments": "{\"x\": 1}"}]},
                       {"role": "tool", "call_id": "c1", "name": "f", "content": "the result"},
                       {"role": "user", "content": "the question"}])
    store.summarize(name, through=3, text="the first three rows, summarized")


def _copied(store, name):
    with store.open(name) as s:
        return s.rows(all=True)


def _without_origin(rows):
    return [{k: v for k, v in r.items() if k not in ("created_at", "forked_from")} for r in rows]


def test_a_fork_over_the_body_limit_is_whole_and_as_the_file_backend_makes_it(remote, tmp_path):
    local = Store(home=str(tmp_path / "home"), user="alice")
    try:
        for store in (local, remote):
            _fill(store, "src")
        with remote.open("src") as s:
            source = s.rows()
            source_id = s.meta()["id"]
        assert sum(len(r["content"].encode()) for r in source) > 8 * LIMIT
        for at in (None, 11):
            new = f"copy-{at}"
            docs = [store.fork("src", new, at=at) for store in (local, remote)]
            assert {k: docs[1][k] for k in ("turns", "tokens", "title", "status")} == {k: docs[0][k] for k in ("turns", "tokens", "title", "status")}
            mine, theirs = _copied(remote, new), _copied(local, new)
            assert _without_origin(mine) == _without_origin(theirs)
            kept = source if at is None else source[:[r["seq"] for r in source].index(at) + 1]  # in logical order
            assert [r["content"] for r in mine] == [r["content"] for r in kept] and len(mine) == docs[1]["turns"]
            assert [r["created_at"] for r in mine] == [r["created_at"] for r in kept]
            assert {r["forked_from"] for r in mine} == {source_id}
            assert [r["seq"] for r in mine] == list(range(1, len(kept) + 1))
        # --at that would separate the tool call from its result: exit 2 on both, nothing created
        call = next(r["seq"] for r in source if r["tool_calls"])
        for store in (local, remote):
            with pytest.raises(DurableError) as e:
                store.fork("src", "split", at=call)
            assert e.value.code == "invalid_input"
            with pytest.raises(DurableError) as e, store.open("split") as s:
                s.show()
            assert e.value.code == "not_found"
        # NEW that exists is exit 4, and is not changed
        with pytest.raises(DurableError) as e:
            remote.fork("src", "copy-11")
        assert e.value.code == "conflict"
        assert len(_copied(remote, "copy-11")) == 9
        # a client older than paged plans (no cursor) is refused rather than given a first page for the whole
        with pytest.raises(DurableError) as e, remote.open("src") as s:
            s._call("fork_plan", at=None)
        assert e.value.code == "invalid_input" and "upgrade durable" in e.value.message
    finally:
        local.close()


def _held_fork(worker, name, new, match, nth, meanwhile):
    """Fork NAME into NEW through a proxy that holds the NTH request matching MATCH while MEANWHILE runs
    (straight to the Worker); the fork's answer."""
    import threading

    proxy = Proxy(worker.url, "hold_nth", match=match, nth=nth)
    store = Store(remote=proxy.url, token=token("alice"))
    got = {}

    def fork():
        try:
            got["doc"] = store.fork(name, new)
        except Exception as e:  # reported below
            got["error"] = e

    thread = threading.Thread(target=fork)
    thread.start()
    try:
        while not proxy.held.wait(0.05):
            assert thread.is_alive(), f"the fork never sent that request: {got}"
        meanwhile()
    finally:
        proxy.go.set()
        thread.join(60)
        store.close()
        proxy.close()
    assert "error" not in got, got.get("error")
    return got["doc"]


def test_rows_appended_during_a_fork_are_not_copied(remote, worker):
    name = unique("live")
    _fill(remote, name)
    with remote.open(name) as s:
        live = s.rows()  # in logical order

    def append():
        with remote.open(name) as s:
            s.append_many([{"role": "user", "content": f"later {i} {ROW}"} for i in range(3)])

    doc = _held_fork(worker, name, unique("copy"), b'"op":"fork_plan"', 2, append)
    assert doc["turns"] == len(live)
    copied = _copied(remote, doc["name"])
    assert [r["content"] for r in copied] == [r["content"] for r in live]
    with remote.open(doc["name"]) as s:
        assert [e["data"]["seq"] for e in s.events() if e["type"] == "session.forked"] == [live[-1]["seq"]]


def test_a_rewrite_of_the_copied_rows_during_a_fork_plans_it_again(remote, worker):
    name = unique("rewritten")
    _fill(remote, name)

    def rewrite():
        with remote.open(name) as s:
            s.redact(seq=6)
            s.pop(count=1)

    doc = _held_fork(worker, name, unique("copy"), b'"op":"fork_plan"', 2, rewrite)
    with remote.open(name) as s:
        now = s.rows()
    copied = _copied(remote, doc["name"])
    assert [r["content"] for r in copied] == [r["content"] for r in now]  # the source as it is after the rewrite
    assert "[redacted]" in [r["content"] for r in copied] and copied[-1]["content"] != "the question"


def test_a_fork_killed_between_parts_leaves_nothing(remote, worker):
    name, new = unique("src"), unique("killed")
    _fill(remote, name)
    proxy = Proxy(worker.url, "hold_nth", match=b'"op":"fork_create"', nth=4)
    env = {**os.environ, "DURABLE_REMOTE": proxy.url, "DURABLE_TOKEN": token("alice")}
    env.pop("DURABLE_USER", None)
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "session", "fork", name, new], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while not proxy.held.wait(0.05):  # the fourth part of the fork is on its way (or the fork ended without one)
            assert proc.poll() is None, proc.communicate(timeout=30)
        proc.send_signal(signal.SIGKILL)  # three parts staged, the fourth on its way: the client is gone
        proc.wait(30)
    finally:
        proxy.close()
        proxy.go.set()
    with pytest.raises(DurableError) as e, remote.open(new) as s:
        s.show()
    assert e.value.code == "not_found"
    assert new not in [row["name"] for row in remote.ls(all_objects=True)]
    # what its parts staged is not kept for ever nor woken every 2 s (it was, by the index's retry): NEW's Durable
    # Object has one alarm, a day after the first part, which drops the parts and then the storage
    alarms = sqlite3.connect(f"file:{os.path.join(worker.storage, 'durable-session', 'metadata.sqlite')}?mode=ro", uri=True)
    try:
        due = sorted(t / 1e9 - time.time() for (t,) in alarms.execute("SELECT scheduled_time FROM _cf_ALARM"))
    finally:
        alarms.close()
    assert due and due[0] > 86400 - 120 and due[-1] < 86400 + 60, due
    # the name is free, and a fork to it now is whole (what the killed one staged is not in it)
    doc = remote.fork(name, new)
    with remote.open(name) as s:
        assert [r["content"] for r in _copied(remote, new)] == [r["content"] for r in s.rows()]
    assert doc["turns"] == len(_copied(remote, new))


def test_a_fork_in_parts_retried_is_applied_once(remote):
    """Each part of a fork's fork_create is a write of its own request id, the last one the batch's: every part
    sent again (as after a lost answer) is answered as the first time, and NEW holds each row once."""
    name, new = unique("src"), unique("twice")
    _fill(remote, name)
    client = remote.client
    sent, plain = [], client.call

    def twice(body, *, write):
        first = plain(dict(body), write=write)
        if "part" in (body.get("args") or {}):
            assert plain(dict(body), write=write) == first
            sent.append(body["args"]["part"]["index"])
        return first

    client.call = twice
    try:
        doc = remote.fork(name, new)
    finally:
        client.call = plain
    assert len(sent) > 10  # it did go in parts
    with remote.open(name) as s:
        live = [r["content"] for r in s.rows()]
    assert [r["content"] for r in _copied(remote, new)] == live and doc["turns"] == len(live)


def _heap_fleet(tmp_path_factory, heap_mb: int, variables=None):
    """One Worker whose V8 heap is capped at HEAP_MB (workerd's v8Flags; Cloudflare's isolate allows 128 MB):
    a request that holds more live than that ends workerd with "Reached heap limit"."""
    require_workerd()
    fleet = Fleet(tmp_path_factory.mktemp("fork-heap"), 1, variables=variables, v8_flags=[f"--max-old-space-size={heap_mb}"])
    fleet.wait_ready()
    return fleet


def _long(store, name, megabytes: int, row_kb: int, per_request: int):
    """NAME holding MEGABYTES of rows of ROW_KB, appended PER_REQUEST rows a request (each body under the limit)."""
    with store.open(name, create=True) as s:
        for i in range(megabytes * 1000 // (row_kb * per_request)):
            s.append_many([{"role": "user", "content": f"{i}.{j} " + "x" * (row_kb * 1000 - 16)} for j in range(per_request)],
                          seqs_only=True)
        s.append("the last row", role="user")


def test_a_fork_of_12_mb_runs_in_a_16_mb_v8_heap(tmp_path_factory):
    """The commit reads the staged rows one at a time (an eager one, the staged rows in an array, ran out of
    this heap: "Reached heap limit"), and so does the plan (the former one-request plan held every row and its
    JSON)."""
    fleet = _heap_fleet(tmp_path_factory, 16, {"DURABLE_MAX_BODY_BYTES": str(1024 * 1024)})
    store = Store(remote=fleet.free[0].url, token=token("alice"))
    try:
        _long(store, "long", 12, 240, 4)
        doc = store.fork("long", "copy")
        assert doc["turns"] == 49 and fleet.proc.poll() is None
        with store.open("copy") as s:
            assert [r["content"] for r in s.rows(last=1)] == ["the last row"]
    finally:
        store.close()
        fleet.stop()


@pytest.mark.soak
def test_a_fork_of_150_mb_runs_in_cloudflares_128_mb(tmp_path_factory):
    """docs/remote.md's figure: a 150 MB transcript (1 MB rows) forked by a Worker with the default body limit
    in a V8 heap of Cloudflare's 128 MB; prints the time and workerd's peak resident memory over the fork."""

    from tests.remote.test_remote_memory import _status

    fleet = _heap_fleet(tmp_path_factory, 128)
    store = Store(remote=fleet.free[0].url, token=token("alice"))
    try:
        _long(store, "huge", 150, 1000, 10)
        pid = fleet.proc.pid
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        before, started = _status(pid)["VmRSS"], time.perf_counter()
        doc = store.fork("huge", "copy")
        took, growth = time.perf_counter() - started, _status(pid)["VmHWM"] - before
        print(f"fork of a 150 MB transcript: {took:.1f} s, workerd peak +{growth / 1e6:.1f} MB")
        assert doc["turns"] == 151 and fleet.proc.poll() is None
    finally:
        store.close()
        fleet.stop()
