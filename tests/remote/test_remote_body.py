"""Abuse and overload on real workerd (SPEC §13): a body over DURABLE_MAX_BODY_BYTES is HTTP 413 before it
is parsed; the client sends a larger batch in parts under one request id, staged by the object and
committed by the last part in one transaction (a batch that works locally works remotely, all or nothing);
an error marked `overloaded` is exit 6 with no retry, and only one marked `retryable` is retried.
"""

import json
import urllib.error
import urllib.request

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import Fleet, require_workerd, token, unique
from tests.remote.proxy import Proxy

LIMIT = 1024 * 1024  # this Worker's DURABLE_MAX_BODY_BYTES (the default is 16 MiB)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    require_workerd()
    fleet = Fleet(tmp_path_factory.mktemp("body"), 1, variables={"DURABLE_MAX_BODY_BYTES": str(LIMIT), "DURABLE_DEV_FAULTS": "1"})
    fleet.wait_ready()
    yield fleet.free[0]
    fleet.stop()


@pytest.fixture
def env(worker, monkeypatch):
    for key in ("DURABLE_USER", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", worker.url)
    monkeypatch.setenv("DURABLE_TOKEN", token("alice"))
    return worker


def post(url, data: bytes):
    req = urllib.request.Request(url + "/v1/call", data=data, method="POST",
                                 headers={"authorization": f"Bearer {token('alice')}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_body_over_the_limit_is_413_before_it_is_parsed(env):
    status, doc = post(env.url, b"{" + b"x" * LIMIT)  # not even JSON: refused by its size, not its syntax
    assert status == 413 and doc["error"]["document"] == {"max_body_bytes": LIMIT}, doc
    status, doc = post(env.url, b"{not json}")
    assert status == 400


def test_a_batch_over_the_limit_goes_in_parts_all_or_nothing(env, tmp_path):
    from durable_cli import Store

    name = unique("batch")
    rows = [{"role": "user" if i % 2 else "assistant", "content": f"row {i} " + "é" * 60_000} for i in range(40)]  # ~4.8 MB
    batch = tmp_path / "rows.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = run_inprocess("transcript", "append", name, "--batch", str(batch), "--json")
    assert out.status == 0, out.err
    shown = run_inprocess("transcript", "show", name, "--json").json()
    assert [r["content"] for r in shown] == [r["content"] for r in rows]
    assert [r["seq"] for r in shown] == list(range(1, 41))
    # a batch whose last part never came: nothing of it is visible
    store = Store(remote=env.url, token=token("alice"))
    other = unique("half")
    fields = [{"role": "user", "content": "x" * 600_000, "tool_calls_json": None, "call_id": None, "name": None,
               "meta_json": None, "data_json": None, "tokens": None}]
    body = {"op": "append_many", "scope": "user", "label": "session", "name": other, "create": True, "request_id": "ab" * 8 + "00000000",
            "args": {"rows": fields, "part": {"batch": "ab" * 8, "index": 0, "count": 2, "first": 0}}}
    assert store.client.call(body, write=True) == {"staged": 1}
    assert run_inprocess("transcript", "show", other).status == 3
    # its last part alone cannot commit a batch it lacks a part of
    body = dict(body, request_id="cd" * 8, args={"rows": fields, "part": {"batch": "cd" * 8, "index": 1, "count": 2, "first": 1}})
    with pytest.raises(Exception) as e:
        store.client.call(body, write=True)
    assert getattr(e.value, "exit_status", None) == 4
    store.close()


@pytest.mark.parametrize("fault, status, requests", [("overloaded", 6, 1), ("retryable", 0, 2)])
def test_only_retryable_errors_are_retried(env, fault, status, requests):
    from durable_cli import Store
    from durable_cli.errors import DurableError

    proxy = Proxy(env.url, "pass")
    try:
        store = Store(remote=proxy.url, token=token("alice"))
        body = {"op": "append_many", "scope": "user", "label": "session", "name": unique("o"), "create": True,
                "dev_fault": fault, "args": {"rows": [{"role": "user", "content": "hi", "tool_calls_json": None, "call_id": None,
                                                        "name": None, "meta_json": None, "data_json": None, "tokens": None}]}}
        try:
            store.client.call(body, write=True)
            got = 0
        except DurableError as e:
            got = e.exit_status
        store.close()
        assert (got, proxy.requests) == (status, requests)
    finally:
        proxy.close()
