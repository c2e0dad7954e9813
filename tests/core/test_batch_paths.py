"""The batch path's shortcuts (issue 14, speed) change nothing a user sees: plain rows taken by the
fast path are the rows the general path makes, every bad line gets the general path's error, a mixed
batch is stored as if row by row, and what `append_many` returns is what a reader gets back."""

import json

import pytest

from durable_cli import Store
from durable_cli.config import Config
from durable_cli.core import transcript as rules
from durable_cli.core.transcript import row as row_rules
from durable_cli.errors import DurableError, invalid

pytestmark = pytest.mark.both_backends

FIELDS = ("role", "content", "tokens", "tool_calls", "call_id", "name", "meta", "data", "given_tokens")


def general(config, line: str, number=1):
    """What the general path makes of LINE (the reference the fast path must match)."""
    where = f"line {number}: "
    fields = rules.parse_json(line, f"line {number}")
    if not isinstance(fields, dict):
        raise invalid(f"{where}expected a JSON object with role and content")
    unknown = set(fields) - set(rules.INPUT_KEYS) - set(rules.OUTPUT_KEYS)
    if unknown:
        raise invalid(f"{where}unknown keys {sorted(unknown)}: use {', '.join(rules.INPUT_KEYS)}")
    return rules.prepare(config, fields, where=where)


def outcome(fn):
    try:
        row = fn()
    except DurableError as e:
        return ("error", e.message, e.code)
    return tuple(getattr(row, f) for f in FIELDS)


GOOD = [
    '{"role": "user", "content": "hello there"}',
    '  \t{"role": "assistant", "content": "with JSON white space around"}  \r',
    '{"role": "system", "content": "caf\\u00e9 \\u2028 na\\u00efve \\ud83d\\ude00"}',
    '{"role": "developer", "content": "given", "tokens": 0}',
    '{"role": "user", "content": "given", "tokens": 1000000000}',
    '{"role": "user", "content": "nulls", "tool_calls": null, "call_id": null, "name": null, "meta": null, "data": null, "tokens": null}',
    '{"seq": 4, "role": "user", "content": "show output", "author": "a", "created_at": "x", "kind": "turn", '
    '"superseded_by": null, "covers": null, "forked_from": null, "tokens": 5}',
    '{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "n"}]}',
    '{"role": "assistant", "content": "x", "tool_calls": []}',
    '{"role": "tool", "content": "r", "call_id": "c"}',
    '{"role": "user", "content": "m", "meta": {"model": "x"}, "data": [1]}',
]

BAD = [
    '{"role": "user", "content": "x", "colour": 1}',
    '{"role": "users", "content": "x"}',
    '{"role": ["user"], "content": "x"}',
    '{"role": "user", "content": 3}',
    '{"role": "user", "content": ""}',
    '{"role": "user"}',
    '{"role": "user", "content": "x", "tokens": true}',
    '{"role": "user", "content": "x", "tokens": -1}',
    '{"role": "user", "content": "x", "tokens": 1.0}',
    '{"role": "user", "content": "x", "tokens": 1000000001}',
    '{"role": "user", "content": "x", "tokens": 9223372036854775808}',
    '{"role": "user", "content": "lone \\ud800 surrogate"}',
    '{"role": "user", "content": "x"} trailing',
    '{"role": "user", "content": "x"} {"role": "user", "content": "y"}',
    '{"role": "user", "content": NaN}',
    '["role", "user"]',
    '"just a string"',
    'not json',
    '\u00a0{"role": "user", "content": "not JSON white space"}',
    '{"role": "tool", "content": "x"}',
    '{"role": "user", "content": "x", "call_id": "c"}',
    '{"role": "user", "content": "x", "tool_calls": [{"id": "c", "name": "n"}]}',
]


@pytest.mark.parametrize("line", GOOD)
def test_fast_path_makes_the_general_paths_row(home, line):
    config = Config()
    [fast] = rules.prepare_batch(config, [line.encode()])
    assert outcome(lambda: fast) == outcome(lambda: general(config, line))


@pytest.mark.parametrize("line", BAD)
def test_every_bad_line_gets_the_general_paths_error(home, line):
    config = Config()
    lines = [b'{"role": "user", "content": "fine"}', line.encode()]
    got = outcome(lambda: rules.prepare_batch(config, lines))
    want = outcome(lambda: general(config, line, 2))
    assert got[0] == "error" and got == want and "line 2" in got[1]


def test_size_ceiling_same_on_both_paths(home):
    config = Config()
    config.overrides["transcript.max_turn_bytes"] = 10
    for content in ("a" * 10, "é" * 5, "a" * 11, "é" * 6):  # at the limit, then one byte over
        line = json.dumps({"role": "user", "content": content}, ensure_ascii=False)
        assert outcome(lambda: rules.prepare_batch(config, [line.encode()])[0]) == outcome(lambda: general(config, line))


def test_mixed_batch_is_stored_as_row_by_row_and_returned_as_read(home):
    rows = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "weather?"},
        {"role": "user", "content": "and tomorrow?", "tokens": 3},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "w", "arguments": "{}"}]},
        {"role": "tool", "content": "sunny", "call_id": "c1", "name": "w"},
        {"role": "assistant", "content": "It is sunny.", "meta": {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 2}}},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "", "data": {"id": "item_1", "x": [1, 2]}},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "bye"},
    ]
    store = Store(user="alice")
    with store.open("mixed", create=True) as s:
        made = s.append_many(rows)
        assert made == s.rows(all=True)
        one = [s.append_many([r]) for r in rows]  # the same rows one at a time, each its own transaction
        again = s.rows(all=True)[len(rows):]
        raw = s.db.execute("SELECT role, content, tokens, author, kind, superseded_by, covers_first, covers_last, call_id,"
                           " request_id, tool_calls, name, meta, data, forked_from, request_hash, request_last FROM turns ORDER BY seq").fetchall()
    assert [r[0] for r in one] == again
    drop = lambda rs: [{k: v for k, v in r.items() if k not in ("seq", "created_at")} for r in rs]
    assert drop(made) == drop(again)
    assert raw[:len(rows)] == raw[len(rows):]  # every column as the one-row path stores it
    listed = next(x for x in store.ls() if x["name"] == "mixed")
    assert listed["turns"] == 2 * len(rows) and listed["tokens"] == 2 * sum(r["tokens"] for r in made)


def test_cli_batch_json_output_is_what_show_reads(durable):
    src = "".join(json.dumps({"role": "user" if i % 3 else "assistant", "content": f"m{i}"}) + "\n" for i in range(50))
    src += json.dumps({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "n", "arguments": "{}"}]}) + "\n"
    src += json.dumps({"role": "tool", "content": "ok", "call_id": "c"}) + "\n"
    made = durable("transcript", "append", "j", "--batch", "-", "--json", input=src).json()
    assert made == durable("transcript", "show", "j", "--json").json()
    assert [r["seq"] for r in made] == list(range(1, 53))


def test_long_runs_cross_statement_chunks_in_order(home):
    """Runs longer than one multi-row INSERT (plain, data-only and full rows alike) keep their order and fields."""
    plain = [{"role": "user" if i % 2 else "assistant", "content": f"p{i}"} for i in range(450)]
    full = [{"role": "assistant", "content": f"f{i}", "meta": {"i": i}} for i in range(170)]
    data = [{"role": "user", "content": f"d{i}", "data": {"i": i, "type": "message"}} for i in range(400)]
    rows = (plain[:1] + plain[1:420] + full + data[:390] + plain[420:] + data[390:] + full[:3]
            + [{"role": "tool", "content": "r", "call_id": "c"}])
    with Store(user="alice").open("long", create=True) as s:
        s.append("before", role="user")
        made = s.append_many(rows)
        back = s.rows(since=1)
        columns = s.db.execute("SELECT seq, kind, superseded_by, covers_first, forked_from, request_id, request_hash,"
                               " request_last, author FROM turns WHERE seq > 1 ORDER BY seq").fetchall()
    assert made == back
    assert [r["seq"] for r in made] == list(range(2, 2 + len(rows)))
    assert [(r["role"], r["content"], r["meta"], r["data"]) for r in made] == [
        (r["role"], r["content"], r.get("meta"), r.get("data")) for r in rows]
    assert all(c[1:] == ("turn", None, None, None, None, None, None, "alice") for c in columns)


def test_a_row_failing_inside_a_multi_row_insert_stores_nothing(home):
    """All or nothing holds when SQLite refuses a row in the middle of a multi-row statement."""
    store = Store(user="alice")
    with store.open("fail", create=True) as s:
        s.append("kept", role="user")
        s.db.execute("CREATE TRIGGER boom BEFORE INSERT ON turns WHEN NEW.content = 'boom' BEGIN SELECT RAISE(FAIL, 'boom'); END")
        rows = [{"role": "user", "content": f"r{i}"} for i in range(300)]
        rows[250]["content"] = "boom"
        with pytest.raises(DurableError):
            s.append_many(rows)
        s.db.execute("DROP TRIGGER boom")
        assert [r["content"] for r in s.rows(all=True)] == ["kept"]
        assert s.meta()["live_turns"] == 1
        assert [r["seq"] for r in s.append_many(rows[:2])] == [2, 3]


def test_json_nested_too_deep_is_exit_2_not_a_traceback(durable, tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    line = '{"role": "user", "content": "x", "data": ' + deep + "}\n"
    r = durable("transcript", "append", "deep", "--batch", "-", input='{"role": "user", "content": "ok"}\n' + line)
    assert r.status == 2 and "line 2" in r.err and "Traceback" not in r.err
    r = durable("transcript", "append", "deep", "--role", "user", "x", "--data", deep)
    assert r.status == 2 and "--data" in r.err and "Traceback" not in r.err
    assert durable("transcript", "show", "deep").status == 3  # nothing stored, nothing created


def _nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _circular():
    value = {"a": 1}
    value["self"] = value
    return value


HOSTILE_DATA = [
    {"s": "\U0001f600 caf\u00e9 \u2028\u2029\ufeff \x00\x1f\x7f \"q\" \\ / \u00a0\u3000 \U0010ffff"},
    [10**30, -(2**63), 2**64, 0, -0.0, 1e308, 5e-324, 0.1, 1.0, 1e16, True, False, None],
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key", "": "empty key", 2**64: "big key"},
    ("a", "tuple", ()),
    {"": {}, "l": [], "k\u0000\U0001f600": "v"},
    _nested(200),  # at strict_json's ceiling
    _nested(201),  # one over: exit 2
    {"nan": float("nan")}, [float("inf")], [-float("inf")],
    {"lone": "\ud800"}, {"\udfff": 1}, ["\ud83d\ude00"],  # lone surrogates (a pair of them is two, in a str)
    {"set": {1}}, {(1, 2): "tuple key"}, _circular(),
]


@pytest.mark.parametrize("data", HOSTILE_DATA, ids=range(len(HOSTILE_DATA)))
def test_an_adapter_items_data_is_stored_as_json_dumps_writes_it(home, data):
    """Issue 24: `data` on the fast path (add_items, append --batch) went through a private C encoder;
    the public one replaced it. Stored text is json.dumps's, byte for byte; what it refuses, the general
    path refuses with its own message."""
    config = Config()
    fields = {"role": "assistant", "content": "x", "data": data}
    fast = row_rules._plain(dict(fields), *row_rules._settings(config))
    got = outcome(lambda: fast or rules.prepare(config, dict(fields)))
    assert got == outcome(lambda: rules.prepare(config, dict(fields)))
    if got[0] != "error":
        assert fast is not None and fast.data == json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        with Store(user="alice").open("hostile", create=True) as s:
            s.append_many([dict(fields)])
            [(stored,)] = s.db.execute("SELECT data FROM turns").fetchall()
        assert stored == fast.data


def test_a_circular_value_is_named_as_such_not_as_nan(home):
    """A library caller's meta or data that contains itself: exit 2 (a TypeError too, as json's) saying
    what it is (it was reported as "holds NaN or Infinity"); nothing stored."""
    with Store(user="alice").open("circular", create=True) as s:
        for field in ("meta", "data"):
            with pytest.raises(TypeError) as caught:
                s.append_many([{"role": "assistant", "content": "x", field: _circular()}])
            assert caught.value.code == "invalid_input" and "circular reference" in caught.value.message, caught.value.message
            assert "NaN" not in caught.value.message
        assert s.db.execute("SELECT count(*) FROM turns").fetchone() == (0,)
