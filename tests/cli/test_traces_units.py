"""Operation spans of the long-running commands (docs/reference/traces.md §15.6): `work` sends one `durable work`
span per prompt it handles, `mcp` one `durable mcp <tool>` per tool call, `ui` one `durable ui` per POST, and none
of them a span of the whole run; plus the alarms a wake fired and the time of remote requests. Received by the
loopback OTLP/HTTP endpoint of tests/cli/test_traces_operations.py."""

import os
import sys

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
    # a run that handled no prompt sends its run's span, as every command does
    receiver.take()  # object_id's export
    assert durable("work", "w", "--command", cmd, "--wait", "0").status == 9
    [idle] = receiver.take()
    assert idle.name == "durable work" and attrs(idle)["error.type"] == "timeout" and "durable.prompt.id" not in attrs(idle)


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
    # work's span of a prompt holds that prompt's requests (the take, renewals, the finish), routed per unit
    assert durable("session", "prompt", "r", "go").status == 0
    receiver.take()
    assert durable("work", "r", "--once", "--command", "cat >/dev/null; echo ok").status == 0
    [work] = [s for s in receiver.take() if s.name == "durable work"]
    a = attrs(work)
    assert a["durable.backend"] == "remote" and a["durable.prompt.outcome"] == "completed"
    assert 0 < a["durable.remote.duration"] <= (work.end_time_unix_nano - work.start_time_unix_nano) / 1e9


@pytest.mark.soak  # a real server process: about 8 s on a loaded machine; the short form below runs in the suite
def test_mcp_sends_one_span_per_tool_call(durable, receiver, monkeypatch):  # noqa: F811
    pytest.importorskip("mcp_types")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("DURABLE_", "OTEL_")) or k == "PYTHONPATH"}
    server = StdioServerParameters(command=sys.executable, args=["-m", "durable_cli", "mcp"], env=env)

    async def main():
        async with Client(server, mode="legacy") as c:
            for tool, arguments in (("transcript_append", {"name": "SECRET-NAME", "role": "user", "text": "SECRET-TEXT"}),
                                    ("memory_set", {"key": "tz", "value": "SECRET-VALUE"}),
                                    ("memory_set", {"key": "tz", "value": "other"}),
                                    ("session_show", {"name": "nope"})):
                await c.call_tool(tool, arguments)

    anyio.run(main)
    spans = receiver.take()
    assert [s.name for s in spans] == ["durable mcp transcript_append", "durable mcp memory_set", "durable mcp memory_set",
                                       "durable mcp session_show"]  # one per call, none for the server's run
    append, created, updated, missing = (attrs(s) for s in spans)
    assert append["durable.command"] == "mcp transcript_append" and append["durable.exit_status"] == 0
    assert append["durable.object.id"] == object_id(durable, "SECRET-NAME") and append["durable.commit.duration"] > 0
    assert created["gen_ai.operation.name"] == "create_memory" and updated["gen_ai.operation.name"] == "update_memory"
    assert created["durable.memory.source"] == "model" and created["durable.memory.confirmed"] is False
    assert missing["durable.exit_status"] == 3 and missing["error.type"] == "not_found" and spans[3].status.code == 0
    assert "durable.object.id" not in missing
    assert len({s.trace_id for s in spans}) == 4
    assert not any(b"SECRET" in body for body in receiver.bodies)  # no NAME, no content


def test_ui_sends_one_span_per_post_and_none_per_page(tmp_path, receiver):  # noqa: F811
    pytest.importorskip("starlette")
    from tests.ui.server import UI
    from tests.waiting import wait_until

    ui = UI(tmp_path)
    try:
        ui.cli("memory", "set", "timezone", "SECRET-VALUE", "--source", "model")
        csrf = ui.csrf  # pages: no span of their own
        assert ui.get("/").status == 200
        receiver.take()
        receiver.bodies.clear()
        assert ui.post("/memory/confirm", {"key": "timezone", "csrf": csrf}).status == 303
        assert ui.post("/memory/confirm", {"key": "never-set", "csrf": csrf}).status == 404
        assert ui.post("/memory/confirm", {"key": "timezone", "csrf": "forged"}).status == 403
        spans = wait_until(lambda: len(receiver.spans) >= 3 and receiver.take(), "the three POSTs' spans", timeout=30)
        assert ui.stop() == 143
    finally:
        if ui.proc.poll() is None:
            ui.stop()
    assert receiver.take() == []  # nothing for pages, and nothing at its end
    assert [s.name for s in spans] == ["durable ui"] * 3
    done, missing, forged = (attrs(s) for s in spans)
    assert done["durable.command"] == "ui" and done["durable.exit_status"] == 0 and "error.type" not in done
    assert len(done["durable.object.id"]) == 64 and done["durable.commit.duration"] > 0
    assert missing["durable.exit_status"] == 3 and missing["error.type"] == "not_found"
    assert forged["durable.exit_status"] == 5 and forged["error.type"] == "permission_denied"
    assert "durable.object.id" not in forged and not any(b"SECRET" in body for body in receiver.bodies)


def test_mcp_tool_calls_each_have_their_own_span_and_wakes(durable, receiver):  # noqa: F811
    """The short form of the soak test above, in this process: DurableMCP's call_tool as the server calls it, two
    calls at once on two sessions (each span holds its own call's object), a refusal, a memory operation."""
    pytest.importorskip("mcp_types")
    import anyio
    import mcp_types as types

    from durable_cli import guard
    from durable_cli.integrations.mcp import DurableMCP
    from durable_cli.library import Store
    from durable_cli.telemetry import operation

    store = Store()
    units = operation.Units(store.config, remote=False)
    saved, guard.wakes = guard.wakes, operation.Routed()
    app = DurableMCP(store, units)

    async def call(tool, **arguments):
        return await app.call_tool(None, types.CallToolRequestParams(name=tool, arguments=arguments))

    async def main():
        async with anyio.create_task_group() as tg:
            for name in ("one", "two"):
                tg.start_soon(lambda n=name: call("transcript_append", name=n, role="user", text="SECRET-TEXT"))
        await call("memory_set", key="tz", value="SECRET-VALUE")
        await call("session_show", name="nope")
        await call("no_such_tool")

    try:
        anyio.run(main)
        units.close()
    finally:
        guard.wakes = saved
    spans = receiver.take()
    names = [s.name for s in spans]
    assert sorted(names[:2]) == ["durable mcp transcript_append"] * 2
    assert names[2:] == ["durable mcp memory_set", "durable mcp session_show", "durable mcp"]
    appended = {attrs(s)["durable.object.id"] for s in spans[:2]}
    assert appended == {object_id(durable, "one"), object_id(durable, "two")}  # each call its own wakes
    assert all("durable.objects" not in attrs(s) for s in spans)
    memory, missing, unknown = (attrs(s) for s in spans[2:])
    assert memory["gen_ai.operation.name"] == "create_memory" and memory["durable.exit_status"] == 0
    assert missing["error.type"] == "not_found" and missing["durable.exit_status"] == 3
    assert unknown["error.type"] == "invalid_input" and unknown["durable.command"] == "mcp"
    assert not any(b"SECRET" in body for body in receiver.bodies)
