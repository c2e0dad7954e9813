"""Traces against a real receiver, Arize Phoenix, offline on 127.0.0.1 (docs/reference/traces.md §15).

One Phoenix server for the whole run (its start-up takes tens of seconds); each test sends to a project of its
own (OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=...). Phoenix's Python is DURABLE_TEST_PHOENIX_PYTHON
(a venv of its own: arize-phoenix pins versions the suite's venv holds at others), else this Python when it
can import phoenix; neither → skipped. Phoenix's start-up (70 s on a loaded 2-core machine) is why these run
with `-m soak`; tests/cli/test_traces.py is their short form (OTLP/JSON files, a closed port).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from tests.cli.test_traces import _make_session

pytestmark = pytest.mark.soak
if os.environ.get("CI") != "true":  # in CI the otel extra is installed: a missing one fails collection
    pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra (pip install 'durable-cli[otel]') is not installed")


def phoenix_python():
    given = os.environ.get("DURABLE_TEST_PHOENIX_PYTHON")
    if given:
        return given
    probe = subprocess.run([sys.executable, "-c", "import phoenix.server.main"], capture_output=True)
    return sys.executable if probe.returncode == 0 else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory):
    python = phoenix_python()
    if python is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Arize Phoenix must be installed in CI (.ci/run: DURABLE_TEST_PHOENIX_PYTHON)")
        pytest.skip("Arize Phoenix is not installed (set DURABLE_TEST_PHOENIX_PYTHON to a Python that has arize-phoenix)")
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = dict(os.environ, PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port), PHOENIX_GRPC_PORT=str(free_port()),
               PHOENIX_WORKING_DIR=str(work), PHOENIX_TELEMETRY_ENABLED="false", DO_NOT_TRACK="1")
    env.pop("PYTHONPATH", None)  # Phoenix's own venv, not the worktree's
    log = open(work / "server.log", "wb")
    proc = subprocess.Popen([python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"Phoenix did not start: {(work / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def fresh_session(durable):
    """The session of tests/cli/test_traces.py made anew in this test's home: never its per-worker copy (same secret,
    same object id, so the same span ids), which Phoenix would take for spans it already holds in another project."""
    return _make_session(durable, "s1")


@pytest.fixture
def project(monkeypatch):
    name = f"t-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={name}")
    return name


def spans_in(phoenix, project, want, timeout=180):
    """Phoenix ingests asynchronously: the project's spans once there are WANT of them (or what is there at the end)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            spans = get(f"{phoenix}/v1/projects/{project}/spans?limit=1000")["data"]
        except OSError:
            spans = []
        if len(spans) >= want or time.monotonic() > deadline:
            return spans
        time.sleep(0.25)


def test_exported_sessions_are_phoenix_sessions(durable, phoenix, project):
    fresh_session(durable)
    oid = durable("export", "s1").lines()[0]["id"]
    r = durable("export", "s1", "--format", "otlp", "--endpoint", f"{phoenix}/v1/traces", "--json")
    assert r.status == 0, r.err
    assert json.loads(r.err.splitlines()[-1])["spans"] == 7
    spans = spans_in(phoenix, project, 7)
    assert len(spans) == 7
    by_id = {s["context"]["span_id"]: s for s in spans}
    roots = [s for s in spans if s["parent_id"] is None]
    assert sorted(s["name"] for s in roots) == ["invoke_agent"] * 3
    for s in spans:
        assert s["attributes"]["gen_ai.conversation.id"] == oid
        if s["parent_id"] is not None:
            parent = by_id[s["parent_id"]]
            assert parent["name"] == "invoke_agent" and parent["context"]["trace_id"] == s["context"]["trace_id"]
    chat = [s for s in spans if s["name"] == "chat gpt-x"]
    assert sorted(s["attributes"]["gen_ai.usage.input_tokens"] for s in chat) == [10, 20]
    failed = next(s for s in roots if s["attributes"].get("durable.prompt.outcome") == "failed")
    assert failed["status_code"] == "ERROR"
    first = next(s for s in roots if s["attributes"].get("durable.prompt.outcome") == "completed")
    assert first["status_code"] == "OK" and first["end_time"] >= first["start_time"]
    # Phoenix groups the traces into one session: the conversation id
    sessions = get(f"{phoenix}/v1/projects/{project}/sessions")["data"]
    assert [s["session_id"] for s in sessions] == [oid] and len(sessions[0]["traces"]) == 3
    # without --content, Phoenix holds no text of the session
    assert "SECRET" not in json.dumps(spans)
    # exporting again adds nothing
    assert durable("export", "s1", "--format", "otlp", "--endpoint", f"{phoenix}/v1/traces").status == 0
    time.sleep(1)
    assert len(spans_in(phoenix, project, 8, timeout=3)) == 7


def test_content_reaches_phoenix_only_when_asked(durable, phoenix, project, monkeypatch):
    fresh_session(durable)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)  # --send: the standard variable, /v1/traces appended
    assert durable("export", "s1", "--format", "otlp", "--send", "--content").status == 0
    spans = spans_in(phoenix, project, 7)
    assert len(spans) == 7, [(s["name"], s["attributes"].get("durable.prompt.id")) for s in spans]
    tool = next(s for s in spans if s["name"] == "execute_tool ls")
    assert tool["attributes"]["gen_ai.tool.call.result"] == "SECRET-RESULT"
    first = next(s for s in spans if s["name"] == "invoke_agent" and s["attributes"].get("durable.prompt.id") == 1)
    assert first["attributes"]["durable.session.name"] == "s1" and first["attributes"]["user.id"] == "alice"


def test_work_sends_live_spans_with_real_durations(durable, durable_proc, phoenix, project):
    assert durable("session", "prompt", "w", "hi").status == 0
    env = {"DURABLE_TRACES": "work", "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix}
    r = durable_proc("work", "w", "--once", "--model", "gpt-live", "--command", "sleep 0.3; echo ok", env=env)
    assert r.status == 0 and "warning" not in r.err, r.err
    spans = spans_in(phoenix, project, 2)
    assert sorted(s["name"] for s in spans) == ["chat gpt-live", "invoke_agent"]
    chat = next(s for s in spans if s["name"] == "chat gpt-live")
    assert chat["attributes"]["durable.timing"] == "measured"
    from datetime import datetime

    took = datetime.fromisoformat(chat["end_time"]) - datetime.fromisoformat(chat["start_time"])
    assert took.total_seconds() >= 0.3
    # a later batch export sends the same spans, not new ones
    assert durable("export", "w", "--format", "otlp", "--endpoint", f"{phoenix}/v1/traces").status == 0
    time.sleep(1)
    assert len(spans_in(phoenix, project, 3, timeout=3)) == 2


def test_operation_spans_of_durable_calls_inside_work_join_the_prompt(durable, durable_proc, phoenix, project):
    """telemetry.traces = all (§15.6): a `durable` call made by CMD is a child of the prompt's invoke_agent span."""
    assert durable("session", "prompt", "w", "hi").status == 0
    # Phoenix on a loaded machine can take over the default 1 s to answer: a warning here would be its load, not ours
    assert durable("config", "set", "telemetry.timeout", "10s").status == 0
    env = {"DURABLE_TRACES": "all", "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix}
    inner = f"{sys.executable} -m durable_cli transcript show w >/dev/null; {sys.executable} -m durable_cli transcript show nope"
    r = durable_proc("work", "w", "--once", "--command", f"{inner}; echo ok", env=env)
    assert r.status == 0 and "warning" not in r.err, r.err
    spans = spans_in(phoenix, project, 5)
    names = sorted(s["name"] for s in spans)
    assert names == ["chat", "durable transcript show", "durable transcript show", "durable work", "invoke_agent"], names
    agent = next(s for s in spans if s["name"] == "invoke_agent")
    shows = [s for s in spans if s["name"] == "durable transcript show"]
    for show in shows:
        assert show["parent_id"] == agent["context"]["span_id"]
        assert show["context"]["trace_id"] == agent["context"]["trace_id"]
    ok = next(s for s in shows if s["attributes"]["durable.exit_status"] == 0)
    assert ok["attributes"]["durable.object.id"] == durable("export", "w").lines()[0]["id"]
    failed = next(s for s in shows if s["attributes"]["durable.exit_status"] == 3)
    assert failed["attributes"]["error.type"] == "not_found" and failed["status_code"] == "UNSET"
    work = next(s for s in spans if s["name"] == "durable work")  # the prompt's own span, not the run's (§15.6)
    assert work["attributes"]["durable.prompt.id"] == 1 and work["attributes"]["durable.prompt.outcome"] == "completed"
