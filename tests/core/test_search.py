"""docs/reference/retention.md §7 `durable search`: FTS5 over each object's rows, best match first, nothing removed ever found again."""

import json
import os
import sqlite3

import pytest
from freezegun import freeze_time

from tests.helpers import downgrade_to, hold_lock

# every test here uses a command across objects: remote once part 2 lands (tests/conftest.py)
pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]

TOKEN = "qqxjzvkw"  # no other word starts with "qq"
# FTS5 stores a term after the prefix it shares with the term before it (at most "q" here): the byte
# scans look for the rest, which every copy of the token holds.
TAIL = TOKEN[2:]
CALLS = json.dumps([{"id": "c1", "name": "lookup", "arguments": json.dumps({"order": "zebra-42"})}])


def append(durable, name, text, *extra, role="user"):
    r = durable("transcript", "append", name, "--role", role, text, *extra)
    assert r.status == 0, r.err
    return int(r.out)


def search(durable, *args, pre=()):
    r = durable(*pre, "search", *args, "--json")
    assert r.status == 0, r.err
    return r.json()


def files_holding(home, token):
    found = []
    for base, _, files in os.walk(home):
        for f in files:
            with open(os.path.join(base, f), "rb") as fh:
                if token.encode() in fh.read():
                    found.append(f)
    return found


def test_search_finds_content_tool_arguments_and_summaries_with_snippets(durable):
    append(durable, "orders", "I want a refund for my order")
    append(durable, "orders", "", "--tool-calls", CALLS, role="assistant")
    append(durable, "other", "nothing to see")
    hits = search(durable, "refund")
    assert [(h["name"], h["seq"], h["role"]) for h in hits] == [("orders", 1, "user")]
    assert set(hits[0]) >= {"name", "id", "seq", "role", "created_at", "snippet"}
    assert hits[0]["snippet"] == "I want a [refund] for my order"
    assert hits[0]["created_at"].endswith("Z")
    assert [h["seq"] for h in search(durable, "zebra")] == [2]  # tool call arguments
    assert search(durable, "lookup") == []  # the tool's name is not an argument
    r = durable("transcript", "summarize", "orders", "--through", "2", "--text", "customer asked for money back")
    assert r.status == 0, r.err
    assert [h["seq"] for h in search(durable, "money")] == [3]  # summaries are searched
    assert search(durable, "refund") == []  # superseded rows only with --superseded
    assert [h["seq"] for h in search(durable, "refund", "--superseded")] == [1]
    plain = durable("search", "money")
    assert plain.status == 0 and plain.out.split("\t")[0] == "orders" and "[money]" in plain.out
    lines = durable("search", "money OR zebra", "--fts", "--superseded", "--jsonl").lines()
    assert {h["seq"] for h in lines} == {2, 3}


def test_best_match_first_then_newer_activity_then_name_and_seq(durable):
    append(durable, "one-mention", "apple and many other words that dilute the match quite a lot here")
    append(durable, "dense", "apple apple apple")
    hits = search(durable, "apple")
    assert [h["name"] for h in hits] == ["dense", "one-mention"]  # bm25 first
    append(durable, "tie-a", "pear")
    append(durable, "tie-b", "pear")
    assert [h["name"] for h in search(durable, "pear")] == ["tie-b", "tie-a"]  # equal rank: newer activity first
    append(durable, "tie-a", "unrelated")
    assert [h["name"] for h in search(durable, "pear")] == ["tie-a", "tie-b"]
    for _ in range(5):
        append(durable, "many", "kiwi")
    assert len(search(durable, "kiwi")) == 5
    assert [h["seq"] for h in search(durable, "kiwi", "--limit", "2")] == [1, 2]


@pytest.mark.local_only("freezes the clock (freezegun/faketime), which cannot reach the Worker's clock")
def test_filters_role_session_and_newer_than(durable):
    with freeze_time("2026-01-01T00:00:00Z"):
        append(durable, "a", "banana old")
    with freeze_time("2026-01-10T00:00:00Z"):
        append(durable, "a", "banana new", role="assistant")
        append(durable, "b", "banana")
        assert [h["seq"] for h in search(durable, "banana", "--session", "a")] == [1, 2]
        assert [(h["name"], h["seq"]) for h in search(durable, "banana", "--role", "assistant")] == [("a", 2)]
        hits = search(durable, "banana", "--newer-than", "2d")
        assert sorted((h["name"], h["seq"]) for h in hits) == [("a", 2), ("b", 1)]
    assert durable("search", "banana", "--session", "missing").status == 3
    assert durable("search", "banana", "--role", "robot").status == 2
    assert durable("search", "banana", "--newer-than", "5").status == 2
    assert durable("search", "banana", "--limit", "-1").status == 2


@pytest.mark.parametrize("query", ['"unterminated', "AND", "", "   ", "nosuchcolumn:word", "a NOT"])
def test_a_query_fts5_rejects_with_fts_is_exit_2(durable, query):
    append(durable, "a", "words")
    r = durable("search", query, "--fts")
    assert r.status == 2 and r.out == "" and r.err.startswith("durable: error:"), r
    r = durable("search", query, "--fts", "--json")
    assert json.loads(r.err)["error"]["code"] == "invalid_input"


@pytest.mark.parametrize("query", ["", "   ", "***", '"', '""', "= + ~"])
def test_a_plain_query_with_no_word_is_exit_2(durable, query):
    append(durable, "a", "words")
    r = durable("search", query)
    assert r.status == 2 and r.out == "" and r.err.startswith("durable: error:") and "\n" not in r.err.strip(), r
    assert json.loads(durable("search", query, "--json").err)["error"]["code"] == "invalid_input"


AGENT_WORDS = ["PROJ-123", "alice@example.com", "main.py", "2026-12-01", "credit-card", "it's", "C++"]


def test_a_plain_query_matches_the_words_agent_transcripts_are_full_of(durable):
    """docs/reference/retention.md §7: QUERY is plain text, each term matched as written (issue 33 item 9: these were exit 2)."""
    for i, word in enumerate(AGENT_WORDS):
        append(durable, f"s{i}", f"note {i}: see {word} today")
    append(durable, "decoy", "PROJ 124 alice at example dot org main java 2026 11 30 credit union it is")
    for i, word in enumerate(AGENT_WORDS):
        hits = search(durable, word)
        assert [h["name"] for h in hits] == [f"s{i}"], (word, hits)
    assert [h["name"] for h in search(durable, "see PROJ-123 today")] == ["s0"]  # every term must match
    assert search(durable, "PROJ-123 main.py") == []
    assert [h["name"] for h in search(durable, '"see main.py"')] == ["s2"]  # a phrase
    assert search(durable, '"today see"') == []
    assert [h["name"] for h in search(durable, "alice@exa*")] == ["s1"]  # a prefix
    assert sorted(h["name"] for h in search(durable, "PROJ*")) == ["decoy", "s0"]
    append(durable, "ops", "AND OR NOT are near words here, as is unbalanced")
    assert [h["name"] for h in search(durable, "AND OR NOT")] == ["ops"]
    assert [h["name"] for h in search(durable, '"unbalanced')] == ["ops"]  # an unmatched quote is a character
    assert [h["name"] for h in search(durable, "NEAR(words here)")] == ["ops"]
    assert durable("search", "AND OR", "--fts").status == 2  # --fts: FTS5's own syntax
    assert {h["name"] for h in search(durable, "alice OR unbalanced", "--fts")} == {"s1", "decoy", "ops"}
    plain = durable("search", "C++")
    assert plain.status == 0 and plain.out.startswith("s6\t"), plain


def test_every_plain_query_of_the_vectors_is_one_fts5_accepts(durable):
    """The translation both runtimes share (contract vectors "search_query") always gives valid FTS5."""
    from durable_cli.across.search import check_query

    with open(os.path.join(os.path.dirname(__file__), "..", "..", "durable_cli", "contract", "vectors.json")) as f:
        vectors = json.load(f)["search_query"]
    append(durable, "a", "words")
    for v in vectors:
        if "ok" in v:
            assert check_query(v["ok"], fts=True) == v["ok"]
            assert durable("search", "--", v["args"][0]).status == 0, v


def test_only_what_ls_all_lists_is_searched(durable):
    durable("--as", "bob", "transcript", "append", "bobs", "--role", "user", "secret mango")
    append(durable, "mine", "my mango")
    durable("session", "create", "archived-one")
    append(durable, "archived-one", "archived mango")
    assert durable("session", "archive", "archived-one").status == 0
    t = ["--tenant", "acme"]
    durable("--as", "bob", *t, "transcript", "append", "shared", "--role", "user", "tenant mango")
    durable("--as", "bob", *t, "transcript", "append", "hidden", "--role", "user", "hidden mango")
    assert durable("--as", "bob", *t, "session", "invite", "shared", "alice").status == 0
    assert {h["name"] for h in search(durable, "mango")} == {"mine", "archived-one", "shared"}
    assert {h["name"] for h in search(durable, "mango", pre=t)} == {"shared"}
    assert {h["name"] for h in search(durable, "mango", pre=["--as", "bob"])} == {"bobs", "shared", "hidden"}
    assert {h["name"] for h in search(durable, "mango", "--user", "bob")} == {"bobs", "shared", "hidden"}
    assert search(durable, "mango", pre=["--as", "carol"]) == []


def _removal(durable, home, kind):
    """Make a session whose row 2 holds TOKEN (in content and tool arguments), then remove it by KIND.

    The rows go in as one batch (one FTS segment), so the removal's delete markers land in a second
    segment and no automatic merge happens: without an explicit merge, the token would stay on disk."""
    calls = [{"id": "c1", "name": "f", "arguments": json.dumps({"query": TOKEN + "args"})}]
    batch = "\n".join(json.dumps(r) for r in [
        {"role": "system", "content": "keep this text"},
        {"role": "assistant", "content": f"{TOKEN} said here", "tool_calls": calls},
        {"role": "user", "content": "tail row"},
    ])
    with freeze_time("2026-01-01T00:00:00Z"):
        r = durable("transcript", "append", "s", "--batch", "-", input=batch)
    assert r.status == 0, r.err
    assert [h["seq"] for h in search(durable, TOKEN)] == [2]
    assert files_holding(home, TAIL) != []
    commands = {
        "redact": ["transcript", "redact", "s", "2"],
        "prune": ["transcript", "prune", "s", "--older-than", "1d"],
        "pop": ["transcript", "pop", "s", "--count", "2"],
        "clear": ["transcript", "clear", "s", "--yes"],
        "delete": ["delete", "s", "--yes"],
        "purge": ["purge", "--older-than", "1d", "--yes"],
        "forget": ["forget", "alice", "--yes"],
    }
    if kind == "purge":
        with freeze_time("2030-01-01T00:00:00Z"):
            r = durable(*commands[kind])
    else:
        r = durable(*commands[kind])
    assert r.status == 0, r.err


@pytest.mark.parametrize("kind", ["redact", "prune", "pop", "clear", "delete", "purge", "forget"])
@pytest.mark.local_only("reads the bytes of the object files")
def test_what_a_removal_takes_is_never_found_again_and_leaves_no_token_on_disk(durable, home, kind):
    _removal(durable, home, kind)
    assert files_holding(home, TAIL) == [], kind
    assert search(durable, TOKEN) == []
    assert search(durable, TOKEN + "*") == []
    if kind in ("redact", "prune", "pop", "clear"):
        assert kind == "clear" or search(durable, "keep") != []  # the rest is still found
        assert _own_index(durable("path", "s").out.strip()) == []  # the side file is the only index


@pytest.mark.local_only("busy (file lock) and corrupt object files")
def test_a_busy_or_corrupt_object_is_reported_and_the_others_searched(durable, durable_proc, home):
    append(durable, "good", "lemon good")
    append(durable, "locked", "lemon locked")
    append(durable, "broken", "lemon broken")
    path = durable("path", "broken").out.strip()
    with open(path, "r+b") as f:
        f.seek(0)
        f.write(b"this is not a database file at all" * 4)
    holder = hold_lock("locked", 30)
    try:
        r = durable_proc("--lock-timeout", "0", "search", "lemon", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert r.status == 7, r.err  # corrupt wins over busy
    assert [h["name"] for h in json.loads(r.out)] == ["good"]
    assert "broken" in r.err and "locked" in r.err
    os.unlink(path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    holder = hold_lock("locked", 30)
    try:
        r = durable_proc("--lock-timeout", "0", "search", "lemon", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert r.status == 6 and [h["name"] for h in json.loads(r.out)] == ["good"], r.err


@pytest.mark.local_only("writes an object file of an older schema")
def test_an_object_made_before_the_index_existed_is_indexed_when_it_wakes(durable):
    from durable_cli.store import schema

    append(durable, "old", "papaya from the old days")
    path = durable("path", "old").out.strip()
    db = sqlite3.connect(path)
    for (trigger,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'turns_fts%'").fetchall():
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE IF EXISTS turns_fts")
    db.execute("DROP VIEW IF EXISTS turns_fts_source")
    step = next(i for i, (name, _) in enumerate(schema.MIGRATIONS) if name == "full-text search index")
    # what later steps add (columns, tables, triggers): not there yet in a file that old
    downgrade_to(db, "".join(sql for _, sql in schema.MIGRATIONS[:step]), step)
    db.close()
    assert [h["name"] for h in search(durable, "papaya")] == ["old"]
    assert _own_index(path) == []  # the per-object index its upgrade made on the way is dropped again


@pytest.mark.local_only("writes an object file of an older schema")
def test_an_object_with_its_own_index_loses_it_when_it_wakes_and_is_still_found(durable, home):
    """An object from before the step "search index in the side files only" (its own turns_fts, kept by
    triggers) drops it at its next wake; appends, removals and searches then go on as before."""
    from durable_cli.store import schema

    append(durable, "old", "guava from before")
    append(durable, "old", "guava secretword")
    path = durable("path", "old").out.strip()
    db = sqlite3.connect(path)
    previous = [sql for name, sql in schema.MIGRATIONS if name == "search index without a copy of the text"][0]
    for statement in schema.statements(previous):
        if not statement.startswith("DROP"):
            db.execute(statement)
    names = [name for name, _ in schema.MIGRATIONS]
    version = names.index("search index in the side files only")  # what later steps add, undone
    downgrade_to(db, "".join(sql for _, sql in schema.MIGRATIONS[:version]), version)
    assert db.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'guava'").fetchone()[0] == 2
    db.close()
    assert sorted(h["seq"] for h in search(durable, "guava")) == [1, 2]
    assert _own_index(path) == []
    assert durable("transcript", "pop", "old").status == 0
    append(durable, "old", "guava again")
    assert sorted(h["seq"] for h in search(durable, "guava")) == [1, 3]
    assert files_holding(home, "secretword") == []


@pytest.mark.local_only("reads the object file with sqlite3")
def test_the_index_keeps_no_second_copy_of_the_text(durable, home):
    """The object keeps no index of its own (the owner's side file indexes its rows): a row's exact text is
    in the object once, and the search still finds, ranks and quotes it; a redaction and a pop keep the
    index in step."""
    text = "Quokka-Lantern, Velvet; 4711!"
    append(durable, "s", "first row")
    seq = append(durable, "s", text)
    append(durable, "s", "quokka again", "--tool-calls", CALLS, role="assistant")
    path = durable("path", "s").out.strip()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(path, "rb") as f:
        assert f.read().count(text.encode()) == 1
    hits = search(durable, "velvet")
    assert [(h["seq"], h["snippet"]) for h in hits] == [(seq, "Quokka-Lantern, [Velvet]; 4711!")]
    assert [h["seq"] for h in search(durable, '"lantern velvet"')] == [seq]  # phrase queries still work
    assert [h["seq"] for h in search(durable, "zebra")] == [seq + 1]  # tool call arguments
    assert durable("transcript", "redact", "s", str(seq)).status == 0
    assert durable("transcript", "pop", "s").status == 0
    assert search(durable, "velvet") == [] and search(durable, "zebra") == []
    assert [h["seq"] for h in search(durable, "first")] == [seq - 1]
    assert _own_index(path) == []


def _own_index(path) -> list:
    """The search tables, triggers and views an object file holds: none since the step "search index in the
    side files only" (a local search reads its owner's side file; the Worker keeps a per-object index)."""
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT type, name FROM sqlite_master WHERE name LIKE 'turns_fts%'").fetchall()
    finally:
        db.close()


def test_newer_than_reaching_back_past_every_row_finds_them(durable):
    """--newer-than without a frozen clock (so remote too): rows written just now are within 1d."""
    append(durable, "a", "kiwi one")
    append(durable, "b", "kiwi two")
    assert sorted(h["name"] for h in search(durable, "kiwi", "--newer-than", "1d")) == ["a", "b"]


def test_a_thousand_removal_merges_leave_an_fts5_index_readable(tmp_path):
    """SQLite 3.40 grows FTS5's structure record at each 'optimize' of a one-segment index, and past ~1,000
    of them the table cannot be opened: a session popped a row at a time, or an owner whose sessions are
    evicted one by one from the search side file, must stay searchable (store/schema.py merge_fts_segments)."""
    from durable_cli.store.schema import merge_fts_segments

    def connect():  # one connection per removal, as one command per removal has
        db = sqlite3.connect(tmp_path / "fts.db", isolation_level=None)
        db.execute("PRAGMA synchronous = OFF")
        return db

    db = connect()
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(content, arguments, tokenize='unicode61 remove_diacritics 2')")
    db.execute("BEGIN")
    db.executemany("INSERT INTO fts (rowid, content) VALUES (?, ?)", [(i, f"plum {i} jam and words here") for i in range(1, 6001)])
    db.execute("COMMIT")
    for i in range(1, 1101):
        db.close()
        db = connect()
        db.execute("BEGIN")
        db.execute("DELETE FROM fts WHERE rowid IN (?, ?, ?)", (i, i + 2000, i + 4000))
        merge_fts_segments(db, "fts")
        db.execute("COMMIT")
    db.execute("INSERT INTO fts (fts) VALUES ('integrity-check')")
    assert db.execute("SELECT count(*) FROM fts WHERE fts MATCH 'plum'").fetchone()[0] == 6000 - 3 * 1100


@pytest.mark.local_only("sets the FTS5 structure limit of this process")
def test_indexes_started_afresh_after_many_merges_still_find_exactly_the_live_rows(durable, home, monkeypatch):
    from durable_cli.store import schema

    monkeypatch.setattr(schema, "_FTS_STRUCTURE_LIMIT", 0)  # every merge takes the start-afresh path
    batch = "\n".join(json.dumps({"role": "user", "content": f"apple {i} row{i}"}) for i in range(6))
    assert durable("transcript", "append", "s", "--batch", "-", input=batch).status == 0
    append(durable, "t", "apple other")
    assert len(search(durable, "apple")) == 7  # the side file holds both sessions now
    assert durable("transcript", "pop", "s").status == 0
    assert durable("transcript", "redact", "s", "2").status == 0
    assert durable("delete", "t", "--yes").status == 0
    assert sorted(h["seq"] for h in search(durable, "apple")) == [1, 3, 4, 5]
    assert search(durable, "row1") == [] and search(durable, "row5") == []
    assert files_holding(home, "row5") == []
