"""No op answers or loads more than one row plus one page (docs/reference/remote.md §13), the whole-transcript reads included:
`rows_after` reads one page, `plan_summary`/`plan_compact` plan over each row's seq, tokens, role, kind and
call ids without its content, `summarize --command` reads the covered rows a page at a time,
`summarize`/`compact --text` never load the covered rows whole, and `append_many` answers a batch of more
than a page with its seqs, on a first request and on a repeated request id alike.

Each is measured as workerd's peak resident memory growth (tests/remote/test_remote_memory.py's method)
on a 150 MB transcript (150 rows of 1 MB): before, rows_after grew it +572 MB, a plan +286 MB, summarize
--text +114 MB; each must stay under 48 MB.
"""

import json
import os

import pytest

from durable_cli import Store
from tests.conftest import run_inprocess
from tests.remote.conftest import post_call, start_dev
from tests.remote.test_remote_memory import MB, _peak_growth, _status, _transcript

LIMIT = 48 * MB


def _once(pid: int, run) -> int:
    """How far workerd's resident memory rose while RUN ran once (a write that commits cannot run twice)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    before = _status(pid)["VmRSS"]
    run()
    return _status(pid)["VmHWM"] - before


def test_whole_transcript_ops_hold_one_page_of_a_100_mb_transcript(tmp_path_factory, tmp_path, monkeypatch):
    """100 MB: each op that once loaded the whole would still grow workerd past LIMIT (summarize --text, the least,
    +114 MB at 150 MB: +76 MB here); 150 MB is the soak below."""
    whole_reads(tmp_path_factory, tmp_path, monkeypatch, 100)


@pytest.mark.soak
def test_soak_whole_transcript_ops_hold_one_page_of_a_150_mb_transcript(tmp_path_factory, tmp_path, monkeypatch):
    whole_reads(tmp_path_factory, tmp_path, monkeypatch, 150)


def whole_reads(tmp_path_factory, tmp_path, monkeypatch, n):
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux /proc/PID/clear_refs to reset the peak resident memory")
    dev = start_dev(tmp_path_factory)
    store = Store(remote=dev.url, token=dev.admin_token, user="alice")
    try:
        _transcript(dev, "huge", n)  # seqs 1-N of 1 MB each, then N+1 "the question"
        monkeypatch.setenv("DURABLE_REMOTE", dev.url)
        monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
        monkeypatch.setenv("DURABLE_USER", "alice")
        pid = dev.workerd_pid()
        growth = {}

        def call(op, args, request_id=None):
            body = {"op": op, "args": args, "scope": "user", "label": "user", "name": "huge", "actor": "alice",
                    "create": False, "config": {}, "request_id": request_id}
            status, doc = post_call(dev.url, dev.admin_token, body, timeout=120)
            assert status == 200, doc
            return doc["result"]

        # rows_after: one page a request (its garbage is V8's to collect when it likes: one request is
        # measured); the client follows the pages
        got = {}

        def rows_after():
            got["page"] = call("rows_after", {"seq": 0})

        growth["rows_after"] = _peak_growth(pid, rows_after)
        rows, _status, more = got["page"]
        assert more is True and 0 < len(rows) < 10  # a page ends at the row that reaches ~0.5 MB of text
        with store.open("huge") as s:
            assert [r["seq"] for r in s.rows_after(0)[0]] == list(range(1, n + 2))

        # a plan holds no content: seq, tokens, role, kind and call ids
        def plans():
            got["summary"] = call("plan_summary", {"through": n})
            got["compact"] = call("plan_compact", {"max_tokens": 10, "keep_tokens": 0})

        growth["plans"] = _peak_growth(pid, plans)
        for plan in (got["summary"], got["compact"]):
            assert len(plan["covered"]) >= n and len(json.dumps(plan)) < 100_000

        # append_many: a batch of more than one page answers its seqs, first and on its request id again
        batch = [{"role": "assistant", "content": "y" * (MB - 100), "tool_calls": None, "call_id": None, "name": None,
                  "meta": None, "data": None, "tokens": None}] * 8
        args = {"rows": batch, "create": False, "one": False, "seqs_only": False}

        def appends():
            got["first"] = call("append_many", args, request_id="big-batch")
            got["again"] = call("append_many", args, request_id="big-batch")

        growth["append_many"] = _peak_growth(pid, appends)
        assert got["first"] == got["again"] == list(range(n + 2, n + 10))
        with store.open("huge") as s:  # the library still answers rows: it reads what the seqs name in pages
            made = s.append_many([{"role": "user", "content": "z" * 600_000}, {"role": "user", "content": "w"}])
        assert [r["content"][:1] for r in made] == ["z", "w"]

        # summarize --command: the command reads the covered rows, fetched a page at a time
        out = tmp_path / "read"

        def summarize():
            r = run_inprocess("transcript", "summarize", "huge", "--through", str(n // 2), "--command", f"wc -c > {out}; echo summary")
            assert r.status == 0, r.err

        growth["summarize --command"] = _once(pid, summarize)
        assert int(out.read_text().split()[0]) > n // 2 * (MB - 100)  # every covered row reached the command

        # compact --text: plans and commits in the object without loading the covered rows
        def compact():
            r = run_inprocess("transcript", "compact", "huge", "--max-tokens", "10", "--keep-tokens", "0", "--text", "short")
            assert r.status == 0, r.err

        growth["compact --text"] = _once(pid, compact)
        shown = json.loads(run_inprocess("transcript", "show", "huge", "--json").out)
        assert shown[0]["kind"] == "summary" and shown[0]["content"] == "short"
        print({k: f"+{v / MB:.1f} MB" for k, v in growth.items()})
        assert all(v < LIMIT for v in growth.values()), {k: v / MB for k, v in growth.items()}
    finally:
        store.close()
        dev.stop()
