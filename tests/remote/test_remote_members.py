"""A tenant object's member list is kept once (docs/reference/remote.md §13 "Participants and the index"): a commit to a
tenant object of many participants (40 here, 150 in the soak) writes a bounded number of index rows with a bounded number of
subrequests, like a commit to a private object; a participant's own shard holds only their membership,
written when it starts. `remote dev` counts the objects' own subrequests too, and an object takes at most
1,000 participants (docs/reference/sessions.md §5) on both backends.
"""

import json
import statistics
import time

import pytest

from durable_cli.remote.client import RemoteClient
from tests.conftest import run_inprocess
from tests.remote.conftest import start_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DURABLE_DEV_FAULTS", "1")
    mp.delenv("DURABLE_SUBREQUEST_LIMIT", raising=False)  # remote dev's own: 1,000 per request
    dev = start_dev(tmp_path_factory)
    mp.undo()
    client = RemoteClient(dev.url, dev.admin_token, 30)
    dev.admin = lambda op, **args: client.call({"op": op, "args": args, "scope": "index", "actor": None}, write=False)
    dev.object = lambda op, name, args, tenant="acme": client.call(
        {"op": op, "args": args, "scope": "tenant", "label": "tenant", "name": name, "tenant": tenant, "actor": "alice",
         "create": False, "config": {}}, write=True)
    yield dev
    client.close()
    dev.stop()


@pytest.fixture
def env(dev, monkeypatch):
    monkeypatch.setenv("DURABLE_REMOTE", dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", "alice")
    return dev


def _appends(*prefix, n=15):
    """The seconds each of N appends took."""
    times = []
    for i in range(n):
        t = time.perf_counter()
        r = run_inprocess(*prefix, "--role", "user", f"turn {i}")
        times.append(time.perf_counter() - t)
        assert r.status == 0, r.err
    return times


def test_a_commit_to_a_tenant_of_40_costs_what_a_private_one_does(env):
    """40 participants (~9 s): a commit that wrote or asked per participant would cost 40 times a private one's
    subrequests, and the census counts each row exactly; 150 is the soak below (~37 s: each invitee's index shard
    is a Durable Object made here)."""
    tenant_commit(env, 40, "acme", "u")


@pytest.mark.soak
def test_soak_a_commit_to_a_tenant_of_150_costs_what_a_private_one_does(env):
    tenant_commit(env, 150, "acme150", "w")


def tenant_commit(env, participants, tenant, prefix):
    admin = env.admin
    assert run_inprocess("--tenant", tenant, "session", "create", "big").status == 0
    users = [f"{prefix}{i:03d}" for i in range(participants - 1)]
    for u in users:
        env.object("invite", "big", {"user": u, "role": "member"}, tenant=tenant)
    assert run_inprocess("transcript", "append", "mine", "--role", "user", "first").status == 0
    admin("subrequests")  # reset

    private = _appends("transcript", "append", "mine")
    private_most = admin("subrequests")
    tenant_times = _appends("--tenant", tenant, "transcript", "append", "big")
    tenant_most = admin("subrequests")
    # the objects' own subrequests are counted (the Worker's one call to the object, then the object's
    # index update, to its home shard only: the root copy is the alarm's): a private append makes one a
    # request, a tenant append, whatever its participants, no more
    assert private_most >= 1, private_most
    assert tenant_most <= private_most + 1, (tenant_most, private_most)
    assert statistics.median(tenant_times) <= 5 * statistics.median(private), (statistics.median(tenant_times), statistics.median(private))

    # member rows O(participants): the list once in the tenant's shard (and its root shard's copy), and in
    # each participant's shard their own membership only
    shards = [f"tenant:{tenant}", *(f"root:{x}" for x in "0123456789abcdef"), "user:alice", *(f"user:{u}" for u in users)]
    census = admin("census", shards=shards)
    members = sum(c["members"] for c in census)
    joined = sum(c["joined"] for c in census)
    assert joined == participants, joined
    assert members <= 2 * participants + 2, members  # the home row's list and its root copy (+ alice's "mine")

    # and each participant still finds it: ls, usage and work --all read their tenants' shards
    listed = json.loads(run_inprocess("--as", users[-1], "ls", "--json").out)
    assert [r["name"] for r in listed] == ["big"]
    usage = json.loads(run_inprocess("--as", users[0], "usage", "--json").out)
    assert usage["total"]["sessions"] == 1


@pytest.mark.soak  # ~5 min: each of 999 invitees' index shards is a Durable Object of its own, made here
def test_an_object_takes_at_most_1000_participants(env):
    assert run_inprocess("--tenant", "full", "session", "create", "crowd").status == 0
    for i in range(999):
        env.object("invite", "crowd", {"user": f"p{i:04d}", "role": "member"}, tenant="full")
    r = run_inprocess("--tenant", "full", "session", "invite", "crowd", "one-more")
    assert r.status == 4, r.err
    assert "too many participants" in r.err
    # a participant's role still changes at the cap, and nothing was added
    assert run_inprocess("--tenant", "full", "session", "invite", "crowd", "p0000", "--role", "owner").status == 0
    people = json.loads(run_inprocess("--tenant", "full", "session", "participants", "crowd", "--json").out)
    assert len(people) == 1000


def test_remote_dev_holds_a_request_to_the_subrequest_limit(tmp_path_factory, monkeypatch):
    """`remote dev` counts subrequests as Cloudflare does, each request and each alarm of a Durable Object
    against a limit of its own (the Worker's request, the object's index update, the alarm's root copy):
    with a limit of 2, a tenant session is made and two people invited (the object's update makes 2 of its
    own: its home shard and the new member's shard) and each shard holds what it should; with a limit of 1
    the Worker's own request needs 2 and fails as it would on Cloudflare (exit 6, its message naming the
    limit), and nothing is made. (An object's update over its own limit stays dirty and is retried by its
    alarm: tests/remote/test_remote_leaks.py backs that off.)"""
    monkeypatch.setenv("DURABLE_DEV_FAULTS", "1")
    for limit in ("2", "1"):
        monkeypatch.setenv("DURABLE_SUBREQUEST_LIMIT", limit)
        dev = start_dev(tmp_path_factory)
        client = RemoteClient(dev.url, dev.admin_token, 30)
        try:
            monkeypatch.setenv("DURABLE_REMOTE", dev.url)
            monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
            monkeypatch.setenv("DURABLE_USER", "alice")
            census = lambda shard: client.call(  # (one subrequest a call: within the limit)
                {"op": "census", "args": {"shards": [shard]}, "scope": "index", "actor": None}, write=False)[0]
            made = run_inprocess("--tenant", "acme", "session", "create", "team")
            if limit == "1":
                assert made.status == 6 and "too many subrequests" in made.err and "more than 1" in made.err, made.err
                assert census("tenant:acme")["objects"] == 0
                continue
            assert made.status == 0, made.err
            for user in ("bob", "carol"):
                assert run_inprocess("--tenant", "acme", "session", "invite", "team", user).status == 0
            assert census("tenant:acme") == {"objects": 1, "members": 3, "joined": 0, "usage": 0}
            assert [census(f"user:{u}")["joined"] for u in ("alice", "bob", "carol")] == [1, 1, 1]
        finally:
            client.close()
            dev.stop()
