"""docs/reference/integrations.md §12: any framework id maps to one NAME; as-is names and digests never meet."""

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from durable_cli.config import valid_name
from durable_cli.integrations import object_name


def test_valid_names_not_starting_with_tilde_are_used_as_is():
    for session_id in ("chat-42", "a", "x" * 200, "user 7 / thread", "é中"):
        assert object_name(session_id) == session_id


def test_other_ids_map_to_tilde_and_the_documented_digest():
    for session_id in ("", " padded ", "tab\there", "x" * 201, "~chat", "~", "\x00", "line\n"):
        expected = "~" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
        assert object_name(session_id) == expected
        assert valid_name(object_name(session_id))


def test_a_tilde_id_never_meets_the_digest_it_looks_like():
    digest_name = object_name("")  # "~" + 32 hex
    assert object_name(digest_name) != digest_name  # used as an id, it is itself digested


@given(st.text(max_size=210), st.text(max_size=210))
def test_two_ids_never_meet(a, b):
    if a != b:
        assert object_name(a) != object_name(b)
    assert valid_name(object_name(a))
