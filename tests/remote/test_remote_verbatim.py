"""A row's `data`, `meta` and `tool_calls` come back verbatim in remote mode too (docs/reference/transcript.md §6, §13): numbers a
JavaScript double cannot hold (integers beyond 2**53, 1.0, -0.0, 1e-7), the order of keys (integer-like
keys after others), non-ASCII text and nested arrays are what the file backend prints, byte for byte."""

import json

from tests.conftest import run_inprocess
from tests.remote.conftest import unique
from tests.remote.test_remote_rights import normalize

DATA = ('{"n": 12345678901234567890, "neg": -98765432109876543210, "safe": 9007199254740993, "f": 1.0, "z": -0.0,'
        ' "e": 1e-7, "big": 1.5e300, "k": {"b": 1, "1": 2, "0": [3]}, "u": "\u00e9\u6f22 \U0001F600 \\ud83d\\ude00",'
        ' "a": [[1, [2.50, []]], {}, [null, true, false]]}')
META = ('{"model": "m\u00e9", "usage": {"input_tokens": 1, "output_tokens": 2}, "cost_usd": 1.0, "z": 0.1,'
        ' "x": 9007199254740993, "k": {"b": 1, "2": -0.0}}')
CALLS = ('[{"id": "c\U0001F600", "name": "f", "arguments": "{\\"n\\": 12345678901234567890}"},'
         ' {"id": "c2", "name": "g\u00e9"}]')

SCENARIO = [
    ["transcript", "append", "v", "--role", "user", "x\U0001F600", "--data", DATA, "--meta", META, "--json"],
    ["transcript", "append", "v", "--role", "assistant", "--tool-calls", CALLS, "--meta", META, "--json"],
    ["transcript", "append", "v", "--role", "tool", "--call-id", "c\U0001F600", "r", "--data", "[12345678901234567890, 1.0]"],
    ["transcript", "append", "v", "--role", "tool", "--call-id", "c2", "r2", "--data", "-0.0"],
    ["transcript", "append", "v", "--role", "user", "", "--data", '"just text \U0001F600"', "--request-id", "q1", "--json"],
    ["transcript", "append", "v", "--role", "user", "", "--data", '"just text \U0001F600"', "--request-id", "q1", "--json"],
    ["transcript", "append", "v", "--role", "assistant", "last", "--data", "1e-7", "--meta", '{"cost_usd": 1.0, "9": 1e-7}'],
    ["transcript", "show", "v", "--json"],
    ["transcript", "show", "v", "--jsonl"],
    ["transcript", "show", "v", "--last", "2", "--json"],
    ["transcript", "recent", "v", "--json"],
    ["session", "prompt", "v", "q"],
    ["session", "next", "v", "--context", "1000", "--format", "json", "--json"],
    ["session", "fork", "v", "w", "--json"],
    ["transcript", "show", "w", "--all", "--json"],
    ["export", "v"],
    ["transcript", "pop", "v", "--json"],
    ["transcript", "pop", "v", "--count", "2", "--json"],
    ["transcript", "show", "w", "--jsonl"],
]


def run(monkeypatch, env):
    for key in ("DURABLE_REMOTE", "DURABLE_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = []
    for args in SCENARIO:
        r = run_inprocess(*args)
        out.append((args, r.status, normalize(r.out), normalize(r.err)))
    return out


def test_data_meta_and_tool_calls_come_back_verbatim_on_both_backends(remote_dev, monkeypatch):
    user = unique("alice")
    local = run(monkeypatch, {"DURABLE_USER": user})
    remote = run(monkeypatch, {"DURABLE_USER": user, "DURABLE_REMOTE": remote_dev.url, "DURABLE_TOKEN": remote_dev.admin_token})
    assert all(status == 0 for _, status, _, _ in local), local
    for (args, *want), (_, *got) in zip(local, remote):
        assert got == want, f"durable {' '.join(args)}"
    # what the file backend prints is the text given, not a double's rounding of it
    shown = local[SCENARIO.index(["transcript", "show", "v", "--jsonl"])][2]
    for text in ('"n":12345678901234567890', '"neg":-98765432109876543210', '"safe":9007199254740993', '"f":1.0', '"z":-0.0',
                 '"e":1e-07', '"k":{"b":1,"1":2,"0":[3]}', '"cost_usd":1.0', '"k":{"b":1,"2":-0.0}', '"data":-0.0',
                 '"data":[12345678901234567890,1.0]', "\\\"n\\\": 12345678901234567890"):
        assert text in shown, text


def test_get_items_keeps_an_item_verbatim_remotely(remote_dev, monkeypatch):
    from durable_cli.integrations.openai_agents import DurableSession

    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", remote_dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", unique("alice"))
    item = json.loads('{"role": "user", "content": "hi \U0001F600", "extra": {"n": 12345678901234567890, "f": 1.0,'
                      ' "z": -0.0, "e": 1e-7, "k": {"b": 1, "1": 2}, "a": [[1, [2.5]]]}}')
    session = DurableSession(unique("agents"))
    try:
        session.add_items_sync([item, {"role": "assistant", "content": "ok"}])
        got = session.get_items_sync()
        again = DurableSession(session.session_id).get_items_sync(limit=2)
    finally:
        session.close()
    want = json.dumps([item, {"role": "assistant", "content": "ok"}], ensure_ascii=False)
    assert json.dumps(got, ensure_ascii=False) == want
    assert json.dumps(again, ensure_ascii=False) == want
    assert '"k": {"b": 1, "1": 2}' in want and '"f": 1.0' in want and '"z": -0.0' in want


def test_a_lone_surrogate_in_a_json_field_is_exit_2_on_both_backends(remote_dev, monkeypatch):
    """JSON text may escape a lone surrogate ("\\ud83d"), which has no UTF-8 form: exit 2 and nothing stored, not
    an internal error (files) or three U+FFFD stored (Worker)."""
    lines = [["transcript", "append", "s", "--role", "user", "", "--data", '"\\ud83d"'],
             ["transcript", "append", "s", "--role", "user", "x", "--meta", '{"k": "a\\udc00"}'],
             ["transcript", "append", "s", "--role", "assistant", "--tool-calls", '[{"id": "c", "name": "f", "arguments": "\\ud800"}]'],
             ["transcript", "show", "s"]]
    user = unique("alice")
    results = {}
    for mode, env in (("local", {}), ("remote", {"DURABLE_REMOTE": remote_dev.url, "DURABLE_TOKEN": remote_dev.admin_token})):
        for key in ("DURABLE_REMOTE", "DURABLE_TOKEN"):
            monkeypatch.delenv(key, raising=False)
        for key, value in {"DURABLE_USER": user, **env}.items():
            monkeypatch.setenv(key, value)
        results[mode] = [(r.status, r.out, r.err) for r in (run_inprocess(*args) for args in lines)]
    assert results["remote"] == results["local"]
    assert [status for status, _, _ in results["local"]] == [2, 2, 2, 3]
    assert "data is not valid UTF-8 (a lone surrogate); nothing was stored" in results["local"][0][2]
    assert "meta is not valid UTF-8" in results["local"][1][2] and "tool calls is not valid UTF-8" in results["local"][2][2]
