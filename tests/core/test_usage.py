"""docs/reference/retention.md §7 `durable usage`: totals per object, UTC day and model, kept in index.db at each write's sleep."""

import json
import sqlite3

import pytest
from freezegun import freeze_time

from tests.helpers import hold_lock

# every test here uses a command across objects: remote once part 2 lands (tests/conftest.py)
pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]


def meta(model=None, inp=0, out=0, cost=None):
    m = {"usage": {"input_tokens": inp, "output_tokens": out}}
    if model is not None:
        m["model"] = model
    if cost is not None:
        m["cost_usd"] = cost
    return json.dumps(m)


def append(durable, name, text, *extra, role="user", pre=()):
    r = durable(*pre, "transcript", "append", name, "--role", role, text, *extra)
    assert r.status == 0, r.err


def usage(durable, *args, pre=()):
    r = durable(*pre, "usage", *args, "--json")
    assert r.status == 0, r.err
    return r.json()


def seed(durable):
    with freeze_time("2026-03-01T23:59:00Z"):
        append(durable, "a", "question one", "--tokens", "10")
        append(durable, "a", "answer one", "--tokens", "20", "--meta", meta("gpt-x", 100, 50, 0.25), role="assistant")
    with freeze_time("2026-03-02T00:01:00Z"):
        append(durable, "a", "answer two", "--tokens", "5", "--meta", meta("claude-y", 7, 3, 0.5), role="assistant")
        append(durable, "b", "hello", "--tokens", "1", "--meta", meta("gpt-x", 1, 1, 0.125), role="assistant")


@pytest.mark.local_only("freezes the clock (freezegun/faketime), which cannot reach the Worker's clock")
def test_usage_by_session_day_and_model(durable):
    seed(durable)
    doc = usage(durable)
    by_name = {g["name"]: g for g in doc["groups"]}
    assert set(by_name) == {"a", "b"}
    a = by_name["a"]
    assert (a["sessions"], a["turns"], a["tokens"], a["input_tokens"], a["output_tokens"], a["cost_usd"]) == (1, 3, 35, 107, 53, 0.75)
    assert a["owner"] == "alice" and len(a["key"]) == 64
    assert doc["total"] == {"sessions": 2, "turns": 4, "tokens": 36, "input_tokens": 108, "output_tokens": 54, "cost_usd": 0.875,
                            "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_given_usd": 0.875, "cost_computed_usd": 0.0,
                            "priced_turns": 0, "unpriced_turns": 0}
    days = usage(durable, "--by", "day")["groups"]
    assert [(g["key"], g["sessions"], g["turns"], g["tokens"]) for g in days] == [("2026-03-01", 1, 2, 30), ("2026-03-02", 2, 2, 6)]
    models = usage(durable, "--by", "model")["groups"]
    assert [(g["key"], g["sessions"], g["input_tokens"], g["cost_usd"]) for g in models] == [
        ("claude-y", 1, 7, 0.5), ("gpt-x", 2, 101, 0.375), (None, 1, 0, 0.0)]
    assert usage(durable, "--session", "b")["total"]["tokens"] == 1
    assert durable("usage", "--session", "nope").status == 3
    assert durable("usage", "--by", "week").status == 2
    assert durable("usage", "--all", "--user", "bob").status == 2
    plain = durable("usage", "--by", "day").out.splitlines()
    assert plain[0].split("\t") == ["2026-03-01", "1", "2", "30", "100", "50", "0.25", "0", "0", "0.25", "0.0", "0", "0"]
    assert plain[-1].split("\t")[0] == "total"


@pytest.mark.local_only("freezes the clock (freezegun/faketime), which cannot reach the Worker's clock")
def test_newer_than_counts_whole_utc_days(durable):
    seed(durable)
    with freeze_time("2026-03-03T12:00:00Z"):
        assert usage(durable, "--newer-than", "1d")["total"]["turns"] == 2  # 2026-03-02 and later
        assert usage(durable, "--newer-than", "2d")["total"]["turns"] == 4
        assert usage(durable, "--newer-than", "1h")["total"]["turns"] == 0


def test_whose_sessions_are_counted(durable):
    seed(durable)
    append(durable, "bobs", "x", "--tokens", "1000", pre=["--as", "bob"])
    t = ["--tenant", "acme"]
    append(durable, "shared", "x", "--tokens", "300", pre=["--as", "bob", *t])
    assert durable("--as", "bob", *t, "session", "invite", "shared", "alice").status == 0
    append(durable, "hidden", "x", "--tokens", "7", pre=["--as", "bob", *t])
    assert usage(durable)["total"]["tokens"] == 36 + 300
    assert usage(durable, pre=t)["total"]["tokens"] == 300
    assert usage(durable, "--user", "bob")["total"]["tokens"] == 1307
    assert usage(durable, "--all")["total"]["tokens"] == 36 + 1307
    assert durable("session", "archive", "b").status == 0
    assert usage(durable)["total"]["tokens"] == 336  # archived sessions count (ls --all)


def test_summaries_and_superseded_rows_count_removed_rows_do_not(durable):
    seed(durable)
    r = durable("transcript", "summarize", "a", "--through", "2", "--text", "short", "--json")
    assert r.status == 0, r.err
    summary_tokens = r.json()["summary"]["tokens"]
    a = usage(durable, "--session", "a")["total"]
    assert (a["turns"], a["tokens"], a["cost_usd"]) == (3, 35 + summary_tokens, 0.75)  # summaries are not turns
    assert durable("transcript", "pop", "a").status == 0  # the newest row in logical order: answer two
    assert usage(durable, "--session", "a")["total"]["input_tokens"] == 100
    assert durable("transcript", "redact", "a", "1").status == 0
    assert usage(durable, "--session", "a")["total"]["tokens"] != 35 + summary_tokens - 5
    assert durable("transcript", "clear", "a", "--yes").status == 0
    assert usage(durable, "--session", "a")["groups"] == []
    assert usage(durable, "--session", "a")["total"]["sessions"] == 0


def _index_usage(home, name):
    db = sqlite3.connect(home / "index.db")
    try:
        return db.execute("SELECT count(*) FROM usage u JOIN objects o ON o.id = u.object_id WHERE o.name = ?", (name,)).fetchone()[0], \
            db.execute("SELECT count(*) FROM usage").fetchone()[0]
    finally:
        db.close()


@pytest.mark.local_only("reads index.db with sqlite3")
def test_delete_purge_and_forget_remove_the_usage_rows(durable, home):
    seed(durable)
    append(durable, "bobs", "x", "--meta", meta("m"), pre=["--as", "bob"])
    assert _index_usage(home, "a")[0] == 3  # (day, model): (03-01, null), (03-01, gpt-x), (03-02, claude-y)
    assert durable("delete", "a", "--yes").status == 0
    assert usage(durable)["total"]["tokens"] == 1
    with freeze_time("2030-01-01T00:00:00Z"):
        assert durable("purge", "--older-than", "1d", "--user", "alice", "--yes").status == 0
    assert usage(durable)["groups"] == []
    assert _index_usage(home, "bobs") == (1, 1)
    assert durable("forget", "bob", "--yes").status == 0
    assert _index_usage(home, "bobs") == (0, 0)


@pytest.mark.local_only("writes rows into the object file with sqlite3")
def test_rows_copied_by_fork_are_not_counted_again(durable):
    seed(durable)
    path = durable("path", "b").out.strip()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO turns (role, content, tokens, created_at, meta, forked_from)"
               " VALUES ('assistant', 'copied', 99, 0, ?, 'someid')", (meta("gpt-x", 1000, 1000, 9.0),))
    db.commit()
    db.close()
    append(durable, "b", "own", "--tokens", "2")
    assert usage(durable, "--session", "b")["total"]["tokens"] == 3
    assert durable("doctor").status == 0  # the totals agree with the rows


@pytest.mark.local_only("hides the object files from usage (index.db)")
def test_usage_reads_index_db_only(durable):
    seed(durable)
    holder = hold_lock("a", 30)
    try:
        assert usage(durable, pre=["--lock-timeout", "0"])["total"]["turns"] == 4
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_finds_and_rebuilds_wrong_totals(durable, home):
    seed(durable)
    db = sqlite3.connect(home / "index.db")
    db.execute("UPDATE usage SET tokens = tokens + 1000")
    db.commit()
    db.close()
    doc = durable("doctor", "--json")
    assert doc.status == 7
    assert {p["kind"] for p in doc.json()["problems"]} == {"index_mismatch"}
    assert "usage" in doc.json()["problems"][0]["detail"]
    path = durable("path", "a").out.strip()
    db = sqlite3.connect(path)
    db.execute("DELETE FROM usage_totals")
    db.commit()
    db.close()
    kinds = {p["kind"] for p in durable("doctor", "--json").json()["problems"]}
    assert "usage_totals" in kinds
    assert durable("doctor", "--repair").status == 0
    assert durable("doctor").status == 0
    assert usage(durable)["total"]["tokens"] == 36


def test_newer_than_reaching_back_past_every_row_counts_them_all(durable):
    """--newer-than without a frozen clock (so remote too): rows written just now are within 1d."""
    append(durable, "a", "question", "--tokens", "10")
    append(durable, "a", "answer", "--tokens", "20", "--meta", meta("gpt-x", 100, 50, 0.25), role="assistant")
    everything = usage(durable)["total"]
    assert everything["turns"] == 2 and usage(durable, "--newer-than", "1d")["total"] == everything
