"""The usage totals (usage_totals) are brought up to date once per write transaction, just before its
COMMIT, not by a trigger per inserted row (and the object keeps no search index of its own: the owner's
side file indexes the rows). Every path that writes rows must leave the totals equal to what the rows
give when recomputed from scratch."""

import json
import sqlite3

import pytest

from durable_cli.store import schema

CALLS = json.dumps([{"id": "c1", "name": "lookup", "arguments": '{"city": "zanzibar"}'}])


def meta(model, inp, out, cost):
    return json.dumps({"model": model, "usage": {"input_tokens": inp, "output_tokens": out}, "cost_usd": cost})


def ok(r):
    assert r.status == 0, r.err
    return r


def derived_state(path):
    """(problems, row count) of one object file: the index and the totals against a recomputation."""
    db = sqlite3.connect(path)
    try:
        problems = []
        seqs = [s for (s,) in db.execute("SELECT seq FROM turns ORDER BY seq")]
        own_index = db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'turns_fts%'").fetchall()
        if own_index:  # a local object keeps no search index of its own (the owner's side file has it)
            problems.append(("own search index", own_index))
        kept = db.execute("SELECT key, rows, turns, tokens, input_tokens, output_tokens, round(cost_usd, 9)"
                          " FROM usage_totals ORDER BY key").fetchall()
        want = db.execute("SELECT key, rows, turns, tokens, input_tokens, output_tokens, round(cost_usd, 9) FROM ("
                          + schema.USAGE_FROM_ROWS + ") ORDER BY key").fetchall()
        if kept != want:
            problems.append(("usage", kept, want))
        mark = db.execute("SELECT mark FROM turns_mark").fetchone()[0]
        if seqs and mark != seqs[-1]:
            problems.append(("mark", mark, seqs[-1]))
        return problems, len(seqs)
    finally:
        db.close()


def check_all(durable, names):
    for name in names:
        path = ok(durable("path", name)).out.strip()
        problems, count = derived_state(path)
        assert not problems, (name, problems)
        assert count > 0, name
    doc = ok(durable("doctor", "--json")).json()
    assert doc["healthy"], doc


def test_every_write_path_leaves_index_and_totals_equal_to_a_recount(durable, tmp_path):
    # one row; a batch of plain rows (one group) and one with meta and tool calls (grouped by model)
    ok(durable("transcript", "append", "a", "--role", "user", "alpha one"))
    plain = "\n".join(json.dumps({"role": "user", "content": f"bravo {i}"}) for i in range(30))
    ok(durable("transcript", "append", "a", "--batch", "-", input=plain + "\n"))
    mixed = [{"role": "assistant", "content": "", "tool_calls": json.loads(CALLS), "meta": json.loads(meta("m1", 3, 4, 0.1))},
             {"role": "tool", "content": "charlie result", "call_id": "c1"},
             {"role": "assistant", "content": "delta answer", "meta": json.loads(meta("m2", 5, 6, 0.2))},
             {"role": "user", "content": "echo plain"}]
    ok(durable("transcript", "append", "a", "--batch", "-", input="\n".join(map(json.dumps, mixed)) + "\n"))
    # session turns: the prompt's user row and the reply's assistant row
    ok(durable("session", "prompt", "a", "foxtrot question"))
    ok(durable("session", "next", "a"))
    ok(durable("session", "finish", "a", "1", "--reply", "golf reply"))
    # summaries and compaction (summary rows), redaction (an update), pop (a delete)
    ok(durable("transcript", "summarize", "a", "--through", "3", "--text", "hotel summary"))
    ok(durable("transcript", "compact", "a", "--max-tokens", "5", "--keep-tokens", "2", "--text", "india summary"))
    ok(durable("transcript", "redact", "a", "2"))
    ok(durable("transcript", "pop", "a"))
    ok(durable("transcript", "append", "a", "--role", "assistant", "juliet", "--meta", meta("m1", 1, 1, 0.5)))
    check_all(durable, ["a"])
    # fork: a new object whose copied rows are indexed but not counted
    ok(durable("session", "fork", "a", "b"))
    ok(durable("transcript", "append", "b", "--role", "user", "kilo after fork"))
    # clear, then rows again (the emptied table starts over)
    ok(durable("transcript", "append", "c", "--role", "user", "lima"))
    ok(durable("transcript", "clear", "c", "--yes"))
    ok(durable("transcript", "append", "c", "--role", "user", "mike", "--meta", meta("m3", 1, 2, 0.25)))
    check_all(durable, ["a", "b", "c"])

    # import --replace of an older export: the rows come back with seqs at or below what was indexed,
    # and the next append continues from the export's sequence
    dump = tmp_path / "a.jsonl"
    ok(durable("export", "a", "--output", str(dump)))
    for i in range(5):
        ok(durable("transcript", "append", "a", "--role", "user", f"november {i}", "--meta", meta("m9", 1, 1, 1.0)))
    ok(durable("import", str(dump), "--replace"))
    check_all(durable, ["a"])
    ok(durable("transcript", "append", "a", "--role", "user", "oscar after import"))
    check_all(durable, ["a"])
    assert [h["name"] for h in ok(durable("search", "oscar", "--json")).json()] == ["a"]
    assert ok(durable("search", "november", "--json")).json() == []
    # import of an object that does not exist (deleted first)
    ok(durable("delete", "a", "--yes"))
    ok(durable("import", str(dump)))
    ok(durable("transcript", "append", "a", "--role", "user", "papa"))
    check_all(durable, ["a", "b", "c"])
    totals = ok(durable("usage", "--json")).json()["total"]
    assert totals["cost_usd"] == pytest.approx(0.1 + 0.2 + 0.5 + 0.25)


def test_a_failed_write_leaves_nothing_half_counted(durable):
    ok(durable("transcript", "append", "a", "--role", "user", "alpha"))
    bad = json.dumps({"role": "user", "content": "bravo"}) + "\n" + json.dumps({"role": "nobody", "content": "x"}) + "\n"
    assert durable("transcript", "append", "a", "--batch", "-", input=bad).status == 2
    assert ok(durable("search", "bravo", "--json")).json() == []
    check_all(durable, ["a"])


def test_the_adapters_writes_are_indexed_and_counted(home, durable):
    import asyncio

    from tests.integrations.conftest import need

    need("agents", "openai-agents")
    from durable_cli.integrations.openai_agents import DurableSession

    session = DurableSession("agent-1", home=home)
    try:
        asyncio.run(session.add_items([{"role": "user", "content": "quebec question"},
                                       {"role": "assistant", "content": "romeo answer"}]))
        asyncio.run(session.add_items([{"role": "user", "content": "sierra"}]))
    finally:
        session.close()
    need("langgraph.checkpoint.sqlite", "langgraph")
    from durable_cli.integrations.langgraph import DurableSaver
    from tests.integrations.test_langgraph import three_turns

    three_turns(DurableSaver(home=str(home)))
    check_all(durable, ["agent-1", "calc"])
    assert [h["name"] for h in ok(durable("search", "romeo", "--json")).json()] == ["agent-1"]
    assert [h["seq"] for h in ok(durable("search", "sum", "--json")).json()]


def test_an_object_from_before_the_catch_up_is_upgraded_in_step(durable):
    """An object written with the per-row triggers (the step before) wakes with its mark at its last row."""
    ok(durable("transcript", "append", "a", "--role", "user", "alpha", "--meta", meta("m1", 1, 1, 0.5)))
    path = ok(durable("path", "a")).out.strip()
    db = sqlite3.connect(path)
    step = next(i for i, (name, _) in enumerate(schema.MIGRATIONS) if name == "derived tables caught up at commit")
    for (trigger,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE turns_mark")
    fts = next(sql for name, sql in schema.MIGRATIONS if name == "full-text search index")
    for sql in schema.statements(fts):  # the object's own index as that schema had it
        if sql.startswith(("CREATE VIRTUAL TABLE", "INSERT")):
            db.execute(sql)
    for sql in schema.statements(schema.MIGRATIONS[step - 2][1]) + schema.statements(schema.MIGRATIONS[step - 1][1]):
        if sql.startswith("CREATE TRIGGER"):
            db.execute(sql)  # the per-row triggers as the earlier steps made them
    import re

    for _, sql in schema.MIGRATIONS[step:]:  # columns later steps add: not there yet in a file that old
        for table, column in re.findall(r"ALTER TABLE (\w+) ADD COLUMN (\w+)", sql):
            db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.execute(f"PRAGMA user_version={step}")
    db.commit()
    db.execute("INSERT INTO turns (role, content, tokens, author, created_at) VALUES ('user', 'bravo', 1, 'x', 0)")
    db.commit()  # written by a durable of that schema: indexed and counted by its triggers
    db.close()
    ok(durable("transcript", "append", "a", "--role", "user", "charlie"))
    check_all(durable, ["a"])
    assert [h["name"] for h in ok(durable("search", "bravo", "--json")).json()] == ["a"]


def test_rows_changed_or_deleted_before_their_commit_are_counted_once(home, durable):
    """A row deleted or changed in the transaction that inserted it was never indexed or counted: the
    delete and update triggers take nothing away for it, and the catch-up counts what is left."""
    from durable_cli import Store

    ok(durable("transcript", "append", "a", "--role", "user", "alpha", "--meta", meta("m1", 1, 1, 0.5)))
    store = Store(home=str(home), user="alice")
    try:
        with store.open("a") as s, s.handle.transaction() as db:
            insert = ("INSERT INTO turns (role, content, tokens, author, created_at, meta) VALUES ('user', ?, 3, 'alice',"
                      " (SELECT created_at FROM turns WHERE seq = 1), ?)")
            gone = db.execute(insert, ("bravo", meta("m1", 2, 2, 0.25))).lastrowid
            kept = db.execute(insert, ("charlie", meta("m1", 4, 4, 0.125))).lastrowid
            db.execute("DELETE FROM turns WHERE seq = ?", (gone,))
            db.execute("UPDATE turns SET meta = ?, content = 'delta' WHERE seq = ?", (meta("m2", 8, 8, 1.0), kept))
            db.execute("UPDATE turns SET tokens = 7 WHERE seq = 1")  # a counted row: moved, not doubled
    finally:
        store.close()
    check_all(durable, ["a"])
    assert ok(durable("search", "delta", "--json")).json()[0]["seq"] == kept
    assert ok(durable("search", "charlie OR bravo", "--json")).json() == []


def test_doctor_repair_counts_a_row_an_outside_writer_added_once(durable):
    ok(durable("transcript", "append", "a", "--role", "user", "alpha", "--meta", meta("m1", 1, 1, 0.5)))
    db = sqlite3.connect(ok(durable("path", "a")).out.strip())
    db.execute("INSERT INTO turns (role, content, tokens, author, created_at, meta) VALUES ('user', 'bravo', 2, 'x',"
               " (SELECT created_at FROM turns WHERE seq = 1), ?)", (meta("m1", 3, 3, 0.25),))
    db.commit()  # sqlite3 by hand: no lock, no catch-up
    db.close()
    problems = durable("doctor", "--repair", "--json").json()["problems"]
    assert "usage_totals" in [p["kind"] for p in problems], problems
    check_all(durable, ["a"])
    assert [h["name"] for h in ok(durable("search", "bravo", "--json")).json()] == ["a"]
