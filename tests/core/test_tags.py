"""docs/reference/sessions.md §5 Tags: `session tag`, `session create --tag`, `tags.max`, the `session.tagged` event;
docs/reference/retention.md §7 `ls --tag`, `usage --tag`, doctor, export/import, fork, forget; docs/reference/library.md §9."""

import json
import os
import sqlite3

import pytest

pytestmark = pytest.mark.both_backends


def ok(r):
    assert r.status == 0, r.err
    return r


def show(durable, name="s"):
    return ok(durable("session", "show", name, "--json")).json()


def events(durable, name="s"):
    return ok(durable("session", "events", name, "--json")).json()


def test_create_with_tags_and_tag_prints_them_sorted(durable):
    doc = ok(durable("session", "create", "s", "--tag", "team=auth", "--tag", "pr=42", "--tag", "q=a=b", "--json")).json()
    assert doc["tags"] == {"pr": "42", "q": "a=b", "team": "auth"}
    assert list(doc["tags"]) == ["pr", "q", "team"]  # keys sorted
    assert show(durable)["tags"] == doc["tags"]
    assert events(durable)[-1]["type"] == "session.tagged"
    # with neither KEY=VALUE nor --untag: prints the tags, one KEY=VALUE a line, and changes nothing
    before = show(durable)
    n = len(events(durable))
    assert ok(durable("session", "tag", "s")).out == "pr=42\nq=a=b\nteam=auth\n"
    assert show(durable) == before and len(events(durable)) == n
    ok(durable("session", "create", "bare"))
    assert show(durable, "bare")["tags"] == {}
    assert ok(durable("session", "tag", "bare")).out == ""


def test_a_change_writes_only_what_changed_and_moves_updated_at_not_last_active_at(durable):
    ok(durable("session", "create", "s", "--tag", "pr=42", "--tag", "team=auth"))
    before = show(durable)
    n = len(events(durable))
    r = ok(durable("session", "tag", "s", "pr=42", "team=core", "new=1", "--untag", "gone", "--json"))
    assert r.json()["tags"] == {"new": "1", "pr": "42", "team": "core"}
    after = show(durable)
    assert after["updated_at"] > before["updated_at"]
    assert after["last_active_at"] == before["last_active_at"]
    log = events(durable)
    assert len(log) == n + 1
    assert log[-1]["type"] == "session.tagged"
    assert log[-1]["data"] == {"set": {"new": "1", "team": "core"}, "unset": []}  # pr kept its value; gone was not there
    ok(durable("session", "tag", "s", "--untag", "new", "--untag", "team"))
    assert events(durable)[-1]["data"] == {"set": {}, "unset": ["new", "team"]}
    assert ok(durable("session", "tag", "s")).out == "pr=42\n"
    # setting a tag to the value it has, or removing one that is not there: exit 0, no event, no write
    same = show(durable)
    m = len(events(durable))
    assert ok(durable("session", "tag", "s", "pr=42", "--untag", "nothere")).out == "pr=42\n"
    assert show(durable) == same and len(events(durable)) == m


BAD = [
    ["x"],  # no =
    ["=v"],  # empty KEY
    ["_a=v"],  # KEY must begin with a letter or a digit
    [".a=v"],
    ["a b=v"],
    ["k" * 65 + "=v"],
    ["é=v"],
    ["a="],  # empty VALUE: use --untag
    ["a= v"],  # not its own strip()
    ["a=v\t"],
    ["a=\x07"],
    ["a=" + "v" * 257],
    ["a=1", "a=2"],  # named twice
    ["a=1", "--untag", "a"],
    ["--untag", "a", "--untag", "a"],
    ["--untag", "-bad"],
]


@pytest.mark.local_only("the client refuses before anything is sent; the Worker's own checks: tests/remote/test_remote_args.py, the vectors")
def test_bad_tags_are_exit_2_and_change_nothing(durable):
    ok(durable("session", "create", "s", "--tag", "keep=1"))
    before = show(durable)
    for i, args in enumerate(BAD):
        r = durable("session", "tag", "s", *args)
        assert r.status == 2, (args, r.out, r.err)
        assert r.err.startswith("durable: error: ") and r.err.count("\n") == 1 and "Traceback" not in r.err
        if i % 4 == 0:
            assert durable("session", "tag", "missing", *args).status == 2  # input first: whether NAME exists or not
        if "--untag" not in args and i % 2 == 0:
            assert durable("session", "create", "t", *[x for a in args for x in ("--tag", a)]).status == 2, args
    assert show(durable) == before
    assert durable("session", "show", "t").status == 3


def test_good_keys_and_values(durable):
    key = "A" + "z" * 62 + "9"
    ok(durable("session", "create", "s"))
    doc = ok(durable("session", "tag", "s", f"{key}=v", "gh:org/repo.x_y-z=é v=1", "0=" + "v" * 256, "--json")).json()
    assert doc["tags"] == {"0": "v" * 256, key: "v", "gh:org/repo.x_y-z": "é v=1"}
    assert ok(durable("session", "tag", "s", "--untag", key, "--untag", "0")).out == "gh:org/repo.x_y-z=é v=1\n"


def test_tags_max(durable):
    ok(durable("config", "set", "tags.max", "2"))
    r = durable("session", "create", "s", "--tag", "a=1", "--tag", "b=2", "--tag", "c=3")
    assert r.status == 2 and "tags.max" in r.err
    assert durable("session", "show", "s").status == 3  # nothing made
    ok(durable("session", "create", "s", "--tag", "a=1", "--tag", "b=2"))
    r = durable("session", "tag", "s", "c=3")
    assert r.status == 4 and "tags.max = 2" in r.err
    assert show(durable)["tags"] == {"a": "1", "b": "2"}
    ok(durable("session", "tag", "s", "c=3", "--untag", "a"))  # the count does not rise
    ok(durable("config", "set", "tags.max", "1"))
    ok(durable("session", "tag", "s", "b=22"))  # above a lowered tags.max: a change that does not raise the count
    assert durable("session", "tag", "s", "d=4", "--untag", "b", "e=5").status == 4
    assert show(durable)["tags"] == {"b": "22", "c": "3"}
    for bad in ("0", "33", "x"):
        assert durable("config", "set", "tags.max", bad).status == 2


def test_any_participant_any_status(durable):
    ok(durable("session", "create", "s"))
    ok(durable("session", "archive", "s"))
    ok(durable("session", "tag", "s", "old=yes"))
    assert show(durable)["status"] == "archived"
    ok(durable("session", "create", "c"))
    ok(durable("session", "cancel", "c"))
    ok(durable("session", "tag", "c", "why=dup"))
    assert durable("--as", "bob", "session", "tag", "s", "x=1").status == 3  # another user's session: not found
    assert ok(durable("--tenant", "acme", "session", "create", "t")).status == 0
    ok(durable("--tenant", "acme", "session", "invite", "t", "bob"))
    ok(durable("--tenant", "acme", "--as", "bob", "session", "tag", "t", "by=bob"))
    assert durable("--tenant", "acme", "--as", "carol", "session", "tag", "t", "by=carol").status == 3
    assert ok(durable("--tenant", "acme", "session", "tag", "t")).out == "by=bob\n"


@pytest.mark.cross_object
def test_ls_and_usage_filter_by_tags(durable):
    ok(durable("session", "create", "a", "--tag", "pr=42", "--tag", "team=auth"))
    ok(durable("session", "create", "b", "--tag", "pr=43", "--tag", "team=auth"))
    ok(durable("session", "create", "c"))
    ok(durable("transcript", "append", "a", "--role", "user", "hi", "--tokens", "7"))
    ok(durable("transcript", "append", "b", "--role", "user", "hello", "--tokens", "5"))

    def names(*args):
        return sorted(r["name"] for r in ok(durable("ls", *args, "--jsonl")).lines())

    assert names("--tag", "pr=42") == ["a"]
    assert names("--tag", "pr") == ["a", "b"]
    assert names("--tag", "team=auth", "--tag", "pr=43") == ["b"]
    assert names("--tag", "team=auth", "--tag", "pr=44") == []
    assert names("--tag", "nope") == []
    ok(durable("session", "archive", "b"))
    assert names("--tag", "pr") == ["a"]  # archived hidden, as without --tag
    assert names("--tag", "pr", "--all") == ["a", "b"]
    rows = {r["name"]: r for r in ok(durable("ls", "--json")).json()}
    assert rows["a"]["tags"] == {"pr": "42", "team": "auth"} and rows["c"]["tags"] == {}
    for bad in ("_x", "a=", "a= b", "é"):
        r = durable("ls", "--tag", bad)
        assert r.status == 2 and r.err.startswith("durable: error: "), bad
        assert durable("usage", "--tag", bad).status == 2
    doc = ok(durable("usage", "--tag", "pr=42", "--json")).json()
    assert [g["name"] for g in doc["groups"]] == ["a"] and doc["total"]["tokens"] == 7
    assert ok(durable("usage", "--tag", "team", "--json")).json()["total"]["tokens"] == 12
    ok(durable("session", "tag", "a", "--untag", "pr"))
    assert names("--tag", "pr", "--all") == ["b"]


@pytest.mark.cross_object
def test_export_import_restores_tags_fork_copies_none(durable, tmp_path):
    ok(durable("session", "create", "s", "--tag", "pr=42", "--tag", "x=y"))
    ok(durable("transcript", "append", "s", "--role", "user", "hi"))
    before = show(durable)
    out = ok(durable("export", "s")).out
    record = json.loads(out.splitlines()[0])
    assert record["version"] >= 7
    assert record["tags"] == [{"key": "pr", "value": "42"}, {"key": "x", "value": "y"}]
    ok(durable("delete", "s", "--yes"))
    path = tmp_path / "s.jsonl"
    path.write_text(out)
    ok(durable("import", str(path)))
    assert show(durable) == before
    assert [r["name"] for r in ok(durable("ls", "--tag", "pr=42", "--jsonl")).lines()] == ["s"]
    ok(durable("session", "fork", "s", "f"))
    assert show(durable, "f")["tags"] == {}
    assert [r["name"] for r in ok(durable("ls", "--tag", "x", "--jsonl")).lines()] == ["s"]
    # a bad tag in a record: exit 2 naming the record and field
    bad = dict(record, tags=[{"key": "-no", "value": "1"}])
    path.write_text(json.dumps(bad) + "\n")
    ok(durable("delete", "s", "--yes"))
    r = durable("import", str(path))
    assert r.status == 2 and "tags[0].key" in r.err
    path.write_text(json.dumps(dict(record, tags=[{"key": f"k{i:02}", "value": "v"} for i in range(33)])) + "\n")
    r = durable("import", str(path))
    assert r.status == 2 and "more than 32 tags" in r.err
    assert durable("session", "show", "s").status == 3


@pytest.mark.local_only("reads a version 6 export record made of this installation's own ids")
def test_version_6_record_imports_with_no_tags(durable, tmp_path):
    ok(durable("session", "create", "s", "--tag", "pr=42"))
    record = json.loads(ok(durable("export", "s")).out)
    del record["tags"]
    for later in ("steps", "schedules", "hooks"):  # versions 7 and 8's other fields: none of version 6
        record.pop(later, None)
    record["prompts"] = [{k: v for k, v in p.items() if k != "schedule_id"} for p in record["prompts"]]
    record["version"] = 6
    ok(durable("delete", "s", "--yes"))
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    ok(durable("import", str(tmp_path / "r.jsonl")))
    assert show(durable)["tags"] == {}


@pytest.mark.local_only("edits index.db and an object file directly")
def test_ls_reads_index_alone_and_doctor_repairs_index_tags(durable, home):
    ok(durable("session", "create", "s", "--tag", "pr=42"))
    ok(durable("session", "create", "t", "--tag", "pr=7"))
    object_id = show(durable)["id"]
    index = sqlite3.connect(home / "index.db")
    index.execute("UPDATE tags SET value = 'wrong' WHERE object_id = ?", (object_id,))
    index.commit()
    # ls answers from index.db alone: what it holds, even when it disagrees with the object
    assert [r["name"] for r in ok(durable("ls", "--tag", "pr=wrong", "--jsonl")).lines()] == ["s"]
    r = durable("doctor", "--json")
    assert r.status == 7
    assert "index disagrees on tags" in r.out
    assert durable("doctor", "--repair").status == 0
    assert durable("doctor").status == 0
    assert [r["name"] for r in ok(durable("ls", "--tag", "pr=42", "--jsonl")).lines()] == ["s"]
    # a corrupt object is listed by its tags like any other
    object_file = home / "objects" / object_id[:2] / f"{object_id}.sqlite3"
    with open(object_file, "r+b") as f:
        f.write(b"\0" * 4096)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(object_file) + suffix):
            os.unlink(str(object_file) + suffix)
    assert [r["name"] for r in ok(durable("ls", "--tag", "pr=42", "--jsonl")).lines()] == ["s"]
    index.close()


@pytest.mark.local_only("reads index.db")
def test_forget_and_delete_erase_index_tags(durable, home):
    ok(durable("--as", "bob", "session", "create", "b", "--tag", "secret=xyzzy"))
    ok(durable("session", "create", "s", "--tag", "pr=42"))
    ok(durable("delete", "s", "--yes"))
    ok(durable("forget", "bob", "--yes"))
    index = sqlite3.connect(home / "index.db")
    assert index.execute("SELECT count(*) FROM tags").fetchone()[0] == 0
    index.close()


@pytest.mark.local_only("the library's file backend (the remote one: tests/remote)")
def test_library_tag_and_tags():
    from durable_cli import Store
    from durable_cli.errors import DurableError

    store = Store()
    store.create_session("s", tags={"pr": "42"})
    with store.open("s") as s:
        doc = s.tag(set={"team": "auth"}, untag=["pr"])
        assert doc["tags"] == {"team": "auth"}
        assert s.tags() == {"team": "auth"}
        with pytest.raises(DurableError) as e:
            s.tag(set={"a": ""})
        assert e.value.exit_status == 2
    assert [r["name"] for r in store.ls(tags=[("team", "auth")])] == ["s"]


@pytest.mark.local_only("a terminal (script) running the CLI against files")
def test_the_session_card_shows_the_tags(durable):
    """`session show` on a terminal: the card has a tags line (KEY=VALUE, sorted), none when there are none."""
    import re
    import subprocess
    import sys

    ok(durable("session", "create", "card", "--tag", "team=auth", "--tag", "pr=42"))
    ok(durable("session", "create", "bare"))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS",)}
    env.update(PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"], TERM="xterm", NO_COLOR="1", COLUMNS="80")
    r = subprocess.run(["script", "-qec", "durable session show card; durable session show bare", "/dev/null"],
                       capture_output=True, text=True, env=env, timeout=60)
    screen = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", r.stdout).replace("\r", "")
    assert "tags          pr=42 team=auth" in screen, screen
    assert screen.count("tags ") == 1
