"""docs/reference/transcript.md §6: the transcript, the context window, summaries, prune and redact."""

import json
import math
import os
import shutil
import tempfile

import pytest
from freezegun import freeze_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_cli import Store
from durable_cli.core.tokens import approx

pytestmark = pytest.mark.both_backends
CLOCK = "freezes the clock (freezegun/faketime), which cannot reach the Worker's clock"


def test_token_estimate_formula(durable):
    text = "hello wonderful world of tokens"
    row = durable("transcript", "append", "t", "--role", "user", text, "--json").json()
    assert row["tokens"] == max(math.ceil(len(text) / 4), math.ceil(len(text.split()) * 1.3)) + 4
    assert approx("a b c d e f g h") == math.ceil(8 * 1.3) + 4
    assert approx("é" * 12) == 3 + 4  # code points (12), not bytes (24)
    assert durable("transcript", "append", "t", "--role", "user", "x", "--tokens", "99", "--json").json()["tokens"] == 99


def test_append_show_shapes(durable):
    row = durable("transcript", "append", "t", "--role", "tool", "result", "--call-id", "c1", "--json").json()
    assert set(row) >= {"seq", "role", "content", "tokens", "author", "created_at", "kind", "superseded_by", "covers", "call_id"}
    assert (row["seq"], row["kind"], row["call_id"], row["author"], row["covers"]) == (1, "turn", "c1", "alice", None)
    assert durable("transcript", "append", "t", "--role", "user", "plain").out == "2\n"
    assert [r["seq"] for r in durable("transcript", "show", "t", "--jsonl").lines()] == [1, 2]
    assert [r["seq"] for r in durable("transcript", "show", "t", "--since", "1", "--json").json()] == [2]
    assert durable("session", "show", "t", "--json").json()["status"] == "active"


@pytest.mark.parametrize("args,stdin", [
    (["--role", "robot", "x"], None),
    (["--role", "user", ""], None),
    (["--role", "user", "-"], b"\xff\xfe"),
    (["--role", "user", "-"], b""),
    (["--role", "user", "x", "--tokens", "-1"], None),
    (["--role", "user"], None),
])
def test_invalid_append_is_exit_2_and_stores_nothing(durable, home, args, stdin):
    durable("transcript", "append", "t", "--role", "user", "keep")
    before = durable("transcript", "show", "t", "--all", "--json").json()
    r = durable("transcript", "append", "t", *args, input=stdin)
    assert r.status == 2
    assert durable("transcript", "show", "t", "--all", "--json").json() == before


def test_oversize_is_exit_2(durable):
    durable("config", "set", "transcript.max_turn_bytes", "10")
    assert durable("transcript", "append", "t", "--role", "user", "é" * 6).status == 2  # 12 bytes
    assert durable("transcript", "append", "t", "--role", "user", "é" * 5).status == 0
    assert durable("session", "prompt", "t", "x" * 11).status == 2
    assert durable("transcript", "recent", "t", "--tokens", "-1").status == 2
    assert durable("transcript", "recent", "t", "--format", "xml").status == 2


def test_request_id_append(durable):
    a = durable("transcript", "append", "t", "--role", "user", "hi", "--request-id", "r1", "--json").json()
    assert durable("transcript", "append", "t", "--role", "user", "hi", "--request-id", "r1", "--json").json() == a
    assert durable("transcript", "append", "t", "--role", "user", "ho", "--request-id", "r1").status == 4
    assert len(durable("transcript", "show", "t", "--json").json()) == 1


def test_recent_window_rules(durable):
    add = lambda role, text, tokens, *more: durable("transcript", "append", "w", "--role", role, text, "--tokens", str(tokens), *more)
    add("system", "sys", 10)
    add("user", "u1", 10)
    add("assistant", "a1", 10, "--tool-calls", '[{"id": "c1", "name": "look"}]')
    add("tool", "t1", 10, "--call-id", "c1")
    add("user", "u2", 10)
    win = durable("transcript", "recent", "w", "--tokens", "40", "--json").json()
    assert [t["content"] for t in win["turns"]] == ["sys", "a1", "t1", "u2"] and win["tokens"] == 40 and win["budget"] == 40
    win = durable("transcript", "recent", "w", "--tokens", "30", "--json").json()
    assert [t["content"] for t in win["turns"]] == ["sys", "u2"]  # never a tool result without its call
    win = durable("transcript", "recent", "w", "--limit", "2", "--json").json()
    assert [t["content"] for t in win["turns"]] == ["sys", "u2"]  # a call and its result come together
    assert durable("transcript", "recent", "w", "--tokens", "5", "--json").json()["turns"] == []
    messages = json.loads(durable("transcript", "recent", "w", "--format", "messages").out)
    assert messages[0] == {"role": "system", "content": "sys"}
    text = durable("transcript", "recent", "w", "--limit", "1").out
    assert text == "system: sys\nuser: u2\n"


def test_summaries_overlay_and_audit_view(durable):
    durable("transcript", "append", "s", "--role", "system", "be brief")
    for i in range(1, 5):
        durable("transcript", "append", "s", "--role", "user", f"turn {i}")
    out = durable("transcript", "summarize", "s", "--through", "3", "--text", "first two", "--json").json()
    assert out["superseded"] == 2 and out["summary"]["covers"] == [2, 3] and out["summary"]["kind"] == "summary"
    live = durable("transcript", "show", "s", "--json").json()
    assert [r["seq"] for r in live] == [1, 6, 4, 5]  # the summary stands where its first row stood
    out2 = durable("transcript", "summarize", "s", "-", "--through", "4", "--json", input="all so far").json()
    assert out2["superseded"] == 2 and out2["summary"]["covers"] == [2, 4]
    audit = durable("transcript", "show", "s", "--all", "--json").json()
    assert [r["seq"] for r in audit] == [1, 2, 3, 4, 5, 6, 7]
    assert [r["superseded_by"] for r in audit] == [None, 6, 6, 7, None, 7, None]
    assert durable("transcript", "summarize", "s", "--through", "2", "--text", "x").status == 3  # superseded
    assert durable("transcript", "summarize", "s", "--through", "1", "--text", "x").status == 4  # pinned only
    assert durable("transcript", "summarize", "s", "--through", "99", "--text", "x").status == 3
    assert durable("session", "show", "s", "--json").json()["turns"] == 3
    window = durable("transcript", "recent", "s", "--format", "messages").out
    assert json.loads(window)[1] == {"role": "system", "content": "all so far"}


def test_summarize_with_commands(durable, tmp_path):
    for i in range(3):
        durable("transcript", "append", "c", "--role", "user", f"line {i}")
    before = durable("transcript", "show", "c", "--all", "--json").json()
    r = durable("transcript", "summarize", "c", "--through", "2", "--command", "echo oops >&2; exit 3")
    assert r.status == 4 and "oops" in r.err
    r = durable("transcript", "summarize", "c", "--through", "2", "--command", "true")
    assert r.status == 4
    r = durable("transcript", "summarize", "c", "--through", "2", "--command", "sleep 5", "--timeout", "1s")
    assert r.status == 4 and "timed out" in r.err
    assert durable("transcript", "show", "c", "--all", "--json").json() == before
    ok = durable("transcript", "summarize", "c", "--through", "2", "--command", "wc -l | tr -d ' '; echo '  '", "--json").json()
    assert ok["summary"]["content"] == "4"  # two rows as "role: text" + blank line each, trailing space stripped
    ok = durable("transcript", "summarize", "c", "--through", "3", "--input", "jsonl", "--command", "jq -rs 'map(.seq)|@csv'", "--json").json()
    assert ok["summary"]["content"] == "4,3"


def test_summarize_with_the_llm_cli(durable):
    import sys

    from tests.cli.tools import require

    llm = require("llm", path=os.path.dirname(sys.executable))  # the e2e extra: pip install -e '.[e2e]'
    for i in range(3):
        durable("transcript", "append", "l", "--role", "user", f"question {i}")
    env_home = tempfile.mkdtemp()
    cmd = f"LLM_USER_PATH={env_home} {llm} -m echo --no-log"
    out = durable("transcript", "summarize", "l", "--through", "2", "--command", cmd, "--json")
    assert out.status == 0, out.err
    summary = out.json()["summary"]["content"]
    assert "question 0" in summary and "question 1" in summary and "question 2" not in summary


def test_compact(durable):
    for i in range(10):
        durable("transcript", "append", "k", "--role", "user", f"m{i}", "--tokens", "10")
    assert durable("transcript", "compact", "k", "--max-tokens", "200", "--keep-tokens", "30", "--text", "x", "--json").json() == {"summary": None, "superseded": 0}
    out = durable("transcript", "compact", "k", "--max-tokens", "50", "--keep-tokens", "30", "--text", "old stuff", "--json").json()
    assert out["superseded"] == 7 and out["summary"]["covers"] == [1, 7]
    assert [r["content"] for r in durable("transcript", "show", "k", "--json").json()] == ["old stuff", "m7", "m8", "m9"]


def test_archived_refuses_writes_but_allows_prune_redact(durable):
    durable("transcript", "append", "a", "--role", "user", "secret words")
    durable("session", "archive", "a")
    assert durable("transcript", "append", "a", "--role", "user", "x").status == 4
    assert durable("transcript", "summarize", "a", "--through", "1", "--text", "x").status == 4
    assert durable("transcript", "compact", "a", "--max-tokens", "0", "--keep-tokens", "0", "--text", "x").status == 4
    assert durable("transcript", "redact", "a", "1", "--json").json()["content"] == "[redacted]"
    assert durable("transcript", "prune", "a", "--older-than", "1d", "--json").json() == {"deleted": 0, "dry_run": False}


def object_bytes(home):
    data = b""
    for base, _, files in os.walk(home):
        for f in files:
            with open(os.path.join(base, f), "rb") as fh:
                data += fh.read()
    return data


def test_redact_leaves_no_trace(durable, backend, home):
    durable("session", "prompt", "r", "my password is hunter2-xyzzy")
    durable("session", "next", "r")
    durable("transcript", "redact", "r", "1")
    assert durable("session", "queue", "r", "--json").json()[0]["content"] == "[redacted]"
    assert "transcript.redacted" in [e["type"] for e in durable("session", "events", "r", "--json").json()]
    if backend == "local":  # the bytes: local only, as workerd refuses PRAGMA secure_delete (SQLITE_AUTH) in a DO
        assert b"hunter2-xyzzy" not in object_bytes(home)


@pytest.mark.local_only(CLOCK)
def test_prune_by_age(durable, home):
    with freeze_time("2026-01-01"):
        durable("transcript", "append", "p", "--role", "system", "pinned rules")
        durable("transcript", "append", "p", "--role", "user", "ancient-one")
        durable("transcript", "append", "p", "--role", "user", "ancient-two")
        durable("transcript", "summarize", "p", "--through", "3", "--text", "ancient summary")
    with freeze_time("2026-03-01"):
        durable("transcript", "append", "p", "--role", "user", "recent")
        assert durable("transcript", "prune", "p", "--older-than", "30d", "--dry-run", "--json").json() == {"deleted": 3, "dry_run": True}
        assert durable("transcript", "prune", "p", "--older-than", "30d").out == "3\n"
        rows = durable("transcript", "show", "p", "--all", "--json").json()
        assert [r["content"] for r in rows] == ["pinned rules", "recent"]
        assert durable("session", "show", "p", "--json").json()["turns"] == 2
    assert b"ancient-one" not in object_bytes(home)


def build(items):
    """Library-level transcript from items: (role, tokens) rows, ("call", tokens, [result tokens]) for
    an assistant row calling tools followed by their results, ("orphan", tokens) for a result whose
    call is not in the transcript."""
    home = tempfile.mkdtemp()
    rows, n = [], 0
    for item in items:
        n += 1
        if item[0] == "call":
            ids = [f"c{n}-{i}" for i in range(len(item[2]))]
            rows.append({"role": "assistant", "content": "", "tokens": item[1],
                         "tool_calls": [{"id": i, "name": "f", "arguments": "{}"} for i in ids]})
            rows += [{"role": "tool", "content": f"r{n}", "call_id": i, "tokens": t} for i, t in zip(ids, item[2])]
        elif item[0] == "orphan":
            rows.append({"role": "tool", "content": f"o{n}", "call_id": "gone", "tokens": item[1]})
        else:
            rows.append({"role": item[0], "content": f"r{n}", "tokens": item[1]})
    store = Store(home=home, user="u")
    with store.open("w", create=True) as s:
        s.create()
        if rows:
            s.append_many(rows)
    return store, home


item_strategy = st.one_of(
    st.tuples(st.sampled_from(["system", "developer", "user", "assistant"]), st.integers(0, 30)),
    st.tuples(st.just("call"), st.integers(0, 30), st.lists(st.integers(0, 30), min_size=1, max_size=3)),
    st.tuples(st.just("orphan"), st.integers(0, 30)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(item_strategy, max_size=15), budget=st.integers(0, 200), limit=st.one_of(st.none(), st.integers(0, 10)),
       summarize_at=st.one_of(st.none(), st.integers(1, 30)))
def test_window_properties(items, budget, limit, summarize_at):
    store, home = build(items)
    try:
        with store.open("w") as s:
            if summarize_at is not None:
                try:
                    s.summarize(through=summarize_at, text="summary text")
                except Exception as e:  # pinned-only (4), not live (3), or a split call (2) are refused
                    assert getattr(e, "exit_status", None) in (2, 3, 4)
            live = s.rows()
            window = s.window(tokens=budget, limit=limit)
        turns = window["turns"]
        pinned = []
        for r in live:
            if r["role"] in ("system", "developer") and r["kind"] == "turn":
                pinned.append(r)
            else:
                break
        rest = live[len(pinned):]
        assert window["tokens"] == sum(t["tokens"] for t in turns) <= budget
        if sum(p["tokens"] for p in pinned) > budget:
            assert turns == []
            return
        assert turns[:len(pinned)] == pinned
        tail = turns[len(pinned):]
        assert limit is None or len(tail) <= limit
        calls = {c["id"] for t in tail for c in (t["tool_calls"] or [])}
        assert all(t["call_id"] in calls for t in tail if t["role"] == "tool")  # never a result without its call
        results = {r["call_id"] for r in rest if r["role"] == "tool"}
        shown = {t["call_id"] for t in tail if t["role"] == "tool"}
        assert all(i in shown for i in calls if i in results)  # never a call without its results
        # a suffix of the live rows, leaving out only tool rows whose call is not in the window
        start = next((i for i, r in enumerate(rest) if r in tail), len(rest))
        assert [r for r in rest[start:] if r["role"] != "tool" or r["call_id"] in calls] == tail
        # maximal: the row (with its results) just before the suffix would break the budget or the limit
        before = [r for r in rest[:start] if r["role"] != "tool"]
        if before:
            row = before[-1]
            ids = {c["id"] for c in (row["tool_calls"] or [])}
            group = [row] + [r for r in rest if r["role"] == "tool" and r["call_id"] in ids and r not in tail]
            fits = window["tokens"] + sum(r["tokens"] for r in group) <= budget
            within = limit is None or len(tail) + len(group) <= limit
            assert not (fits and within), "the window is not the longest suffix"
    finally:
        shutil.rmtree(home)


def test_tokenizer_that_cannot_run_offline_is_exit_2(durable):
    import importlib.util

    durable("transcript", "append", "t", "--role", "user", "before")
    r = durable("config", "set", "transcript.tokenizer", "nonsense")
    assert r.status == 2 and "unknown tokenizer" in r.err  # refused before it is written (issue 33 item 10)
    # a config file that names one anyway (edited by hand, or written by an older durable): appends say why
    config = os.environ["DURABLE_CONFIG"]
    with open(config, "w") as f:
        f.write('[transcript]\ntokenizer = "nonsense"\n')
    r = durable("transcript", "append", "t", "--role", "user", "x")
    assert r.status == 2 and "unknown tokenizer" in r.err
    with open(config, "w") as f:
        f.write('[transcript]\ntokenizer = "tiktoken:cl100k_base"\n')
    r = durable("transcript", "append", "t", "--role", "user", "x")
    if importlib.util.find_spec("tiktoken") is None:
        assert r.status == 2 and "tiktoken" in r.err
    else:  # installed: works only when the encoding is cached; never downloads
        assert r.status in (0, 2)
    assert [x["content"] for x in durable("transcript", "show", "t", "--json").json()] == ["before"] + (["x"] if r.status == 0 else [])


def test_library_replace_tail_is_one_transaction_on_both_backends(durable):
    """Session.replace_tail (the Agents SDK's compaction of a suffix): the newest rows swapped in one request and
    one transaction on either backend; a bad row, or rows that are no longer the newest, change nothing."""
    from durable_cli import DurableError, Store

    durable("transcript", "append", "rt", "--role", "user", "a")
    durable("transcript", "append", "rt", "--role", "assistant", "b")
    with Store().open("rt") as session:
        with pytest.raises(DurableError) as bad:
            session.replace_tail([2], [{"role": "assistant", "content": "ok"}, {"role": "bogus", "content": "x"}])
        assert bad.value.exit_status == 2 and bad.value.message.startswith("item 2: ")
        assert session.replace_tail([1], [{"role": "assistant", "content": "x"}]) is False  # not the newest row
        assert session.replace_tail([2], [{"role": "assistant", "content": "c", "data": {"n": 1.0}}]) is True
    rows = durable("transcript", "show", "rt", "--json").json()
    assert [(r["seq"], r["content"], r["data"]) for r in rows] == [(1, "a", None), (3, "c", {"n": 1.0})]
    assert durable("session", "events", "rt", "--json").json()[-1]["data"] == {"seqs": [2]}
