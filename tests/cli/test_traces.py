"""Sessions as OpenTelemetry GenAI traces (docs/reference/traces.md §15): `export --format otlp` to a file, to a
closed port, and (tests/cli/test_traces_phoenix.py) to a real Arize Phoenix."""

import atexit
import datetime
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

if os.environ.get("CI") != "true":  # in CI the otel extra is installed: a missing one fails collection
    pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra (pip install 'durable-cli[otel]') is not installed")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

ROWS = [
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ls", "arguments": "{\"dir\": \"/srv\"}"}],
     "meta": {"model": "gpt-x", "provider": "openai", "cost_usd": 0.25,
              "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_tokens": 4, "cache_write_tokens": 1}}},
    {"role": "tool", "call_id": "c1", "content": "SECRET-RESULT"},
]


_MADE: dict = {}  # NAME -> a copy of the data directory make_session built it in (this worker's, this run's)


def make_session(durable, name="s1"):
    """One completed prompt turn (a model call with a tool call, then the reply), one failed prompt, a row
    turn written by `transcript append`, and an answered request asked while the first prompt ran.

    Built with real commands once per test worker; later tests that start from an empty data directory get a copy
    of it (the same secret, so the same object ids; the same times)."""
    home = os.environ["DURABLE_HOME"]
    local = not os.environ.get("DURABLE_REMOTE")
    if local and name in _MADE and not os.path.exists(home):
        shutil.copytree(_MADE[name], home)
        return os.path.join(home, os.path.relpath(_MADE[name + "/path"], _MADE[name]))
    fresh = local and not os.path.exists(home)
    path = _make_session(durable, name)
    if fresh:
        keep = tempfile.mkdtemp(prefix="durable-traces-")
        atexit.register(shutil.rmtree, keep, True)
        shutil.copytree(home, os.path.join(keep, "home"))
        _MADE[name], _MADE[name + "/path"] = os.path.join(keep, "home"), os.path.join(keep, "home", os.path.relpath(path, home))
    return path


def _make_session(durable, name):
    assert durable("session", "prompt", name, "SECRET-PROMPT").status == 0
    assert durable("session", "next", name).status == 0
    assert durable("elicit", "ask", name, "--prompt", "SECRET-QUESTION", "--choice", "yes", "--choice", "no").status == 0
    assert durable("elicit", "answer", name, "1", "--choice", "yes").status == 0
    rows = "".join(json.dumps(r) + "\n" for r in ROWS)
    finish = durable("session", "finish", name, "1", "--rows", "-", "--reply", "SECRET-REPLY",
                     "--meta", json.dumps({"model": "gpt-x", "usage": {"input_tokens": 20, "output_tokens": 5}}), input=rows)
    assert finish.status == 0, finish.err
    assert durable("session", "prompt", name, "second").status == 0
    assert durable("session", "next", name).status == 0
    assert durable("session", "stop", name).status == 0
    assert durable("transcript", "append", name, "--role", "user", "a row turn").status == 0
    assert durable("transcript", "append", name, "--role", "assistant", "its answer").status == 0
    return durable("path", name).out.strip()


def spans_of(lines):
    out = []
    for line in lines:
        for rs in line["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                assert ss["scope"]["name"] == "durable"
                out.extend(ss["spans"])
    return out


def attrs(span):
    def value(v):
        for k in ("stringValue", "boolValue", "doubleValue"):
            if k in v:
                return v[k]
        if "intValue" in v:
            return int(v["intValue"])
        return [value(x) for x in v["arrayValue"].get("values", [])]

    return {a["key"]: value(a["value"]) for a in span.get("attributes", [])}


def sha(prefix, oid, key, size):
    return hashlib.sha256(f"{prefix}\0{oid}\0{key}".encode()).digest()[:size].hex()


def object_id(durable, name):
    return durable("export", name).lines()[0]["id"]


def test_export_otlp_file_spans_parents_attributes_and_ids(durable, tmp_path):
    make_session(durable)
    oid = object_id(durable, "s1")
    out = tmp_path / "traces.jsonl"
    r = durable("export", "s1", "--format", "otlp", "--output", out, "--json")
    assert r.status == 0, r.err
    receipt = json.loads(r.err.strip().splitlines()[-1])
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 1 and oct(out.stat().st_mode & 0o777) == "0o600"
    spans = spans_of(lines)
    assert receipt["spans"] == len(spans) == 7 and receipt["traces"] == 3
    by_name = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    assert sorted(by_name) == ["chat gpt-x", "elicit", "execute_tool ls", "invoke_agent"]
    assert len(by_name["invoke_agent"]) == 3 and len(by_name["chat gpt-x"]) == 2
    first, failed, row_turn = by_name["invoke_agent"]
    # the ids are the SPEC's derivation from the object id
    assert first["traceId"] == sha("durable.otel.trace", oid, "p1", 16) and first["spanId"] == sha("durable.otel.span", oid, "p1", 8)
    assert row_turn["traceId"] == sha("durable.otel.trace", oid, f"r{attrs(row_turn)['durable.turn.seq']}", 16)
    a = attrs(first)
    assert a["gen_ai.conversation.id"] == oid and a["gen_ai.operation.name"] == "invoke_agent"
    assert a["durable.prompt.id"] == 1 and a["durable.prompt.outcome"] == "completed" and first["status"]["code"] == 1
    assert attrs(failed)["durable.prompt.outcome"] == "failed" and attrs(failed)["error.type"] == "stopped"
    assert failed["status"]["code"] == 2 and "message" not in failed["status"]
    assert "parentSpanId" not in first and "parentSpanId" not in row_turn
    for child in by_name["chat gpt-x"] + by_name["execute_tool ls"] + by_name["elicit"]:
        assert child["traceId"] == first["traceId"] and child["parentSpanId"] == first["spanId"]
        assert int(first["startTimeUnixNano"]) <= int(child["startTimeUnixNano"]) <= int(child["endTimeUnixNano"]) <= int(first["endTimeUnixNano"])
    calling = attrs(by_name["chat gpt-x"][0])
    assert calling["gen_ai.usage.input_tokens"] == 10 and calling["gen_ai.usage.output_tokens"] == 3
    assert calling["gen_ai.usage.cache_read.input_tokens"] == 4 and calling["gen_ai.usage.cache_creation.input_tokens"] == 1
    assert calling["gen_ai.request.model"] == calling["gen_ai.response.model"] == "gpt-x"
    assert calling["gen_ai.provider.name"] == "openai" and calling["durable.timing"] == "inferred"
    assert by_name["chat gpt-x"][0]["kind"] == 3 and first["kind"] == 1
    tool = attrs(by_name["execute_tool ls"][0])
    assert tool["gen_ai.tool.name"] == "ls" and tool["gen_ai.tool.call.id"] == "c1" and tool["gen_ai.tool.type"] == "function"
    assert tool["durable.result.seq"] == tool["durable.row.seq"] + 1
    assert by_name["execute_tool ls"][0]["spanId"] == sha("durable.otel.span", oid, f"t{tool['durable.row.seq']}.0", 8)
    el = attrs(by_name["elicit"][0])
    assert el["durable.elicit.status"] == "answered" and el["durable.elicit.choice_made"] is True
    # no content unless asked: no text, name or user anywhere
    text = out.read_text()
    for secret in ("SECRET", '"s1"', "alice"):
        assert secret not in text
    # a second export: the same spans, the same ids
    again = durable("export", "s1", "--format", "otlp")
    assert [(s["traceId"], s["spanId"]) for s in spans_of(again.lines())] == [(s["traceId"], s["spanId"]) for s in spans]


def test_content_only_when_asked(durable, tmp_path, monkeypatch):
    make_session(durable)
    r = durable("export", "s1", "--format", "otlp", "--content")
    spans = spans_of(r.lines())
    first = next(s for s in spans if s["name"] == "invoke_agent")
    a = attrs(first)
    assert a["durable.session.name"] == "s1" and a["user.id"] == "alice"
    assert json.loads(a["gen_ai.input.messages"]) == [{"role": "user", "parts": [{"type": "text", "content": "SECRET-PROMPT"}]}]
    assert "SECRET-REPLY" in a["gen_ai.output.messages"]
    tool = attrs(next(s for s in spans if s["name"] == "execute_tool ls"))
    assert tool["gen_ai.tool.call.arguments"] == "{\"dir\": \"/srv\"}" and tool["gen_ai.tool.call.result"] == "SECRET-RESULT"
    assert attrs(next(s for s in spans if s["name"] == "elicit"))["durable.elicit.prompt"] == "SECRET-QUESTION"
    # the standard variable turns it on; --no-content wins over it
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    assert "SECRET-PROMPT" in durable("export", "s1", "--format", "otlp").out
    assert "SECRET" not in durable("export", "s1", "--format", "otlp", "--no-content").out


def test_since_keeps_the_turns_that_ended_after_it(durable):
    make_session(durable)
    assert len(spans_of(durable("export", "s1", "--format", "otlp", "--since", "1h").lines())) == 7
    future = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    r = durable("export", "s1", "--format", "otlp", "--since", future)
    assert r.status == 0 and r.out == ""


@pytest.mark.parametrize("args", [
    ["s1", "--since", "1h"],  # otlp only
    ["s1", "--content"],
    ["s1", "--format", "otlp", "--since", "yesterday"],
    ["s1", "--format", "otlp", "--since", "0s"],
    ["s1", "--format", "otlp", "--since", "5"],
    ["s1", "--format", "otlp", "--since", "2026-12-01T09:00:00"],
    ["s1", "--format", "jsonl"],
    ["s1", "--format", "otlp", "--endpoint", "ftp://x"],
    ["s1", "--format", "otlp", "--endpoint", "http://"],  # no host: not a URL (was sent, exit 7)
    ["s1", "--format", "otlp", "--endpoint", "http://127.0.0.1:99999/v1/traces"],
    ["s1", "--format", "otlp", "--endpoint", "http://127.0.0.1:9/v1/traces", "--send"],
    ["s1", "--format", "otlp", "--endpoint", "http://127.0.0.1:9/v1/traces", "--output", "x.jsonl"],
    ["s1", "--format", "otlp", "--send"],  # no endpoint configured
])
def test_bad_input_is_exit_2_before_anything_is_read(durable, args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(v, raising=False)
    durable("transcript", "append", "s1", "--role", "user", "hi")
    r = durable("export", *args)
    assert r.status == 2 and r.err.startswith("durable: error: ") and len(r.err.splitlines()) == 1, r.err
    assert r.out == "" and not (tmp_path / "x.jsonl").exists()


def test_grpc_protocol_is_refused(durable, monkeypatch):
    durable("transcript", "append", "s1", "--role", "user", "hi")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    r = durable("export", "s1", "--format", "otlp", "--endpoint", "http://127.0.0.1:9/v1/traces")
    assert r.status == 2 and "grpc" in r.err


def test_a_missing_name_is_exit_3_and_nothing_is_written(durable, tmp_path):
    durable("transcript", "append", "s1", "--role", "user", "hi")
    out = tmp_path / "t.jsonl"
    r = durable("export", "s1", "nope", "--format", "otlp", "--output", out)
    assert r.status == 3 and "nope" in r.err and not out.exists()


def test_several_names_in_one_file(durable):
    make_session(durable, "a")
    durable("transcript", "append", "b", "--role", "user", "hi")
    lines = durable("export", "a", "b", "--format", "otlp").lines()
    assert len(lines) == 2  # one line per session with spans, in the order given
    assert len(durable("export", "a", "b").lines()) == 2  # NAME repeats for --format durable too


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_is_exit_7_within_the_timeout(durable, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20SECRETTOKEN")
    assert durable("transcript", "append", "s1", "--role", "user", "hi").status == 0
    port = free_port()
    url = f"http://user:pw@127.0.0.1:{port}/v1/traces?k=SECRETQUERY"
    started = time.monotonic()
    r = durable("export", "s1", "--format", "otlp", "--endpoint", url)
    assert r.status == 7, r.err
    assert time.monotonic() - started < 20  # the 0.3 s request timeout on a loaded machine; never the exporter's minutes of retries
    assert r.err.splitlines() == [f"durable: error: cannot send traces to http://127.0.0.1:{port}/v1/traces: connection refused; "
                                  "0 spans were accepted before it (running the export again is safe: same ids)"]
    for secret in ("SECRETTOKEN", "SECRETQUERY", "pw@"):
        assert secret not in r.err
    j = durable("export", "s1", "--format", "otlp", "--endpoint", url, "--json")
    assert j.status == 7 and json.loads(j.err.splitlines()[-1])["error"]["code"] == "storage"


BLOCK_OTEL = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("opentelemetry", "google"):
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from durable_cli.cli.app import main
sys.argv = ["durable"] + sys.argv[1:]
main()
"""


def test_without_the_extra_export_otlp_is_exit_2_naming_it(durable_proc, tmp_path):
    assert durable_proc("transcript", "append", "s1", "--role", "user", "hi").status == 0
    r = subprocess.run([sys.executable, "-c", BLOCK_OTEL, "export", "s1", "--format", "otlp"], capture_output=True, text=True)
    assert r.returncode == 2 and "pip install 'durable-cli[otel]'" in r.stderr and r.stdout == ""


def test_work_records_when_cmd_ran_and_the_model(durable):
    assert durable("session", "prompt", "w", "hi").status == 0
    r = durable("work", "w", "--once", "--model", "gpt-test", "--command", "sleep 0.2; echo ok")
    assert r.status == 0, r.err
    reply = durable("transcript", "show", "w", "--json").json()
    meta = json.loads(reply[-1]["meta"]) if isinstance(reply[-1]["meta"], str) else reply[-1]["meta"]
    assert meta["model"] == "gpt-test" and meta["started_at"] < meta["ended_at"]
    chat = next(s for s in spans_of(durable("export", "w", "--format", "otlp").lines()) if s["name"].startswith("chat"))
    assert chat["name"] == "chat gpt-test" and attrs(chat)["durable.timing"] == "measured"
    assert int(chat["endTimeUnixNano"]) - int(chat["startTimeUnixNano"]) >= 200_000_000  # CMD's sleep, measured
    # config work.model, and the usage report names it
    assert durable("config", "set", "work.model", "other-model").status == 0
    assert durable("session", "prompt", "w", "again").status == 0
    assert durable("work", "w", "--once", "--command", "echo ok").status == 0
    assert "other-model" in durable("usage", "--by", "model").out


def test_finish_takes_the_times_of_the_model_call(durable):
    durable("session", "prompt", "f", "hi")
    durable("session", "next", "f")
    bad = durable("session", "finish", "f", "1", "--reply", "x", "--meta", '{"started_at": "2026-12-05T10:00:01Z"}')
    assert bad.status == 2 and "go together" in bad.err
    # times after the prompt's start (a model call that began before its prompt is drawn from the prompt's start)
    t0 = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=1)
    meta = {"model": "m", "started_at": (t0 + datetime.timedelta(milliseconds=250)).isoformat().replace("+00:00", "Z"),
            "ended_at": (t0 + datetime.timedelta(milliseconds=3500)).isoformat()}
    assert durable("session", "finish", "f", "1", "--reply", "x", "--meta", json.dumps(meta)).status == 0
    chat = next(s for s in spans_of(durable("export", "f", "--format", "otlp").lines()) if s["name"] == "chat m")
    assert attrs(chat)["durable.timing"] == "measured"
    assert int(chat["endTimeUnixNano"]) - int(chat["startTimeUnixNano"]) == 3_250_000_000


def test_live_spans_to_a_closed_port_warn_once_and_change_nothing(durable, durable_proc):
    """A real `work` process: its one warning, its --json lines and exit status as a user sees them."""
    for text in ("one", "two"):
        assert durable("session", "prompt", "w", text).status == 0
    env = {"DURABLE_TRACES": "work", "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",
           "TRACEPARENT": "00-11111111111111111111111111111111-2222222222222222-01"}
    assert durable("config", "set", "telemetry.timeout", "1s").status == 0
    r = durable_proc("work", "w", "--wait", "0", "--json", "--command", 'echo "$TRACEPARENT"', env=env)
    assert r.status == 0, r.err
    assert [line["outcome"] for line in r.lines()] == ["completed", "completed"]
    warnings = [line for line in r.err.splitlines() if line.startswith("durable: warning: traces not sent to")]
    assert len(warnings) == 1 and "connection refused" in warnings[0], r.err
    # CMD got the prompt's trace context: the ids a batch export gives its invoke_agent span, not the inherited one
    oid = object_id(durable, "w")
    replies = [row["content"] for row in durable("transcript", "show", "w", "--json").json() if row["role"] == "assistant"]
    assert replies == [f"00-{sha('durable.otel.trace', oid, f'p{n}', 16)}-{sha('durable.otel.span', oid, f'p{n}', 8)}-01" for n in (1, 2)]


def test_traces_on_without_an_endpoint_warn_once(durable, monkeypatch):
    from durable_cli.telemetry import otlp

    durable("session", "prompt", "w", "one")
    durable("session", "prompt", "w", "two")
    for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("DURABLE_TRACES", "work")
    otlp._warned_once.clear()  # once per process: this one runs many commands
    r = durable("work", "w", "--wait", "0", "--command", "echo ok")
    assert r.status == 0 and r.err.count("durable: warning: traces are on but no endpoint is set") == 1, r.err


@pytest.mark.parametrize("key,value", [("telemetry.traces", "some"), ("telemetry.timeout", "11s"),
                                       ("telemetry.endpoint", "localhost:4318"), ("telemetry.endpoint", "http://"),
                                       ("telemetry.content", "yes")])
def test_bad_telemetry_settings_are_exit_2(durable, key, value):
    r = durable("config", "set", key, value)
    assert r.status == 2 and key in r.err


def test_a_bad_durable_traces_is_exit_2_before_the_command_runs(durable, monkeypatch):
    monkeypatch.setenv("DURABLE_TRACES", "some")
    for args in (("ls",), ("transcript", "append", "s1", "--role", "user", "hi")):
        r = durable(*args)
        assert r.status == 2 and r.out == "" and r.err.splitlines() == [
            "durable: error: config telemetry.traces in $DURABLE_TRACES must be one of off, work, all, not 'some'"], r.err
    monkeypatch.delenv("DURABLE_TRACES")
    assert durable("ls").out == ""  # nothing was created


@pytest.mark.parametrize("backend", ["remote"])
def test_remote_export_builds_the_spans_on_the_client(durable, backend):
    make_session(durable)
    oid = object_id(durable, "s1")  # the Worker's object id
    spans = spans_of(durable("export", "s1", "--format", "otlp").lines())
    assert len(spans) == 7
    first = next(s for s in spans if s["name"] == "invoke_agent")
    assert first["traceId"] == sha("durable.otel.trace", oid, "p1", 16) and attrs(first)["gen_ai.conversation.id"] == oid


def test_content_over_64_kib_is_cut_and_its_span_says_so(durable):
    big = "é" * 40_000  # 80,000 bytes of UTF-8
    assert durable("transcript", "append", "big", "--role", "user", "hi").status == 0
    rows = json.dumps({"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "t", "arguments": "{}"}]}) + "\n"
    rows += json.dumps({"role": "tool", "call_id": "c", "content": big}) + "\n"
    assert durable("transcript", "append", "big", "--batch", "-", input=rows).status == 0
    spans = spans_of(durable("export", "big", "--format", "otlp", "--content").lines())
    tool = attrs(next(s for s in spans if s["name"] == "execute_tool t"))
    assert tool["durable.content.truncated"] is True and tool["gen_ai.tool.call.result"] == "é" * 32768
    assert "durable.content.truncated" not in attrs(next(s for s in spans if s["name"] == "invoke_agent"))


def test_the_otlp_json_is_protobufs_own_json_of_the_sdk_encoding(durable):
    """telemetry/otlp.py renders OTLP/JSON itself (json_format is 4x slower): equal to json_format's, ids in hex."""
    from durable_cli.telemetry import otlp, traces

    make_session(durable)
    durable("elicit", "ask", "s1", "--prompt", "q", "--choice", "a", "--timeout", "1s")  # an elicitation of its own
    record = durable("export", "s1").lines()[0]
    builder = otlp.Builder()
    spans = builder(traces.session_spans(record, content=True))
    assert builder.json_line(spans) == builder.json_line_generic(spans)
    assert builder.json_line(spans)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == spans[0].context.trace_id.to_bytes(16, "big").hex()
    # a file's lines skip the SDK's objects (json_line_direct): byte for byte what the SDK's encoding gives, with and
    # without content, text that is not ASCII, a cut value, errors, doubles, arrays and an empty string
    durable("transcript", "append", "s1", "--role", "user", "héllo ✓ " + "x" * 70_000)
    durable("transcript", "append", "s1", "--role", "assistant", "", "--meta", '{"model": "m", "cost_usd": 1e-07}')
    record = durable("export", "s1").lines()[0]
    for content in (True, False):
        ours = traces.session_spans(record, content=content)
        direct, sdk = (json.dumps(doc, ensure_ascii=False, separators=(",", ":"))  # as export writes them
                       for doc in (builder.json_line_direct(ours), builder.json_line(builder(ours))))
        assert direct == sdk


def test_since_cuts_by_the_end_of_each_turn_and_an_expired_request_is_a_trace_of_its_own(durable):
    from freezegun import freeze_time

    with freeze_time("2026-01-01T10:00:00Z"):
        durable("transcript", "append", "t", "--role", "user", "old")
        durable("elicit", "ask", "t", "--prompt", "q", "--choice", "a", "--timeout", "30m")
    with freeze_time("2026-01-01T12:00:00Z"):
        durable("transcript", "append", "t", "--role", "user", "new")
        assert durable("sweep").status == 0  # the request's expiry fires
        spans = spans_of(durable("export", "t", "--format", "otlp").lines())
        assert sorted(s["name"] for s in spans) == ["elicit", "invoke_agent", "invoke_agent"]
        el = next(s for s in spans if s["name"] == "elicit")
        assert "parentSpanId" not in el and attrs(el)["durable.elicit.status"] == "expired"
        assert attrs(el)["error.type"] == "timeout" and attrs(el)["durable.elicit.choice_made"] is False
        assert int(el["endTimeUnixNano"]) - int(el["startTimeUnixNano"]) == 1800 * 10**9
        recent = spans_of(durable("export", "t", "--format", "otlp", "--since", "1h").lines())
        assert [attrs(s)["durable.turn.seq"] for s in recent] == [2]
        assert len(spans_of(durable("export", "t", "--format", "otlp", "--since", "2026-01-01T10:15:00+00:00").lines())) == 2


def test_since_opens_no_session_updated_before_it(durable):
    from freezegun import freeze_time

    with freeze_time("2026-01-01T10:00:00Z"):
        durable("transcript", "append", "old", "--role", "user", "hi")
        path = durable("path", "old").out.strip()
    with freeze_time("2026-01-01T12:00:00Z"):
        durable("transcript", "append", "new", "--role", "user", "hi")
        with open(path, "r+b") as f:  # were it opened, export would report it corrupt (exit 7)
            f.write(b"not a database" * 100)
        r = durable("export", "--user", "alice", "--format", "otlp", "--since", "1h", "--json")
        assert r.status == 0, r.err
        assert [c["name"] for c in json.loads(r.err.splitlines()[-1])["changed"]] == ["new"]
        assert durable("export", "--user", "alice", "--format", "otlp").status == 7


@pytest.mark.parametrize("status", [404, 503, 302, 307, 304])  # a 3xx is not 2xx either: never followed, never "sent"
def test_an_endpoint_answering_other_than_2xx_is_exit_7_naming_the_status(durable, status, monkeypatch):
    import http.server
    import threading

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", "/elsewhere")  # the SDK's requests would follow it (302: as a GET)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        durable("transcript", "append", "s1", "--role", "user", "hi")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300")  # a 503 is retried until then
        r = durable("export", "s1", "--format", "otlp", "--endpoint", f"http://127.0.0.1:{server.server_port}/v1/traces")
        assert r.status == 7 and f"HTTP {status}; 0 spans were accepted" in r.err, r.err
    finally:
        server.shutdown()
        server.server_close()


def test_rows_before_the_first_user_row_are_its_input_with_content_only(durable):
    durable("transcript", "append", "sys", "--role", "system", "SYSTEM-PROMPT")
    durable("transcript", "append", "sys", "--role", "user", "hi")
    durable("transcript", "append", "sys", "--role", "user", "again")
    spans = spans_of(durable("export", "sys", "--format", "otlp", "--content").lines())
    assert [s["name"] for s in spans] == ["invoke_agent", "invoke_agent"]  # the system row makes no span
    inputs = [json.loads(attrs(s)["gen_ai.input.messages"]) for s in spans]
    assert [m["role"] for m in inputs[0]] == ["system", "user"] and [m["role"] for m in inputs[1]] == ["user"]


def test_a_slow_endpoint_delays_work_by_at_most_the_timeout(durable, durable_proc):
    """An endpoint that takes the connection and never answers: one warning, the prompt completed."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        assert durable("session", "prompt", "w", "one").status == 0
        assert durable("config", "set", "telemetry.timeout", "1s").status == 0
        env = {"DURABLE_TRACES": "work", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces"}
        started = time.monotonic()
        r = durable_proc("work", "w", "--once", "--json", "--command", "echo ok", env=env)
        assert r.status == 0 and r.lines()[0]["outcome"] == "completed", r.err
        assert time.monotonic() - started < 9.5  # start-up and the 1 s bound; without the bound the SDK waits its 10 s
        warnings = [line for line in r.err.splitlines() if line.startswith("durable: warning:")]
        assert len(warnings) == 1 and warnings[0].endswith(": timed out"), r.err
    finally:
        silent.close()


def test_otel_sdk_disabled_turns_live_spans_off(durable, monkeypatch):
    durable("session", "prompt", "w", "one")
    env = {"DURABLE_TRACES": "work", "OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    r = durable("work", "w", "--once", "--command", 'echo "tp=$TRACEPARENT"')
    assert r.status == 0 and "warning" not in r.err, r.err
    assert durable("transcript", "show", "w", "--json").json()[-1]["content"] == "tp="


def test_the_resource_is_durable_merged_as_resource_create_merges(durable, monkeypatch):
    """service.name and service.version stay durable's (Resource.create lets the attributes given win over the
    environment's); every other attribute of OTEL_RESOURCE_ATTRIBUTES is added; the scope is durable's."""
    from durable_cli import __version__

    durable("transcript", "append", "s1", "--role", "user", "hi")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "mine")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "openinference.project.name=p1,service.version=9")
    [line] = durable("export", "s1", "--format", "otlp").lines()
    rs = line["resourceSpans"][0]
    resource = {a["key"]: a["value"]["stringValue"] for a in rs["resource"]["attributes"]}
    assert resource["service.name"] == "durable" and resource["service.version"] == __version__
    assert resource["openinference.project.name"] == "p1"
    assert rs["scopeSpans"][0]["scope"] == {"name": "durable", "version": __version__}


def test_traceparent_without_an_endpoint_and_with_traces_off(durable, monkeypatch):
    """Traces on but no endpoint: CMD gets no TRACEPARENT (nothing is sent), the inherited one still dropped;
    traces off: work leaves CMD's environment as it found it."""
    from durable_cli.telemetry import otlp

    inherited = "00-11111111111111111111111111111111-2222222222222222-01"
    monkeypatch.setenv("TRACEPARENT", inherited)
    for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(v, raising=False)
    otlp._warned_once.clear()
    for traces, seen in (("work", "tp="), ("off", f"tp={inherited}")):
        monkeypatch.setenv("DURABLE_TRACES", traces)
        durable("session", "prompt", "w", "one")
        assert durable("work", "w", "--once", "--command", 'echo "tp=$TRACEPARENT"').status == 0
        assert durable("transcript", "show", "w", "--json").json()[-1]["content"] == seen
