"""`durable import` (docs/reference/retention.md §7): every record checked, only what the acting user could have made, each
record all or nothing under its lock, and a re-run completes an interrupted import."""

import copy
import json
import os

import pytest

from durable_cli.core import records, rights
from tests.helpers import home_made_once

# every test here uses a command across objects: remote once part 2 lands (tests/conftest.py)
pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]


def export_one(durable, name, *args):
    r = durable(*args, "export", name)
    assert r.status == 0, r.err
    return json.loads(r.out)


def jsonl(*recs) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)


def session_with_rows(durable, name="s", *, user=None):
    who = ("--as", user) if user else ()
    durable(*who, "transcript", "append", name, "--role", "user", "hello")
    durable(*who, "transcript", "append", name, "--role", "assistant", "hi there")
    return export_one(durable, name, *who)


def moved(durable, record, *who):
    """The record, after its object was deleted (so importing it creates it again)."""
    durable(*who, "delete", record["name"], "--yes")
    return record


@pytest.fixture(scope="module")
def two_records(tmp_path_factory):
    """("other-good", "s"): two sessions with two rows each, as `export` writes them."""
    from tests.conftest import run_inprocess

    def make(home):
        return session_with_rows(run_inprocess, "other-good"), session_with_rows(run_inprocess)

    return home_made_once(tmp_path_factory, make)[1]


@pytest.mark.parametrize("where, value, field", [
    (("object", "owner"), "mallory", "object.owner"),
    (("object", "scope"), "weird", "object.scope"),
    (("object", "status"), "pwned", "object.status"),
    (("object", "created_at"), "yesterday", "object.created_at"),
    (("object", "created_at"), 10**17, "object.created_at"),
    (("object", "name"), "other", "object.name"),
    (("object", "id"), "0" * 64, "object.id"),
    (("object", "title"), " padded ", "object.title"),
    (("object", "ttl_seconds"), -5, "object.ttl_seconds"),
    (("participants", 0, "role"), "god", "participants[0].role"),
    (("participants", 0, "user"), "bob", "participants"),
    (("turns", 0, "role"), "wizard", "turns[0].role"),
    (("turns", 0, "content"), "", "turns[0].content"),
    (("turns", 0, "content"), 5, "turns[0].content"),
    (("turns", 0, "tokens"), True, "turns[0].tokens"),
    (("turns", 0, "created_at"), 1.5, "turns[0].created_at"),
    (("turns", 0, "superseded_by"), 99, "turns[0].superseded_by"),
    (("turns", 0, "call_id"), "c1", "turns[0].call_id"),
    (("turns", 0, "kind"), "note", "turns[0].kind"),
    (("turns", 0, "pos"), 7, "turns[0].pos"),
    (("turns", 0, "surprise"), 1, "turns[0].surprise"),
    (("turns", 1, "seq"), 1, "turns[1].seq"),
    (("events", 0, "type"), "made.up", "events[0].type"),
    (("events", 0, "data"), "not json", "events[0].data"),
    # an escaped lone surrogate in a JSON column: no UTF-8 either (an internal error once usage read the model)
    (("turns", 0, "meta"), '{"model": "\\ud800"}', "turns[0].meta"),
    (("events", 0, "data"), '{"x": "\\udc00"}', "events[0].data"),
    (("sequences", "turns"), 1, "sequences.turns"),
    (("sequences", "bogus"), 1, "sequences.bogus"),
])
def test_a_record_that_breaks_a_rule_is_exit_2_naming_line_and_field(durable, where, value, field, two_records):
    """Each rule on either backend, importing two records exported once for the module (by files, in a home
    of their own: an export is the same JSON on either backend) into this test's empty backend."""
    good, record = copy.deepcopy(two_records)
    target = record
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    r = durable("import", "-", "--json", input=jsonl(good, record))
    assert r.status == 2, r.err
    message = json.loads(r.err)["error"]["message"]
    assert message.startswith("line 2: ") and field in message, message
    doc = r.json()  # the receipt is still printed: the good record went in, the bad one is listed
    assert [c["name"] for c in doc["changed"]] == ["other-good"]
    assert [s["name"] for s in doc["skipped"]] == ["s"] and field in doc["skipped"][0]["reason"]
    assert durable("session", "show", "s").status == 3  # nothing of it was stored
    assert [x["name"] for x in durable("ls", "--json").json()] == ["other-good"]


def test_unknown_top_level_field_and_unknown_version_are_exit_2(durable):
    record = moved(durable, session_with_rows(durable))
    for change in ({"tables_of_doom": []}, {"version": 99}, {"version": "1"}):
        r = durable("import", "-", input=jsonl(dict(record, **change)))
        assert r.status == 2 and "line 1" in r.err, r.err
    assert not os.path.exists(os.environ["DURABLE_HOME"] + "/objects") or durable("ls", "--json").json() == []


def test_a_turn_over_the_ceiling_is_exit_2(durable, tmp_path):
    record = moved(durable, session_with_rows(durable))
    record["turns"][0]["content"] = "x" * (2 * 1024 * 1024 + 1)
    path = tmp_path / "big.jsonl"
    path.write_text(jsonl(record))
    r = durable("import", path)
    assert r.status == 2 and "turns[0].content" in r.err and "max_turn_bytes" in r.err
    assert durable("session", "show", "s").status == 3


def test_a_lone_surrogate_is_exit_2_not_a_crash(durable):
    record = moved(durable, session_with_rows(durable))
    line = jsonl(record).replace('"hello"', '"\\ud800"')
    r = durable("import", "-", input=line)
    assert r.status == 2 and "turns[0].content" in r.err


def test_duplicate_seq_and_keyless_rows_are_exit_2_not_7(durable):
    record = moved(durable, session_with_rows(durable))
    dup = json.loads(json.dumps(record))
    dup["turns"][1]["seq"] = dup["turns"][0]["seq"]
    keyless = json.loads(json.dumps(record))
    del keyless["turns"][0]["seq"]
    for bad in (dup, keyless):
        r = durable("import", "-", input=jsonl(bad))
        assert r.status == 2, r.err
        assert "turns[" in r.err and "UNIQUE" not in r.err and "syntax" not in r.err


def test_the_id_is_recomputed_from_scope_owner_and_name(durable):
    record = moved(durable, session_with_rows(durable))
    old_id = record["id"]
    forged = dict(record, id="f" * 64, object=dict(record["object"], id="f" * 64))
    doc = durable("import", "-", "--json", input=jsonl(forged)).json()
    assert doc["changed"][0]["id"] == old_id
    assert durable("session", "show", "s", "--json").json()["id"] == old_id


def test_the_live_counters_are_recomputed_from_the_rows(durable):
    record = moved(durable, session_with_rows(durable))
    record["object"]["live_turns"] = 1000
    record["object"]["live_tokens"] = 10**9
    assert durable("import", "-", input=jsonl(record)).status == 0
    shown = durable("session", "show", "s", "--json").json()
    assert shown["turns"] == 2 and shown["tokens"] < 100


def test_another_users_record_is_exit_5_whether_or_not_it_exists(durable):
    alices = session_with_rows(durable, "a-here")
    gone = moved(durable, session_with_rows(durable, "a-gone"))
    bob = ("--as", "bob")
    there = durable(*bob, "import", "-", input=jsonl(alices))
    missing = durable(*bob, "import", "-", input=jsonl(gone))
    assert there.status == missing.status == 5
    assert there.err.replace("a-here", "N") == missing.err.replace("a-gone", "N")  # no existence oracle
    assert durable(*bob, "import", "-", "--replace", input=jsonl(alices)).status == 5
    assert durable("transcript", "show", "a-here", "--json").json()[0]["content"] == "hello"  # untouched
    assert durable("memory", "set", "k", "v").status == 0
    reserved = next(json.loads(x) for x in durable("export", "--user", "alice").out.splitlines()
                    if json.loads(x)["scope"] == "reserved")
    assert durable(*bob, "import", "-", input=jsonl(reserved)).status == 5  # memory: only one's own


def test_all_users_restores_other_users_records(durable, tmp_path, monkeypatch):
    session_with_rows(durable, "b1", user="bob")
    durable("--as", "bob", "memory", "set", "k", "v", "--confirmed")
    dump = durable("export", "--all").out
    monkeypatch.setenv("DURABLE_HOME", str(tmp_path / "elsewhere"))
    assert durable("import", "-", input=dump).status == 5
    assert durable("import", "-", "--all-users", input=dump).status == 0
    assert durable("--as", "bob", "transcript", "show", "b1", "--json").json()[1]["content"] == "hi there"
    assert durable("--as", "bob", "memory", "get", "k").out == "v\n"


def tenant_record(durable, name="t", tenant="acme", owner="alice", members=()):
    t = ("--as", owner, "--tenant", tenant)
    durable(*t, "transcript", "append", name, "--role", "user", "tenant words")
    for user in members:
        durable(*t, "session", "invite", name, user)
    return export_one(durable, name, *t)


def test_tenant_records_follow_visibility_and_ownership(durable):
    record = tenant_record(durable, members=("carol",))
    bob = ("--as", "bob")
    r = durable(*bob, "import", "-", "--replace", input=jsonl(record))
    assert r.status == 4 and "name is taken" in r.err  # exists, invisible to bob: nothing more said
    r = durable("--as", "carol", "import", "-", "--replace", input=jsonl(dict(record, object=dict(record["object"], title="x"))))
    assert r.status == 5  # a participant who is not an owner
    stolen = json.loads(json.dumps(record))
    stolen["participants"] = [{"user": "bob", "role": "owner", "joined_at": 1}]
    assert durable(*bob, "import", "-", "--replace", input=jsonl(stolen)).status == 4
    assert durable("--tenant", "acme", "transcript", "show", "t", "--json").json()[0]["content"] == "tenant words"
    # a new tenant session: the record must list the importer as an owner
    durable("--tenant", "acme", "delete", "t", "--yes")
    assert durable(*bob, "import", "-", input=jsonl(record)).status == 5
    assert durable("--tenant", "acme", "session", "show", "t").status == 3
    assert durable(*bob, "import", "-", input=jsonl(stolen)).status == 0  # bob could have made this one
    assert durable(*bob, "--tenant", "acme", "session", "show", "t", "--json").json()["participants"][0]["user"] == "bob"
    # and the owner takes theirs back only with --replace, as an owner of what exists now: not alice
    assert durable("import", "-", "--replace", input=jsonl(record)).status == 4
    assert durable("import", "-", "--replace", "--all-users", input=jsonl(record)).status == 0
    assert durable("--tenant", "acme", "session", "show", "t", "--json").json()["participants"][0]["user"] == "alice"


@pytest.mark.local_only("holds an object's file lock")
def test_an_invisible_busy_tenant_object_is_only_taken_not_busy(durable):
    """Visibility is decided from index.db before the lock (docs/reference/concepts.md §2): a busy object bob cannot see is
    "name is taken" at once, never a wait and an exit 6 that would say it is in use."""
    from tests.helpers import hold_lock

    record = tenant_record(durable, members=("carol",))
    holder = hold_lock("t", 30, user="alice", tenant="acme")
    try:
        r = durable("--as", "bob", "--lock-timeout", "0", "import", "-", "--replace", input=jsonl(record))
    finally:
        holder.kill()
        holder.wait()
    assert r.status == 4 and "name is taken" in r.err and "busy" not in r.err


def test_reimport_is_skipped_as_already_imported_and_other_content_needs_replace(durable):
    record = session_with_rows(durable)
    doc = durable("import", "-", "--json", input=jsonl(record)).json()
    assert doc["changed"] == [] and [s["reason"] for s in doc["skipped"]] == ["already imported"]
    durable("transcript", "append", "s", "--role", "user", "more")
    r = durable("import", "-", input=jsonl(record))
    assert r.status == 4 and "--replace" in r.err
    doc = durable("import", "-", "--replace", "--json", input=jsonl(record)).json()
    assert [c["what"] for c in doc["changed"]] == ["replaced"]
    assert [t["content"] for t in durable("transcript", "show", "s", "--json").json()] == ["hello", "hi there"]


@pytest.mark.local_only("reads the bytes of the object files")
def test_replace_leaves_no_old_text_in_the_files(durable, home):
    record = session_with_rows(durable)
    durable("transcript", "append", "s", "--role", "user", "secret-words-to-wipe")
    assert durable("search", "secret", "--json").json() != []  # the search side file holds them now
    assert durable("import", "-", "--replace", input=jsonl(record)).status == 0
    assert durable("search", "secret", "--json").json() == []
    for base, _, names in os.walk(home):
        for n in names:
            with open(os.path.join(base, n), "rb") as f:
                assert b"secret-words-to-wipe" not in f.read(), n


def test_a_failing_record_does_not_stop_the_others_and_sets_the_exit(durable):
    mine = moved(durable, session_with_rows(durable, "mine"))
    bobs = session_with_rows(durable, "bobs", user="bob")
    also = moved(durable, session_with_rows(durable, "also"))
    r = durable("import", "-", "--json", input=jsonl(mine, bobs, also))
    assert r.status == 5
    doc = r.json()
    assert sorted(c["name"] for c in doc["changed"]) == ["also", "mine"]
    assert [(s["name"], s["owner"]) for s in doc["skipped"]] == [("bobs", "bob")]
    plain = durable("import", "-", input=jsonl(bobs, mine))
    assert plain.status == 5 and plain.out.splitlines()[0].startswith("skipped\t")


def test_export_delete_import_restores_the_views_exactly(durable, tmp_path):
    durable("session", "create", "r", "--title", "Round trip")
    durable("session", "prompt", "r", "first")
    durable("session", "next", "r")
    durable("session", "finish", "r", "1", "--reply", "answer one")
    durable("transcript", "append", "r", "--role", "tool", "tool out", "--call-id", "c9")
    durable("transcript", "summarize", "r", "--through", "3", "--text", "summary")
    durable("transcript", "append", "r", "--role", "user", "again", "--request-id", "req-1")
    durable("transcript", "redact", "r", "2")
    durable("session", "prompt", "r", "queued", "--request-id", "p-1")
    durable("elicit", "ask", "r", "--prompt", "ok?", "--choice", "y", "--choice", "n")
    durable("elicit", "answer", "r", "1", "--choice", "y")
    durable("ttl", "r", "30d")

    def views():
        return [durable(*c, "--json").json() for c in (
            ("transcript", "show", "r", "--all"), ("session", "show", "r"), ("session", "queue", "r"),
            ("session", "events", "r"), ("elicit", "list", "r"), ("ls",))]

    before = views()
    dump = durable("export", "r").out
    durable("delete", "r", "--yes")
    assert durable("import", "-", input=dump).status == 0
    assert views() == before
    assert durable("export", "r").out == dump  # and the export of the import is the same record
    assert durable("import", "-", input=dump).status == 0  # identical: already imported
    assert views() == before


def test_every_format_version_has_its_field_list():
    assert max(records.FIELDS) == rights.VERSION, "a new export version needs its entry in records.FIELDS"
    current = records.current_columns()
    for table, columns in current.items():
        spec = records.FIELDS[rights.VERSION][table]
        missing = set(columns) - set(spec)
        assert not missing, f"columns of {table} the newest export version does not check: {missing}"


def test_a_version_5_record_s_prompts_take_their_attempts_as_their_start(durable):
    """Export version 6 carries prompts' start numbers (docs/reference/sessions.md §5); a version 5 record has none: each prompt takes
    its attempts as its start, so the worker that holds a started prompt still names it."""
    durable("session", "prompt", "s", "question")
    assert durable("session", "next", "s").status == 0
    record = export_one(durable, "s")
    assert record["version"] == rights.VERSION >= 6 and record["prompts"][0]["start"] == 1
    old = dict({k: v for k, v in record.items() if k != "tags"}, version=5, prompts=[{k: v for k, v in p.items() if k not in ("start", "schedule_id")}
                                           for p in record["prompts"]])
    old.pop("steps", None)  # version 7's step journal (docs/reference/sessions.md §5.2): no field of version 5
    for table in ("schedules", "hooks"):  # version 8's (docs/reference/sessions.md §5.3)
        old.pop(table, None)
    r = durable("import", "-", input=jsonl(moved(durable, old)))
    assert r.status == 0, r.err
    p = json.loads(durable("session", "queue", "s", "--json").out)[0]
    assert (p["status"], p["attempts"], p["start"]) == ("processing", 1, 1)
    assert durable("session", "finish", "s", "1", "--reply", "ok", "--attempt", "1").status == 0
