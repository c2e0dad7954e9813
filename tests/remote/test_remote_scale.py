"""Installation-wide commands at thousands of users (docs/reference/remote.md §13 "Cloudflare's limits hold on workerd too"):
one page of purge, sweep, forget, usage --all, ls/export --all costs a bounded number of subrequests
whatever the number of users and tenants. The dev Worker counts every subrequest of a request and fails
one past Cloudflare's limit (`durable remote dev`: 1,000, Workers Free's limit for calls to Cloudflare
services), so a command that fans out to every user's shard fails here as it would deployed.

3,000 users are made cheaply (the dev hook "seed": each user's shard name in its root shard and the
home row of their memory object, in 16 requests), beside a few real objects.
"""

import json
import time

import pytest

from durable_cli.remote.client import RemoteClient
from tests.conftest import run_inprocess
from tests.remote.conftest import start_dev

USERS = 3000
BOUND = 16 + 4 * 100  # the root shards, and a few subrequests for each of a page's 100 objects


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DURABLE_DEV_FAULTS", "1")
    mp.delenv("DURABLE_SUBREQUEST_LIMIT", raising=False)  # remote dev's own: 1,000 per request
    dev = start_dev(tmp_path_factory)
    mp.undo()
    client = RemoteClient(dev.url, dev.admin_token, 30)
    admin = lambda op, **args: client.call({"op": op, "args": args, "scope": "index", "actor": None}, write=False)
    assert admin("seed", users=USERS) == {"users": USERS}
    yield dev, admin
    client.close()
    dev.stop()


@pytest.fixture
def admin_env(seeded, monkeypatch):
    dev, admin = seeded
    monkeypatch.setenv("DURABLE_REMOTE", dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", "alice")
    return admin


def test_installation_wide_commands_cost_bounded_subrequests_at_thousands_of_users(admin_env):
    admin = admin_env
    for args in (["transcript", "append", "a1", "--role", "user", "hi", "--meta", '{"model": "m", "cost_usd": 0.5}'],
                 ["session", "create", "a2"],
                 ["--as", "bob", "transcript", "append", "b1", "--role", "user", "hey"],
                 ["--tenant", "acme", "session", "create", "team"],
                 ["--tenant", "acme", "session", "invite", "team", "bob"]):
        assert run_inprocess(*args).status == 0, args
    admin("subrequests")  # reset

    def costs(*args):
        r = run_inprocess(*args)
        most = admin("subrequests")
        assert r.status == 0, (args, r.err)
        assert most <= BOUND, (args, most)
        return json.loads(r.out) if "--json" in args else r.out

    listed = costs("ls", "--all", "--user", "alice", "--json")
    assert {r["name"] for r in listed} == {"a1", "a2", "team"}
    usage = costs("usage", "--all", "--json")
    assert usage["total"]["sessions"] == 2 and usage["total"]["cost_usd"] == 0.5
    costs("sweep", "--json")
    time.sleep(1.1)
    planned = costs("purge", "--older-than", "1s", "--dry-run", "--json")
    assert {e["name"] for e in planned["deleted"]} == {"a1", "a2", "b1", "team"}
    rows, before = [], None  # what export --all lists: every object's row, a page per request
    while True:
        page = admin("rows", all=True, reserved=True, before=before)
        assert admin("subrequests") <= 16 + 1  # the 16 root shards (and the revocation list, when not cached)
        rows += page["rows"]
        before = page["next"]
        if before is None:
            break
    assert len(rows) == USERS + 4 and len({r["id"] for r in rows}) == len(rows)
    done = costs("forget", "bob", "--yes", "--json")
    assert {e["name"] for e in done["deleted"]} == {"b1"} and {e["name"] for e in done["changed"]} == {"team"}
    done = costs("purge", "--older-than", "1s", "--yes", "--json")
    assert {e["name"] for e in done["deleted"]} == {"a1", "a2", "team"}
    assert costs("ls", "--all", "--json") == []
