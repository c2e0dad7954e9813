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
    """Run as a reader would, with llm's default history (under HOME) where the reader's real one is:
    the block must use a throw-away LLM_USER_PATH, never import (or write to) that history."""
    user_home = tmp_path / "user-home"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"], HOME=str(user_home))
    for var in ("LLM_USER_PATH", "XDG_CONFIG_HOME"):
        env.pop(var, None)
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block("fork-follow-import")], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["chat-b", "1 user: Plan the release", "2 user: Ship Friday", "Ship Monday instead",
                                     '{"imported":1,"skipped":0}']
    assert not any(user_home.rglob("logs.db")), "the README's llm example wrote to the reader's own llm history"


def test_readme_throw_away_homes_take_their_config_along():
    """A throw-away DURABLE_HOME alone still writes `config set` to ~/.config: the README sets DURABLE_CONFIG beside it."""
    text = open(os.path.join(ROOT, "README.md")).read()
    lines = [line for line in text.splitlines() if re.search(r"DURABLE_HOME=\"?\$\(mktemp", line)]
    assert lines
    for line in lines:
        assert re.search(r"DURABLE_CONFIG=\"?\$\(mktemp -d\)/", line), line


def test_readme_work_with_tools_and_the_loop_by_hand_run_as_printed(tmp_path):
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               LLM_USER_PATH=str(tmp_path / "llm"), DURABLE_HOME=str(tmp_path / "home"),
               DURABLE_CONFIG=str(tmp_path / "config.toml"))
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block("agent-tools")], capture_output=True, text=True, env=env,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert '"outcome": "completed"' in r.stdout and '"tools":["word_count"]' in r.stdout
    assert '{"key":"fake","input_tokens":9,"output_tokens":2}' in r.stdout
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block("agent-loop-by-hand")], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == '{"id":1,"status":"completed","attempts":1}'
