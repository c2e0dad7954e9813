"""docs/reference/transcript.md §6 rows that hold what agents write: tool calls, results, meta, data; batch, pop, clear, --last;
the summarizer without the lock; next --context and prompt --wait (docs/reference/sessions.md §5); library (docs/reference/library.md §9)."""

import json
import os
import sqlite3
import subprocess
import sys
import threading

import pytest
from freezegun import freeze_time

from durable_cli import Store
from durable_cli.core.tokens import approx
from tests.helpers import files_under

pytestmark = pytest.mark.both_backends
CLOCK = "freezes the clock (freezegun/faketime), which cannot reach the Worker's clock"

CALLS = '[{"id": "call_1", "name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}]'
DURABLE = f"{sys.executable} -m durable_cli"


def object_bytes(home):
    data = b""
    for base, _, files in os.walk(home):
        for f in files:
            with open(os.path.join(base, f), "rb") as fh:
                data += fh.read()
    return data


def test_tool_call_result_meta_and_data_round_trip(durable):
    a = durable("transcript", "append", "t", "--role", "assistant", "--tool-calls", CALLS,
                "--meta", '{"model": "gpt-x", "usage": {"input_tokens": 12, "output_tokens": 3}, "cost_usd": 0.01, "mine": [1]}',
                "--json").json()
    assert list(a) == ["seq", "role", "content", "tool_calls", "call_id", "name", "meta", "data", "forked_from",
                       "tokens", "author", "created_at", "kind", "superseded_by", "covers"]
    assert a["content"] == "" and a["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert a["meta"]["mine"] == [1] and a["forked_from"] is None
    assert a["tokens"] == approx("\n".join(["", "get_weather", '{"city": "Paris"}']))  # what a model reads
    t = durable("transcript", "append", "t", "--role", "tool", "18C", "--call-id", "call_1", "--name", "get_weather", "--json").json()
    assert (t["call_id"], t["name"]) == ("call_1", "get_weather")
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "n": 1.5, "u": "é"}
    d = durable("transcript", "append", "t", "--role", "assistant", "--data", json.dumps(item), "--json").json()
    assert d["data"] == item and d["content"] == ""
    calls = durable("transcript", "append", "t", "--role", "assistant", "--tool-calls", '[{"id": "c2", "name": "noargs"}]', "--json").json()
    assert calls["tool_calls"][0]["arguments"] == "{}"
    assert durable("transcript", "show", "t", "--json").json()[:3] == [a, t, d]
    for role in ("developer", "system", "user"):
        assert durable("transcript", "append", "t", "--role", role, "x").status == 0


@pytest.mark.parametrize("args", [
    ["--role", "user", ""],
    ["--role", "user"],
    ["--role", "robot", "x"],
    ["--role", "tool", "result"],  # a tool row needs --call-id
    ["--role", "user", "x", "--call-id", "c"],
    ["--role", "user", "x", "--name", "f"],
    ["--role", "user", "x", "--tool-calls", CALLS],
    ["--role", "assistant", "--tool-calls", "[]"],
    ["--role", "assistant", "--tool-calls", "{"],
    ["--role", "assistant", "--tool-calls", '{"id": "x"}'],
    ["--role", "assistant", "--tool-calls", '[{"name": "f"}]'],
    ["--role", "assistant", "--tool-calls", '[{"id": "c", "name": "f", "arguments": {}}]'],
    ["--role", "user", "x", "--meta", "[1]"],
    ["--role", "user", "x", "--meta", '{"model": 3}'],
    ["--role", "user", "x", "--meta", '{"usage": {"input_tokens": -1, "output_tokens": 1}}'],
    ["--role", "user", "x", "--meta", '{"cost_usd": "free"}'],
    ["--role", "user", "x", "--data", "NaN"],
    ["--role", "user", "x", "--tokens", "-1"],
    ["--role", "user", "x", "--request-id", ""],
])
def test_rejected_append_leaves_no_file(durable, backend, home, args):
    r = durable("transcript", "append", "new", *args)
    assert r.status == 2, r.err
    assert r.err.startswith("durable: error: ") and r.err.count("\n") <= 2
    assert files_under(home, suffixes=(".sqlite3", ".lock")) == []  # not even a lock file: doctor has nothing to report
    if backend == "local":
        assert durable("doctor", "--json").json()["healthy"]
    assert durable("session", "show", "new").status == 3  # the object was not made (remote: nothing sent)


def test_rejected_prompt_and_batch_leave_no_file(durable, home, tmp_path):
    assert durable("session", "prompt", "new", "").status == 2
    assert durable("session", "prompt", "new", "-", input=b"\n").status == 2  # empty once the newline goes
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"role": "user", "content": "ok"}\n{"role": "user"}\n')
    r = durable("transcript", "append", "new", "--batch", str(bad))
    assert r.status == 2 and "line 2" in r.err
    assert files_under(home, suffixes=(".sqlite3", ".lock")) == []
    assert durable("session", "show", "new").status == 3


def test_two_mib_ceiling_counts_the_whole_row(durable):
    durable("config", "set", "transcript.max_turn_bytes", "100")
    assert durable("transcript", "append", "c", "--role", "user", "x" * 60, "--data", json.dumps("y" * 40)).status == 2
    assert durable("transcript", "append", "c", "--role", "user", "x" * 60, "--meta", json.dumps({"k": "y" * 40})).status == 2
    assert durable("transcript", "append", "c", "--role", "user", "x" * 60, "--data", json.dumps("y" * 30)).status == 0


def test_stdin_loses_one_trailing_newline(durable):
    for given, stored in ((b"hi\n", "hi"), (b"hi\r\n", "hi"), (b"hi\n\n", "hi\n"), (b"hi", "hi")):
        assert durable("transcript", "append", "n", "--role", "user", "-", "--json", input=given).json()["content"] == stored
    assert durable("transcript", "append", "n", "--role", "user", "arg\n", "--json").json()["content"] == "arg\n"
    assert durable("session", "prompt", "n", "-", "--json", input=b"p\n").json()["content"] == "p"


def test_batch_is_one_transaction_and_reads_back_show_output(durable, tmp_path):
    lines = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "w", "arguments": "{}"}]},
        {"role": "tool", "content": "sunny", "call_id": "c1", "name": "w"},
        {"role": "assistant", "content": "It is sunny.", "meta": {"model": "m"}, "data": {"id": "msg_1"}, "tokens": 7},
    ]
    src = "\n".join(json.dumps(x) for x in lines) + "\n"
    r = durable("transcript", "append", "b", "--batch", "-", input=src)
    assert r.status == 0 and r.out == "1\n2\n3\n4\n5\n"
    shown = durable("transcript", "show", "b", "--jsonl").out
    again = durable("transcript", "append", "copy", "--batch", "-", "--json", input=shown).json()  # output-only keys ignored
    strip = lambda rows: [{k: v for k, v in x.items() if k not in ("created_at", "author")} for x in rows]
    assert strip(again) == strip([json.loads(x) for x in shown.splitlines()])
    before = durable("transcript", "show", "b", "--all", "--json").json()
    for bad, line in (('{"role": "user", "content": "x", "colour": 1}', 2), ("not json", 2), ('{"role": "tool", "content": "x"}', 2)):
        r = durable("transcript", "append", "b", "--batch", "-", input='{"role": "user", "content": "fine"}\n' + bad + "\n")
        assert r.status == 2 and f"line {line}" in r.err
    assert durable("transcript", "append", "b", "--batch", "-", "--role", "user", input=src).status == 2
    assert durable("transcript", "show", "b", "--all", "--json").json() == before  # all or nothing


def test_request_id_covers_the_batch_while_what_it_made_exists(durable):
    src = '{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n'
    first = durable("transcript", "append", "r", "--batch", "-", "--request-id", "k1", "--json", input=src).json()
    assert durable("transcript", "append", "r", "--batch", "-", "--request-id", "k1", "--json", input=src).json() == first
    assert durable("transcript", "append", "r", "--batch", "-", "--request-id", "k1", input=src + src).status == 4
    assert durable("transcript", "append", "r", "--role", "user", "a", "--request-id", "k1").status == 4
    assert len(durable("transcript", "show", "r", "--json").json()) == 2
    durable("transcript", "pop", "r", "--count", "2")
    again = durable("transcript", "append", "r", "--batch", "-", "--request-id", "k1", "--json", input=src).json()
    assert [x["seq"] for x in again] == [3, 4]  # popped: the id may be used again


def test_show_last_and_library_rows(durable):
    src = "".join(json.dumps({"role": "user", "content": f"m{i}"}) + "\n" for i in range(20))
    durable("transcript", "append", "l", "--batch", "-", input=src)
    durable("transcript", "summarize", "l", "--through", "5", "--text", "early")
    assert [r["content"] for r in durable("transcript", "show", "l", "--last", "3", "--json").json()] == ["m17", "m18", "m19"]
    assert [r["seq"] for r in durable("transcript", "show", "l", "--last", "16", "--json").json()][:2] == [21, 6]
    assert durable("transcript", "show", "l", "--last", "2", "--all").status == 2
    with Store().open("l") as s:
        assert [r["seq"] for r in s.rows(last=2)] == [19, 20]
        assert [r["seq"] for r in s.rows(since=18)] == [21, 19, 20]  # the summary stands first
        assert len(s.rows(all=True)) == 21 and len(s.rows()) == 16


def test_pop_removes_newest_and_a_popped_summary_restores(durable, home):
    durable("session", "prompt", "p", "secret-question-xyzzy")
    durable("session", "next", "p")
    durable("transcript", "append", "p", "--role", "assistant", "answer")
    durable("transcript", "append", "p", "--role", "user", "more")
    durable("transcript", "summarize", "p", "--through", "2", "--text", "sum")
    popped = durable("transcript", "pop", "p", "--json").json()
    assert [r["seq"] for r in popped] == [3]
    popped = durable("transcript", "pop", "p", "--json").json()
    assert popped[0]["kind"] == "summary"
    assert [r["seq"] for r in durable("transcript", "show", "p", "--json").json()] == [1, 2]  # the undo
    assert [r["seq"] for r in durable("transcript", "pop", "p", "--count", "5", "--json").json()] == [2, 1]
    assert durable("transcript", "pop", "p").status == 4
    prompt = durable("session", "queue", "p", "--json").json()[0]
    assert prompt["content"] == "secret-question-xyzzy" and prompt["turn_seq"] is None
    assert "transcript.popped" in [e["type"] for e in durable("session", "events", "p", "--json").json()]
    show = durable("session", "show", "p", "--json").json()
    assert (show["turns"], show["tokens"]) == (0, 0)


def test_pop_leaves_no_trace_of_the_text(durable, backend, home):
    durable("transcript", "append", "q", "--role", "user", "keep")
    durable("transcript", "append", "q", "--role", "user", "hunter2-popped-text")
    durable("transcript", "pop", "q")
    if backend == "local":  # the bytes: local only, as workerd refuses PRAGMA secure_delete (SQLITE_AUTH) in a DO
        assert b"hunter2-popped-text" not in object_bytes(home)


def test_clear(durable, backend, home):
    durable("session", "prompt", "c", "question")
    durable("session", "next", "c")
    durable("transcript", "append", "c", "--role", "system", "pinned-zzz")
    assert durable("transcript", "clear", "c").status == 2  # no terminal: needs --yes
    assert durable("transcript", "clear", "c", "--yes", "--json").json() == {"deleted": 2}
    assert durable("transcript", "show", "c", "--all", "--json").json() == []
    assert durable("session", "queue", "c", "--json").json()[0]["turn_seq"] is None
    events = len(durable("session", "events", "c", "--json").json())
    active = durable("session", "show", "c", "--json").json()["last_active_at"]
    assert durable("transcript", "clear", "c", "--yes", "--json").json() == {"deleted": 0}
    assert len(durable("session", "events", "c", "--json").json()) == events
    assert durable("session", "show", "c", "--json").json()["last_active_at"] == active
    assert durable("transcript", "append", "c", "--role", "user", "next", "--json").json()["seq"] == 3  # never reused
    if backend == "local":  # the bytes: local only, as workerd refuses PRAGMA secure_delete (SQLITE_AUTH) in a DO
        assert b"pinned-zzz" not in object_bytes(home)
    assert durable("transcript", "clear", "missing", "--yes").status == 3


def test_archived_refuses_every_transcript_write(durable):
    durable("transcript", "append", "a", "--role", "user", "x")
    durable("session", "archive", "a")
    for args in (["append", "a", "--role", "user", "y"], ["append", "a", "--batch", "-"], ["pop", "a"], ["clear", "a", "--yes"],
                 ["summarize", "a", "--through", "1", "--text", "s"],
                 ["compact", "a", "--max-tokens", "0", "--keep-tokens", "0", "--text", "s"]):
        r = durable("transcript", *args, input='{"role": "user", "content": "z"}\n')
        assert r.status == 4, (args, r.err)
    assert len(durable("transcript", "show", "a", "--all", "--json").json()) == 1


def _conversation(durable, name):
    for role, text, *more in (("user", "q1"), ("assistant", "", "--tool-calls", CALLS), ("tool", "18C", "--call-id", "call_1"),
                              ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")):
        durable("transcript", "append", name, "--role", role, *([text] if text else []), *more, "--tokens", "10")


def test_summarize_never_splits_a_call_from_its_results(durable):
    _conversation(durable, "s")
    r = durable("transcript", "summarize", "s", "--through", "2", "--text", "x")
    assert r.status == 2 and "tool call" in r.err
    assert durable("transcript", "summarize", "s", "--through", "3", "--text", "x", "--json").json()["superseded"] == 3


def test_compact_cuts_just_before_a_user_turn(durable):
    _conversation(durable, "k")
    out = durable("transcript", "compact", "k", "--max-tokens", "50", "--keep-tokens", "10", "--text", "earlier", "--json").json()
    assert out["summary"]["covers"] == [1, 4]  # the kept rows start with the user's turn q2
    assert [r["content"] for r in durable("transcript", "show", "k", "--json").json()] == ["earlier", "q2", "a2"]
    assert durable("transcript", "compact", "k", "--max-tokens", "5", "--keep-tokens", "10", "--text", "x").status == 2


def test_compact_without_user_turn_never_splits_a_call(durable):
    for role, text, *more in (("assistant", "a0"), ("assistant", "", "--tool-calls", CALLS), ("tool", "r", "--call-id", "call_1")):
        durable("transcript", "append", "n", "--role", role, *([text] if text else []), *more, "--tokens", "10")
    out = durable("transcript", "compact", "n", "--max-tokens", "20", "--keep-tokens", "5", "--text", "s", "--json").json()
    assert out["summary"]["covers"] == [1, 1]


def test_summarizer_runs_without_the_lock(durable, monkeypatch):
    monkeypatch.setenv("DURABLE_LOCK_TIMEOUT", "1s")
    for i in range(3):
        durable("transcript", "append", "u", "--role", "user", f"m{i}")
    cmd = f"{DURABLE} transcript append u --role user meanwhile >/dev/null && cat >/dev/null && echo summary"
    r = durable("transcript", "summarize", "u", "--through", "2", "--command", cmd, "--json")
    assert r.status == 0, r.err
    assert r.json()["superseded"] == 2
    assert [x["content"] for x in durable("transcript", "show", "u", "--json").json()] == ["summary", "m2", "meanwhile"]


@pytest.mark.parametrize("meanwhile", [
    "transcript redact c 1", "transcript pop c --count 9", "transcript clear c --yes",
    "transcript summarize c --through 1 --text other",
    "transcript append c --role tool late --call-id call_1",
])
def test_summarizer_commits_nothing_when_covered_rows_changed(durable, monkeypatch, meanwhile):
    monkeypatch.setenv("DURABLE_LOCK_TIMEOUT", "1s")
    durable("transcript", "append", "c", "--role", "user", "q")
    durable("transcript", "append", "c", "--role", "assistant", "--tool-calls", CALLS)
    durable("transcript", "append", "c", "--role", "tool", "r1", "--call-id", "call_1")
    durable("transcript", "append", "c", "--role", "user", "q2")
    before = durable("transcript", "show", "c", "--all", "--json").json()
    cmd = f"{DURABLE} {meanwhile} >/dev/null && echo summary"
    r = durable("transcript", "summarize", "c", "--through", "3", "--command", cmd)
    assert r.status == 4 and "changed while summarizing" in r.err
    after = durable("transcript", "show", "c", "--all", "--json").json()
    assert not any(x["content"] == "summary" for x in after)
    assert after != before or meanwhile.startswith("transcript append")


def test_compact_command_runs_without_the_lock(durable, monkeypatch):
    monkeypatch.setenv("DURABLE_LOCK_TIMEOUT", "1s")
    for i in range(6):
        durable("transcript", "append", "m", "--role", "user", f"m{i}", "--tokens", "10")
    cmd = f"{DURABLE} transcript append m --role assistant meanwhile >/dev/null && echo compacted"
    out = durable("transcript", "compact", "m", "--max-tokens", "30", "--keep-tokens", "20", "--command", cmd, "--json")
    assert out.status == 0, out.err
    assert [x["content"] for x in durable("transcript", "show", "m", "--json").json()] == ["compacted", "m4", "m5", "meanwhile"]


@pytest.mark.local_only(CLOCK)
def test_prune_takes_the_prompts_text_too(durable, home):
    with freeze_time("2026-01-01"):
        durable("session", "prompt", "p", "old-secret-prompt-qq")
        durable("session", "next", "p")
        durable("session", "finish", "p", "1", "--reply", "old reply")
    with freeze_time("2026-03-01"):
        assert durable("transcript", "prune", "p", "--older-than", "30d", "--json").json()["deleted"] == 2
        prompt = durable("session", "queue", "p", "--json").json()[0]
    assert (prompt["content"], prompt["turn_seq"], prompt["status"]) == ("[pruned]", None, "completed")
    assert b"old-secret-prompt-qq" not in object_bytes(home)


def test_redact_clears_tool_arguments_and_data(durable):
    durable("transcript", "append", "r", "--role", "assistant", "--tool-calls", CALLS, "--data", '{"secret": 1}')
    row = durable("transcript", "redact", "r", "1", "--json").json()
    assert row["tool_calls"][0]["arguments"] == "{}" and row["data"] is None and row["content"] == "[redacted]"


def test_next_context_carries_the_window(durable):
    durable("transcript", "append", "w", "--role", "system", "rules", "--tokens", "50")
    durable("transcript", "append", "w", "--role", "user", "old", "--tokens", "10")
    durable("session", "prompt", "w", "new question")
    p = durable("session", "next", "w", "--context", "100", "--json").json()
    assert p["content"] == "new question"
    assert p["window"] == [{"role": "system", "content": "rules"}, {"role": "user", "content": "old"},
                           {"role": "user", "content": "new question"}]
    durable("session", "finish", "w", str(p["id"]))
    durable("session", "prompt", "w", "second")
    doc = durable("session", "next", "w", "--context", "5", "--format", "json", "--json").json()["window"]
    assert [t["content"] for t in doc["turns"]] == ["rules", "second"] and doc["tokens"] > doc["budget"] == 5
    assert durable("session", "next", "w", "--format", "messages").status == 2
    assert durable("session", "next", "w", "--context", "9", "--format", "xml").status == 2


def test_prompt_wait_waits_for_room(durable, durable_proc):
    durable("config", "set", "queue.max_unfinished", "1")
    durable("session", "prompt", "q", "first")
    r = durable("session", "prompt", "q", "second", "--wait", "1s")
    assert r.status == 4 and "still full" in r.err
    assert len(durable("session", "queue", "q", "--json").json()) == 1
    waiting = subprocess.Popen([sys.executable, "-m", "durable_cli", "session", "prompt", "q", "third", "--wait", "60s", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    durable("session", "dequeue", "q", "1")  # makes room, whether the waiter is polling yet or not
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert json.loads(out)["content"] == "third"


def test_library_append_many_pop_clear_window_from_threads(home):
    store = Store(user="alice")
    with store.open("lib", create=True) as s:
        made = s.append_many([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
        assert [r["seq"] for r in made] == [1, 2]
        assert s.window(tokens=1000, format="messages") == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]

    def worker(i):
        for j in range(20):
            with store.open("lib") as s:
                s.append(f"t{i}-{j}", role="user")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with store.open("lib") as s:
        assert len(s.rows()) == 62
        assert [r["seq"] for r in s.pop(2)] == [62, 61]
        assert s.clear() == {"deleted": 60}
    assert list(store.ls())[0]["turns"] == 0


@pytest.mark.cross_object
def test_export_import_round_trips_every_field(durable, tmp_path):
    durable("transcript", "append", "e", "--role", "assistant", "--tool-calls", CALLS, "--meta", '{"model": "m"}', "--data", '{"x": [1]}')
    durable("transcript", "append", "e", "--role", "tool", "r", "--call-id", "call_1", "--name", "get_weather")
    before = durable("transcript", "show", "e", "--all", "--json").json()
    exported = durable("export", "e").out
    assert durable("delete", "e", "--yes").status == 0
    assert durable("import", "-", input=exported).status == 0
    assert durable("transcript", "show", "e", "--all", "--json").json() == before


@pytest.mark.local_only("writes an object file of the first schema with sqlite3 and runs doctor")
def test_an_object_written_by_the_first_schema_is_upgraded_in_place(durable, home):
    """Build a schema-1 object (the release before rows held tool calls) and wake it with this one."""
    from durable_cli.store import schema

    durable("session", "prompt", "old", "question")
    durable("session", "next", "old")
    durable("session", "finish", "old", "1", "--reply", "answer")
    durable("transcript", "append", "old", "--role", "system", "rules")
    durable("transcript", "append", "old", "--role", "tool", "result", "--call-id", "c9", "--request-id", "rq")
    durable("transcript", "summarize", "old", "--through", "2", "--text", "summary")
    before = durable("transcript", "show", "old", "--all", "--json").json()
    path = durable("path", "old", "--json").json()["path"] if durable("path", "old").status == 0 else None
    if path is None:
        path = next(os.path.join(b, f) for b, _, fs in os.walk(home) for f in fs if f.endswith(".sqlite3") and f != "index.db")
    db = sqlite3.connect(path)
    from tests.helpers import downgrade_to

    downgrade_to(db, schema.MIGRATIONS[0][1], 1)  # drops the columns and indexes of every later step
    v1 = sqlite3.connect(":memory:")
    v1.executescript(schema.MIGRATIONS[0][1])
    columns = lambda c: [r[1:3] for r in c.execute("PRAGMA table_xinfo(turns)")]
    assert columns(db) == columns(v1)  # the file is what the first schema made
    db.close()
    after = durable("transcript", "show", "old", "--all", "--json").json()
    assert after == before
    assert durable("transcript", "append", "old", "--role", "tool", "result", "--call-id", "c9", "--request-id", "rq").status == 0
    assert durable("transcript", "append", "old", "--role", "assistant", "--tool-calls", CALLS).status == 0
    assert durable("session", "queue", "old", "--json").json()[0]["turn_seq"] == 1
    assert durable("doctor", "--json").json()["healthy"]
