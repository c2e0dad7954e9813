"""The integration sections (docs/guide/frameworks.md, once in the README) run as printed, and print what they show."""

import os
import re

from tests.conftest import ROOT
from tests.helpers import prose
from tests.integrations.conftest import need


def python_block(heading):
    return re.search(rf"## {heading}\n.*?```python\n(.*?)```", prose(), re.S).group(1)


# The agents-sdk shell block (and the output shown under it) runs with every README and docs sh block: tests/cli/test_readme.py


def test_agents_sdk_python_example_runs(home, capsys, monkeypatch):
    need("agents", "openai-agents")
    import importlib.util

    spec = importlib.util.spec_from_file_location("openai_agents_loop", os.path.join(ROOT, "examples", "openai_agents_loop.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.set_tracing_disabled(True)
    code = python_block("Use with the OpenAI Agents SDK")
    assert 'model="gpt-4.1-mini"' in code
    code = code.replace('model="gpt-4.1-mini"', "model=ScriptedModel()")  # offline: the example's scripted model
    exec(compile(code, "README", "exec"), {"ScriptedModel": example.ScriptedModel})
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["The sum is 4.", "The sum is 42."]
    assert "The sum is 42." in out[2]
    from durable_cli import Store

    with Store(home=home).open("chat-42") as chat:
        assert [r["role"] for r in chat.rows()] == ["user", "assistant", "tool", "assistant"] * 2


def test_langgraph_example_runs_and_the_cli_shows_the_thread(home, capsys, durable):
    need("langgraph.graph", "langgraph")
    exec(compile(python_block("Use with LangGraph"), "README", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["you said: order 1234"]
    rows = durable("transcript", "show", "support-7", "--json").json()
    assert [(r["role"], r["content"]) for r in rows] == [
        ("user", "my order is late"), ("assistant", "you said: my order is late"),
        ("user", "order 1234"), ("assistant", "you said: order 1234")]
    assert durable("transcript", "pop", "support-7").status == 4


def test_pydantic_ai_example_runs_and_the_cli_shows_the_conversation(home, capsys, durable):
    need("pydantic_ai", "pydantic-ai")
    exec(compile(python_block("Use with Pydantic AI"), "README", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["6"]
    rows = durable("transcript", "show", "pr-42", "--json").json()
    assert [r["role"] for r in rows] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert rows[2]["tool_calls"][0]["name"] == "add" and rows[2]["meta"]["model"] == "test"
