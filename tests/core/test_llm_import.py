"""durable import --from llm [PATH] (docs/reference/retention.md §7): llm's logs.db, read-only and unchanged, one session per conversation."""

import hashlib
import json
import os
import sqlite3

import pytest

# every test here uses a command across objects: remote once part 2 lands (tests/conftest.py)
pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]


def _fingerprint(directory):
    """Every file in DIRECTORY with the hash of its bytes: logs.db must be unchanged and nothing added."""
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(directory))}


# real_logs: a logs.db written by the real llm CLI (tests/conftest.py, made once per test process)


def _threads(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {tid: (name, [dict(zip(("model", "input_tokens", "output_tokens"), t)) for t in db.execute(
            "SELECT model, input_tokens, output_tokens FROM turns WHERE thread_id = ? ORDER BY datetime_utc", (tid,))])
            for tid, name in db.execute("SELECT id, name FROM threads")}
    finally:
        db.close()


def test_import_from_a_logs_db_made_by_llm(durable, real_logs, monkeypatch):
    before = _fingerprint(real_logs)
    threads = _threads(real_logs / "logs.db")
    assert len(threads) == 3
    monkeypatch.setenv("LLM_USER_PATH", str(real_logs))  # the default PATH: llm's own
    r = durable("import", "--from", "llm", "--json")
    assert r.status == 0, r.err
    assert sorted(c["name"] for c in r.json()["changed"]) == sorted(threads)
    assert {c["what"] for c in r.json()["changed"]} == {"imported"}
    assert _fingerprint(real_logs) == before  # read-only: not a byte changed, no -wal/-shm/-journal left

    sessions = {s["name"]: s for s in durable("ls", "--json").json()}
    for tid, (name, turns) in threads.items():
        s = sessions[tid]
        assert (s["status"], s["owner"], s["title"]) == ("active", "alice", name)
        rows = durable("transcript", "show", tid, "--json").json()
        assistants = [x for x in rows if x["role"] == "assistant"]
        assert [x["meta"] for x in assistants] == [
            {"model": t["model"], "usage": {"input_tokens": t["input_tokens"], "output_tokens": t["output_tokens"]}} for t in turns]
    by_title = {s["title"]: s["name"] for s in sessions.values()}
    second = durable("transcript", "show", by_title["second"], "--json").json()
    assert [(x["role"], x["content"]) for x in second if x["role"] != "assistant"] == [
        ("system", "be brief"), ("user", "second"), ("user", "continued")]
    assert '"prompt": "continued"' in second[-1]["content"]
    tools = durable("transcript", "show", next(n for t, n in by_title.items() if "add them" in t), "--json").json()
    assert [x["role"] for x in tools] == ["user", "assistant", "tool", "assistant"]
    call = tools[1]["tool_calls"][0]
    assert (call["name"], json.loads(call["arguments"])) == ("add", {"a": 1, "b": 2})
    assert (tools[2]["call_id"], tools[2]["name"], tools[2]["content"]) == (call["id"], "add", "3")

    again = durable("import", "--from", "llm", str(real_logs / "logs.db"), "--json")  # idempotent
    assert again.status == 0 and again.json()["changed"] == []
    assert {s["reason"] for s in again.json()["skipped"]} == {"already imported"}
    assert _fingerprint(real_logs) == before


def test_changed_since_is_skipped_unless_replace(durable, real_logs):
    path = str(real_logs / "logs.db")
    durable("import", "--from", "llm", path)
    name = durable("ls", "--json").json()[0]["name"]
    durable("transcript", "append", name, "--role", "user", "added here")
    r = durable("import", "--from", "llm", path, "--json")
    assert r.status == 0
    changed = [s for s in r.json()["skipped"] if s["name"] == name]
    assert "changed since" in changed[0]["reason"]
    r = durable("import", "--from", "llm", path, "--replace", "--json")
    assert r.status == 0 and [c["name"] for c in r.json()["changed"]] == [name]
    assert "added here" not in durable("transcript", "show", name).out


OLD_SCHEMA = """
CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
CREATE TABLE responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT, system TEXT, prompt_json TEXT, options_json TEXT,
  response TEXT, response_json TEXT, conversation_id TEXT REFERENCES conversations(id), duration_ms INTEGER,
  datetime_utc TEXT, input_tokens INTEGER, output_tokens INTEGER, token_details TEXT, schema_id TEXT);
CREATE TABLE fragments (id INTEGER PRIMARY KEY, hash TEXT, content TEXT, datetime_utc TEXT, source TEXT);
CREATE TABLE prompt_fragments (response_id TEXT, fragment_id INTEGER, "order" INTEGER);
CREATE TABLE system_fragments (response_id TEXT, fragment_id INTEGER, "order" INTEGER);
CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, response_id TEXT, tool_id INTEGER, name TEXT, arguments TEXT, tool_call_id TEXT);
CREATE TABLE tool_results (id INTEGER PRIMARY KEY, response_id TEXT, tool_id INTEGER, name TEXT, output TEXT,
  tool_call_id TEXT, instance_id INTEGER, exception TEXT);
"""


def _old_logs(path):
    path.parent.mkdir(exist_ok=True)
    """A logs.db in llm's older layout (conversations/responses), holding a tool call without an id."""
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO conversations VALUES ('01j0aaaaaaaaaaaaaaaaaaaaaa', ?, 'gpt-4o-mini')", ("weather\nin\tParis " + "x" * 300,))
    db.execute("INSERT INTO fragments VALUES (1, 'h', 'You know the weather.', '2024-07-01T10:00:00', NULL)")
    db.execute("INSERT INTO system_fragments VALUES ('r1', 1, 0)")
    responses = [
        ("r1", "gpt-4o-mini", "weather in Paris?", "Be terse.", "", "2024-07-01T10:00:00.250000", 20, 5),
        ("r2", "gpt-4o-mini", "", "Be terse.", "Sunny, 24C.", "2024-07-01T10:00:01.500000", 30, 4),
        ("r3", "gpt-4o-mini", "thanks", "Be terse.", "You're welcome.", "2024-07-01T10:05:00", None, None),
    ]
    for rid, model, prompt, system, response, when, i, o in responses:
        db.execute("INSERT INTO responses (id, model, prompt, system, response, conversation_id, datetime_utc,"
                   " input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, '01j0aaaaaaaaaaaaaaaaaaaaaa', ?, ?, ?)",
                   (rid, model, prompt, system, response, when, i, o))
    db.execute("INSERT INTO tool_calls VALUES (1, 'r1', 1, 'weather', '{\"city\": \"Paris\"}', NULL)")
    db.execute("INSERT INTO tool_results VALUES (1, 'r2', 1, 'weather', '{\"sky\": \"sunny\"}', NULL, NULL, NULL)")
    db.execute("INSERT INTO conversations VALUES ('01j0bbbbbbbbbbbbbbbbbbbbbb', NULL, 'm')")
    db.execute("INSERT INTO responses (id, model, prompt, system, response, conversation_id, datetime_utc)"
               " VALUES ('r9', 'm', 'alone', NULL, 'ok', '01j0bbbbbbbbbbbbbbbbbbbbbb', '2024-07-02T00:00:00+00:00')")
    db.commit()
    db.close()


def test_import_from_llms_older_tables_with_a_tool_call(durable, tmp_path):
    path = tmp_path / "llm" / "logs.db"
    _old_logs(path)
    before = _fingerprint(path.parent)
    r = durable("import", "--from", "llm", str(path), "--json")
    assert r.status == 0, r.err
    assert _fingerprint(path.parent) == before
    show = durable("session", "show", "01j0aaaaaaaaaaaaaaaaaaaaaa", "--json").json()
    assert show["status"] == "active"
    assert show["title"] == ("weather in Paris " + "x" * 300)[:200]
    assert show["created_at"] == "2024-07-01T10:00:00.250Z" and show["last_active_at"] == "2024-07-01T10:05:00.000Z"
    rows = durable("transcript", "show", "01j0aaaaaaaaaaaaaaaaaaaaaa", "--json").json()
    assert [(x["role"], x["content"]) for x in rows] == [
        ("system", "You know the weather.\n\nBe terse."), ("user", "weather in Paris?"), ("assistant", ""),
        ("tool", '{"sky": "sunny"}'), ("assistant", "Sunny, 24C."), ("user", "thanks"), ("assistant", "You're welcome.")]
    call = rows[2]["tool_calls"][0]
    assert (call["name"], call["arguments"]) == ("weather", '{"city": "Paris"}')
    assert rows[3]["call_id"] == call["id"] and rows[3]["name"] == "weather"
    assert rows[2]["meta"] == {"model": "gpt-4o-mini", "usage": {"input_tokens": 20, "output_tokens": 5}}
    assert rows[6]["meta"] == {"model": "gpt-4o-mini"}  # no token counts recorded: no usage
    window = durable("transcript", "recent", "01j0aaaaaaaaaaaaaaaaaaaaaa", "--format", "messages").json()
    assert window[2]["tool_calls"][0]["id"] == window[3]["tool_call_id"]
    assert durable("session", "show", "01j0bbbbbbbbbbbbbbbbbbbbbb", "--json").json()["title"] is None
    assert durable("import", "--from", "llm", str(path), "--json").json()["changed"] == []


def test_bad_sources_are_exit_2_and_change_nothing(durable, tmp_path, home):
    assert durable("import", "--from", "llm", str(tmp_path / "none.db")).status == 2
    assert not (tmp_path / "none.db").exists()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    assert durable("import", "--from", "llm", str(junk)).status == 2
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    assert durable("import", "--from", "llm", str(empty)).status == 2
    assert durable("import", "--from", "gpt", str(empty)).status == 2
    assert durable("import").status == 2
    assert not (home / "objects").exists() or not os.listdir(home / "objects")


def test_one_bad_conversation_does_not_stop_the_others(durable, tmp_path, monkeypatch):
    path = tmp_path / "logs.db"
    _old_logs(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE responses SET prompt = ? WHERE id = 'r9'", ("y" * 5000,))
    db.commit()
    db.close()
    durable("config", "set", "transcript.max_turn_bytes", "4096")
    r = durable("import", "--from", "llm", str(path), "--json")
    assert r.status == 2
    doc = json.loads(r.out)
    assert [c["name"] for c in doc["changed"]] == ["01j0aaaaaaaaaaaaaaaaaaaaaa"]
    assert [s["name"] for s in doc["skipped"]] == ["01j0bbbbbbbbbbbbbbbbbbbbbb"]
    assert durable("session", "show", "01j0bbbbbbbbbbbbbbbbbbbbbb").status == 3


@pytest.mark.parametrize("column, value", [("datetime_utc", "yesterday at noon"), ("input_tokens", "many"),
                                           ("input_tokens", -3)])
def test_a_malformed_conversation_is_skipped_with_its_reason_and_the_rest_imported_exit_7(durable, tmp_path, column, value):
    path = tmp_path / "logs.db"
    _old_logs(path)
    db = sqlite3.connect(path)
    db.execute(f"UPDATE responses SET {column} = ? WHERE id = 'r2'", (value,))  # in the first conversation
    db.commit()
    db.close()
    r = durable("import", "--from", "llm", str(path), "--json")
    assert r.status == 7, r.err
    doc = json.loads(r.out)
    assert [c["name"] for c in doc["changed"]] == ["01j0bbbbbbbbbbbbbbbbbbbbbb"]
    [skipped] = doc["skipped"]
    assert skipped["name"] == "01j0aaaaaaaaaaaaaaaaaaaaaa" and "malformed" in skipped["reason"]
    assert "Traceback" not in r.err
    assert durable("session", "show", "01j0aaaaaaaaaaaaaaaaaaaaaa").status == 3
    assert durable("transcript", "show", "01j0bbbbbbbbbbbbbbbbbbbbbb", "--json").json()[1]["content"] == "ok"
