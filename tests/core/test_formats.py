"""docs/reference/transcript.md §6 formats: a context window rendered as OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages and Gemini generateContent request input, checked offline against the official SDKs' request types and
against the rules those APIs enforce beyond their types (a call answered right after it is made,
the user's message first, roles alternating)."""

import collections.abc
import functools
import json
import subprocess
import sys
import types
import typing

import pydantic
import pytest
import typing_extensions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_cli.core import formats
from durable_cli.errors import DurableError


class _Lazy:
    """An SDK module imported when a test first reads it, not when the suite is collected (the openai and
    anthropic type packages cost ~1 s of CPU to import, in every pytest-xdist worker)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        if not attr[:1].isupper():  # only the SDK's types: pytest's collection probes other names (pytestmark, __test__)
            raise AttributeError(attr)

        return getattr(importlib.import_module(self._name), attr)


anthropic_types = _Lazy("anthropic.types")
openai_chat = _Lazy("openai.types.chat")
openai_responses = _Lazy("openai.types.responses")
openai_response_input = _Lazy("openai.types.responses.response_input_param")
gemini_types = _Lazy("google.genai.types")

pytestmark = pytest.mark.both_backends


# ---------------------------------------------------------------- strict checking against SDK types

def conform(value, hint, path="$"):
    """Errors (empty when none) of `value` against an SDK request type, stricter than pydantic's
    defaults: no coercion, no key a TypedDict does not declare, every item of an Iterable checked."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing_extensions.Required, typing_extensions.NotRequired, typing.Required, typing.NotRequired):
        return conform(value, args[0], path)
    if origin is typing.Annotated or origin is typing_extensions.Annotated:
        return conform(value, args[0], path)
    if hint in (typing.Any, object):
        return []
    if hint is None or hint is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    if origin in (typing.Union, types.UnionType):
        failures = [conform(value, member, path) for member in args]
        if any(not f for f in failures):
            return []
        return [f"{path}: matches no member of {hint}: " + "; ".join(f[0] for f in failures if f)]
    if origin in (typing.Literal, typing_extensions.Literal):
        return [] if value in args and type(value) in {type(a) for a in args} else [f"{path}: {value!r} not in {args}"]
    if typing_extensions.is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} is not an object ({hint.__name__})"]
        hints = _hints(hint)
        errors = [f"{path}: key {k!r} is not in {hint.__name__}" for k in value if k not in hints]
        for key, h in hints.items():
            required = typing.get_origin(h) in (typing_extensions.Required, typing.Required) or (
                hint.__total__ and typing.get_origin(h) not in (typing_extensions.NotRequired, typing.NotRequired))
            if key in value:
                errors += conform(value[key], h, f"{path}.{key}")
            elif required:
                errors.append(f"{path}: {hint.__name__} needs key {key!r}")
        return errors
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        return [e for k, v in value.items() for e in conform(k, args[0], path) + conform(v, args[1], f"{path}.{k}")]
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence) or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__} is not an array"]
        return [e for i, v in enumerate(value) for e in conform(v, args[0], f"{path}[{i}]")]
    if hint is bool:
        return [] if type(value) is bool else [f"{path}: {value!r} is not a boolean"]
    if hint in (int, float):
        ok = type(value) is int or (hint is float and type(value) is float)
        return [] if ok else [f"{path}: {value!r} is not a {hint.__name__}"]
    if hint is str:
        return [] if type(value) is str else [f"{path}: {value!r} is not a string"]
    if isinstance(hint, type):  # a response model, bytes, a file...: never what a JSON value is
        return [] if isinstance(value, hint) else [f"{path}: not a {hint.__name__}"]
    raise AssertionError(f"conform() does not know {hint!r}")


@functools.cache
def _hints(typed_dict):
    return typing_extensions.get_type_hints(typed_dict, include_extras=True)


def drained(value):
    """pydantic validates Iterable[...] lazily: iterate every ValidatorIterator so its items are checked."""
    if isinstance(value, dict):
        return {k: drained(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        return [drained(v) for v in value]
    return value


_adapters = {}


def assert_valid(value, hint):
    """Valid for pydantic in strict mode (unchanged by it: pydantic drops undeclared keys rather than
    refusing them, so a dropped key shows as a difference) and for conform()."""
    adapter = _adapters.get(hint) or _adapters.setdefault(hint, pydantic.TypeAdapter(hint))
    try:
        assert drained(adapter.validate_python(value, strict=True)) == value
    except pydantic.ValidationError as e:
        raise AssertionError(str(e)) from None
    errors = conform(value, hint)
    assert not errors, "\n".join(errors)


@functools.cache
def anthropic_request():
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    class AnthropicRequest(MessageCreateParamsNonStreaming, total=False):
        """The request `anthropic` output is spread into: MessageCreateParams (model, max_tokens added)."""

    return AnthropicRequest


def valid_chat(out):
    assert isinstance(out, list)
    assert_valid(out, list[openai_chat.ChatCompletionMessageParam])
    for message in out:  # each item exactly one of the shapes docs/reference/transcript.md §6 names
        role = message["role"]
        shape = {
            "system": openai_chat.ChatCompletionSystemMessageParam,
            "developer": openai_chat.ChatCompletionDeveloperMessageParam,
            "user": openai_chat.ChatCompletionUserMessageParam,
            "assistant": openai_chat.ChatCompletionAssistantMessageParam,
            "tool": openai_chat.ChatCompletionToolMessageParam,
        }[role]
        assert_valid(message, shape)
    # What the API checks beyond the types: an assistant message with tool_calls is followed by
    # one tool message per call and nothing else in between; no tool message stands elsewhere.
    i = 0
    while i < len(out):
        message = out[i]
        assert message["role"] != "tool", f"tool message {i} does not follow its call"
        if message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            assert len(set(ids)) == len(ids)
            answers = out[i + 1:i + 1 + len(ids)]
            assert sorted(a.get("tool_call_id") for a in answers) == sorted(ids)
            assert all(a["role"] == "tool" for a in answers)
            i += len(ids)
        else:
            assert message["content"], f"message {i} has no content"
        i += 1


def valid_responses(out):
    assert isinstance(out, list)
    assert_valid(out, openai_responses.ResponseInputParam)
    for item in out:
        shape = {
            "message": openai_responses.EasyInputMessageParam,
            "function_call": openai_responses.ResponseFunctionToolCallParam,
            "function_call_output": openai_response_input.FunctionCallOutput,
        }[item["type"]]
        assert_valid(item, shape)
    calls = [item["call_id"] for item in out if item["type"] == "function_call"]
    assert len(set(calls)) == len(calls)
    seen = set()
    for item in out:
        if item["type"] == "function_call":
            seen.add(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] in seen, "output before or without its call"
            seen.discard(item["call_id"])
        else:
            assert item["content"]
    assert not seen, f"calls without an output: {seen}"


def valid_anthropic(out):
    assert isinstance(out, dict) and set(out) <= {"system", "messages"}
    assert_valid({"model": "claude-x", "max_tokens": 1024, **out}, anthropic_request())
    assert_valid(out["messages"], list[anthropic_types.MessageParam])
    if "system" in out:
        assert isinstance(out["system"], str) and out["system"].strip()
    messages = out["messages"]
    for i, message in enumerate(messages):
        assert message["role"] in ("user", "assistant")
        assert_valid(message, anthropic_types.MessageParam)
        assert message["content"], f"message {i} is empty"
        for block in message["content"]:
            shape = {"text": anthropic_types.TextBlockParam, "tool_use": anthropic_types.ToolUseBlockParam,
                     "tool_result": anthropic_types.ToolResultBlockParam}[block["type"]]
            assert_valid(block, shape)
            if block["type"] == "text":
                assert block["text"].strip()
            if block["type"] == "tool_use":  # typed `object` before anthropic 0.41; the API wants an object
                assert isinstance(block["input"], dict)
    # Beyond the types: the user speaks first, roles alternate, every tool_use is answered in the
    # next message, its tool_result blocks first, and no tool_result answers anything else.
    if messages:
        assert messages[0]["role"] == "user"
    for i, message in enumerate(messages):
        if i:
            assert message["role"] != messages[i - 1]["role"]
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        assert len(set(uses)) == len(uses)
        if uses:
            following = messages[i + 1]["content"] if i + 1 < len(messages) else []
            head = [b["tool_use_id"] for b in following[:len(uses)] if b["type"] == "tool_result"]
            assert sorted(head) == sorted(uses), f"message {i}: tool_use not answered first in the next message"
        previous = messages[i - 1]["content"] if i else []
        asked = {b["id"] for b in previous if b["type"] == "tool_use"}
        results = [b for b in message["content"] if b["type"] == "tool_result"]
        assert all(b["tool_use_id"] in asked for b in results)
        assert message["content"][:len(results)] == results, "tool_result blocks must come first"


def gemini_valid(value, model):
    """`value` validates as the google-genai pydantic model in strict mode (no undeclared key: its models
    forbid extras) and dumps back unchanged under the REST (camelCase) names, so nothing was dropped or renamed."""
    try:
        parsed = model.model_validate(value, strict=True)
    except pydantic.ValidationError as e:
        raise AssertionError(str(e)) from None
    assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == value
    return parsed


def valid_gemini(out):
    assert isinstance(out, dict) and set(out) <= {"systemInstruction", "contents"}
    contents = out["contents"]
    assert isinstance(contents, list)
    if "systemInstruction" in out:
        instruction = out["systemInstruction"]
        # what a Python caller passes: config={"system_instruction": doc["systemInstruction"]}
        config = gemini_types.GenerateContentConfig.model_validate({"system_instruction": instruction})
        assert isinstance(config.system_instruction, gemini_types.Content)
        gemini_valid(instruction, gemini_types.Content)
        assert set(instruction) == {"parts"} and instruction["parts"]
        assert all(set(p) == {"text"} and p["text"] for p in instruction["parts"])
    for i, content in enumerate(contents):
        gemini_valid(content, gemini_types.Content)
        assert set(content) == {"role", "parts"} and content["role"] in ("user", "model")
        assert content["parts"], f"content {i} is empty"
        for part in content["parts"]:
            gemini_valid(part, gemini_types.Part)
            (kind,) = part  # one field a part
            assert kind in ("text", "functionCall", "functionResponse")
            if kind == "text":
                assert isinstance(part["text"], str) and part["text"], "an empty text part"
            elif kind == "functionCall":
                assert set(part[kind]) == {"id", "name", "args"} and isinstance(part[kind]["args"], dict)
                assert content["role"] == "model"
            else:
                assert set(part[kind]) == {"id", "name", "response"} and content["role"] == "user"
                assert set(part[kind]["response"]) == {"output"} and isinstance(part[kind]["response"]["output"], str)
    # Beyond the types: the user speaks first, roles alternate, every set of function calls is answered
    # in the next content, its function responses first, and no function response answers anything else.
    if contents:
        assert contents[0]["role"] == "user"
    for i, content in enumerate(contents):
        if i:
            assert content["role"] != contents[i - 1]["role"]
        calls = [p["functionCall"]["id"] for p in content["parts"] if "functionCall" in p]
        assert len(set(calls)) == len(calls)
        if calls:
            following = contents[i + 1]["parts"] if i + 1 < len(contents) else []
            head = [p["functionResponse"]["id"] for p in following[:len(calls)] if "functionResponse" in p]
            assert sorted(head) == sorted(calls), f"content {i}: function calls not answered first in the next content"
        previous = contents[i - 1]["parts"] if i else []
        asked = {p["functionCall"]["id"] for p in previous if "functionCall" in p}
        responses = [p for p in content["parts"] if "functionResponse" in p]
        assert all(p["functionResponse"]["id"] in asked for p in responses)
        assert content["parts"][:len(responses)] == responses, "function responses must come first"


VALIDATORS = {"messages": valid_chat, "responses": valid_responses, "anthropic": valid_anthropic, "gemini": valid_gemini}


def valid_everywhere(rows):
    """All four renderings of `rows`, each checked; returned by format."""
    out = {fmt: formats.render(rows, fmt) for fmt in formats.FORMATS}
    for fmt, value in out.items():
        VALIDATORS[fmt](value)
        json.dumps(value)  # plain JSON: what the CLI prints
    return out


# ---------------------------------------------------------------- rows as docs/reference/transcript.md §6 defines them

def row(seq, role, content="", *, tool_calls=None, call_id=None, name=None, data=None, kind="turn", covers=None):
    return {
        "seq": seq, "role": role, "content": content,
        "tool_calls": tool_calls if tool_calls is not None else ([] if role == "assistant" else None),
        "call_id": call_id, "name": name, "meta": None, "data": data, "forked_from": None,
        "tokens": 10, "author": "alice", "created_at": "2025-01-01T00:00:00Z", "kind": kind,
        "superseded_by": None, "covers": covers,
    }


def call(id, name="lookup", arguments='{"q": "x"}'):
    return {"id": id, "name": name, "arguments": arguments}


def window():
    """A window holding every kind of row: pinned system and developer rows, a summary, one call,
    parallel calls in one row, data-only rows, a later developer row, text beside tool calls."""
    return [
        row(1, "system", "You are terse."),
        row(2, "developer", "Answer in English."),
        row(9, "system", "Earlier, the user asked about the weather.", kind="summary", covers=[3, 8]),
        row(10, "user", "What is in /tmp?"),
        row(11, "assistant", "", data={"type": "reasoning", "summary": []}),  # lives only in data
        row(12, "assistant", "Let me look.", tool_calls=[call("c1", "ls", '{"path": "/tmp"}')]),
        row(13, "tool", "a.txt\nb.txt", call_id="c1", name="ls"),
        row(14, "assistant", "", tool_calls=[call("c2", "cat", '{"path": "/tmp/a.txt"}'), call("c3", "cat", '{"path": "/tmp/b.txt"}')]),
        row(15, "tool", "A", call_id="c2", name="cat"),
        row(16, "tool", "B", call_id="c3"),
        row(17, "assistant", "a.txt holds A; b.txt holds B."),
        row(18, "developer", "Be brief from now on."),
        row(19, "user", "", data={"type": "input_image", "image_url": "https://x/y.png"}),
        row(20, "user", "Thanks!"),
    ]


# ---------------------------------------------------------------- the formats, row by row

def test_messages_shapes():
    out = valid_everywhere(window())["messages"]
    assert out == [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": "Answer in English."},
        {"role": "system", "content": "Earlier, the user asked about the weather."},
        {"role": "user", "content": "What is in /tmp?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "/tmp"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "cat", "arguments": '{"path": "/tmp/a.txt"}'}},
            {"id": "c3", "type": "function", "function": {"name": "cat", "arguments": '{"path": "/tmp/b.txt"}'}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "A"},
        {"role": "tool", "tool_call_id": "c3", "content": "B"},
        {"role": "assistant", "content": "a.txt holds A; b.txt holds B."},
        {"role": "developer", "content": "Be brief from now on."},
        {"role": "user", "content": "Thanks!"},
    ]


def test_responses_shapes():
    out = valid_everywhere(window())["responses"]
    assert out == [
        {"type": "message", "role": "system", "content": "You are terse."},
        {"type": "message", "role": "developer", "content": "Answer in English."},
        {"type": "message", "role": "system", "content": "Earlier, the user asked about the weather."},
        {"type": "message", "role": "user", "content": "What is in /tmp?"},
        {"type": "message", "role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": '{"path": "/tmp"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt\nb.txt"},
        {"type": "function_call", "call_id": "c2", "name": "cat", "arguments": '{"path": "/tmp/a.txt"}'},
        {"type": "function_call", "call_id": "c3", "name": "cat", "arguments": '{"path": "/tmp/b.txt"}'},
        {"type": "function_call_output", "call_id": "c2", "output": "A"},
        {"type": "function_call_output", "call_id": "c3", "output": "B"},
        {"type": "message", "role": "assistant", "content": "a.txt holds A; b.txt holds B."},
        {"type": "message", "role": "developer", "content": "Be brief from now on."},
        {"type": "message", "role": "user", "content": "Thanks!"},
    ]


def test_anthropic_shapes():
    out = valid_everywhere(window())["anthropic"]
    assert out == {
        "system": "You are terse.\n\nAnswer in English.\n\nEarlier, the user asked about the weather.\n\nBe brief from now on.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is in /tmp?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "/tmp"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.txt\nb.txt"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "c2", "name": "cat", "input": {"path": "/tmp/a.txt"}},
                {"type": "tool_use", "id": "c3", "name": "cat", "input": {"path": "/tmp/b.txt"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c2", "content": "A"},
                {"type": "tool_result", "tool_use_id": "c3", "content": "B"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a.txt holds A; b.txt holds B."}]},
            {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]},
        ],
    }


def test_gemini_shapes():
    out = valid_everywhere(window())["gemini"]

    def response(cid, name, output):
        return {"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}

    assert out == {
        "systemInstruction": {"parts": [
            {"text": "You are terse."}, {"text": "Answer in English."},
            {"text": "Earlier, the user asked about the weather."}, {"text": "Be brief from now on."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "What is in /tmp?"}]},
            {"role": "model", "parts": [
                {"text": "Let me look."},
                {"functionCall": {"id": "c1", "name": "ls", "args": {"path": "/tmp"}}}]},
            {"role": "user", "parts": [response("c1", "ls", "a.txt\nb.txt")]},
            {"role": "model", "parts": [
                {"functionCall": {"id": "c2", "name": "cat", "args": {"path": "/tmp/a.txt"}}},
                {"functionCall": {"id": "c3", "name": "cat", "args": {"path": "/tmp/b.txt"}}}]},
            # row 16 has no name of its own: the name of the call it answers
            {"role": "user", "parts": [response("c2", "cat", "A"), response("c3", "cat", "B")]},
            {"role": "model", "parts": [{"text": "a.txt holds A; b.txt holds B."}]},
            {"role": "user", "parts": [{"text": "Thanks!"}]},
        ],
    }


def test_gemini_is_what_the_google_genai_client_takes():
    """The document goes to google-genai as docs/reference/transcript.md §6 says a Python caller passes it
    (`contents=doc["contents"], config={"system_instruction": doc["systemInstruction"]}`), and the
    client's own conversion (what generate_content runs on `contents`, offline) keeps it as it is."""
    from google.genai import _transformers
    from google.genai import types as gtypes

    doc = formats.render(window(), "gemini")
    contents = _transformers.t_contents(doc["contents"])
    assert all(isinstance(c, gtypes.Content) for c in contents)
    assert [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents] == doc["contents"]
    config = gtypes.GenerateContentConfig.model_validate({"system_instruction": doc["systemInstruction"]})
    assert config.system_instruction.model_dump(mode="json", by_alias=True, exclude_none=True) == doc["systemInstruction"]


def test_gemini_merges_rows_of_one_role_and_drops_what_leads_the_user():
    rows = [
        row(5, "assistant", "…so that was the plan."),
        row(6, "assistant", "", tool_calls=[call("t1", arguments="oops")]),  # dropped: its arguments are never checked
        row(7, "tool", "found it", call_id="t1"),
        row(8, "user", "Good."),
        row(9, "user", "Now the next step."),
        row(10, "assistant", "On it."),
        row(11, "assistant", "Done."),
    ]
    out = formats.render(rows, "gemini")
    valid_gemini(out)
    assert out == {"contents": [
        {"role": "user", "parts": [{"text": "Good."}, {"text": "Now the next step."}]},
        {"role": "model", "parts": [{"text": "On it."}, {"text": "Done."}]},
    ]}
    assert valid_everywhere([row(1, "system", "S"), row(2, "assistant", "hi")])["gemini"] == {
        "systemInstruction": {"parts": [{"text": "S"}]}, "contents": []}


def test_gemini_non_object_arguments_is_exit_4_naming_the_row():
    rows = [
        row(1, "user", "go"),
        row(2, "assistant", "", tool_calls=[call("ok", arguments="{}"), call("bad", "shell", '["ls", "-l"]')]),
        row(3, "tool", "x", call_id="ok"),
        row(4, "tool", "y", call_id="bad"),
    ]
    for bad in ('["ls", "-l"]', "not json", "", "null", "3", '{"a": NaN}'):
        rows[1]["tool_calls"][1]["arguments"] = bad
        with pytest.raises(DurableError) as e:
            formats.render(rows, "gemini")
        assert e.value.exit_status == 4 and e.value.code == "conflict"
        assert "row 2" in e.value.message and "'bad'" in e.value.message and "gemini" in e.value.message


def test_gemini_tool_result_text_is_the_output_string_and_a_row_name_wins():
    rows = [row(1, "user", "q"), row(2, "assistant", "", tool_calls=[call("c", "lookup")]),
            row(3, "tool", '{"json": "stays a string"}', call_id="c", name="renamed", data={"raw": 1})]
    out = valid_everywhere(rows)["gemini"]
    assert out["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"id": "c", "name": "renamed", "response": {"output": '{"json": "stays a string"}'}}}]}


def test_calls_in_separate_rows_merge_into_one_message():
    """The OpenAI Agents SDK stores each function_call as its own item: one row per call."""
    rows = [
        row(1, "user", "Weather in Paris and Rome?"),
        row(2, "assistant", "", tool_calls=[call("fc_1", "weather", '{"city": "Paris"}')]),
        row(3, "assistant", "", tool_calls=[call("fc_2", "weather", '{"city": "Rome"}')]),
        row(4, "tool", "18C", call_id="fc_2"),
        row(5, "tool", "21C", call_id="fc_1"),
        row(6, "user", "And Oslo?"),
    ]
    out = valid_everywhere(rows)
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "tool", "user"]
    assert [c["id"] for c in out["messages"][1]["tool_calls"]] == ["fc_1", "fc_2"]
    assert [m["tool_call_id"] for m in out["messages"][2:4]] == ["fc_2", "fc_1"]  # logical order kept
    assert [i["type"] for i in out["responses"]] == ["message", "function_call", "function_call", "function_call_output",
                                                    "function_call_output", "message"]
    # A user turn after tool results joins their user message, after them.
    assert out["anthropic"]["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "fc_2", "content": "18C"},
        {"type": "tool_result", "tool_use_id": "fc_1", "content": "21C"},
        {"type": "text", "text": "And Oslo?"}]}
    assert "system" not in out["anthropic"]


def test_anthropic_merges_rows_of_one_role_and_drops_what_leads_the_user():
    rows = [
        row(5, "assistant", "…so that was the plan."),
        row(6, "assistant", "", tool_calls=[call("t1")]),
        row(7, "tool", "found it", call_id="t1"),
        row(8, "user", "Good."),
        row(9, "user", "Now the next step."),
        row(10, "assistant", "On it."),
        row(11, "assistant", "Done."),
    ]
    out = valid_everywhere(rows)
    assert out["anthropic"] == {"messages": [
        {"role": "user", "content": [{"type": "text", "text": "Good."}, {"type": "text", "text": "Now the next step."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "On it."}, {"type": "text", "text": "Done."}]},
    ]}
    # The other formats have no such rule: nothing is dropped there.
    assert out["messages"][0] == {"role": "assistant", "content": "…so that was the plan."}
    assert len(out["responses"]) == len(rows)


def test_anthropic_window_of_assistant_rows_only_has_no_messages():
    out = valid_everywhere([row(1, "system", "S"), row(2, "assistant", "hi")])
    assert out["anthropic"] == {"system": "S", "messages": []}


def test_anthropic_non_object_arguments_is_exit_4_naming_the_row():
    rows = [
        row(1, "user", "go"),
        row(2, "assistant", "", tool_calls=[call("ok", arguments="{}"), call("bad", "shell", '["ls", "-l"]')]),
        row(3, "tool", "x", call_id="ok"),
        row(4, "tool", "y", call_id="bad"),
    ]
    with pytest.raises(DurableError) as e:
        formats.render(rows, "anthropic")
    assert e.value.exit_status == 4 and e.value.code == "conflict"
    assert "row 2" in e.value.message and "'bad'" in e.value.message
    for fmt in ("messages", "responses"):  # arguments are passed on verbatim there
        VALIDATORS[fmt](formats.render(rows, fmt))
    assert formats.render(rows, "messages")[1]["tool_calls"][1]["function"]["arguments"] == '["ls", "-l"]'
    for bad in ("not json", "", "null", "3"):
        rows[1]["tool_calls"][1]["arguments"] = bad
        with pytest.raises(DurableError, match="row 2"):
            formats.render(rows, "anthropic")


def test_anthropic_checks_arguments_only_of_calls_it_sends():
    """A call dropped with the leading assistant message cannot make the rendering fail."""
    rows = [
        row(1, "assistant", "", tool_calls=[call("bad", arguments="oops")]),
        row(2, "tool", "r", call_id="bad"),
        row(3, "user", "hello"),
    ]
    out = valid_everywhere(rows)["anthropic"]
    assert out["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def test_orphan_results_and_unanswered_calls_are_left_out():
    rows = [
        row(1, "tool", "result of a call pruned away", call_id="gone"),
        row(2, "user", "hi"),
        row(3, "assistant", "I will call two tools.", tool_calls=[call("a"), call("b")]),
        row(4, "tool", "A", call_id="a"),
        row(5, "tool", "A again", call_id="a"),  # a second result for one call
        row(6, "tool", "who?", call_id="nobody"),
        row(7, "assistant", "", tool_calls=[call("z")]),  # still waiting for its result
    ]
    out = valid_everywhere(rows)
    assert out["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "I will call two tools.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
    ]
    rows[3]["call_id"] = rows[4]["call_id"] = "nobody"  # now no call has a result: the text stays, as a plain message
    assert valid_everywhere(rows)["messages"][1] == {"role": "assistant", "content": "I will call two tools."}


def test_a_result_living_only_in_data_is_left_out_with_its_call():
    """A tool row with empty content (its output an image, say, kept in `data`) is a data-only row;
    its call, left without a result, goes too, and the text beside the call stays."""
    rows = [
        row(1, "user", "Draw it."),
        row(2, "assistant", "Drawing.", tool_calls=[call("img", "draw")]),
        row(3, "tool", "", call_id="img", data={"type": "input_image", "image_url": "data:..."}),
    ]
    out = valid_everywhere(rows)
    assert out["messages"] == [{"role": "user", "content": "Draw it."}, {"role": "assistant", "content": "Drawing."}]
    assert out["responses"] == [{"type": "message", "role": "user", "content": "Draw it."},
                                {"type": "message", "role": "assistant", "content": "Drawing."}]


def test_a_row_between_a_call_and_its_result_follows_the_result():
    rows = [
        row(1, "user", "start"),
        row(2, "assistant", "", tool_calls=[call("a")]),
        row(3, "user", "(typed while the tool ran)"),
        row(4, "tool", "A", call_id="a"),
    ]
    out = valid_everywhere(rows)
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "user"]
    assert out["anthropic"]["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "A"},
        {"type": "text", "text": "(typed while the tool ran)"}]


def test_tool_name_and_other_row_fields_never_reach_the_request():
    out = valid_everywhere([row(1, "user", "q"), row(2, "assistant", "", tool_calls=[call("c")]),
                            row(3, "tool", "r", call_id="c", name="lookup", data={"raw": 1})])
    assert out["messages"][2] == {"role": "tool", "tool_call_id": "c", "content": "r"}
    assert out["responses"][2] == {"type": "function_call_output", "call_id": "c", "output": "r"}


def test_empty_and_blank_text():
    rows = [row(1, "system", "", data={"k": 1}), row(2, "user", "  "), row(3, "user", "real")]
    out = valid_everywhere(rows)
    assert "system" not in out["anthropic"]
    assert out["messages"] == [{"role": "user", "content": "  "}, {"role": "user", "content": "real"}]
    # Anthropic refuses white-space-only text blocks.
    assert out["anthropic"]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "real"}]}]
    assert valid_everywhere([]) == {"messages": [], "responses": [], "anthropic": {"messages": []}, "gemini": {"contents": []}}


def test_arguments_left_out_are_an_empty_object():
    rows = [row(1, "user", "q"), row(2, "assistant", "", tool_calls=[{"id": "c", "name": "now", "arguments": None}]),
            row(3, "tool", "12:00", call_id="c")]
    out = valid_everywhere(rows)
    assert out["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert out["anthropic"]["messages"][1]["content"][0]["input"] == {}


def test_unknown_format_is_exit_2():
    with pytest.raises(DurableError) as e:
        formats.render([], "json")
    assert e.value.exit_status == 2 and "messages, responses, anthropic" in e.value.message


def test_render_does_not_change_its_rows():
    rows = window()
    before = json.dumps(rows)
    valid_everywhere(rows)
    assert json.dumps(rows) == before


# ---------------------------------------------------------------- one provider's transcript, every provider's input

def openai_agents_rows():
    """Rows as an OpenAI Agents SDK session writes them: one row per Responses item, the item in `data`."""
    items = [
        {"type": "message", "role": "user", "content": "Book a table for 2 at 8pm."},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "call_A", "name": "find_restaurant", "arguments": '{"party": 2, "time": "20:00"}'},
        {"type": "function_call", "call_id": "call_B", "name": "check_calendar", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_A", "output": '{"name": "Chez Nous"}'},
        {"type": "function_call_output", "call_id": "call_B", "output": "free"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Booked Chez Nous at 8pm."}]},
    ]
    rows = []
    for seq, item in enumerate(items, 1):
        if item["type"] == "message":
            text = item["content"] if isinstance(item["content"], str) else item["content"][0]["text"]
            rows.append(row(seq, item["role"], text, data=item))
        elif item["type"] == "function_call":
            rows.append(row(seq, "assistant", "", data=item, tool_calls=[
                {"id": item["call_id"], "name": item["name"], "arguments": item["arguments"]}]))
        elif item["type"] == "function_call_output":
            rows.append(row(seq, "tool", item["output"], call_id=item["call_id"], data=item))
        else:
            rows.append(row(seq, "assistant", "", data=item))
    return rows


def anthropic_rows():
    """Rows written from an Anthropic conversation: text and tool_use blocks of one assistant turn
    in one row, each tool_result a tool row, the blocks in `data`."""
    use = [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
           {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {"tz": "Europe/Paris"}}]
    return [
        row(1, "system", "You are a travel assistant."),
        row(2, "user", "Weather and time in Paris?"),
        row(3, "assistant", "Checking both.", data=[{"type": "text", "text": "Checking both."}, *use], tool_calls=[
            {"id": u["id"], "name": u["name"], "arguments": json.dumps(u["input"])} for u in use]),
        row(4, "tool", "Sunny, 21C", call_id="toolu_01", name="get_weather"),
        row(5, "tool", "14:05", call_id="toolu_02", name="get_time"),
        row(6, "assistant", "Sunny and 21C; it is 14:05."),
    ]


@pytest.mark.parametrize("rows", [openai_agents_rows(), anthropic_rows(), window()], ids=["openai-agents", "anthropic", "mixed"])
def test_a_transcript_in_one_providers_shape_renders_valid_input_for_all(rows):
    out = valid_everywhere(rows)
    calls = sum(len(r["tool_calls"] or []) for r in rows)
    assert sum(len(m.get("tool_calls", ())) for m in out["messages"]) == calls
    assert sum(i["type"] == "function_call" for i in out["responses"]) == calls
    assert sum(b["type"] == "tool_use" for m in out["anthropic"]["messages"] for b in m["content"]) == calls
    assert sum("functionCall" in p for c in out["gemini"]["contents"] for p in c["parts"]) == calls


# ---------------------------------------------------------------- random windows

@st.composite
def transcripts(draw):
    """A random valid §6 window: pinned rows, then text, summaries, data-only rows and tool calls
    (one row or several, with or without text) whose results follow them, unique call ids."""
    rows = []
    texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)

    def add(role, content="", **kw):
        rows.append(row(len(rows) + 1, role, content, **kw))

    for role in draw(st.lists(st.sampled_from(["system", "developer"]), max_size=2)):
        add(role, draw(texts))
    ids = iter(f"call_{n}" for n in range(1000))
    arguments = st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5), st.none()), max_size=3)
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "system", "developer", "summary", "data", "calls"]))
        if kind == "summary":
            add("system", draw(texts), kind="summary", covers=[1, 2])
        elif kind == "data":
            add(draw(st.sampled_from(["user", "assistant", "system", "developer"])), "", data={"n": 1})
        elif kind == "calls":
            calls = [{"id": next(ids), "name": draw(st.sampled_from(["a", "b_c", "d-e"])),
                      "arguments": json.dumps(draw(arguments))} for _ in range(draw(st.integers(1, 3)))]
            text = draw(st.one_of(st.just(""), texts))
            if draw(st.booleans()):
                add("assistant", text, tool_calls=calls)
            else:
                add("assistant", text, tool_calls=calls[:1])
                for c in calls[1:]:
                    add("assistant", "", tool_calls=[c])
            for c in draw(st.permutations(calls)):
                if draw(st.integers(0, 4)) == 0:
                    add("user", draw(texts))  # a row standing between a call and its result
                add("tool", draw(texts), call_id=c["id"], name=c["name"] if draw(st.booleans()) else None)
        else:
            add(kind, draw(texts))
    return rows


RANDOM = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


@settings(max_examples=40, **RANDOM)
@given(transcripts(), st.data())
def test_random_windows_render_valid_input(rows, data):
    """40 random windows in the suite (each checked against four SDKs' types: ~0.2 s of CPU); 400 in
    the soak below (`-m soak`)."""
    random_window_renders_valid_input(rows, data)


@pytest.mark.soak
@settings(max_examples=400, **RANDOM)
@given(transcripts(), st.data())
def test_soak_random_windows_render_valid_input(rows, data):
    random_window_renders_valid_input(rows, data)


def random_window_renders_valid_input(rows, data):
    out = valid_everywhere(rows)
    calls = [c["id"] for r in rows for c in (r["tool_calls"] or [])]
    assert [c["id"] for m in out["messages"] for c in m.get("tool_calls", ())] == calls  # nothing lost
    assert [m["content"] for m in out["messages"] if m["role"] == "user"] == [r["content"] for r in rows if r["role"] == "user" and r["content"]]
    # Any cut of it (a window after a prune, a bad --last) still renders valid input.
    keep = data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    valid_everywhere([r for r, k in zip(rows, keep) if k])


def test_valid_checks_catch_what_the_apis_refuse():
    """The checks above are strict enough to fail on what the SDK types or the APIs refuse."""
    for bad in (
        [{"role": "tool", "tool_call_id": "c", "content": "r", "name": "lookup"}],  # undeclared key
        [{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}],
        [{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
        [{"role": "user", "content": 3}],
    ):
        with pytest.raises(AssertionError):
            valid_chat(bad)
    for bad in (
        [{"type": "function_call_output", "call_id": "c", "output": "r"}],
        [{"type": "message", "role": "tool", "content": "x"}],
        [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}, {"type": "function_call_output", "call_id": "c", "output": "r"}],
    ):
        with pytest.raises(AssertionError):
            valid_responses(bad)
    for bad in (
        {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "x"}]}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "x", "extra": 1}]}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]},
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]},
                      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                      {"role": "user", "content": [{"type": "text", "text": "y"}, {"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]},
        {"system": "", "messages": []},
    ):
        with pytest.raises(AssertionError):
            valid_anthropic(bad)


def test_gemini_checks_catch_what_the_api_refuses():
    def text(role, t="x"):
        return {"role": role, "parts": [{"text": t}]}

    fc = {"role": "model", "parts": [{"functionCall": {"id": "t", "name": "f", "args": {}}}]}
    fr = {"role": "user", "parts": [{"functionResponse": {"id": "t", "name": "f", "response": {"output": "r"}}}]}
    for bad in (
        {"contents": [text("model")]},  # the model first
        {"contents": [text("user"), text("user")]},  # roles do not alternate
        {"contents": [{"role": "user", "parts": [{"txt": "x"}]}]},  # undeclared key
        {"contents": [{"role": "user", "parts": [{"text": ""}]}]},  # an empty text part
        {"contents": [{"role": "user", "parts": []}]},
        {"contents": [{"role": "user", "parts": [{"text": 3}]}]},
        {"contents": [{"role": "user", "parts": [{"function_call": {"id": "t", "name": "f", "args": {}}}]}]},  # not the REST name
        {"contents": [text("user"), {"role": "model", "parts": [{"functionCall": {"id": "t", "name": "f", "args": "{}"}}]}, fr]},
        {"contents": [text("user"), fc]},  # a call never answered
        {"contents": [text("user"), fc, {"role": "user", "parts": [{"text": "y"}, *fr["parts"]]}]},  # response not first
        {"contents": [fr]},  # a response to nothing
        {"systemInstruction": {"parts": []}, "contents": []},
        {"systemInstruction": "be brief", "contents": []},
        {"system_instruction": {"parts": [{"text": "s"}]}, "contents": []},
    ):
        with pytest.raises(AssertionError):
            valid_gemini(bad)
    valid_gemini({"contents": [text("user"), fc, fr]})


def test_formats_imports_nothing_heavy():
    """It runs on the hot path of `session next --context`; the SDKs are for the tests only."""
    code = ("import sys; import durable_cli.core.formats; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'google', 'pydantic', 'rich', 'typer')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
