"""The README's examples run as printed."""

import os
import re
import subprocess
import sys

from tests.conftest import ROOT


def block(marker):
    text = open(os.path.join(ROOT, "README.md")).read()
    found = re.search(rf"<!-- {marker} -->\n```sh\n(.*?)```\n<!-- /{marker} -->", text, re.S)
    assert found, marker
    return found.group(1)


def test_readme_setup_lines_are_what_ci_runs():
    lines = open(os.path.join(ROOT, "README.md")).read().splitlines()
    assert lines[3].startswith("python3 -m venv .venv") and "durable transcript append demo" in lines[3]
    test_command = lines[4]
    assert test_command in open(os.path.join(ROOT, ".ci", "run")).read().splitlines()


def test_readme_agent_loop_runs_as_printed(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               LLM_USER_PATH=str(tmp_path / "llm"))
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block("agent-loop")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert '"status": "completed"' in out and '"turns": 4' in out
    assert "user: The login form rejects valid emails" in out


def test_readme_library_example(tmp_path, monkeypatch):
    text = open(os.path.join(ROOT, "README.md")).read()
    code = re.search(r"## Library\n\n```python\n(.*?)```", text, re.S).group(1)
    code = code.replace('"/tmp/agents"', repr(str(tmp_path / "agents")))
    exec(compile(code, "README", "exec"), {})


def test_readme_fork_follow_import_runs_as_printed(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               LLM_USER_PATH=str(tmp_path / "llm"))
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block("fork-follow-import")], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["chat-b", "1 user: Plan the release", "2 user: Ship Friday", "Ship Monday instead",
                                     '{"imported":1,"skipped":0}']
