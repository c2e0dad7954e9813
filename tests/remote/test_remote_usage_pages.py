"""`usage` answers one page of groups a request (docs/reference/remote.md §13), `--all` and every `--by` alike, paged as
`export --all` pages rows: the Worker answers the groups of at most 500 objects and a cursor, and the
client merges the pages (a session's group once; day and model groups summed), so an installation of
200,000 sessions no longer answers ~42 MB in one response.

1,200 sessions with usage are seeded into the root shards' copies (the dev hook "seed" with usage: index
rows without objects, in 16 requests), beside one real session.
"""

import json

import pytest

from durable_cli.remote.client import RemoteClient
from tests.conftest import run_inprocess
from tests.remote.conftest import start_dev
from tests.waiting import wait_until

SEEDED = 1200  # more than two pages of 500 objects
META = '{"model": "m", "usage": {"input_tokens": 2, "output_tokens": 3}, "cost_usd": 0.001}'


@pytest.fixture
def dev(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DURABLE_DEV_FAULTS", "1")
    dev = start_dev(tmp_path_factory)
    monkeypatch.delenv("DURABLE_DEV_FAULTS")
    yield dev
    dev.stop()


def test_usage_all_comes_in_pages_and_adds_up(dev, monkeypatch):
    client = RemoteClient(dev.url, dev.admin_token, 30)
    index = lambda op, **args: client.call({"op": op, "args": args, "scope": "index", "actor": None}, write=False)
    try:
        assert index("seed", users=SEEDED, usage=True) == {"users": SEEDED}
        monkeypatch.setenv("DURABLE_REMOTE", dev.url)
        monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
        monkeypatch.setenv("DURABLE_USER", "alice")
        assert run_inprocess("transcript", "append", "real", "--role", "user", "hi", "--meta", META).status == 0
        sessions = SEEDED + 1
        # the root shards (what --all pages over) get the new object's copy from its alarm, just after the answer
        census = lambda: sum(c["objects"] for c in index("census", shards=[f"root:{x}" for x in "0123456789abcdef"]))
        wait_until(lambda: census() == sessions, "the new session's root copy, by its alarm")

        keys, cursor, pages = set(), None, 0
        while True:  # what the client does: one page of at most 500 objects' groups a request
            page = index("usage", everyone=True, by="session", cursor=cursor)
            assert len(page["groups"]) <= 500
            keys |= {g["key"] for g in page["groups"]}
            pages += 1
            cursor = page["next"]
            if cursor is None:
                break
        assert pages == 3 and len(keys) == sessions
    finally:
        client.close()

    by_session = json.loads(run_inprocess("usage", "--all", "--json").out)
    assert len(by_session["groups"]) == sessions and by_session["groups"][0]["key"] is not None
    assert by_session["total"]["sessions"] == sessions and by_session["total"]["input_tokens"] == 2 * sessions
    assert by_session["total"]["cost_usd"] == pytest.approx(0.001 * sessions)
    for by in ("day", "model"):
        doc = json.loads(run_inprocess("usage", "--all", "--by", by, "--json").out)
        assert len(doc["groups"]) == 1 and doc["groups"][0]["sessions"] == sessions, doc  # summed over the pages
        assert doc["groups"][0]["output_tokens"] == 3 * sessions
    mine = json.loads(run_inprocess("usage", "--json").out)  # a user's own: their shards' pages
    assert mine["total"]["sessions"] == 1 and mine["total"]["output_tokens"] == 3
