"""The remote index (index Durable Objects) and the commands across objects: ls, usage, purge, sweep,
forget (and reindex), the same command lines against files and against workerd, plus what only the
remote side has: non-admin refusals, a lagging or lost index shard repaired by reindex, and retention
that never deletes on a stale index row.

Each test that compares installation-wide commands starts its own workerd (fresh storage), as the
local side gets a fresh data directory per test.
"""

import json
import re
import time

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import ALICE_TOKEN, start_dev
from tests.remote.test_both_backends import AGED, ID, normalize, run_scenario

USAGE_META = '{"model": "m1", "usage": {"input_tokens": 3, "output_tokens": 4}, "cost_usd": 0.25}'

ACROSS = [
    ["transcript", "append", "a", "--role", "user", "hello there", "--meta", USAGE_META],
    ["transcript", "append", "a", "--role", "assistant", "hi", "--meta", '{"model": "m2"}'],
    ["session", "create", "b", "--title", "Bee"],
    ["session", "prompt", "c", "a question"],
    ["session", "archive", "b"],
    ["session", "create", "d"],
    ["--tenant", "acme", "session", "create", "shared", "--title", "Team"],
    ["--tenant", "acme", "session", "invite", "shared", "bob"],
    ["--tenant", "acme", "--as", "bob", "transcript", "append", "shared", "--role", "user", "from bob"],
    ["--as", "bob", "transcript", "append", "own", "--role", "user", "bob's own"],
    ["--as", "bob", "memory", "set", "tz", "UTC"],
    ["ls"],
    ["ls", "--json"],
    ["ls", "--all", "--jsonl"],
    ["ls", "--status", "archived", "--json"],
    ["ls", "--status", "active", "--status", "created", "--json"],
    ["ls", "--limit", "2", "--json"],
    ["ls", "--limit", "0", "--json"],
    ["ls", "--older-than", "1h", "--json"],
    ["ls", "--status", "bogus"],
    ["ls", "--limit", "-1"],
    ["--as", "bob", "ls", "--json"],
    ["--as", "carol", "ls", "--json"],
    ["--tenant", "acme", "ls", "--json"],
    ["--tenant", "acme", "--as", "carol", "ls", "--json"],
    ["ls", "--user", "bob", "--json"],
    ["usage", "--json"],
    ["usage", "--by", "model", "--json"],
    ["usage", "--by", "day"],
    ["usage"],
    ["usage", "--session", "a", "--json"],
    ["usage", "--session", "nope"],
    ["usage", "--by", "week"],
    ["usage", "--all", "--user", "bob"],
    ["usage", "--all", "--by", "model", "--json"],
    ["--as", "bob", "usage", "--json"],
    ["--tenant", "acme", "usage", "--json"],
    ["purge", "--older-than", "1h", "--dry-run", "--json"],
    AGED,  # every object is now idle for more than 1s; nothing is written until the purges are done
    ["sweep", "--json"],  # retention.draft_expiry is 1s here: d and the tenant's draft are archived
    ["purge", "--older-than", "1s", "--user", "alice", "--status", "archived", "--dry-run", "--json"],
    ["purge", "--older-than", "1s", "--user", "alice", "--status", "archived", "--yes", "--json"],
    ["purge", "--older-than", "1s", "--user", "alice", "--status", "archived", "--yes", "--json"],
    ["purge", "--older-than", "soon", "--yes"],
    ["purge", "--older-than", "1d"],
    ["ls", "--all", "--json"],
    ["session", "show", "b"],
    ["forget", "bob", "--dry-run", "--json"],
    ["forget", "bob", "--yes", "--json"],
    ["forget", "bob", "--yes", "--json"],
    ["forget", " bob", "--yes"],
    ["--tenant", "acme", "session", "participants", "shared", "--json"],
    ["--as", "bob", "ls", "--all", "--json"],
    ["--as", "bob", "memory", "list", "--json"],
    ["--as", "bob", "transcript", "show", "own"],
    ["--tenant", "acme", "transcript", "show", "shared", "--json"],
    ["purge", "--older-than", "1s", "--yes", "--json"],
    ["ls", "--all", "--json"],
    ["usage", "--all", "--json"],
]


def _canonical(text: str) -> str:
    """Receipts list objects by id, and ids differ between backends (another secret): order by owner and NAME."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if isinstance(doc, dict) and {"deleted", "skipped", "changed"} <= doc.keys():
        for key in ("deleted", "skipped", "changed"):
            doc[key] = sorted(doc[key], key=lambda e: (str(e.get("owner")), str(e.get("name"))))
        return json.dumps(doc, sort_keys=True)
    return text


def _compare(local, remote):
    for (args, *want, _), (_, *got, _) in zip(local, remote):
        want = [want[0], _canonical(want[1]), want[2]]
        got = [got[0], _canonical(got[1]), got[2]]
        assert got == want, f"durable {' '.join(args)}"


def _admin_env(dev):
    return {"DURABLE_USER": "alice", "DURABLE_REMOTE": dev.url, "DURABLE_TOKEN": dev.admin_token}


def test_commands_across_objects_same_both_ways(tmp_path_factory, home, monkeypatch):
    (home.parent / "config.toml").write_text('[retention]\ndraft_expiry = "1s"\n')
    dev = start_dev(tmp_path_factory)
    try:
        local = run_scenario(ACROSS, monkeypatch, {"DURABLE_USER": "alice"})
        remote = run_scenario(ACROSS, monkeypatch, _admin_env(dev))
    finally:
        dev.stop()
    _compare(local, remote)
    got = {}
    for args, status, _, _, out in remote:
        got.setdefault(" ".join(args), (status, out))  # the first run of a command line repeated later
    # the scenario really did what it is about, on the remote backend
    assert [r["name"] for r in json.loads(got["ls --json"][1])] == ["shared", "d", "c", "a"]
    assert {r["name"] for r in json.loads(got["--as bob ls --json"][1])} == {"own", "shared"}
    assert json.loads(got["--as carol ls --json"][1]) == []
    assert got["usage --session nope"][0] == 3 and got["ls --status bogus"][0] == 2
    assert json.loads(got["usage --all --by model --json"][1])["total"]["cost_usd"] == 0.25
    swept = [json.loads(out) for args, status, _, _, out in remote if args == ["sweep", "--json"]]
    assert sorted(e["name"] for e in swept[0]["changed"]) == ["d", "shared"]
    forgot = json.loads(got["forget bob --yes --json"][1])
    assert {e["name"] for e in forgot["deleted"]} == {"own", ""} and [e["name"] for e in forgot["changed"]] == ["shared"]
    assert json.loads(got["--as bob ls --all --json"][1]) == [] and got["--as bob transcript show own"][0] == 3
    assert remote[-2][0] == ["ls", "--all", "--json"] and json.loads(remote[-2][4]) == []  # the installation-wide purge took the rest


def test_non_admin_tokens_are_refused_installation_wide_commands(remote_dev, monkeypatch):
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    monkeypatch.delenv("DURABLE_USER")
    assert run_inprocess("transcript", "append", "mine", "--role", "user", "x").status == 0
    for args in (["sweep"], ["usage", "--all"], ["purge", "--older-than", "1d", "--yes"],
                 ["--tenant", "acme", "purge", "--older-than", "1d", "--yes"], ["ls", "--user", "bob"],
                 ["usage", "--user", "bob"], ["forget", "bob", "--yes"], ["purge", "--older-than", "1d", "--user", "bob", "--yes"],
                 ["--as", "bob", "ls"], ["remote", "reindex"], ["remote", "reindex", "--json"]):
        r = run_inprocess(*args)
        assert (r.status, r.out) == (5, ""), args
        assert "admin token" in r.err, (args, r.err)
    r = run_inprocess("ls", "--json")
    assert r.status == 0 and [row["name"] for row in json.loads(r.out)] == ["mine"]
    r = run_inprocess("purge", "--older-than", "1d", "--user", "alice", "--yes", "--json")
    assert r.status == 0 and json.loads(r.out)["deleted"] == []
    assert run_inprocess("usage", "--json").status == 0


def _wait_until(check, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def faulty_dev(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DURABLE_DEV_FAULTS", "1")
    dev = start_dev(tmp_path_factory)
    monkeypatch.delenv("DURABLE_DEV_FAULTS")
    yield dev
    dev.stop()


def test_a_lagging_or_lost_index_is_repaired_and_purge_rechecks_the_object(faulty_dev, monkeypatch):
    from durable_cli.library import Store

    for key, value in _admin_env(faulty_dev).items():
        monkeypatch.setenv(key, value)
    store = Store()

    def turns(name):
        rows = {r["name"]: r for r in json.loads(run_inprocess("ls", "--all", "--json").out)}
        return rows[name]["turns"] if name in rows else None

    def fault(shard="user:alice", **kw):
        store._index("fault", shard=shard, **kw)

    assert run_inprocess("transcript", "append", "x", "--role", "user", "one").status == 0
    assert turns("x") == 1
    # an index update that fails: the write still succeeds (the object is the source of truth) ...
    fault(refuse=True)
    r = run_inprocess("transcript", "append", "x", "--role", "user", "two", "--json")
    assert r.status == 0 and json.loads(r.out)["seq"] == 2
    assert turns("x") == 1  # ... and the index lags
    fault(refuse=False)
    assert run_inprocess("session", "show", "x").status == 0  # the next wake re-sends the row
    assert turns("x") == 2
    # a lagging row repaired by reindex, without touching the object
    fault(refuse=True)
    assert run_inprocess("transcript", "append", "x", "--role", "user", "three").status == 0
    fault(refuse=False)
    r = run_inprocess("remote", "reindex", "--json")  # docs/reference/remote.md §13: the admin command, a §10 receipt
    doc = json.loads(r.out)
    assert r.status == 0 and doc["skipped"] == [] and doc["reindexed"] >= 1
    assert {"deleted", "skipped", "changed", "dry_run"} <= set(doc) and doc["dry_run"] is False
    assert turns("x") == 3
    # a lost index shard: everything it held comes back from the objects the root shards know
    assert run_inprocess("--tenant", "acme", "session", "create", "team").status == 0
    fault(wipe=True)
    assert json.loads(run_inprocess("ls", "--all", "--json").out) == []
    store.reindex()
    assert {r["name"] for r in json.loads(run_inprocess("ls", "--all", "--json").out)} == {"x", "team"}
    assert turns("x") == 3
    # retention never deletes on a stale row: the index says y is idle, the object knows better
    assert run_inprocess("session", "create", "y").status == 0
    made = time.time()
    while time.time() < made + 1.05:
        time.sleep(made + 1.05 - time.time())
    fault(refuse=True)
    assert run_inprocess("transcript", "append", "y", "--role", "user", "still here").status == 0
    planned = json.loads(run_inprocess("purge", "--older-than", "1s", "--user", "alice", "--dry-run", "--json").out)
    assert "y" in [e["name"] for e in planned["deleted"]]  # the stale row made it a candidate
    r = run_inprocess("purge", "--older-than", "1s", "--user", "alice", "--yes", "--json")
    assert r.status == 0 and [e["name"] for e in json.loads(r.out)["deleted"]] == ["x"]  # x really was idle
    assert run_inprocess("transcript", "show", "y").status == 0 and run_inprocess("session", "show", "x").status == 3
    fault(refuse=False)
    # x was deleted while its shard refused updates: its row is left behind, and reindex drops it
    assert "x" in {r["name"] for r in store._index_rows()}
    assert run_inprocess("--tenant", "acme", "delete", "team", "--yes").status == 0
    assert run_inprocess("delete", "y", "--yes").status == 0
    r = run_inprocess("remote", "reindex")
    assert (r.status, r.out) == (0, "") and re.search(r"removed [1-9]", r.err), r.err
    assert store.reindex()["removed"] == 0  # nothing left to drop
    assert store._index_rows(all_users=True, expired=True, reserved=True) == []


def test_remote_reindex_has_no_local_meaning(home):
    r = run_inprocess("remote", "reindex", "--json")
    assert (r.status, r.out) == (2, "") and "doctor --repair" in r.err


def test_index_rows_interface(remote_dev, monkeypatch):
    """RemoteStore._index_rows (used by export/import/search remote): the acting user's rows, or all (admin)."""
    from durable_cli.library import Store

    for key, value in _admin_env(remote_dev).items():
        monkeypatch.setenv(key, value)
    user = f"ix-{time.time_ns()}"
    assert run_inprocess("--as", user, "transcript", "append", "n1", "--role", "user", "x").status == 0
    assert run_inprocess("--as", user, "memory", "set", "k", "v").status == 0
    store = Store(user=user)
    rows = store._index_rows()
    assert [r["name"] for r in rows] == ["n1"]
    keys = {"id", "scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at", "turns", "tokens", "expires_at"}
    assert keys <= rows[0].keys() and ID.fullmatch(rows[0]["id"]) and rows[0]["turns"] == 1
    assert {r["scope"] for r in store._index_rows(reserved=True)} == {"user", "reserved"}
    assert "n1" in {r["name"] for r in store._index_rows(all_users=True)}
    # TTL expiry, fired by the object's own DO alarm, takes its index row with it
    assert run_inprocess("--as", user, "ttl", "n1", "1s").status == 0
    _wait_until(lambda: [r["name"] for r in store._index_rows(expired=True)] == [], "n1's TTL alarm removed its row")
    assert run_inprocess("--as", user, "session", "show", "n1").status == 3
    normalize("")  # the shared helpers stay importable



def _many_then_purge(count, dev, monkeypatch, tmp_path):
    """COUNT objects made locally and remotely with the same names (8 clients each side); once all are
    idle for 1s, `purge --older-than 1s --yes --json` both ways: the same receipt. The remote purge goes
    through a proxy that loses the Worker's answer to the first page (committed, then the connection drops)."""
    from concurrent.futures import ThreadPoolExecutor

    from durable_cli.library import Store
    from tests.remote.proxy import Proxy

    names = [f"obj-{i:05d}" for i in range(count)]
    local_home = str(tmp_path / "local-home")

    def make(remote, part):
        store = Store(remote=dev.url, token=dev.admin_token, user="alice") if remote else Store(home=local_home, user="alice")
        for name in part:
            store.create_session(name)
        store.close()

    for remote in (False, True):
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda k: make(remote, names[k::8]), range(8)))
    # the root shards' copies (what purge pages over) come from each object's alarm, off the write path (docs/reference/remote.md §13)
    admin = Store(remote=dev.url, token=dev.admin_token, user="alice")
    # (each object's own alarm: on a loaded 2-core machine hundreds of them take a while; polled gently)
    _wait_until(lambda: time.sleep(0.2) or {r["name"] for r in admin._index_rows(all_users=True)} >= set(names),
                "the root copies of every object", timeout=120.0)
    admin.close()
    made = time.time()
    while time.time() < made + 1.05:  # a condition on the clock both backends read
        time.sleep(made + 1.05 - time.time())
    monkeypatch.setenv("DURABLE_HOME", local_home)
    want = run_inprocess("purge", "--older-than", "1s", "--yes", "--json")
    monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
    proxy = Proxy(dev.url, "drop_once")
    try:
        monkeypatch.setenv("DURABLE_REMOTE", proxy.url)
        got = run_inprocess("purge", "--older-than", "1s", "--yes", "--json")
    finally:
        proxy.close()
    assert proxy.dropped == 1, (got.status, got.err)  # the first page's answer was lost; its retry got the first answer
    assert (got.status, got.err) == (want.status, want.err) == (0, "")
    assert _canonical(normalize(got.out)) == _canonical(normalize(want.out))
    deleted = json.loads(got.out)["deleted"]
    assert sorted(e["name"] for e in deleted) == names  # each once: the retried page counted once, none lost
    assert [e["id"] for e in deleted] == sorted(e["id"] for e in deleted)  # in id order, as locally
    monkeypatch.setenv("DURABLE_REMOTE", dev.url)
    assert json.loads(run_inprocess("ls", "--all", "--json").out) == []


def test_purge_of_hundreds_of_objects_is_paged_and_a_retried_page_counts_once(tmp_path_factory, tmp_path, monkeypatch):
    """120 objects: a full page of 100 (whose answer the proxy drops), then a part page (1,200 objects: the soak
    below)."""
    dev = start_dev(tmp_path_factory)
    try:
        _many_then_purge(120, dev, monkeypatch, tmp_path)
    finally:
        dev.stop()


@pytest.mark.soak
def test_purge_of_a_thousand_objects_soak(tmp_path_factory, tmp_path, monkeypatch):
    dev = start_dev(tmp_path_factory)
    try:
        _many_then_purge(1200, dev, monkeypatch, tmp_path)
    finally:
        dev.stop()


def test_a_failed_index_update_is_retried_by_the_alarm_and_survives_a_restart(tmp_path_factory, monkeypatch):
    """The hot path writes no "clean" mark (the object keeps it in memory): a failed update is still
    retried by the DO alarm with no further request, and after a workerd restart (new instances, the
    alarm and the stored dirty mark kept) the index catches up with every acknowledged write."""
    from durable_cli.library import Store
    from tests.remote.conftest import Dev

    monkeypatch.setenv("DURABLE_DEV_FAULTS", "1")
    dev = start_dev(tmp_path_factory)
    try:
        for key, value in _admin_env(dev).items():
            monkeypatch.setenv(key, value)
        store = Store()

        def turns():
            rows = json.loads(run_inprocess("ls", "--all", "--json").out)
            return rows[0]["turns"] if rows else None

        assert run_inprocess("transcript", "append", "x", "--role", "user", "one").status == 0
        assert turns() == 1  # read-your-writes: the update reached the shard before the answer
        store._index("fault", shard="user:alice", refuse=True)
        assert run_inprocess("transcript", "append", "x", "--role", "user", "two").status == 0
        assert turns() == 1
        store._index("fault", shard="user:alice", refuse=False)
        _wait_until(lambda: turns() == 2, "the object's alarm re-sent its row, with no request to it")
        store._index("fault", shard="user:alice", refuse=True)
        assert run_inprocess("transcript", "append", "x", "--role", "user", "three").status == 0
        store.close()
        assert dev.stop() == 0
        dev = Dev(dev.storage)  # same storage: the refusal, the object's dirty mark and its alarm are kept
        for key, value in _admin_env(dev).items():
            monkeypatch.setenv(key, value)
        store = Store()
        assert turns() == 2
        store._index("fault", shard="user:alice", refuse=False)
        _wait_until(lambda: turns() == 3, "after the restart the alarm re-sent the row")
        assert run_inprocess("transcript", "append", "x", "--role", "user", "four").status == 0
        assert turns() == 4
        store.close()
    finally:
        dev.stop()


def test_deleted_and_forgotten_text_leaves_no_bytes_in_the_storage_directory(remote_dev, monkeypatch):
    """`delete` and `forget` erase an object with deleteAll: none of its text is left in any file under
    workerd's --storage directory (workerd refuses PRAGMA secure_delete; docs/remote.md)."""
    import subprocess

    from durable_cli.library import Store

    user = f"gone-{time.time_ns()}"
    store = Store(remote=remote_dev.url, token=remote_dev.admin_token, user=user)
    marks = {"deleted": f"ZQX-{time.time_ns()}-DELETED", "forgotten": f"ZQX-{time.time_ns()}-FORGOTTEN"}
    for name, mark in marks.items():
        with store.open(name, create=True) as session:
            session.append(f"secret {mark} here", role="user")
    def files_with(mark):
        found = subprocess.run(["grep", "-rlaF", mark, remote_dev.storage], capture_output=True, text=True)
        return found.stdout.split()

    assert all(files_with(mark) for mark in marks.values())  # the text really is in the storage files
    assert store.delete("deleted")["deleted"][0]["name"] == "deleted"
    assert [e["name"] for e in store.forget(user)["deleted"]] == ["forgotten"]
    store.close()
    assert [files_with(mark) for mark in marks.values()] == [[], []]
