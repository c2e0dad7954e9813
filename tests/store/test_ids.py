import hmac
import os

from hypothesis import given
from hypothesis import strategies as st

from durable_cli.store import ids

fields = st.text(min_size=0, max_size=30)


@given(st.binary(min_size=0, max_size=100), st.binary(max_size=300))
def test_hmac_matches_stdlib(key, message):
    assert ids.hmac_sha256(key, message) == hmac.new(key, message, "sha256").hexdigest()


@given(fields, fields, fields, fields, fields, fields)
def test_encoding_is_injective(a, b, c, x, y, z):
    if (a, b, c) != (x, y, z):
        assert ids.encode_fields(a, b, c) != ids.encode_fields(x, y, z)


def test_ids_differ_per_scope_owner_name_and_secret():
    secret = os.urandom(32)
    base = ids.object_id(secret, "user", "alice", "chat")
    assert base == ids.object_id(secret, "user", "alice", "chat")
    assert len(base) == 64 and base == base.lower()
    others = {
        ids.object_id(secret, "tenant", "alice", "chat"),
        ids.object_id(secret, "user", "bob", "chat"),
        ids.object_id(secret, "user", "alice", "chat2"),
        ids.object_id(secret, "user", "alicechat", ""),
        ids.object_id(os.urandom(32), "user", "alice", "chat"),
    }
    assert base not in others and len(others) == 5


def test_ids_stable_across_processes(durable, durable_proc):
    durable("session", "create", "x")
    first = durable("session", "show", "x", "--json").json()["id"]
    assert durable_proc("session", "show", "x", "--json").json()["id"] == first
