"""DurableMessageHistory (docs/reference/integrations.md §12): Pydantic AI's message history in a durable session, with real agents on
pydantic-ai's offline models (TestModel, FunctionModel), on both backends: the messages round-trip byte for
byte, and the rows are what the CLI, the windows, search and usage read."""

import asyncio
import json
import subprocess
import sys
from decimal import Decimal

import pytest

from durable_cli import DurableError
from tests.integrations.conftest import need

pytestmark = pytest.mark.both_backends


@pytest.fixture
def pai():
    return need("pydantic_ai", "pydantic-ai")


def history(name="pr-42"):
    from durable_cli.integrations.pydantic_ai import DurableMessageHistory

    return DurableMessageHistory(name)


def dumped(messages) -> bytes:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_json(messages)


def tool_agent(pai, model=None):
    from pydantic_ai.models.test import TestModel

    agent = pai.Agent(model or TestModel(), system_prompt="Be terse.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return agent


def test_an_agent_with_a_tool_round_trips_and_the_cli_reads_the_rows(pai, durable):
    agent = tool_agent(pai)
    h = history()
    assert h.load() == []
    assert durable("session", "show", "pr-42").status == 3  # reading created nothing
    first = agent.run_sync("add 1 and 2", message_history=h.load())
    h.append(first.new_messages())
    second = agent.run_sync("and again", message_history=h.load())
    assert second.all_messages()[:len(first.new_messages())] == first.new_messages()
    h.append(second.new_messages())
    appended = first.new_messages() + second.new_messages()
    assert dumped(h.load()) == dumped(appended)
    assert dumped(history().load()) == dumped(appended)  # another instance: nothing kept in memory

    rows = durable("transcript", "show", "pr-42", "--json").json()
    assert [r["role"] for r in rows] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [r["content"] for r in rows[:2]] == ["Be terse.", "add 1 and 2"]
    call = rows[2]["tool_calls"][0]
    assert call["name"] == "add" and json.loads(call["arguments"]) == {"a": 0, "b": 0} and rows[2]["content"] == ""
    assert (rows[3]["call_id"], rows[3]["name"], rows[3]["content"]) == (call["id"], "add", "0")
    assert rows[2]["meta"]["model"] == "test" and rows[2]["meta"]["provider"] == "test"
    assert set(rows[2]["meta"]["usage"]) == {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    assert rows[0]["data"]["pydantic_ai"]["message"]["kind"] == "request" and rows[1]["data"] == {"pydantic_ai": {"part": 1}}
    show = durable("session", "show", "pr-42", "--json").json()
    assert show["external_id"] == "pr-42"

    window = durable("transcript", "recent", "pr-42", "--format", "messages").json()
    assert [m["role"] for m in window] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert window[3] == {"role": "tool", "tool_call_id": call["id"], "content": "0"}
    gemini = durable("transcript", "recent", "pr-42", "--format", "gemini").json()
    assert gemini["contents"][1]["parts"][0]["functionCall"]["name"] == "add"

    total = durable("usage", "--session", "pr-42", "--json").json()["total"]
    answers = [r["meta"]["usage"] for r in rows if r["role"] == "assistant"]
    assert (total["input_tokens"], total["output_tokens"]) == (sum(u["input_tokens"] for u in answers), sum(u["output_tokens"] for u in answers))
    assert total["output_tokens"] > 0
    by_model = durable("usage", "--by", "model", "--json").json()["groups"]
    assert next(g for g in by_model if g["key"] == "test")["turns"] == 3
    hits = durable("search", "again", "--json").json()
    assert any(h["name"] == "pr-42" for h in hits), hits


def test_usage_cost_and_model_of_a_function_model_response(pai, durable):
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    def answer(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[TextPart("Let me add."), ToolCallPart("add", '{"a": 2, "b": 3}', tool_call_id="c1")],
                                 usage=RequestUsage(input_tokens=100, output_tokens=7, cache_read_tokens=60, cache_write_tokens=10,
                                                    cost=Decimal("0.0125")),
                                 model_name="gpt-x", provider_name="openai")
        return ModelResponse(parts=[TextPart("5")], usage=RequestUsage(input_tokens=120, output_tokens=1), model_name="gpt-x")

    h = history("calc")
    result = tool_agent(pai, FunctionModel(answer)).run_sync("2+3?", message_history=h.load())
    assert result.output == "5"
    h.append(result.new_messages())
    assert dumped(h.load()) == dumped(result.new_messages())
    rows = durable("transcript", "show", "calc", "--json").json()
    call, done = [r for r in rows if r["role"] == "assistant"]
    assert call["content"] == "Let me add."
    assert call["tool_calls"] == [{"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}]  # a string kept verbatim
    model = result.new_messages()[1].model_name  # FunctionModel names itself
    assert model.startswith("function:")
    assert call["meta"] == {"model": model, "provider": "openai", "cost_usd": 0.0125, "usage": {
        "input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 60, "cache_write_tokens": 10}}
    assert "cost_usd" not in done["meta"] and "provider" not in done["meta"]  # no cost the adapter computes; null left out
    tool = next(r for r in rows if r["role"] == "tool")
    assert (tool["call_id"], tool["name"], tool["content"]) == ("c1", "add", "5")


def test_rows_the_adapter_did_not_write_come_back_as_messages_an_agent_takes(pai, durable):
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart

    calls = json.dumps([{"id": "k1", "name": "lookup", "arguments": '{"q": "x"}'}])
    for args in (["--role", "system", "rules"], ["--role", "user", "find x"], ["--role", "assistant", "", "--tool-calls", calls],
                 ["--role", "tool", "--call-id", "k1", "found"], ["--role", "assistant", "it is found", "--meta", '{"model": "m1"}'],
                 ["--role", "user", "", "--data", '{"other": 1}'],  # empty, no Pydantic AI data: skipped
                 ["--role", "developer", "be kind"], ["--role", "user", "thanks"]):
        assert durable("transcript", "append", "cli", *args).status == 0
    messages = history("cli").load()
    shape = [(type(m).__name__, [(type(p).__name__, getattr(p, "content", None) if not isinstance(p, ToolCallPart) else p.args)
                                 for p in m.parts]) for m in messages]
    assert shape == [
        ("ModelRequest", [("SystemPromptPart", "rules"), ("UserPromptPart", "find x")]),
        ("ModelResponse", [("ToolCallPart", '{"q": "x"}')]),
        ("ModelRequest", [("ToolReturnPart", "found")]),
        ("ModelResponse", [("TextPart", "it is found")]),
        ("ModelRequest", [("SystemPromptPart", "be kind"), ("UserPromptPart", "thanks")]),
    ]
    assert messages[2].parts[0].tool_name == "lookup" and messages[2].parts[0].tool_call_id == "k1"  # the call's name
    assert messages[3].model_name == "m1" and messages[1].model_name is None
    assert all(isinstance(m, (ModelRequest, ModelResponse)) for m in messages)
    result = tool_agent(pai).run_sync("one more", message_history=messages)  # Pydantic AI accepts the history
    assert result.all_messages()[:len(messages)] == messages


def test_a_redacted_first_row_and_the_parts_left_without_it(pai, durable):
    from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart

    h = history("r")
    h.append([ModelRequest(parts=[SystemPromptPart("secret rules"), UserPromptPart("hello")])])
    assert durable("transcript", "redact", "r", "1").status == 0
    (message,) = h.load()
    assert [(type(p).__name__, p.content) for p in message.parts] == [("SystemPromptPart", "[redacted]"), ("UserPromptPart", "hello")]


def test_multimodal_prompts_and_a_request_without_parts_round_trip(pai, durable):
    from pydantic_ai.messages import BinaryContent, ModelRequest, ModelResponse, ThinkingPart, ToolCallPart, ToolReturnPart, UserPromptPart

    appended = [
        ModelRequest(parts=[UserPromptPart(["look at", BinaryContent(data=b"\x89PNG\x00\xff", media_type="image/png"), "this"])],
                     instructions="Be kind."),
        ModelResponse(parts=[ThinkingPart("hmm"), ToolCallPart("draw", {"w": 2}, tool_call_id="d1"), ToolCallPart("now", None, tool_call_id="n1")]),
        ModelRequest(parts=[ToolReturnPart("draw", {"ok": True, "px": [1, 2]}, tool_call_id="d1"), ToolReturnPart("now", "12:00", tool_call_id="n1")]),
        ModelRequest(parts=[]),
    ]
    h = history("mm")
    h.append(appended[:2])
    h.append(appended[2:])
    assert dumped(h.load()) == dumped(appended)
    rows = durable("transcript", "show", "mm", "--json").json()
    assert [(r["role"], r["content"]) for r in rows][0] == ("user", "look at\nthis")
    assert rows[1]["tool_calls"] == [{"id": "d1", "name": "draw", "arguments": '{"w":2}'}, {"id": "n1", "name": "now", "arguments": "{}"}]
    assert rows[1]["content"] == ""  # thinking lives only in data
    assert [(r["role"], r["call_id"], r["name"], r["content"]) for r in rows[2:4]] == [
        ("tool", "d1", "draw", '{"ok":true,"px":[1,2]}'), ("tool", "n1", "now", "12:00")]
    assert (rows[4]["role"], rows[4]["content"]) == ("user", "")
    assert all("Be kind." not in r["content"] for r in rows)  # instructions are no row


def test_retry_prompts_become_tool_or_user_rows(pai, durable):
    """RetryPromptPart (deprecated in pydantic-ai 2.x, which reads it back as the part that replaces it, so it
    cannot round-trip even through pydantic-ai's own adapter): a tool row with its tool name, else a user row."""
    import warnings

    from pydantic_ai.messages import ModelRequest, RetryPromptPart

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = [RetryPromptPart("w must be > 2", tool_name="draw", tool_call_id="d1"), RetryPromptPart("try harder")]
    history("retry").append([ModelRequest(parts=parts)])
    rows = durable("transcript", "show", "retry", "--json").json()
    assert [(r["role"], r["call_id"], r["name"], r["content"]) for r in rows] == [
        ("tool", "d1", "draw", parts[0].model_response()), ("user", None, None, parts[1].model_response())]
    assert "try harder" in rows[1]["content"]


def test_from_another_process(pai, durable, tmp_path):
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    appended = [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("hello")], model_name="m")]
    history("p").append(appended)
    code = ("import sys; from durable_cli.integrations.pydantic_ai import DurableMessageHistory as H; "
            "from pydantic_ai.messages import ModelMessagesTypeAdapter as T; sys.stdout.buffer.write(T.dump_json(H('p').load()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    assert out == dumped(appended)


def test_empty_appends_missing_sessions_archived_sessions_and_clear(pai, durable):
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    h = history("a")
    h.append([])
    assert h.load() == [] and durable("session", "show", "a").status == 3  # nothing created
    h.clear()
    h.append([ModelRequest(parts=[UserPromptPart("one")])])
    assert durable("session", "archive", "a").status == 0
    with pytest.raises(DurableError) as e:
        h.append([ModelRequest(parts=[UserPromptPart("two")])])
    assert e.value.code == "conflict"
    assert len(h.load()) == 1
    assert durable("session", "unarchive", "a").status == 0
    with pytest.raises(DurableError):  # one transaction: a bad message stores nothing of the batch
        h.append([ModelRequest(parts=[UserPromptPart("three")]), "not a message"])
    assert len(h.load()) == 1
    h.clear()
    assert h.load() == [] and durable("session", "show", "a").status == 0


def test_async_twins(pai, durable):
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    async def main():
        h = history("async")
        agent = tool_agent(pai)
        result = await agent.run("add", message_history=await h.aload())
        await h.aappend(result.new_messages())
        assert dumped(await h.aload()) == dumped(result.new_messages())
        await h.aappend([ModelRequest(parts=[UserPromptPart("x")])])
        assert len(await h.aload()) == len(result.new_messages()) + 1
        await h.aclear()
        assert await h.aload() == []

    asyncio.run(main())


def test_the_adapter_imports_no_provider_sdk(pai):
    code = ("import sys, durable_cli.integrations.pydantic_ai as p; p.DurableMessageHistory('x').load(); "
            "print(sorted(m for m in ('openai', 'anthropic', 'google.genai', 'groq', 'mistralai') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.cross_object
def test_an_exported_history_imports_again(pai, durable):
    """The object records which adapter made it (`adapter` "pydantic-ai"): export, delete, import, load."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    appended = [ModelRequest(parts=[UserPromptPart("hi")]), ModelResponse(parts=[TextPart("hello")], model_name="m")]
    history("pr-7").append(appended)
    exported = durable("export", "pr-7")
    assert exported.status == 0, exported.err
    assert json.loads(exported.out)["object"]["adapter"] == "pydantic-ai"
    assert durable("delete", "pr-7", "--yes").status == 0
    assert history("pr-7").load() == []
    imported = durable("import", "-", input=exported.out)
    assert imported.status == 0, imported.err
    assert dumped(history("pr-7").load()) == dumped(appended)


def test_any_id_the_caller_uses_is_a_session_and_kept_as_external_id(pai, durable):
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    for session_id in (" padded ", "~tilde", "", "x" * 300):
        history(session_id).append([ModelRequest(parts=[UserPromptPart(f"id {session_id!r}")])])
    for session_id in (" padded ", "~tilde", "", "x" * 300):
        (message,) = history(session_id).load()
        assert message.parts[0].content == f"id {session_id!r}"
    listed = durable("ls", "--json").json()
    assert sorted(s["external_id"] for s in listed) == sorted([" padded ", "~tilde", "", "x" * 300])
    assert all(s["name"].startswith("~") and len(s["name"]) == 33 for s in listed)
