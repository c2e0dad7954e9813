"""docs/reference/retention.md §7 usage, Cost: the object step "usage totals priced at answer time" recomputes an older
object's totals with the cache reads and writes and the sums `usage` prices, from the rows counted so far."""

import json
import sqlite3

from durable_cli.store import schema

STEP = "usage totals priced at answer time"


def _row(db, meta, created_at=1764892800000):
    db.execute("INSERT INTO turns (role, content, tokens, created_at, meta) VALUES ('assistant', 'x', 3, ?, ?)",
               (created_at, None if meta is None else json.dumps(meta)))


def test_an_older_objects_totals_are_recomputed_with_the_priced_sums():
    names = [name for name, _ in schema.MIGRATIONS]
    at = names.index(STEP)
    db = sqlite3.connect(":memory:")
    for _, sql in schema.MIGRATIONS[:at]:
        for statement in schema.statements(sql):
            db.execute(statement)
    _row(db, {"model": "m", "usage": {"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 60,
                                      "cache_write_tokens": 10}})
    _row(db, {"model": "m", "usage": {"input_tokens": 5, "output_tokens": 1}, "cost_usd": 0.5})
    _row(db, {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 9}})
    _row(db, None)
    # the totals as the older release kept them (up to the mark), and one row written after its last commit
    db.execute("INSERT INTO usage_totals (key, day, model, rows, turns, tokens, input_tokens, output_tokens, cost_usd) "
               + schema.USAGE_FROM_ROWS)
    db.execute("UPDATE turns_mark SET mark = (SELECT max(seq) FROM turns)")
    _row(db, {"model": "m", "usage": {"input_tokens": 1000, "output_tokens": 1000}})
    for _, sql in schema.MIGRATIONS[at:]:
        for statement in schema.statements(sql):
            db.execute(statement)
    totals = {r[0]: r[1:] for r in db.execute(f"SELECT model, {', '.join(schema.TOTAL_COLUMNS)} FROM usage_totals")}
    # rows, turns, tokens, input, output, given cost, cache reads, cache writes; priced: rows, base, reads, writes, output
    assert totals["m"] == (3, 3, 9, 106, 12, 0.5, 69, 10, 2, 30, 69, 10, 11)
    assert totals[None][:3] == (1, 1, 3)
    schema.catch_up(db)  # the row above the mark is counted by the next commit, priced sums included
    totals = {r[0]: r[1:] for r in db.execute(f"SELECT model, {', '.join(schema.TOTAL_COLUMNS)} FROM usage_totals")}
    assert totals["m"] == (4, 4, 12, 1106, 1012, 0.5, 69, 10, 3, 1030, 69, 10, 1011)
    fresh = {r[2]: r[3:] for r in db.execute(schema.PRICED_FROM_ROWS)}
    assert fresh == totals
    db.execute("DELETE FROM turns WHERE seq = 1")  # a removed row takes its priced sums away
    assert db.execute("SELECT uncosted_rows, uncosted_base, uncosted_cache_read FROM usage_totals WHERE model = 'm'").fetchone() \
        == (2, 1000, 9)
