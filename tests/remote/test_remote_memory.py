"""No request holds more in the isolate than one row plus one page of its answer (docs/reference/remote.md §13): a context
window of a long transcript reads storage with a lazy cursor, newest first, only until its budget is
spent. Measured as workerd's peak resident memory during the window request (VmHWM, reset through
/proc/PID/clear_refs just before): a window that materialised the transcript would grow it by at least
the transcript's size.

Always on: a 60 MB transcript (60 rows of 1 MB; a window that read it eagerly measured +24 MB at 40 MB), the window must cost under 16 MB. Under `-m soak`: the
The reference's figure (docs/reference/remote.md §13), a 4,000-token window of a 150 MB transcript under 16 MB (docs/remote.md, docs/benchmarks.md).
"""

import json
import os

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import start_dev

MB = 1_000_000


def _status(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as f:
        return {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in f) if k in ("VmRSS", "VmHWM")}


def _peak_growth(pid: int, run) -> int:
    """How far workerd's resident memory rose above where it was while RUN ran (bytes): the least of two
    runs, since anything else workerd does meanwhile (a collection, a page of the log) only adds."""
    growth = []
    for _ in range(2):
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        before = _status(pid)["VmRSS"]
        run()
        growth.append(_status(pid)["VmHWM"] - before)
    return min(growth)


def _transcript(dev, name: str, megabytes: int):
    from durable_cli import Store

    store = Store(remote=dev.url, token=dev.admin_token, user="alice")
    try:
        row = {"role": "user", "content": "x" * (MB - 100)}
        with store.open(name, create=True) as s:
            for _ in range(megabytes // 10):
                s.append_many([row] * 10, seqs_only=True)  # 10 MB a request (under the 16 MiB body limit)
            s.append("the question", role="user")
    finally:
        store.close()


def _window_growth(dev, monkeypatch, name):
    monkeypatch.setenv("DURABLE_REMOTE", dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", "alice")
    pid = dev.workerd_pid()
    got = {}

    def window():
        r = run_inprocess("transcript", "recent", name, "--tokens", "4000", "--json")
        assert r.status == 0, r.err
        got["doc"] = json.loads(r.out)

    window()  # warm: the object woken, its schema checked
    import time

    t = time.perf_counter()
    growth = _peak_growth(pid, window)
    print(f"window: {time.perf_counter() - t:.3f} s")
    assert [t["content"] for t in got["doc"]["turns"]] == ["the question"]
    return growth


@pytest.fixture
def dev(tmp_path_factory):
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux /proc/PID/clear_refs to reset the peak resident memory")
    d = start_dev(tmp_path_factory)
    yield d
    d.stop()


def test_a_window_of_a_60_mb_transcript_costs_under_16_mb_of_workerd_memory(dev, monkeypatch):
    _transcript(dev, "long", 60)
    growth = _window_growth(dev, monkeypatch, "long")
    print(f"window of a 60 MB transcript: workerd peak +{growth / MB:.1f} MB")
    assert growth < 16 * MB
    # show: one request answers one page (~4 MB), never the transcript (the client follows the pages; V8
    # collects between requests, so this is measured per request: workerd's peak over many requests is not)
    from durable_cli import Store

    store = Store(remote=dev.url, token=dev.admin_token, user="alice")
    got = {}
    try:
        with store.open("long") as session:
            def page():
                got["page"] = session._call("show_transcript", all_rows=False, since=0, last=None, cursor=None)

            growth = _peak_growth(dev.workerd_pid(), page)

            def export_page():
                got["export"] = session._call("export", cursor=None)

            export_growth = _peak_growth(dev.workerd_pid(), export_page)
    finally:
        store.close()
    print(f"a page of show of a 60 MB transcript: workerd peak +{growth / MB:.1f} MB")
    assert [r["seq"] for r in got["page"]["rows"]] == [1] and got["page"]["next"] is not None
    # (one 1 MB row and its copies on the way: +11 to +22 MB measured, with the machine's load; the whole
    # transcript at once would be several times its 60 MB)
    assert growth < 32 * MB
    print(f"a page of export of a 60 MB transcript: workerd peak +{export_growth / MB:.1f} MB")
    assert [r["seq"] for r in got["export"]["tables"]["turns"]] == [1] and got["export"]["next"] is not None
    assert export_growth < 32 * MB


def test_show_pages_join_into_the_listing(dev, monkeypatch):
    from durable_cli import Store

    store = Store(remote=dev.url, token=dev.admin_token, user="alice")
    try:
        with store.open("many", create=True) as s:
            for start in range(0, 2500, 500):
                s.append_many([{"role": "user", "content": f"row {i}"} for i in range(start, start + 500)], seqs_only=True)
            s.pop(count=1)  # seq 2500 gone: the live rows are 1..2499
            live = [r["seq"] for r in s.show_transcript()]
            assert live == list(range(1, 2500))  # three pages of at most 1,000
            assert [r["seq"] for r in s.show_transcript(last=1200)] == list(range(1300, 2500))
            assert [r["seq"] for r in s.show_transcript(last=1200, since=1400)] == list(range(1401, 2500))
            assert [r["seq"] for r in s.show_transcript(all_rows=True, since=10)] == list(range(11, 2500))
            assert s.show_transcript(last=0) == []
            stored = s.stored_rows()  # what an adapter rebuilds its items from, in pages too
            assert [r[3] for r in stored] == [f"row {i}" for i in range(2499)]
            assert [r[3] for r in s.stored_rows(last=1200)] == [f"row {i}" for i in range(1299, 2499)]
        with store.open("small", create=True) as s:
            s.append("one row", role="user")
        small = next(store.export(name="small"))
        record = next(store.export(name="many"))  # pages of 1,000 rows joined
        assert list(record) == list(small)  # the file backend's key order
        assert [t["seq"] for t in record["turns"]] == list(range(1, 2500))
        assert [e["seq"] for e in record["events"]] == list(range(1, len(record["events"]) + 1))
        assert record["sequences"]["turns"] == 2500
    finally:
        store.close()


@pytest.mark.soak
def test_a_4000_token_window_of_a_150_mb_transcript_costs_under_16_mb(dev, monkeypatch):
    _transcript(dev, "huge", 150)
    growth = _window_growth(dev, monkeypatch, "huge")
    print(f"window of a 150 MB transcript: workerd peak +{growth / MB:.1f} MB")
    assert growth < 16 * MB
