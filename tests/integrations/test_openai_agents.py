"""DurableSession behaves as the Agents SDK's own SQLiteSession (docs/reference/integrations.md §12): every equal-behaviour
check runs against both stores and requires the same result; then what only durable adds (rows
readable from the CLI, external_id, CLI-written rows read back as items, archived sessions)."""

import asyncio
import copy
import json
import os

import pytest

from tests.integrations.conftest import need

# "durable-remote": DurableSession over the remote backend (docs/reference/remote.md §13), a fresh Worker of the test's own
STORES = ("sqlite", "durable", "durable-remote")


@pytest.fixture
def agents():
    return need("agents", "openai-agents")


def use_remote(request, monkeypatch):
    """DURABLE_REMOTE and DURABLE_TOKEN naming a fresh, empty Worker (tests/conftest.py's pool), acting as alice."""
    from tests.remote.conftest import require_workerd

    require_workerd()
    slot = request.getfixturevalue("_remote_pool").take()
    monkeypatch.setenv("DURABLE_REMOTE", slot.url)
    monkeypatch.setenv("DURABLE_TOKEN", slot.admin_token)
    return slot


@pytest.fixture(params=STORES)
def open_session(request, agents, tmp_path, home, monkeypatch):
    """A factory: session id -> a session of the store under test (each call a new instance)."""
    made = []
    if request.param == "durable-remote":
        use_remote(request, monkeypatch)

    def make(session_id):
        if request.param == "sqlite":
            s = agents.SQLiteSession(session_id, db_path=tmp_path / "reference.db")
        else:
            from durable_cli.integrations.openai_agents import DurableSession

            s = DurableSession(session_id, home=home)
            assert getattr(s.store, "remote", False) == (request.param == "durable-remote")
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def run(coro):
    return asyncio.run(coro)


def user(text):
    return {"role": "user", "content": text}


def assistant(text, n):
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call(n):
    return {"type": "function_call", "call_id": f"call_{n}", "name": "add", "arguments": json.dumps({"a": n, "b": 1})}


def output(n):
    return {"type": "function_call_output", "call_id": f"call_{n}", "output": str(n + 1)}


HISTORY = [user("what is 1+1?"), call(1), output(1), assistant("2", 1), user("thanks"),
           {"type": "reasoning", "id": "rs_1", "summary": []}, assistant("you're welcome", 2)]


def test_items_come_back_in_the_order_they_were_added(open_session):
    s = open_session("chat-1")
    run(s.add_items(HISTORY[:1]))
    run(s.add_items(HISTORY[1:4]))
    run(s.add_items([]))
    run(s.add_items(HISTORY[4:]))
    assert run(s.get_items()) == HISTORY


@pytest.mark.parametrize("limit", [0, 1, 3, len(HISTORY), len(HISTORY) + 5, None, -1])
def test_limit_edge_cases(open_session, limit):
    s = open_session("chat-1")
    assert run(s.get_items(limit)) == []
    run(s.add_items(HISTORY))
    expected = HISTORY if limit is None or limit < 0 else HISTORY[max(len(HISTORY) - limit, 0):] if limit else []
    assert run(s.get_items(limit)) == expected


def test_pop_returns_the_newest_item_and_none_when_empty(open_session):
    s = open_session("chat-1")
    assert run(s.pop_item()) is None
    run(s.add_items(HISTORY[:3]))
    assert run(s.pop_item()) == HISTORY[2]
    assert run(s.get_items()) == HISTORY[:2]
    assert run(s.pop_item()) == HISTORY[1]
    assert run(s.pop_item()) == HISTORY[0]
    assert run(s.pop_item()) is None
    assert run(s.get_items()) == []


def test_clear_empties_the_session_which_can_be_used_again(open_session):
    s = open_session("chat-1")
    run(s.clear_session())  # clearing a session that was never written is fine
    run(s.add_items(HISTORY))
    run(s.clear_session())
    assert run(s.get_items()) == []
    assert run(s.pop_item()) is None
    run(s.add_items(HISTORY[:2]))
    assert run(s.get_items()) == HISTORY[:2]


@pytest.mark.parametrize("other", ["chat-2", "", " chat-1", "~chat-1", "x" * 201, "chat\n1"])
def test_two_ids_are_isolated(open_session, other):
    a, b = open_session("chat-1"), open_session(other)
    run(a.add_items(HISTORY[:2]))
    run(b.add_items(HISTORY[3:5]))
    assert run(a.get_items()) == HISTORY[:2]
    assert run(b.get_items()) == HISTORY[3:5]
    run(b.clear_session())
    assert run(a.get_items()) == HISTORY[:2]


def test_two_instances_on_one_id_see_each_other(open_session):
    a, b = open_session("chat-1"), open_session("chat-1")
    run(a.add_items(HISTORY[:2]))
    assert run(b.get_items()) == HISTORY[:2]
    run(b.add_items(HISTORY[2:4]))
    assert run(a.pop_item()) == HISTORY[3]
    assert run(b.get_items()) == HISTORY[:3]


def test_concurrent_writers_on_one_id_lose_nothing(open_session):
    a, b = open_session("chat-1"), open_session("chat-1")

    async def both():
        await asyncio.gather(*(s.add_items([user(f"{tag}{i}")]) for i in range(10) for tag, s in (("a", a), ("b", b))))

    run(both())
    items = run(a.get_items())
    assert sorted(i["content"] for i in items) == sorted(f"{t}{i}" for t in "ab" for i in range(10))


def test_concurrent_calls_on_one_instance_each_get_their_own_answer(open_session):
    s = open_session("chat-1")
    run(s.add_items([user(f"m{i}") for i in range(12)]))
    limits = [1 + i % 12 for i in range(48)]

    async def many():
        return await asyncio.gather(*(s.get_items(n) for n in limits))

    got = run(many())
    assert [[i["content"] for i in items] for items in got] == [[f"m{i}" for i in range(12 - n, 12)] for n in limits]


def test_a_failing_batch_stores_nothing(open_session):
    s = open_session("chat-1")
    run(s.add_items(HISTORY[:2]))
    with pytest.raises(Exception):
        run(s.add_items([user("kept?"), {"role": "user", "content": object()}]))  # not JSON
    assert run(s.get_items()) == HISTORY[:2]


# -- Runner with a scripted model: three turns of a function tool call, then an answer --------------

def scripted_model(agents):
    from agents.models.interface import Model
    from openai.types.responses import ResponseCompletedEvent, ResponseFunctionToolCall, ResponseOutputItemDoneEvent, ResponseOutputMessage, ResponseOutputText

    class Scripted(Model):
        """Answers turn N with a call of add(N, 1), then with the text "N+1"; records every input."""

        def __init__(self):
            self.inputs = []
            self.outputs = []
            for n in range(1, 4):
                self.outputs.append([ResponseFunctionToolCall(id=f"fc_{n}", call_id=f"call_{n}", type="function_call",
                                                              name="add", arguments=json.dumps({"a": n, "b": 1}))])
                self.outputs.append([ResponseOutputMessage(
                    id=f"msg_{n}", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text=f"{n}+1 is {n + 1}", annotations=[])])])

        def _next(self, input):
            self.inputs.append(copy.deepcopy(input))
            return self.outputs.pop(0)

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                               tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
            from agents.items import ModelResponse
            from agents.usage import Usage

            return ModelResponse(output=self._next(input), usage=Usage(), response_id=None)

        async def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                                  tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
            from openai.types.responses import Response

            output = self._next(input)
            for i, item in enumerate(output):
                yield ResponseOutputItemDoneEvent(type="response.output_item.done", item=item, output_index=i,
                                                  sequence_number=i)
            response = Response(id="resp_1", created_at=0, model="scripted", object="response", output=output,
                                tool_choice="auto", tools=[], parallel_tool_calls=False)
            yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=len(output))

    return Scripted()


def three_turns(agents, session, streamed):
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    model = scripted_model(agents)
    agent = agents.Agent(name="calc", instructions="You add numbers.", model=model, tools=[add])
    finals = []

    async def go():
        for n in range(1, 4):
            if streamed:
                result = agents.Runner.run_streamed(agent, f"what is {n}+1?", session=session)
                async for _ in result.stream_events():
                    pass
            else:
                result = await agents.Runner.run(agent, f"what is {n}+1?", session=session)
            finals.append(result.final_output)

    run(go())
    return finals, model.inputs, run(session.get_items())


@pytest.mark.both_backends
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_runner_three_turns_give_equal_items_and_equal_model_inputs(agents, home, tmp_path, streamed, durable):
    from durable_cli.integrations.openai_agents import DurableSession

    reference = three_turns(agents, agents.SQLiteSession("calc", db_path=tmp_path / "reference.db"), streamed)
    ours = three_turns(agents, DurableSession("calc", home=home), streamed)
    assert ours[0] == reference[0] == ["1+1 is 2", "2+1 is 3", "3+1 is 4"]
    assert ours[1] == reference[1]  # what the model was given, turn by turn
    assert ours[2] == reference[2]  # what the session holds
    assert len(ours[1]) == 6 and len(ours[2]) == 12  # per turn: question, call, result, answer


# -- what durable adds ------------------------------------------------------------------------------

@pytest.mark.both_backends
def test_an_sdk_conversation_reads_as_a_conversation_in_the_cli(agents, home, durable):
    from durable_cli.integrations.openai_agents import DurableSession

    three_turns(agents, DurableSession("calc", home=home), streamed=False)
    rows = durable("transcript", "show", "calc", "--json").json()
    assert [r["role"] for r in rows[:4]] == ["user", "assistant", "tool", "assistant"]
    assert rows[0]["content"] == "what is 1+1?"
    assert rows[1]["content"] == "" and rows[1]["tool_calls"] == [{"id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 1}'}]
    assert (rows[2]["call_id"], rows[2]["content"]) == ("call_1", "2")
    assert rows[3]["content"] == "1+1 is 2"
    assert all(r["data"] is not None for r in rows)
    messages = durable("transcript", "recent", "calc", "--format", "messages").json()
    assert messages[:4] == [
        {"role": "user", "content": "what is 1+1?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "2"},
        {"role": "assistant", "content": "1+1 is 2"},
    ]
    text = durable("transcript", "show", "calc").out
    assert "what is 3+1?" in text and "3+1 is 4" in text


@pytest.mark.both_backends
@pytest.mark.cross_object
def test_external_id_in_session_show_and_ls(agents, home, durable):
    from durable_cli.integrations import object_name
    from durable_cli.integrations.openai_agents import DurableSession

    odd = "  user 7 / chat\t42"
    run(DurableSession(odd, home=home).add_items([user("hi")]))
    run(DurableSession("plain", home=home).add_items([user("hi")]))
    durable("session", "create", "by-hand")
    name = object_name(odd)
    assert name.startswith("~") and len(name) == 33
    assert durable("session", "show", name, "--json").json()["external_id"] == odd
    assert durable("session", "show", "plain", "--json").json()["external_id"] == "plain"
    listed = {r["name"]: r["external_id"] for r in durable("ls", "--json").json()}
    assert listed == {name: odd, "plain": "plain", "by-hand": None}


def test_reading_a_missing_session_creates_nothing(agents, home):
    from durable_cli.integrations.openai_agents import DurableSession

    s = DurableSession("nobody", home=home)
    assert run(s.get_items()) == [] and run(s.get_items(3)) == []
    assert run(s.pop_item()) is None
    run(s.clear_session())
    run(s.add_items([]))
    made = [os.path.join(b, f) for b, _, fs in os.walk(home) for f in fs] if home.exists() else []
    assert not [f for f in made if f.endswith((".sqlite3", ".lock"))], made


@pytest.mark.both_backends
@pytest.mark.cross_object
def test_reading_a_missing_session_lists_no_object(agents, home, durable):
    from durable_cli.integrations.openai_agents import DurableSession

    s = DurableSession("nobody", home=home)
    assert run(s.get_items()) == [] and run(s.get_items(3)) == [] and run(s.pop_item()) is None
    run(s.clear_session())
    run(s.add_items([]))
    assert durable("ls", "--json").json() == []
    assert durable("session", "show", "nobody").status == 3


@pytest.mark.both_backends
def test_rows_written_without_data_come_back_as_sdk_items(agents, home, durable):
    from durable_cli.integrations.openai_agents import DurableSession

    durable("transcript", "append", "mixed", "--role", "system", "be brief")
    durable("transcript", "append", "mixed", "--role", "user", "what is 2+2?")
    durable("transcript", "append", "mixed", "--role", "assistant", "let me add",
            "--tool-calls", '[{"id": "c1", "name": "add", "arguments": "{\\"a\\": 2}"}]')
    durable("transcript", "append", "mixed", "--role", "tool", "4", "--call-id", "c1", "--name", "add")
    durable("transcript", "append", "mixed", "--role", "assistant", "4")
    s = DurableSession("mixed", home=home)
    run(s.add_items([user("and 3+3?")]))
    assert run(s.get_items()) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "what is 2+2?"},
        {"role": "assistant", "content": "let me add"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "4"},
        {"role": "assistant", "content": "4"},
        user("and 3+3?"),
    ]
    assert run(s.get_items(2)) == [{"role": "assistant", "content": "4"}, user("and 3+3?")]
    durable("transcript", "summarize", "mixed", "--through", "5", "--text", "2+2 is 4")
    assert run(s.get_items()) == [{"role": "system", "content": "be brief"}, {"role": "system", "content": "2+2 is 4"},
                                  user("and 3+3?")]
    durable("transcript", "redact", "mixed", "6")
    assert run(s.pop_item()) == {"role": "user", "content": "[redacted]"}
    assert run(s.pop_item()) == {"role": "system", "content": "2+2 is 4"}  # popping a summary brings its rows back
    assert len(run(s.get_items())) == 6


@pytest.mark.both_backends
def test_writing_to_an_archived_session_is_a_conflict(agents, home, durable):
    from durable_cli import DurableError
    from durable_cli.integrations.openai_agents import DurableSession

    s = DurableSession("done", home=home)
    run(s.add_items(HISTORY[:2]))
    assert durable("session", "archive", "done").status == 0
    for attempt in (lambda: s.add_items([user("more")]), s.pop_item, s.clear_session):
        with pytest.raises(DurableError) as e:
            run(attempt())
        assert e.value.code == "conflict"
    assert run(s.get_items()) == HISTORY[:2]  # reading still works


@pytest.mark.both_backends
def test_an_item_over_the_row_limit_stores_nothing_of_its_batch(agents, home, durable):
    from durable_cli import DurableError
    from durable_cli.integrations.openai_agents import DurableSession

    s = DurableSession("big", home=home)
    with pytest.raises(DurableError) as e:
        run(s.add_items([user("small"), user("x" * (2 * 1024 * 1024 + 1))]))
    assert e.value.code == "invalid_input"
    assert run(s.get_items()) == []


def test_a_cancelled_add_items_still_stores_what_it_wrote(agents, home):
    """Cancelling the caller of add_items once the write has started does not cut the write short: the
    items are stored (all of them) and the caller sees the cancellation, as with the SDK's own sessions."""
    from durable_cli.integrations.openai_agents import DurableSession

    session = DurableSession("cancelled", home=home)

    async def go():
        task = asyncio.ensure_future(session.add_items([user("one"), user("two")]))
        await asyncio.sleep(0)  # the task has handed the write to its worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await session.get_items()

    try:
        assert run(go()) == [user("one"), user("two")]
    finally:
        session.close()


# -- where the SDK's own tests look (issue 23): errors, close, compaction -------------------------------

def test_an_item_json_cannot_encode_is_a_type_error_and_stores_nothing(open_session):
    s = open_session("chat-1")
    run(s.add_items(HISTORY[:2]))
    with pytest.raises(TypeError):
        run(s.add_items([user("kept?"), {"role": "user", "content": object()}]))
    assert run(s.get_items()) == HISTORY[:2]


def test_a_closed_session_refuses_every_call(open_session):
    s = open_session("chat-1")
    run(s.add_items(HISTORY[:1]))
    s.close()
    for call_it in (lambda: s.get_items(), lambda: s.add_items([user("late")]), lambda: s.add_items([]),
                    lambda: s.pop_item(), lambda: s.clear_session()):
        with pytest.raises(RuntimeError):
            run(call_it())
    assert run(open_session("chat-1").get_items()) == HISTORY[:1]  # nothing was written after close


def compacting(agents, store, compact):
    """The SDK's OpenAIResponsesCompactionSession over STORE, compacting every turn through COMPACT (the
    fake Responses API's compact call), and one Runner turn "continue" -> "done" through it."""
    from types import SimpleNamespace
    from unittest.mock import AsyncMock, MagicMock

    from agents.memory import OpenAIResponsesCompactionSession
    from agents.testing import ScriptedModel, assistant_message

    async def answer(**kwargs):
        return SimpleNamespace(output=await compact(kwargs))

    client = MagicMock()
    client.responses.compact = AsyncMock(side_effect=answer)
    session = OpenAIResponsesCompactionSession(store.session_id, store, client=client, compaction_mode="input",
                                               should_trigger_compaction=lambda _: True)
    agents.set_tracing_disabled(True)
    agent = agents.Agent(name="worker", model=ScriptedModel(steps=[[assistant_message("done")]]))
    run(agents.Runner.run(agent, "continue", session=session))
    return client.responses.compact


def test_compaction_keeps_an_append_another_writer_made_meanwhile(agents, open_session):
    """An item another writer adds while the model compacts is never lost: the SDK's suffix replacement
    is refused (DurableSession._get_compaction_snapshot), as over its own SQLiteSession."""
    store, other = open_session("chat-1"), open_session("chat-1")
    newer = user("appended by another writer during compaction")

    async def compact(_request):
        await other.add_items([newer])
        return []

    assert compacting(agents, store, compact).await_count == 1
    items = run(open_session("chat-1").get_items())
    assert items[0] == user("continue") and items[-1] == newer and len(items) == 3


def test_compaction_replaces_the_turn_it_compacted(agents, open_session):
    summary = {"type": "compaction", "id": "cmp_1", "encrypted_content": "synthetic summary"}

    async def compact(request):
        assert request["input"][0] == user("continue")
        return [summary]

    store = open_session("chat-1")
    assert compacting(agents, store, compact).await_count == 1
    assert run(open_session("chat-1").get_items()) == [summary]
