"""RFC 8259 JSON in, strict JSON out, and usage figures in range (docs/reference/transcript.md §6): NaN, ±Infinity, 1e400, a
duplicate key and nesting over 200 levels are exit 2 wherever JSON comes in; usage counts are integers
from 0 to 10^12 and cost_usd a finite number from 0 to 10^9; totals are exact 64-bit integers on both
backends (remotely too: never through a JS double), and doctor, export and import keep them."""

import json
import math

import pytest

from durable_cli.core import strict_json

pytestmark = [pytest.mark.both_backends]

DEEP_OK = "[" * 200 + "]" * 200
DEEP_BAD = "[" * 201 + "]" * 201
VERY_DEEP = "[" * 100_000 + "]" * 100_000

BAD_JSON = ["NaN", "Infinity", "-Infinity", '{"x": NaN}', "[1e400]", "-1e400", "1" + "0" * 400, '{"a": 1, "a": 2}',
            '{"o": {"k": 1, "k": 1}}', DEEP_BAD, VERY_DEEP]

BAD_META = [
    {"usage": {"input_tokens": 1.0, "output_tokens": 1}},
    {"usage": {"input_tokens": 5e0, "output_tokens": 1}},
    {"usage": {"input_tokens": True, "output_tokens": 1}},
    {"usage": {"input_tokens": 2**63, "output_tokens": 1}},
    {"usage": {"input_tokens": 2**63 - 1, "output_tokens": 1}},
    {"usage": {"input_tokens": 10**12 + 1, "output_tokens": 1}},
    {"usage": {"input_tokens": -1, "output_tokens": 1}},
    {"usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 10**12 + 1}},
    {"usage": {"input_tokens": 1, "output_tokens": 1, "reasoning_tokens": 0.5}},
    {"cost_usd": 1e308},
    {"cost_usd": 10**9 + 0.5},
    {"cost_usd": -0.01},
    {"cost_usd": "1"},
]


def strict(text):
    """TEXT parsed as RFC 8259 JSON: a NaN or an infinity anywhere fails the test."""
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON {c} in output: {text[:200]}"))


def test_json_outside_rfc_8259_is_exit_2_in_every_option_and_batch(durable):
    for text in BAD_JSON:
        for option in ("--data", "--meta", "--tool-calls"):
            r = durable("transcript", "append", "s", "--role", "assistant", "x", option, text)
            assert r.status == 2, (option, text[:40], r.err)
            assert "Traceback" not in r.err
        line = '{"role": "user", "content": "x", "data": %s}\n' % text
        r = durable("transcript", "append", "s", "--batch", "-", input=line)
        assert r.status == 2, (text[:40], r.err)
    assert durable("transcript", "show", "s").status == 3  # nothing was ever stored


def test_nesting_is_counted_from_each_fields_own_value(durable):
    assert durable("transcript", "append", "s", "--role", "user", "--data", DEEP_OK).status == 0
    line = json.dumps({"role": "user", "content": "x", "data": json.loads(DEEP_OK)}) + "\n"
    assert durable("transcript", "append", "s", "--batch", "-", input=line).status == 0  # the line is 201 deep
    rows = durable("transcript", "show", "s", "--json").json()
    assert [strict_json.too_deep(r["data"], 199) for r in rows] == [True, True]
    assert not any(strict_json.too_deep(r["data"]) for r in rows)


def test_usage_counts_and_cost_out_of_range_are_exit_2(durable):
    for meta in BAD_META:
        text = json.dumps(meta)
        r = durable("transcript", "append", "s", "--role", "assistant", "x", "--meta", text)
        assert r.status == 2, (text, r.err)
        r = durable("transcript", "append", "s", "--batch", "-", input=json.dumps({"role": "assistant", "content": "x", "meta": meta}) + "\n")
        assert r.status == 2, (text, r.err)
    assert durable("transcript", "show", "s").status == 3


def test_given_tokens_past_10_9_are_exit_2(durable):
    assert durable("transcript", "append", "s", "--role", "user", "x", "--tokens", str(10**9 + 1)).status == 2
    assert durable("transcript", "append", "s", "--role", "user", "x", "--tokens", str(10**9)).status == 0


@pytest.mark.cross_object
def test_large_legal_totals_stay_exact_integers(durable):
    """9,011 rows of 999,999,999,999 input tokens: a total past 2^53, which a double cannot hold exactly."""
    count, each = 9_011, 10**12 - 1  # an odd total past 2^53: no double holds it
    meta = {"model": "m", "usage": {"input_tokens": each, "output_tokens": 10**12}, "cost_usd": 10**9}
    rows = "".join(json.dumps({"role": "assistant", "content": "x", "meta": meta}) + "\n" for _ in range(count))
    assert durable("transcript", "append", "big", "--batch", "-", input=rows).status == 0
    want = {"input_tokens": count * each, "output_tokens": count * 10**12, "cost_usd": float(count * 10**9)}
    assert want["input_tokens"] > 2**53
    r = durable("usage", "--json")
    assert r.status == 0, r.err
    doc = strict(r.out)
    [group] = doc["groups"]
    for key, value in want.items():
        assert group[key] == value and doc["total"][key] == value, (key, group[key], value)
        assert type(group[key]) is type(value)
    assert strict(durable("usage", "--by", "model", "--json").out)["groups"][0]["input_tokens"] == want["input_tokens"]


@pytest.mark.cross_object
def test_export_delete_import_keeps_a_session_with_large_legal_totals(durable):
    meta = {"model": "m", "usage": {"input_tokens": 10**12, "output_tokens": 10**12, "cache_read_tokens": 10**12},
            "cost_usd": 10**9}
    rows = "".join(json.dumps({"role": "assistant", "content": "x", "meta": meta}) + "\n" for _ in range(20))
    assert durable("transcript", "append", "big", "--batch", "-", input=rows).status == 0
    before = strict(durable("usage", "--json").out)
    assert before["total"]["input_tokens"] == 20 * 10**12
    dump = durable("export", "big")
    assert dump.status == 0
    assert durable("delete", "big", "--yes").status == 0
    r = durable("import", "-", input=dump.out)
    assert r.status == 0, r.err
    assert strict(durable("usage", "--json").out) == before
    assert durable("transcript", "show", "big", "--last", "1", "--json").json()[0]["meta"] == meta


@pytest.mark.local_only("doctor reads the object files")
def test_doctor_and_repair_keep_a_session_with_large_legal_totals(durable):
    meta = {"usage": {"input_tokens": 10**12, "output_tokens": 10**12}, "cost_usd": 10**9}
    rows = "".join(json.dumps({"role": "assistant", "content": "x", "meta": meta}) + "\n" for _ in range(50))
    assert durable("transcript", "append", "big", "--batch", "-", input=rows).status == 0
    r = durable("doctor", "--json")
    assert r.status == 0, r.out
    assert durable("doctor", "--repair", "--json").status == 0
    assert strict(durable("usage", "--json").out)["total"]["input_tokens"] == 50 * 10**12


@pytest.mark.cross_object
def test_import_refuses_what_append_refuses_and_never_raises(durable):
    assert durable("transcript", "append", "s", "--role", "user", "hi", "--data", '{"k": 1}', "--meta", '{"cost_usd": 1}').status == 0
    dump = durable("export", "s").out
    record = json.loads(dump)
    assert durable("delete", "s", "--yes").status == 0
    for field, text in [("data", '{"k": NaN}'), ("data", '{"k": Infinity}'), ("data", "[1e400]"), ("data", '{"k": 1, "k": 2}'),
                        ("data", DEEP_BAD), ("meta", '{"cost_usd": NaN}'), ("meta", '{"cost_usd": 1e308}'),
                        ("meta", '{"usage": {"input_tokens": 9223372036854775807, "output_tokens": 1}}')]:
        bad = json.loads(dump)
        bad["turns"][0][field] = text
        r = durable("import", "-", input=json.dumps(bad) + "\n")
        assert r.status == 2, (field, text[:40], r.out, r.err)
        assert "Traceback" not in r.err
        assert durable("transcript", "show", "s").status == 3
    # NaN or a 100,000-deep value in the record line itself: not JSON, exit 2, nothing imported
    line = json.dumps(record)
    for text in (line[:-1] + ', "x": NaN}', line[:-1] + ', "x": ' + VERY_DEEP + "}"):
        r = durable("import", "-", input=text + "\n")
        assert r.status == 2, r.err
        assert "Traceback" not in r.err and "RecursionError" not in r.err
    assert durable("import", "-", input=dump).status == 0


def test_every_json_output_is_strict(durable):
    assert durable("transcript", "append", "s", "--role", "assistant", "x", "--data", '{"f": 1.5e300, "n": -0.0}',
                   "--meta", '{"cost_usd": 1000000000, "usage": {"input_tokens": 1000000000000, "output_tokens": 0}}').status == 0
    for args in (("transcript", "show", "s", "--json"), ("transcript", "show", "s", "--jsonl"),
                 ("transcript", "recent", "s", "--json")):
        r = durable(*args)
        assert r.status == 0
        for line in r.out.splitlines():
            strict(line)
    row = strict(durable("transcript", "show", "s", "--json").out)[0]
    assert math.isfinite(row["data"]["f"]) and row["meta"]["cost_usd"] == 10**9


def _raw_rows(rows, name="raw"):
    """append_many straight to the Worker, past the Python client's own checks (what another client could send)."""
    from durable_cli.errors import DurableError
    from durable_cli.library import Store

    with Store().open(name, create=True) as s:
        try:
            s._call("append_many", rows=rows, request_id=None, create=True, one=False, seqs_only=True, origin=None)
        except DurableError as e:
            return e.exit_status, e.message
    return 0, ""


def _post(body: str):
    """BODY, as text, to the Worker's /v1/call: (HTTP status, the error's code or None)."""
    import os

    from tests.remote.conftest import post_call

    status, doc = post_call(os.environ["DURABLE_REMOTE"], os.environ["DURABLE_TOKEN"], body.encode())
    return status, doc["error"]["code"] if status >= 400 else None


@pytest.mark.parametrize("backend", ["remote"])
def test_the_worker_holds_a_crafted_request_to_the_same_rules(durable):
    """Requests the Python client would refuse first: the Worker refuses them alike (400, exit 2), nothing stored."""
    user_row = {"role": "user", "content": "x"}
    bad = [dict(user_row, meta_json='{"usage": {"input_tokens": 1.0, "output_tokens": 1}}'),
           dict(user_row, meta_json='{"usage": {"input_tokens": 1e3, "output_tokens": 1}}'),
           dict(user_row, meta_json='{"usage": {"input_tokens": 9223372036854775808, "output_tokens": 1}}'),
           dict(user_row, meta_json='{"usage": {"input_tokens": 1000000000001, "output_tokens": 1}}'),
           dict(user_row, meta_json='{"cost_usd": 1e308}'),
           dict(user_row, meta_json='{"cost_usd": 1, "cost_usd": 2}'),
           dict(user_row, meta={"usage": {"input_tokens": 2**63, "output_tokens": 1}}),
           dict(user_row, meta={"usage": {"input_tokens": 1.0, "output_tokens": 1}}),
           dict(user_row, meta={"usage": {"input_tokens": 1, "output_tokens": 2e0}}),
           dict(user_row, meta={"cost_usd": 1e10}),
           dict(user_row, tokens=10**9 + 1),
           dict(user_row, data_json="1e400"),
           dict(user_row, data_json="[-1e400]"),
           dict(user_row, data_json='{"a": {"b": 1, "b": 1}}'),
           dict(user_row, data_json=DEEP_BAD),
           dict(user_row, data_json=VERY_DEEP),
           dict(user_row, data=json.loads(DEEP_BAD))]
    for row in bad:
        status, message = _raw_rows([row])
        assert status == 2, (str(row)[:120], message)
    assert _raw_rows([dict(user_row, data_json=DEEP_OK, meta_json='{"usage": {"input_tokens": 1000000000000, "output_tokens": 0}}')]) == (0, "")
    # a usage-like 1.0 inside a value-form data (an SDK item) is the caller's own: kept
    assert _raw_rows([dict(user_row, data={"meta": {"usage": {"input_tokens": 1.0}}}, meta={"cost_usd": 1.0})]) == (0, "")
    # the body itself: a duplicate key or a number past a double anywhere is 400 invalid_input, not 500
    base = '{"op": "show", "scope": "user", "name": "raw", "actor": "alice", "args": {}%s}'
    assert _post(base % "") == (200, None)
    for extra in (', "args": {}', ', "x": 1e400', ', "x": [' + "[" * 300 + "]" * 300 + "]", ', "x": ' + VERY_DEEP):
        assert _post(base % extra) == (400, "invalid_input"), extra[:40]
    rows = durable("transcript", "show", "raw", "--json").json()
    assert len(rows) == 2 and rows[0]["meta"]["usage"]["input_tokens"] == 10**12


def _nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_the_adapters_refuse_json_outside_rfc_8259(durable):
    from durable_cli import DurableError
    from durable_cli.integrations.openai_agents import DurableSession

    session = DurableSession("agents")
    for extra in (float("nan"), float("inf"), -float("inf"), _nested(201), _nested(100_000)):
        with pytest.raises(DurableError) as e:
            session.add_items_sync([{"role": "user", "content": "first"}, {"role": "user", "content": "x", "extra": extra}])
        assert e.value.exit_status == 2
    assert session.get_items_sync() == []
    session.add_items_sync([{"role": "user", "content": "x", "extra": _nested(199)}])  # the item is level 1 of data
    assert len(session.get_items_sync()) == 1


def test_langgraph_checkpoint_metadata_is_rfc_8259(durable):
    from langgraph.checkpoint.base import empty_checkpoint

    from durable_cli import DurableError
    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for bad in ({"score": float("nan")}, {"deep": _nested(201)}):
        with pytest.raises(DurableError) as e:
            saver.put(config, empty_checkpoint(), bad, {})
        assert e.value.exit_status == 2
    assert saver.get_tuple(config) is None
    saver.put(config, empty_checkpoint(), {"score": 1.5}, {})
    assert saver.get_tuple(config).metadata["score"] == 1.5


def test_finish_holds_its_meta_and_rows_to_the_same_rules(durable, tmp_path):
    assert durable("session", "prompt", "q", "hello").status == 0
    prompt = durable("session", "next", "q", "--json").json()["id"]
    rows = tmp_path / "rows.jsonl"
    for meta, lines in [('{"usage": {"input_tokens": 1.0, "output_tokens": 1}}', None),
                        ('{"cost_usd": 1e308}', None), ('{"cost_usd": NaN}', None), ('{"a": 1, "a": 1}', None),
                        (None, '{"role": "assistant", "content": "x", "meta": {"usage": {"input_tokens": 9223372036854775807, "output_tokens": 1}}}'),
                        (None, '{"role": "assistant", "content": "x", "data": %s}' % DEEP_BAD),
                        (None, '{"role": "assistant", "content": "x", "data": [Infinity]}')]:
        args = ["session", "finish", "q", str(prompt)]
        if meta is not None:
            args += ["--reply", "done", "--meta", meta]
        else:
            rows.write_text(lines + "\n")
            args += ["--rows", rows]
        r = durable(*args)
        assert r.status == 2, (meta, lines and lines[:60], r.err)
    assert durable("session", "queue", "q", "--json").json()[0]["status"] == "processing"
    assert durable("session", "finish", "q", str(prompt), "--reply", "done", "--meta",
                   '{"usage": {"input_tokens": 1000000000000, "output_tokens": 1}, "cost_usd": 1000000000}').status == 0


@pytest.mark.local_only("writes a NaN into the object file with sqlite3, as an older release could have stored it")
def test_a_nan_stored_before_is_printed_as_strict_json(durable):
    import sqlite3

    assert durable("transcript", "append", "s", "--role", "user", "hi", "--data", '{"k": 1.5}').status == 0
    db = sqlite3.connect(durable("path", "s").out.strip())
    db.execute("""UPDATE turns SET data = '{"k": NaN, "j": [Infinity, -Infinity]}'""")
    db.commit()
    db.close()
    for args in (("transcript", "show", "s", "--json"), ("transcript", "show", "s", "--jsonl"),
                 ("transcript", "recent", "s", "--json")):
        r = durable(*args)
        assert r.status == 0, r.err
        for line in r.out.splitlines():
            strict(line)
    assert strict(durable("transcript", "show", "s", "--json").out)[0]["data"] == {"k": None, "j": [None, None]}


def test_tool_call_arguments_outside_rfc_8259_never_reach_the_anthropic_format(durable):
    for i, arguments in enumerate(('{"x": NaN}', '{"x": 1e400}', '{"x": 1, "x": 2}', '{"x": 1}')):
        calls = json.dumps([{"id": "c1", "name": "f", "arguments": arguments}])
        assert durable("transcript", "append", f"a{i}", "--role", "user", "go").status == 0
        assert durable("transcript", "append", f"a{i}", "--role", "assistant", "--tool-calls", calls).status == 0  # verbatim
        assert durable("transcript", "append", f"a{i}", "--role", "tool", "--call-id", "c1", "42").status == 0
        r = durable("transcript", "recent", f"a{i}", "--format", "anthropic")
        if arguments == '{"x": 1}':
            assert strict(r.out)["messages"][1]["content"][0]["input"] == {"x": 1}
        else:
            assert r.status == 4, (arguments, r.out)
            assert "NaN" not in r.out and "Infinity" not in r.out


@pytest.mark.local_only("doctor reads the object files")
def test_doctor_does_not_call_legal_costs_corrupt_for_their_rounding(durable):
    """Costs are doubles added a batch at a time: a total near 10^9 rounds otherwise than one sum of the rows."""
    assert durable("transcript", "append", "s", "--role", "assistant", "x", "--meta", '{"cost_usd": 999999999.7}').status == 0
    rows = "".join(json.dumps({"role": "assistant", "content": "x", "meta": {"cost_usd": c}}) + "\n"
                   for c in [0.1, 0.2, 0.3, 0.7, 0.11, 0.13, 123.456, 0.9] * 5)
    assert durable("transcript", "append", "s", "--batch", "-", input=rows).status == 0
    r = durable("doctor", "--json")
    assert r.status == 0, r.out
    # a real disagreement is still found
    import sqlite3

    db = sqlite3.connect(durable("path", "s").out.strip())
    db.execute("UPDATE usage_totals SET cost_usd = cost_usd + 0.01")
    db.commit()
    db.close()
    assert durable("doctor", "--json").status == 7


@pytest.mark.local_only("sets a total near 2^63-1 in the object file with sqlite3 (9.2 million rows of 10^12 otherwise)")
def test_a_total_past_2_63_is_exit_7_never_a_float(durable):
    import sqlite3

    meta = '{"usage": {"input_tokens": 100, "output_tokens": 1}}'
    assert durable("transcript", "append", "s", "--role", "user", "x", "--meta", meta).status == 0
    path = durable("path", "s").out.strip()
    db = sqlite3.connect(path)
    db.execute("UPDATE usage_totals SET input_tokens = 9223372036854775800")
    db.commit()
    r = durable("transcript", "append", "s", "--role", "user", "y", "--meta", meta)
    assert r.status == 7 and "2^63-1" in r.err, r.err
    assert db.execute("SELECT input_tokens, typeof(input_tokens) FROM usage_totals").fetchall() == [(9223372036854775800, "integer")]
    db.close()
    assert len(durable("transcript", "show", "s", "--json").json()) == 1
