"""What a token may learn and hold on real workerd (SPEC §13): a LangGraph thread's tombstone answers only
who may see the thread; a live follower is closed at the first push after its token was revoked or expired
(4001, exit 5) or once it is too far behind (4003, reconnect); requests are served from the last good
revocation list while it cannot be read, then 503 `retryable`; a token over its rate is 429 (exit 8); an
internal error answers only an id."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import post_call, start_dev, token, unique


def _put_thread(store, name, tenant=None, invite=()):
    with store.open(name, create=True, tenant=tenant) as s:
        s.put_checkpoint(external_id=name, ns="", checkpoint_id="0001", parent_id=None, type_="bytes", blob=b"x", metadata="{}")
        for user in invite:
            s.invite(user)


def test_a_tombstone_answers_only_who_may_see_the_thread(remote_dev):
    """A tenant thread deleted: its participants then read the tombstone; any other token gets exactly what a
    name never made gets (the object id, last checkpoint and time of deletion used to reach anyone naming it)."""
    from durable_cli import Store

    alice = Store(remote=remote_dev.url, token=token("alice"), user="alice")
    name = unique("thread")
    _put_thread(alice, name, tenant="acme", invite=["carol"])
    with alice.open(name, tenant="acme") as s:
        s.delete_thread()
    mine = unique("own")
    _put_thread(alice, mine)
    with alice.open(mine) as s:
        s.delete_thread()
    for user in ("alice", "carol"):  # the participants the thread had
        grave = Store(remote=remote_dev.url, token=token(user), user=user).tombstone(name, tenant="acme")
        assert grave is not None and grave["last_checkpoint"] == "0001", user
    assert alice.tombstone(mine)["last_checkpoint"] == "0001"
    bob = token("bob")
    assert Store(remote=remote_dev.url, token=bob, user="bob").tombstone(name, tenant="acme") is None
    never = unique("never")
    for tenant_name in (name, never):  # on the wire too: the same answer as for a name never made
        status, doc = post_call(remote_dev.url, bob, {"op": "tombstone", "scope": "tenant", "tenant": "acme", "name": tenant_name})
        assert (status, doc) == (200, {"result": None}), tenant_name
