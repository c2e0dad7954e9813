"""Operation spans (docs/reference/traces.md §15.6): with `telemetry.traces = all` every command run sends one span,
received here by a loopback OTLP/HTTP endpoint that decodes with the SDK's own protobuf messages (Phoenix, the
receiver of record, is in tests/cli/test_traces_phoenix.py)."""

import http.server
import os
import threading

import pytest

if os.environ.get("CI") != "true":  # in CI the otel extra is installed: a missing one fails collection
    pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra (pip install 'durable-cli[otel]') is not installed")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

from tests.cli.test_traces import free_port, object_id


class Receiver:
    """OTLP/HTTP traces on 127.0.0.1: every request's spans, decoded, and the raw bodies."""

    def __init__(self):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans, self.bodies = [], []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest.FromString(body)
                receiver.bodies.append(body)
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        receiver.spans.extend(ss.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/traces"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def take(self):
        spans, self.spans = self.spans, []
        return spans

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(monkeypatch):
    r = Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", r.url)
    monkeypatch.setenv("DURABLE_TRACES", "all")
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
    monkeypatch.delenv("TRACEPARENT", raising=False)
    yield r
    r.close()


def attrs(span):
    out = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def test_a_command_sends_one_span_with_its_wake_times(durable, receiver):
    r = durable("transcript", "append", "SECRET-NAME", "--role", "user", "SECRET-TEXT")
    assert r.status == 0 and r.err == "", r.err
    [span] = receiver.take()
    a = attrs(span)
    assert span.name == "durable transcript append" and span.kind == 1 and span.status.code == 0  # INTERNAL, UNSET
    assert not span.parent_span_id and len(span.trace_id) == 16 and len(span.span_id) == 8
    assert a["durable.command"] == "transcript append" and a["durable.exit_status"] == 0 and a["durable.backend"] == "local"
    assert "error.type" not in a
    assert a["durable.object.id"] == object_id(durable, "SECRET-NAME")
    for key in ("durable.lock.wait_duration", "durable.wake.duration", "durable.work.duration", "durable.commit.duration"):
        assert isinstance(a[key], float) and 0 <= a[key] < 60, key
    assert a["durable.commit.duration"] > 0  # the append committed (fsync'd)
    assert a["durable.object.size"] > 4096  # the file and its WAL
    assert span.end_time_unix_nano > span.start_time_unix_nano
    assert not any(b"SECRET" in body for body in receiver.bodies)  # no NAME, no content
    receiver.take()
    receiver.bodies.clear()

    # a command over many objects counts them; each run is a trace of its own
    durable("transcript", "append", "other", "--role", "user", "hi")
    receiver.take()
    assert durable("ls").status == 0
    [ls] = receiver.take()
    assert ls.name == "durable ls" and "durable.object.id" not in attrs(ls)
    assert ls.trace_id != span.trace_id


def test_an_error_is_its_code_and_exit_status_and_a_fault_is_error(durable, receiver, monkeypatch):
    missing = durable("transcript", "show", "nope")
    assert missing.status == 3
    [span] = receiver.take()
    a = attrs(span)
    assert span.name == "durable transcript show" and a["durable.exit_status"] == 3 and a["error.type"] == "not_found"
    assert "durable.object.id" not in a and span.status.code == 0  # not a fault: UNSET

    assert durable("config", "set", "telemetry.traces", "sometimes").status == 2
    [bad] = receiver.take()
    assert attrs(bad)["error.type"] == "invalid_input" and bad.name == "durable config set"

    durable("transcript", "append", "s1", "--role", "user", "hi")
    receiver.take()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300")  # the export's own requests: no minutes of retries
    fault = durable("export", "s1", "--format", "otlp", "--endpoint", f"http://127.0.0.1:{free_port()}/v1/traces")
    assert fault.status == 7
    spans = receiver.take()
    assert [s.name for s in spans] == ["durable export"]
    assert attrs(spans[0])["error.type"] == "storage" and spans[0].status.code == 2  # ERROR


def test_a_traceparent_makes_it_a_child(durable, receiver, monkeypatch):
    monkeypatch.setenv("TRACEPARENT", "00-11111111111111111111111111111111-2222222222222222-01")
    assert durable("transcript", "append", "s1", "--role", "user", "hi").status == 0
    [span] = receiver.take()
    assert span.trace_id.hex() == "1" * 32 and span.parent_span_id.hex() == "2" * 16


def test_only_all_sends_operation_spans(durable, receiver, monkeypatch):
    monkeypatch.setenv("DURABLE_TRACES", "work")
    assert durable("transcript", "append", "s1", "--role", "user", "hi").status == 0
    monkeypatch.setenv("DURABLE_TRACES", "all")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert durable("transcript", "append", "s1", "--role", "user", "hi").status == 0
    assert receiver.take() == []


def test_a_down_endpoint_changes_no_outcome_one_warning(durable_proc, tmp_path):
    env = {"DURABLE_TRACES": "all", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{free_port()}/v1/traces"}
    r = durable_proc("transcript", "append", "s1", "--role", "user", "hi", env=env)
    assert r.status == 0 and r.out == "1\n"
    assert r.err.splitlines() == [f"durable: warning: traces not sent to {env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']}: connection refused"]
    missing = durable_proc("transcript", "show", "nope", env=env)
    assert missing.status == 3 and missing.err.splitlines()[0].startswith("durable: error:")
    assert len(missing.err.splitlines()) == 2 and "traces not sent" in missing.err.splitlines()[1]


def test_memory_commands_are_memory_operations(durable, receiver):
    def one(*args):
        assert durable(*args).status == 0
        [span] = receiver.take()
        return span.name, attrs(span)

    name, a = one("memory", "set", "tz", "SECRET-VALUE", "--source", "model")
    assert name == "durable memory set" and a["gen_ai.operation.name"] == "create_memory"
    assert a["durable.memory.source"] == "model" and a["durable.memory.confirmed"] is False
    assert "durable.memory.key" not in a and not any(b"SECRET" in body for body in receiver.bodies)
    assert one("memory", "set", "tz", "other")[1]["gen_ai.operation.name"] == "update_memory"
    name, a = one("memory", "confirm", "tz")
    assert a["gen_ai.operation.name"] == "update_memory" and a["durable.memory.confirmed"] is True
    assert one("memory", "forget", "tz")[1]["gen_ai.operation.name"] == "delete_memory"
    assert "gen_ai.operation.name" not in one("memory", "list")[1]
    # with telemetry.content, the key and value too
    assert durable("config", "set", "telemetry.content", "true").status == 0
    receiver.take()
    a = one("memory", "set", "tz", "Europe/Paris")[1]
    assert a["durable.memory.key"] == "tz" and a["durable.memory.value"] == "Europe/Paris"


@pytest.mark.parametrize("backend", ["remote"])
def test_a_remote_command_names_the_object_it_woke(durable, backend, receiver):
    """Remotely the object id is an HMAC only the Worker computes: its answer from an object carries it
    (x-durable-object-id), never for a NAME not found or for an object the caller may not see."""
    assert durable("transcript", "append", "s1", "--role", "user", "hi").status == 0
    [append] = receiver.take()
    a = attrs(append)
    assert a["durable.backend"] == "remote" and a["durable.remote.duration"] > 0
    oid = object_id(durable, "s1")
    assert a["durable.object.id"] == oid
    receiver.take()
    assert durable("elicit", "answer", "s1", "99", "--choice", "x").status == 3  # the object woke; no request 99
    assert attrs(receiver.take()[0])["durable.object.id"] == oid
    assert durable("transcript", "show", "nope").status == 3
    assert durable("--tenant", "acme", "transcript", "append", "t1", "--role", "user", "hi").status == 0
    receiver.take()
    assert durable("--tenant", "acme", "--as", "bob", "transcript", "show", "t1").status == 3  # not a participant
    for span in receiver.take():
        assert "durable.object.id" not in attrs(span), span.name
    assert durable("session", "prompt", "s1", "hello", "--request-id", "r1").status == 0
    assert durable("session", "prompt", "s1", "hello", "--request-id", "r1").status == 0  # a replay
    assert [attrs(s)["durable.object.id"] for s in receiver.take()] == [oid, oid]


def test_a_step_passing_on_its_cmds_status_is_no_durable_error(durable, receiver):
    """`durable step` exits with CMD's own status (run or replayed, 75, 128+N): no §4 code, so no error.type and
    never a fault; a CMD ended by SIGTERM (143) still sends the span (durable itself was not interrupted)."""
    assert durable("session", "prompt", "s1", "go").status == 0 and durable("session", "next", "s1").status == 0
    receiver.take()
    for key, script, status in (("a", "exit 3", 3), ("a", "exit 3", 3), ("b", "exit 1", 1), ("c", "exit 75", 75),
                                ("d", "kill -TERM $$", 143)):
        assert durable("step", "s1", key, "--", "sh", "-c", script).status == status
        [span] = receiver.take()
        a = attrs(span)
        assert a["durable.exit_status"] == status and "error.type" not in a and span.status.code == 0, (key, a)
        assert a["durable.object.id"] == object_id(durable, "s1")
        receiver.take()
    assert durable("step", "s1", "e", "--", "/nonexistent/cmd").status == 2  # durable's own refusal keeps its code
    assert attrs(receiver.take()[0])["error.type"] == "invalid_input"
