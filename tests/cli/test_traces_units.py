"""Operation spans of the long-running commands (docs/reference/traces.md §15.6): `work` sends one `durable work`
span per prompt it handles, `mcp` one `durable mcp <tool>` per tool call, `ui` one `durable ui` per POST, and none
of them a span of the whole run; plus the alarms a wake fired and the time of remote requests. Received by the
loopback OTLP/HTTP endpoint of tests/cli/test_traces_operations.py."""

import os

import pytest

if os.environ.get("CI") != "true":  # in CI the otel extra is installed: a missing one fails collection
    pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra (pip install 'durable-cli[otel]') is not installed")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")

from tests.cli.test_traces import object_id
from tests.cli.test_traces_operations import attrs, receiver  # noqa: F401 - the fixture

WAKE_TIMES = ("durable.lock.wait_duration", "durable.wake.duration", "durable.work.duration", "durable.commit.duration")


def test_work_sends_one_span_per_prompt_and_none_for_the_run(durable, receiver):  # noqa: F811
    for text in ("one", "two"):
        assert durable("session", "prompt", "w", text).status == 0
    receiver.take()
    cmd = "cat >/dev/null; if [ \"$DURABLE_PROMPT_ID\" = 2 ]; then echo broke >&2; exit 3; fi; echo ok"
    r = durable("work", "w", "--command", cmd, "--wait", "0", "--attempts", "1")
    assert r.status == 0, r.err
    spans = receiver.take()
    work = [s for s in spans if s.name == "durable work"]
    assert len(work) == 2, [s.name for s in spans]  # one per prompt; none for the whole run
    oid = object_id(durable, "w")
    by_prompt = {attrs(s)["durable.prompt.id"]: attrs(s) for s in work}
    assert by_prompt[1]["durable.prompt.outcome"] == "completed" and by_prompt[2]["durable.prompt.outcome"] == "failed"
    for a in by_prompt.values():
        assert a["durable.command"] == "work" and a["durable.exit_status"] == 0 and "error.type" not in a
        assert a["durable.object.id"] == oid and a["durable.prompt.attempts"] == 1
        assert all(isinstance(a[k], float) for k in WAKE_TIMES) and a["durable.commit.duration"] > 0
    first, second = sorted(work, key=lambda s: attrs(s)["durable.prompt.id"])
    assert first.end_time_unix_nano <= second.start_time_unix_nano  # each from its take to its finish
    assert first.trace_id != second.trace_id
    # the prompts' own GenAI traces went out too (telemetry.traces = all includes work's live spans)
    assert sorted(s.name for s in spans if s.name == "invoke_agent") == ["invoke_agent", "invoke_agent"]


def test_a_wake_counts_the_alarms_it_fired(durable, receiver):  # noqa: F811
    assert durable("transcript", "append", "a", "--role", "user", "hi").status == 0
    r = durable("elicit", "ask", "a", "--prompt", "which?", "--timeout", "1s")
    assert r.status == 0, r.err
    assert [attrs(s)["durable.alarms.fired"] for s in receiver.take()] == [0, 0]
    import time

    time.sleep(1.2)  # the request's due time passes: the next wake fires its expiry
    assert durable("transcript", "recent", "a").status == 0
    [span] = receiver.take()
    assert attrs(span)["durable.alarms.fired"] == 1
    assert durable("transcript", "recent", "a").status == 0
    assert attrs(receiver.take()[0])["durable.alarms.fired"] == 0  # fired once


@pytest.mark.parametrize("backend", ["remote"])
def test_a_remote_command_has_the_time_of_its_requests(durable, backend, receiver):  # noqa: F811
    assert durable("transcript", "append", "r", "--role", "user", "hi").status == 0
    [span] = receiver.take()
    a = attrs(span)
    assert a["durable.backend"] == "remote" and isinstance(a["durable.remote.duration"], float)
    assert 0 < a["durable.remote.duration"] <= (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9
    assert "durable.wake.duration" not in a  # no local object was woken
