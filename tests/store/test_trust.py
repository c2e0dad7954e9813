"""Trust at the edges: damaged objects, symlinks at every level, the wrong secret.key, schema versions."""

import hashlib
import json
import os
import sqlite3

import pytest

from durable_cli.store import ids, schema


def object_path(home, object_id):
    return home / "objects" / object_id[:2] / f"{object_id}.sqlite3"


def make(durable, name="s", turns=3):
    for i in range(turns):
        assert durable("transcript", "append", name, "--role", "user", f"turn {i}").status == 0
    return durable("session", "show", name, "--json").json()["id"]


def clean_storage_error(r, *words):
    assert r.status == 7, (r.status, r.out, r.err)
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    if r.err.startswith("{"):  # --json
        assert json.loads(r.err)["error"]["code"] == "storage"
    else:
        assert r.err.startswith("durable: error: ")
    for word in words:
        assert word in r.err, r.err


def tree(root):
    """Every path under ROOT with its bytes and mtime: proof that nothing there was written or unlinked."""
    out = {}
    for base, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(base, f)
            st = os.lstat(p)
            with open(p, "rb") as fh:
                out[p] = (hashlib.sha256(fh.read()).hexdigest(), st.st_mtime_ns, st.st_size)
        for d in dirs:
            out[os.path.join(base, d)] = "dir"
    return out


# --- 5. a damaged object is exit 7 naming it, never a traceback ------------------------------------

def wreck_page(path, table):
    """Overwrite the root page of TABLE with garbage (the file stays a database; reading TABLE fails)."""
    db = sqlite3.connect(path)
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    db.close()
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xab" * page_size)


@pytest.mark.parametrize("table,commands", [
    ("participants", [["session", "show", "s"], ["session", "participants", "s"]]),
    ("turns", [["transcript", "show", "s"], ["transcript", "recent", "s"], ["export", "s"]]),
    ("object", [["session", "show", "s"], ["transcript", "append", "s", "--role", "user", "x"]]),
])
def test_garbage_pages_are_exit_7_naming_the_session(home, durable, table, commands):
    object_id = make(durable)
    wreck_page(object_path(home, object_id), table)
    for args in commands:
        clean_storage_error(durable(*args), 'session "s"', "doctor")
    r = durable("delete", "s", "--yes")
    assert r.status in (0, 7) and "Traceback" not in r.err


@pytest.mark.parametrize("column", ["title", "content"])
def test_non_utf8_text_is_exit_7_naming_the_session(home, durable, column):
    object_id = make(durable)
    durable("session", "title", "s", "a title")
    db = sqlite3.connect(object_path(home, object_id))
    if column == "title":
        db.execute("UPDATE object SET title = CAST(x'ff41' AS TEXT)")
    else:
        db.execute("UPDATE turns SET content = CAST(x'fffe' AS TEXT) WHERE seq = 2")
    db.commit()
    db.close()
    commands = [["session", "show", "s"], ["export", "s"]] if column == "title" else [["transcript", "show", "s"], ["export", "s"]]
    for args in commands:
        clean_storage_error(durable(*args), 'session "s"', "UTF-8", "doctor")


def test_empty_object_file_the_index_knows_is_corrupt_not_a_new_session(home, durable):
    object_id = make(durable)
    path = object_path(home, object_id)
    os.truncate(path, 0)
    for side in ("-wal", "-shm"):
        if os.path.exists(str(path) + side):
            os.unlink(str(path) + side)
    clean_storage_error(durable("session", "show", "s"), 'session "s"', "corrupt")
    clean_storage_error(durable("transcript", "append", "s", "--role", "user", "again"), 'session "s"', "corrupt")
    # not silently a fresh session: the index still has the old row, and the file is still there
    assert durable("ls", "--json").json()[0]["turns"] == 3
    assert path.exists()


def test_empty_object_file_the_index_does_not_know_is_a_half_made_create(home, durable):
    make(durable, "other", turns=1)  # an installation with a secret and an index
    secret = (home / "secret.key").read_bytes()
    object_id = ids.object_id(secret, "user", "alice", "fresh")
    path = object_path(home, object_id)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_bytes(b"")
    assert durable("session", "show", "fresh").status == 3
    assert not path.exists()
    path.write_bytes(b"")
    assert durable("transcript", "append", "fresh", "--role", "user", "hi").status == 0
    assert durable("session", "show", "fresh", "--json").json()["turns"] == 1


# --- 8. symlinks at any level are refused; nothing outside is read, written or unlinked -----------

MOVES = {
    "objects": lambda home, oid: home / "objects",
    "shard": lambda home, oid: home / "objects" / oid[:2],
}


@pytest.mark.parametrize("level", sorted(MOVES))
@pytest.mark.parametrize("args", [
    ["session", "title", "s", "new title"],
    ["session", "prompt", "s", "do it", "--no-create"],
    ["ttl", "s", "7d"],
    ["delete", "s", "--yes"],
    ["session", "show", "s"],
    ["transcript", "append", "s", "--role", "user", "x"],
])
def test_symlinked_objects_or_shard_dir_is_refused(home, durable, tmp_path, level, args):
    object_id = make(durable, turns=1)
    inside = MOVES[level](home, object_id)
    outside = tmp_path / "outside"
    os.rename(inside, outside)
    inside.symlink_to(outside)
    before = tree(outside)
    clean_storage_error(durable(*args), "symlink")
    assert tree(outside) == before


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
def test_symlinked_object_sidecar_is_refused(home, durable, tmp_path, side):
    object_id = make(durable, turns=1)
    target = tmp_path / "outside-file"
    target.write_bytes(b"keep me")
    (home / "objects" / object_id[:2] / f"{object_id}.sqlite3{side}").symlink_to(target)
    for args in (["session", "show", "s"], ["transcript", "append", "s", "--role", "user", "x"], ["delete", "s", "--yes"]):
        clean_storage_error(durable(*args), "symlink")
    assert target.read_bytes() == b"keep me"


@pytest.mark.parametrize("name", ["index.db", "index.db-wal", "index.db-shm", "secret.key"])
def test_symlinked_index_or_secret_is_refused(home, durable, tmp_path, name):
    make(durable, turns=1)
    target = tmp_path / "outside-file"
    if os.path.exists(home / name):
        os.rename(home / name, target)
    else:
        target.write_bytes(b"")
    (home / name).symlink_to(target)
    before = (target.read_bytes(), os.stat(target).st_mtime_ns)
    commands = [["transcript", "append", "s", "--role", "user", "x"], ["transcript", "append", "new", "--role", "user", "x"]]
    if name != "secret.key":  # ls reads index.db only
        commands.append(["ls", "--json"])
    for args in commands:
        clean_storage_error(durable(*args), "symlink")
    assert (target.read_bytes(), os.stat(target).st_mtime_ns) == before


def test_symlinked_objects_dir_is_refused_by_bulk_commands(home, durable, tmp_path):
    make(durable, turns=1)
    outside = tmp_path / "outside"
    os.rename(home / "objects", outside)
    (home / "objects").symlink_to(outside)
    before = tree(outside)
    clean_storage_error(durable("backup", str(tmp_path / "bk")), "symlink")
    report = durable("doctor", "--json")
    assert report.status == 7 and any(p["kind"] == "symlink" for p in report.json()["problems"])
    assert tree(outside) == before


# --- 10. the secret must match the data ----------------------------------------------------------

def object_files(home):
    return sorted(p.name for p in (home / "objects").rglob("*.sqlite3"))


def test_wrong_secret_is_exit_7_and_creates_nothing(home, durable):
    make(durable)
    good = (home / "secret.key").read_bytes()
    files = object_files(home)
    (home / "secret.key").write_bytes(os.urandom(32))
    for args in (["session", "show", "s"], ["transcript", "append", "s", "--role", "user", "x"],
                 ["session", "create", "other"], ["session", "prompt", "s", "go"], ["memory", "set", "k", "v"]):
        clean_storage_error(durable(*args), "secret")
    assert object_files(home) == files
    assert len(durable("ls", "--json").json()) == 1
    report = durable("doctor", "--json")
    assert report.status == 7
    assert [p["kind"] for p in report.json()["problems"]] == ["secret_mismatch"]
    assert durable("doctor", "--repair", "--json").status == 7  # repair cannot fix it, and does not try
    (home / "secret.key").write_bytes(good)
    assert durable("transcript", "append", "s", "--role", "user", "x").status == 0
    assert durable("doctor", "--json").json()["healthy"] is True


def index_check(home):
    db = sqlite3.connect(home / "index.db")
    try:
        return db.execute("SELECT value FROM installation WHERE key = 'secret_check'").fetchone()
    finally:
        db.close()


def make_legacy_index(home):
    """Turn index.db back into a v1 index, as written before the check value existed."""
    from tests.helpers import downgrade_to

    db = sqlite3.connect(home / "index.db")
    downgrade_to(db, schema.INDEX_MIGRATIONS[0][1], 1)  # no installation table, purge_journal as step 1 made it
    db.close()


def test_check_value_is_recorded_on_create_and_by_migration(home, durable):
    make(durable, turns=1)
    secret = (home / "secret.key").read_bytes()
    assert index_check(home) == (ids.check_value(secret),)
    make_legacy_index(home)
    assert durable("session", "show", "s").status == 0  # a read records nothing...
    assert durable("transcript", "append", "s", "--role", "user", "y").status == 0  # ...the first write does
    assert index_check(home) == (ids.check_value(secret),)


def test_wrong_secret_on_a_legacy_index_is_caught_from_its_rows(home, durable):
    make(durable, turns=1)
    make_legacy_index(home)
    (home / "secret.key").write_bytes(os.urandom(32))
    clean_storage_error(durable("transcript", "append", "s", "--role", "user", "x"), "secret")
    clean_storage_error(durable("transcript", "append", "t", "--role", "user", "x"), "secret")
    assert index_check(home) is None  # the wrong secret was never recorded
    assert len(object_files(home)) == 1


def test_object_whose_name_does_not_hash_to_its_id_is_refused(home, durable):
    a = make(durable, "a", turns=2)
    secret = (home / "secret.key").read_bytes()
    b = ids.object_id(secret, "user", "alice", "b")
    object_path(home, b).parent.mkdir(mode=0o700, exist_ok=True)
    os.link(object_path(home, a), object_path(home, b))  # a file copied in under another id
    for args in (["session", "show", "b"], ["transcript", "append", "b", "--role", "user", "x"]):
        clean_storage_error(durable(*args), 'session "b"', "hash")
    assert durable("session", "show", "a", "--json").json()["turns"] == 2


def test_rebuilding_the_index_keeps_check_value_and_intents(home, durable, tmp_path):
    from durable_cli.store.objects import ObjectStore

    make(durable, turns=1)
    secret = (home / "secret.key").read_bytes()
    db = sqlite3.connect(home / "index.db")
    db.execute("INSERT INTO purge_journal (id, owner, name, created_at, started_at) VALUES ('f00d', 'alice', 'gone', 1, 2)")
    db.commit()
    db.close()
    store = ObjectStore(str(home))
    store.index().recreate()
    store.close()
    assert index_check(home) == (ids.check_value(secret),)
    db = sqlite3.connect(home / "index.db")
    assert db.execute("SELECT id FROM purge_journal").fetchall() == [("f00d",)]
    db.close()
    # a backup's index carries the same check value: the backup is usable with its own secret.key
    assert durable("backup", str(tmp_path / "bk")).status == 0
    assert index_check(tmp_path / "bk") == (ids.check_value(secret),)


def test_unreadable_index_is_rebuilt_with_the_check_value_of_the_objects_secret(home, durable):
    make(durable, turns=1)
    secret = (home / "secret.key").read_bytes()
    (home / "index.db").write_bytes(b"garbage" * 1000)
    assert durable("doctor", "--repair", "--json").status == 0
    assert index_check(home) == (ids.check_value(secret),)
    assert durable("session", "show", "s").status == 0


# --- 20. one migration mechanism; newer files are refused ---------------------------------------

def test_newer_index_is_refused_not_downgraded(home, durable):
    make(durable, turns=1)
    db = sqlite3.connect(home / "index.db")
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    for args in (["ls", "--json"], ["transcript", "append", "new", "--role", "user", "x"]):
        clean_storage_error(durable(*args), "newer")
    db = sqlite3.connect(home / "index.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 99
    db.close()


def test_newer_object_is_refused_on_write_too(home, durable):
    object_id = make(durable, turns=1)
    db = sqlite3.connect(object_path(home, object_id))
    db.execute("PRAGMA user_version=99")
    db.close()
    clean_storage_error(durable("transcript", "append", "s", "--role", "user", "x"), "newer")


TRIGGER_STEP = (
    "audit",
    """
    CREATE TABLE IF NOT EXISTS audit (seq INTEGER, note TEXT);
    CREATE TRIGGER IF NOT EXISTS turns_audit AFTER INSERT ON turns BEGIN
        INSERT INTO audit (seq, note) VALUES (new.seq, 'a; b');
        INSERT INTO audit (seq, note) VALUES (new.seq, 'second');
    END;
    """,
)


def test_a_step_with_a_trigger_upgrades_an_existing_v1_object_in_place(home, durable, monkeypatch):
    object_id = make(durable, turns=2)
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + [TRIGGER_STEP])
    assert durable("transcript", "append", "s", "--role", "user", "after").status == 0
    db = sqlite3.connect(object_path(home, object_id))
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)  # the trigger step is the last
    assert db.execute("SELECT seq, note FROM audit ORDER BY rowid").fetchall() == [(3, "a; b"), (3, "second")]
    db.close()
    assert durable("transcript", "show", "s", "--json").json()[0]["content"] == "turn 0"


def test_a_failing_step_changes_nothing(tmp_path):
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    steps = [("one", "CREATE TABLE a (x);"), ("two", "CREATE TABLE b (x); CREATE TABLE a (x);")]
    with pytest.raises(sqlite3.OperationalError):
        schema.migrate(db, steps, "x")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_statements_split_where_sqlite_says(tmp_path):
    sql = "CREATE TABLE t (x TEXT DEFAULT ';');\nCREATE TRIGGER r AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END;\n"
    assert len(schema.statements(sql)) == 2


def test_v1_index_upgrades_in_place_keeping_its_rows(home, durable):
    make(durable, "a", turns=1)
    make(durable, "b", turns=2)
    make_legacy_index(home)
    assert sorted(r["name"] for r in durable("ls", "--json").json()) == ["a", "b"]
    db = sqlite3.connect(home / "index.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == schema.INDEX_VERSION
    db.close()


def test_a_create_that_fails_before_its_first_commit_leaves_no_file(home, durable):
    """The store's safety net (docs/reference/storage.md §3): whatever rejects a create after the object's file was made --
    here a library caller's own exception -- the file, its WAL/SHM and its lock file go with it."""
    from durable_cli import Store

    durable("session", "create", "other")  # the data directory, secret and index exist
    before = sorted(p.relative_to(home) for p in home.rglob("*") if p.is_file() and "index.db" not in p.name)
    with pytest.raises(RuntimeError):
        with Store().open("fresh", create=True):
            raise RuntimeError("the caller changed its mind")
    after = sorted(p.relative_to(home) for p in home.rglob("*") if p.is_file() and "index.db" not in p.name)
    assert after == before
    assert durable("session", "create", "bad", "--title", "\u202etxet").status == 2
    assert sorted(p.relative_to(home) for p in home.rglob("*") if p.is_file() and "index.db" not in p.name) == before
    assert durable("doctor").status == 0


def _leave_wal_of(home, object_id, tmp_path):
    """A WAL holding committed frames of the object as it stands (a kept connection killed before it closed),
    kept aside: what a removal killed between unlinking the file and its WAL leaves behind."""
    path = object_path(home, object_id)
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("UPDATE turns SET content = content || ' again'")
    db.commit()
    saved = tmp_path / "left.wal"
    saved.write_bytes(open(f"{path}-wal", "rb").read())
    db.close()
    return path, saved


def grep_home(home, word: bytes):
    return [os.path.join(b, f) for b, _, fs in os.walk(home) for f in fs if word in open(os.path.join(b, f), "rb").read()]


@pytest.mark.parametrize("adapter", [False, True])
def test_a_wal_left_beside_no_file_is_not_read_into_a_new_object(home, durable, tmp_path, adapter):
    """A removal killed between unlinking an object's file and its WAL leaves the WAL; a new object of the same
    NAME must not read those frames (SQLite would: old pages over the new file, the removed text back)."""
    object_id = make(durable, turns=2)
    assert durable("transcript", "append", "s", "--role", "user", "oldtoken").status == 0
    path, saved = _leave_wal_of(home, object_id, tmp_path)
    assert durable("delete", "s", "--yes").status == 0
    os.replace(saved, f"{path}-wal")  # what the killed removal left
    if adapter:
        import asyncio

        from durable_cli.integrations.openai_agents import DurableSession

        session = DurableSession("s", home=str(home))
        assert session.name == "s"
        asyncio.run(session.add_items([{"role": "user", "content": "fresh"}]))
        session.close()
    else:
        assert durable("transcript", "append", "s", "--role", "user", "fresh").status == 0
    shown = durable("transcript", "show", "s", "--json")
    assert shown.status == 0, shown.err
    assert [r["content"] for r in shown.json()] == ["fresh"]
    assert durable("doctor").status == 0
    assert grep_home(home, b"oldtoken") == []


def test_forget_missing_takes_the_wal_a_killed_removal_left(home, durable, tmp_path):
    """purge finishing an intent whose file is already gone (or doctor --repair) also removes the WAL that
    removal left: it holds the removed text (docs/reference/retention.md §7: no removed token in any file)."""
    object_id = make(durable, turns=1)
    assert durable("transcript", "append", "s", "--role", "user", "oldtoken").status == 0
    path, saved = _leave_wal_of(home, object_id, tmp_path)
    os.unlink(path)  # the removal got this far
    os.replace(saved, f"{path}-wal")
    assert durable("doctor", "--repair").status in (0, 7)
    assert not os.path.exists(f"{path}-wal")
    assert grep_home(home, b"oldtoken") == []
