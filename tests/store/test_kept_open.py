"""A kept-open Store (what the adapters use) keeps each object's connection between runs and trusts what
its last run checked only while no other connection committed: every edge where someone else changed the
object (or index.db) in between must be noticed, exactly as a fresh Store would."""

import glob
import os
import sqlite3
import subprocess
import sys

import pytest

from durable_cli import DurableError, Store
from durable_cli.store import objects, schema
from tests.helpers import downgrade_to, files_under


def kept(home):
    return Store(home=str(home), user="alice", keep_open=True)


def warm(store, name):
    """Run once more on NAME so the store holds a kept connection that trusts what it checked (a new object
    is made in memory, so the run after it opens the file afresh); check that it does."""
    for _ in range(2):
        with store.open(name) as s:
            trusted = s.handle.known is not None
    assert trusted


def texts(store, name):
    with store.open(name) as s:
        return [r["content"] for r in s.rows()]


def other_process(home, code):
    """Run CODE (Python) in another process against HOME: the other writer a kept store must notice."""
    subprocess.run([sys.executable, "-c", "import sys; home = sys.argv[1]\n" + code, str(home)], check=True, timeout=60)


def object_file(home):
    [path] = glob.glob(os.path.join(str(home), "objects", "*", "*.sqlite3"))
    return path


def append_elsewhere(home, name, text):
    other_process(home, f"from durable_cli import Store\n"
                        f"with Store(home=home, user='alice').open({name!r}, create=True) as s: s.append({text!r}, role='user')")


def test_another_process_writing_between_two_runs_is_seen(home):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    warm(store, "chat")
    append_elsewhere(home, "chat", "two")
    assert texts(store, "chat") == ["one", "two"]
    with store.open("chat") as s:
        s.append("three", role="user")
        assert [r["seq"] for r in s.rows()] == [1, 2, 3]
    fresh = Store(home=str(home), user="alice")
    assert texts(fresh, "chat") == ["one", "two", "three"]
    assert [(r["name"], r["turns"]) for r in fresh.ls()] == [("chat", 3)]  # index.db in step


def test_two_kept_stores_on_one_object_take_turns(home):
    a, b = kept(home), kept(home)
    for i in range(3):
        for store, who in ((a, "a"), (b, "b")):
            with store.open("chat", create=True) as s:
                s.append(f"{who}{i}", role="user")
    assert texts(a, "chat") == texts(b, "chat") == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert [(r["name"], r["turns"]) for r in Store(home=str(home), user="alice").ls()] == [("chat", 6)]


def test_a_newer_schema_written_by_another_process_is_refused(home):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    warm(store, "chat")
    path = object_file(home)
    other_process(home, f"import sqlite3; db = sqlite3.connect({path!r}); db.execute('PRAGMA user_version={len(schema.MIGRATIONS) + 1}'); db.commit()")
    with pytest.raises(DurableError) as e:
        store.open("chat").__enter__()
    assert e.value.code == "storage" and "newer durable" in e.value.message


def test_an_older_schema_left_by_another_process_is_migrated_again(home):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    warm(store, "chat")
    db = sqlite3.connect(object_file(home))
    downgrade_to(db, schema.MIGRATIONS[0][1], 1)  # as a copy restored from an old release would be
    db.close()
    with store.open("chat") as s:
        s.append("two", role="user", tool_calls=None)
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)
    assert texts(Store(home=str(home), user="alice"), "chat") == ["one", "two"]


def test_a_delete_by_another_process_is_seen_and_nothing_is_written_into_the_removed_file(home, durable_proc):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("old", role="user")
    warm(store, "chat")
    assert durable_proc("delete", "chat", "--yes").status == 0
    with pytest.raises(DurableError) as e:
        store.open("chat").__enter__()
    assert e.value.code == "not_found"
    with store.open("chat", create=True) as s:  # made anew, in a new file
        s.append("new", role="user")
    # (its inode number may be the old one's again: ours was closed once the delete was seen, so it was free)
    shown = durable_proc("transcript", "show", "chat", "--json")
    assert [r["content"] for r in shown.json()] == ["new"]


def test_an_object_deleted_and_made_again_by_others_is_the_one_written(home, durable_proc):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("old", role="user")
    warm(store, "chat")
    assert durable_proc("delete", "chat", "--yes").status == 0
    assert durable_proc("transcript", "append", "chat", "--role", "user", "other").status == 0
    with store.open("chat") as s:
        assert [r["content"] for r in s.rows()] == ["other"]
        s.append("mine", role="user")
    shown = durable_proc("transcript", "show", "chat", "--json")
    assert [r["content"] for r in shown.json()] == ["other", "mine"]


def test_a_ttl_comes_due_for_a_kept_store_as_for_any(home):
    from freezegun import freeze_time

    store = kept(home)
    with freeze_time("2026-01-01 00:00:00"):
        store.create_session("brief", ttl_seconds=60)
        with store.open("brief") as s:
            s.append("hi", role="user")
        warm(store, "brief")  # facts from the last run (its next alarm) are reused
    with freeze_time("2026-01-01 00:02:00"):
        with pytest.raises(DurableError) as e:
            store.open("brief").__enter__()
        assert e.value.code == "not_found"
    assert glob.glob(os.path.join(str(home), "objects", "*", "*.sqlite3")) == []


def test_index_rows_removed_meanwhile_come_back_whole(home):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    object_id = store.objects.object_id("user", "alice", "chat")
    store.objects.index().remove(object_id)  # this store's own index connection
    with store.open("chat") as s:
        s.append("two", role="user")
    other_process(home, "import sqlite3, os; db = sqlite3.connect(os.path.join(home, 'index.db'));"
                        " db.execute('DELETE FROM objects'); db.execute('DELETE FROM members'); db.commit()")
    with store.open("chat") as s:
        s.append("three", role="user")
    fresh = Store(home=str(home), user="alice")
    assert [(r["name"], r["turns"], r["status"]) for r in fresh.ls()] == [("chat", 3, "active")]
    members = fresh.objects.index(create=False).rows("SELECT user, role FROM members WHERE object_id = ?", (object_id,))
    assert members == [{"user": "alice", "role": "owner"}]


def test_a_new_object_starts_as_the_migrations_make_it(tmp_path):
    """New objects are a copy of a template built from the migrations: the same schema, rows and mode
    as running every step on an empty file."""
    made = tmp_path / "made.sqlite3"
    objects._paths.create_file(str(made), objects.file_image(objects._new_in_memory("test")))
    migrated = tmp_path / "migrated.sqlite3"
    db = sqlite3.connect(migrated, isolation_level=None)
    schema.migrate(db, schema.MIGRATIONS, "test")

    def content(c):
        tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        return (c.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall(),
                c.execute("PRAGMA user_version").fetchone(), c.execute("PRAGMA journal_mode").fetchone(),
                {t: c.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables if not t.startswith("turns_fts")})

    other = sqlite3.connect(made, isolation_level=None)
    assert content(other) == content(db)
    assert other.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert oct(os.stat(made).st_mode & 0o777) == "0o600"


def test_an_adapter_store_makes_a_new_object_whole_or_not_at_all(home, durable_proc):
    """A kept-open store makes a new object in memory and writes its file when the run ends well: a run
    that fails leaves no file (not even a lock file), one that ends well leaves an ordinary WAL object."""
    store = kept(home)
    with pytest.raises(RuntimeError):
        with store.open("chat", create=True) as s:
            s.append("lost", role="user")
            raise RuntimeError("the caller fails after a commit")
    with pytest.raises(DurableError):
        with store.open("chat", create=True) as s:
            s.append_many([{"role": "user", "content": "fine"}, {"role": "tool", "content": "no call id"}])
    assert files_under(home / "objects") == []
    assert list(Store(home=str(home), user="alice").ls()) == []
    with store.open("chat", create=True) as s:
        s.append("kept", role="user")
    [path] = [p for p in files_under(home / "objects") if p.endswith(".sqlite3")]
    db = sqlite3.connect(os.path.join(str(home), "objects", path))
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    shown = durable_proc("transcript", "show", "chat", "--json")
    assert [r["content"] for r in shown.json()] == ["kept"]
    assert [(r["name"], r["turns"]) for r in Store(home=str(home), user="alice").ls()] == [("chat", 1)]
    assert durable_proc("transcript", "append", "chat", "--role", "user", "more").status == 0
    assert texts(store, "chat") == ["kept", "more"]


def test_a_new_object_half_written_by_a_killed_run_is_not_an_object(home):
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    path = object_file(home)
    with open(path + ".new", "wb") as f:  # what a run killed before its rename leaves (a prefix of a file)
        f.write(b"SQLite format 3\0" + b"\0" * 100)
    os.unlink(path)
    for side in ("-wal", "-shm"):
        if os.path.exists(path + side):
            os.unlink(path + side)
    fresh = Store(home=str(home), user="alice")
    with pytest.raises(DurableError) as e:
        fresh.open("chat").__enter__()
    assert e.value.code == "not_found"
    with store.open("chat", create=True) as s:  # made again over the leftover
        s.append("two", role="user")
    assert not os.path.exists(path + ".new")
    assert texts(fresh, "chat") == ["two"]


def test_threads_sharing_a_kept_store_take_turns_on_one_object(home):
    import threading

    store = kept(home)
    errors = []

    def writer(who, name):
        try:
            for i in range(20):
                with store.open(name, create=True) as s:
                    s.append(f"{who}-{i}", role="user")
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w, "shared" if w < 3 else f"own{w}")) for w in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    fresh = Store(home=str(home), user="alice")
    got = texts(fresh, "shared")
    assert sorted(got) == sorted(f"{w}-{i}" for w in range(3) for i in range(20))
    for w in range(3):  # each writer's rows in its own order
        assert [t for t in got if t.startswith(f"{w}-")] == [f"{w}-{i}" for i in range(20)]
    assert sorted((r["name"], r["turns"]) for r in fresh.ls()) == [("own3", 20), ("own4", 20), ("shared", 60)]


def test_stores_dropped_without_close_leave_no_lock_files_open(home):
    """A kept-open store keeps each object's lock file open between runs; one that is dropped without close()
    (an adapter session made per request) must not leave it open, or a server runs out of descriptors."""
    import gc

    def open_locks():
        found = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                found += os.readlink(f"/proc/self/fd/{fd}").endswith(".lock")
            except OSError:
                pass
        return found

    with kept(home).open("s", create=True) as s:
        s.append("hi", role="user")
    before = open_locks()
    for _ in range(50):
        store = kept(home)
        for _ in range(2):
            with store.open("s") as s:
                s.append("hi", role="user")
    del store
    gc.collect()
    assert open_locks() - before <= 1


def test_a_wal_made_ahead_reads_as_written_after_the_writer_is_killed(home, durable):
    """A kept-open store makes an object's WAL before it opens the connection it keeps (zeros past the frames
    SQLite writes: objects.preallocate_wal). A process killed with that connection open leaves the WAL
    behind, frames then zeros; another process reads every acknowledged row, and writes on."""
    other_process(home, "import os\nfrom durable_cli import Store\nstore = Store(home=home, user='alice', keep_open=True)\n"
                        "for i in range(5):\n"
                        "    with store.open('chat', create=True) as s: s.append(f'row {i}', role='user')\n"
                        "os._exit(0)")
    path = object_file(home)
    assert os.path.getsize(path + "-wal") >= objects.WAL_AHEAD  # left behind, never shrunk
    rows = durable("transcript", "show", "chat", "--json").json()
    assert [r["content"] for r in rows] == [f"row {i}" for i in range(5)]
    assert durable("transcript", "append", "chat", "--role", "user", "row 5").status == 0
    assert [r["content"] for r in durable("transcript", "show", "chat", "--json").json()][-1] == "row 5"
    assert durable("doctor", "--json").json()["healthy"]


def test_an_object_made_and_left_by_a_kept_store_leaves_no_wal(home):
    """One write that makes the object (written whole, no connection opened on the file) and a store closed
    after a later write: no WAL is left beside the object, made ahead or not."""
    store = kept(home)
    with store.open("once", create=True) as s:
        s.append("only", role="user")
    assert not os.path.exists(object_file(home) + "-wal")
    with store.open("once") as s:
        s.append("again", role="user")
    assert os.path.getsize(object_file(home) + "-wal") >= objects.WAL_AHEAD
    store.close()
    assert not os.path.exists(object_file(home) + "-wal")
    assert texts(kept(home), "once") == ["only", "again"]


def test_the_object_row_a_kept_store_carries_is_the_one_on_disk(home):
    """A kept store carries the object's row from its last write to the next run (no SELECT of it): an archive
    or a title set by another process is seen at once, and within a run the row read after a write is new."""
    store = kept(home)
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    warm(store, "chat")
    with store.open("chat") as s:
        s.append("two", role="user")
    with store.open("chat") as s:
        assert s.handle.known.get("meta") is not None  # carried from the write before
        assert s.meta()["live_turns"] == 2
        s.append("three", role="user")
        assert s.meta()["live_turns"] == 3  # read again: this run changed it
    other_process(home, "from durable_cli import Store\n"
                        "with Store(home=home, user='alice').open('chat') as s: s.set_title('elsewhere'); s.archive()")
    with store.open("chat") as s:
        meta = s.meta()
        assert (meta["title"], meta["status"]) == ("elsewhere", "archived")
    with pytest.raises(DurableError) as e:
        with store.open("chat") as s:
            s.append("four", role="user")
    assert e.value.code == "conflict"
    assert texts(Store(home=str(home), user="alice"), "chat") == ["one", "two", "three"]


def test_a_store_forked_while_it_keeps_things_open_starts_afresh_in_the_child(home):
    """A pre-forking server that made (or warmed) an adapter's Store before forking: the child must not use the
    parent's connections nor its kept lock descriptor, whose flock it would share: parent and child would both
    hold the object's lock at once. The child opens its own, and waits for the parent's lock like any process."""
    import time

    store = Store(home=str(home), user="alice", keep_open=True, lock_timeout="1s")
    store.warm()
    with store.open("chat", create=True) as s:
        s.append("one", role="user")
    warm(store, "chat")  # a kept connection and a kept lock descriptor, both idle
    ready, go = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: waits until the parent holds the lock, then tries to write
        code = 1
        try:
            os.read(ready, 1)
            try:
                with store.open("chat") as s:
                    s.append("child while the parent holds the lock", role="user")
                code = 3  # got in while the parent held the lock
            except DurableError as e:
                code = 0 if e.code == "busy" else 4
            time.sleep(1.0)  # the parent is done: now the child writes, through connections of its own
            with store.open("chat") as s:
                s.append("child", role="user")
            store.close()
        except BaseException:  # the exit status says what happened
            code = code or 5
        os._exit(code)
    with store.open("chat") as s:
        os.write(go, b"x")
        time.sleep(1.5)  # the child tries meanwhile (1 s lock timeout)
        s.append("parent", role="user")
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, os.WEXITSTATUS(status)
    with store.open("chat") as s:
        s.append("parent again", role="user")  # the parent's kept connection still works
    store.close()
    fresh = Store(home=str(home), user="alice")
    assert texts(fresh, "chat") == ["one", "parent", "child", "parent again"]
    assert [(r["name"], r["turns"]) for r in fresh.ls()] == [("chat", 4)]
