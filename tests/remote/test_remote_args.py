"""docs/reference/remote.md §13: every argument of every operation is checked by the Worker for type and range (the op table
of durable_cli/contract/contract.json): a crafted body is HTTP 400 -> exit 2, never 500, and changes nothing."""

import json

import pytest

from durable_cli.errors import DurableError
from durable_cli.remote.client import RemoteClient
from tests.conftest import run_inprocess
from tests.remote.conftest import post_call

USER = {"scope": "user", "name": "crafted", "actor": "alice"}
CRAFTED = [
    dict(USER, op="next_prompt", args={"lease_seconds": "forever"}),
    dict(USER, op="next_prompt", args={"lease_seconds": -5}),
    dict(USER, op="context_window", args={"budget": "lots"}),
    dict(USER, op="show_transcript", args={"last": 1.5}),
    dict(USER, op="renew", args={"prompt_id": "1", "lease_seconds": 60}),
    dict(USER, op="finish", args={"prompt_id": 1, "failed": "yes"}),
    dict(USER, op="prompt", args={"content": ["not", "text"]}),
    dict(USER, op="prompt", args={}),
    dict(USER, op="invite", args={"user": "bob", "role": "king"}),
    dict(USER, op="ask", args={"prompt": "q", "choices": "yes"}),
    dict(USER, op="append_many", args={"rows": [1, 2]}),
    dict(USER, op="queue", args=[True]),
    dict(USER, op="no_such_op", args={}),
    # a LangGraph saver's values (each was an internal error: atob's refusal, a NOT NULL column, a missing row)
    dict(USER, op="put_checkpoint", args={"external_id": "t", "ns": "", "checkpoint_id": "1", "metadata": "{}", "blob": "@@@"}),
    dict(USER, op="put_checkpoint", args={"external_id": "t", "ns": "", "checkpoint_id": "1"}),
    dict(USER, op="put_checkpoint", args={"external_id": "t", "ns": "", "checkpoint_id": "1", "metadata": "{}", "mirror": [["m1"]]}),
    dict(USER, op="put_checkpoint_writes", args={"external_id": "t", "ns": "", "checkpoint_id": "1", "writes": [["t", "", 0, "c", "t", "@@@"]]}),
    dict(USER, op="put_checkpoint_writes", args={"external_id": "t", "ns": "", "checkpoint_id": "1", "writes": [["t"]]}),
    # the step journal (docs/reference/sessions.md §5.2): KEY, token, exit status and stdout checked before any state
    dict(USER, op="step_begin", args={"key": "-k", "token": "t"}),
    dict(USER, op="step_begin", args={"key": "k", "token": "t", "call_id": "c"}),
    dict(USER, op="step_commit", args={"prompt_id": 1, "key": "k", "token": "t", "start": 1, "exit_status": 256, "stdout_bytes": 0}),
    dict(USER, op="step_commit", args={"prompt_id": 1, "key": "k", "token": "t", "start": 1, "exit_status": 0, "stdout_bytes": 3, "stdout": "@@@@"}),
    dict(USER, op="step_commit", args={"prompt_id": 1, "key": "k", "token": "t", "start": 1, "exit_status": 0, "stdout_bytes": 9, "stdout": "eA=="}),
    # tags (docs/reference/remote.md §13): KEY, VALUE and the count checked with the client's rules
    dict(USER, op="tag", args={"set": {"_bad": "v"}}),
    dict(USER, op="tag", args={"set": {"k": " v"}, "untag": ["x"]}),
    dict(USER, op="tag", args={"set": {"k": "v"}, "untag": ["k"]}),
    dict(USER, name="crafted-tags", op="create", create=True, args={"tags": {f"k{i}": "v" for i in range(33)}}, config={"tags_max": 1000}),
    {"op": "ls", "scope": "index", "actor": "alice", "args": {"tags": [["k", ""]]}},
    {"op": "usage", "scope": "index", "actor": "alice", "args": {"tags": [["-k", None]]}},
    {"op": "ls", "scope": "index", "actor": "alice", "args": {"statuses": ["active"] * 101}},
    {"op": "ls", "scope": "index", "actor": "alice", "args": {"limit": "abc"}},
    {"op": "ls", "scope": "index", "actor": "alice", "args": {"statuses": ["done"]}},
    {"op": "purge", "scope": "index", "actor": "alice", "args": {"older_than": "old", "user": "alice"}},
    {"op": "search", "scope": "objects", "actor": "alice", "args": {"query": "x", "limit": "abc"}},
]


def _post(dev, body):
    return post_call(dev.url, dev.admin_token, body)


@pytest.mark.parametrize("body", CRAFTED, ids=lambda b: f"{b['op']}-{json.dumps(b['args'])[:40]}")
def test_a_crafted_body_is_400_never_500(remote_dev, body, monkeypatch):
    monkeypatch.setenv("DURABLE_TOKEN", remote_dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", "alice")
    assert run_inprocess("--remote", remote_dev.url, "session", "create", "crafted").status in (0, 4)
    status, doc = _post(remote_dev, body)
    assert status == 400 and doc["error"]["code"] == "invalid_input", (status, doc)
    # through the client: exit 2 (invalid_input), as the file backend answers a bad argument
    with pytest.raises(DurableError) as e:
        RemoteClient(remote_dev.url, remote_dev.admin_token, 10).call(body, write=False)
    assert e.value.exit_status == 2


def test_the_message_names_the_argument(remote_dev):
    status, doc = _post(remote_dev, dict(USER, op="next_prompt", args={"lease_seconds": "forever"}))
    assert doc["error"]["message"] == "invalid argument lease_seconds of next_prompt: 'forever' is not an integer from 1 to 3153600000"
    status, doc = _post(remote_dev, {"op": "ls", "scope": "index", "actor": "alice", "args": {"statuses": ["active"] * 101}})
    assert doc["error"]["message"] == "invalid argument statuses of ls: has 101 items, more than 6"


def test_a_lone_surrogate_or_invalid_utf8_in_a_body_is_400_and_stores_nothing(remote_dev):
    """docs/reference/transcript.md §6: a lone surrogate is exit 2 wherever JSON comes in, remote requests included; the Worker stored
    one as U+FFFD (raw bytes) or kept it as an escape in a JSON column (meta, data, choices)."""
    append = b'{"op":"append_many","scope":"user","name":"lone","actor":"alice","create":true,"args":{"rows":[%s]}}'
    remember = b'{"op":"set_fact","scope":"reserved","actor":"alice","args":{"key":"k","value":"%s"}}'
    for body in [append % b'{"role":"user","content":"a\\ud800"}',
                 append % b'{"role":"user","content":"x","meta":{"model":"\\udc00"}}',
                 append % b'{"role":"user","content":"x","data":{"\\ud83d":1}}',
                 append % b'{"role":"user","content":"\xed\xa0\x80"}',  # a surrogate's bytes: not UTF-8
                 remember % b'v\\ud800', remember % b'v\xed\xa0\x80', remember % b'\xff']:
        status, doc = _post(remote_dev, body)
        assert status == 400 and doc["error"]["code"] == "invalid_input", (body, status, doc)
    assert _post(remote_dev, dict(USER, op="show", name="lone"))[0] == 404
    assert _post(remote_dev, {"op": "facts", "scope": "reserved", "actor": "alice", "args": {"all_facts": True}}) == (200, {"result": []})
    # a pair written as escapes is one character, and an escaped backslash before "u" is no escape at all
    status, doc = _post(remote_dev, append % b'{"role":"user","content":"\\ud83d\\ude00 \\\\ud800"}')
    assert status == 200 and doc["result"][0]["content"] == "\U0001f600 \\ud800", doc


def test_keep_checkpoints_of_sys_maxsize_keeps_them_all(remote_dev):
    """DurableSaver(keep_checkpoints=sys.maxsize): 2^63 - 1 reads as 2^63 in the Worker, which SQLite bound as a
    REAL that OFFSET refused (an internal error); the file store keeps every checkpoint, and so does the Worker."""
    import sys

    from durable_cli import Store

    store = Store(remote=remote_dev.url, token=remote_dev.admin_token, user="alice")
    with store.open("kept", create=True) as s:
        for i in range(2):
            s.put_checkpoint(external_id="kept", ns="", checkpoint_id=f"{i}", parent_id=None, type_="bytes", blob=b"x",
                             metadata="{}", keep=sys.maxsize)
        assert [r[1] for r in s.checkpoint_rows(ns="")] == ["1", "0"]
    store.close()
