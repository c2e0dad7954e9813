"""durable path [NAME]: where the data lives, so sqlite3 or Datasette can open an object read-only."""

import os
import sqlite3


def test_path_prints_the_data_directory_and_an_object_file(durable, home):
    assert durable("path").out.strip() == str(home)
    assert durable("path", "--json").json() == {"path": str(home)}
    durable("transcript", "append", "chat", "--role", "user", "hello there")
    found = durable("path", "chat").out.strip()
    assert found.startswith(str(home / "objects")) and found.endswith(".sqlite3")
    assert "chat" not in os.path.basename(found)  # paths carry ids, never NAMEs
    db = sqlite3.connect(f"file:{found}?mode=ro", uri=True)
    assert db.execute("SELECT content FROM turns").fetchall() == [("hello there",)]
    db.close()


def test_missing_or_invisible_name_is_exit_3_and_creates_nothing(durable, home):
    assert durable("path", "nope").status == 3
    assert not (home / "objects").exists()
    durable("--tenant", "acme", "session", "create", "shared")
    assert durable("--tenant", "acme", "path", "shared").status == 0
    mallory = durable("--as", "mallory", "--tenant", "acme", "path", "shared")
    never = durable("--as", "mallory", "--tenant", "acme", "path", "never-made")
    assert mallory.status == never.status == 3
    assert mallory.err.replace("shared", "NAME") == never.err.replace("never-made", "NAME")
    assert durable("path", "bad\nname").status == 2
