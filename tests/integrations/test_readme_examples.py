"""The README's integration sections run as printed, and print what the README shows."""

import os
import re
import subprocess
import sys

from tests.conftest import ROOT
from tests.integrations.conftest import need


def readme():
    return open(os.path.join(ROOT, "README.md")).read()


def shell_block_and_output(marker):
    found = re.search(rf"<!-- {marker} -->\n```sh\n(.*?)```\n<!-- /{marker} -->\n\n```\n(.*?)```", readme(), re.S)
    assert found, marker
    return found.group(1), found.group(2)


def python_block(heading):
    return re.search(rf"## {heading}\n.*?```python\n(.*?)```", readme(), re.S).group(1)


def run_shell(script, tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, env=env,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_agents_sdk_cli_example_prints_what_the_readme_shows(tmp_path):
    need("agents", "openai-agents")
    script, shown = shell_block_and_output("agents-sdk")
    assert run_shell(script, tmp_path) == shown


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
