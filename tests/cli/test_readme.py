"""The README's examples run as printed.

Every ```sh block of README.md runs in a fresh home of its own (HOME, DURABLE_HOME, DURABLE_CONFIG,
no DURABLE_* identity inherited), in an empty working directory holding only a link to examples/,
under `bash -euo pipefail` (`set -e`: a failing line fails the block). A failure names the block's
README line and the README line that failed. A block that cannot run offline carries
`<!-- skip-test: REASON -->` on the line above its fence (the README's Development section says so);
a block followed by its closing marker and a bare ``` block must print exactly that block.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

README = os.path.join(ROOT, "README.md")
SKIP = re.compile(r"<!-- skip-test: (.+?) -->")
# blocks that need an optional extra: (python module, extra); skipped without it, a failure under CI
REQUIRES = {"agents-sdk": ("agents", "openai-agents")}


def readme() -> str:
    with open(README, encoding="utf-8") as f:
        return f.read()


def sh_blocks():
    """Every ```sh block: (first README line of its body, body, marker name or None, skip reason or None, shown output or None)."""
    lines = readme().splitlines(keepends=True)
    found, i = [], 0
    while i < len(lines):
        if lines[i].rstrip("\n") != "```sh":
            i += 1
            continue
        start, j = i + 1, i + 1
        while lines[j].rstrip("\n") != "```":
            j += 1
        body = "".join(lines[start:j])
        above, k = [], i - 1
        while k >= 0 and lines[k].startswith("<!--"):
            above.append(lines[k].strip())
            k -= 1
        skip = next((m.group(1) for m in map(SKIP.match, above) if m), None)
        name = next((m.group(1) for m in (re.fullmatch(r"<!-- ([a-z0-9-]+) -->", a) for a in above) if m), None)
        shown = None
        if name:
            rest = "".join(lines[j + 1:j + 400])
            after = re.match(rf"<!-- /{re.escape(name)} -->\n\n```\n(.*?)```\n", rest, re.S)
            shown = after.group(1) if after else None
        found.append((start + 1, body, name, skip, shown))
        i = j + 1
    return found


BLOCKS = sh_blocks()


def block(marker):
    return next(body for _, body, name, _, _ in BLOCKS if name == marker)


def run_block(line, body, tmp_path, timeout=120):
    """Run one block as a new user would, in a fresh home; the completed process."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    os.symlink(os.path.join(ROOT, "examples"), work / "examples")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DURABLE_", "LLM_", "XDG_")) and k not in ("COLUMNS", "LINES")}
    env.update(HOME=str(home), DURABLE_HOME=str(tmp_path / "durable"), DURABLE_CONFIG=str(tmp_path / "config.toml"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    # the ERR trap names the README line that failed (LINENO counts the trap's own line as 1)
    trap = f"trap '__rc=$?; echo \"README.md:$(({line} + LINENO - 2)): exit $__rc: $BASH_COMMAND\" >&2' ERR\n"
    return subprocess.run(["bash", "-euo", "pipefail", "-c", trap + body], capture_output=True, text=True,
                          env=env, cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)


def explain(line, body, r) -> str:
    lines = readme().splitlines()
    where = re.findall(r"^README\.md:(\d+): exit (\d+): (.*)$", r.stderr, re.M)
    said = [f"README.md:{n}: {lines[int(n) - 1].strip()!r} exited {rc}" for n, rc, _ in where]
    if not said:  # no command failed where `set -e` stops: the status is the last command's (`a && b`, ...)
        last = line + len(body.rstrip("\n").splitlines()) - 1
        said = [f"README.md:{last}: the block's last command {lines[last - 1].strip()!r} exited {r.returncode}"]
    return (f"the ```sh block at README.md:{line} failed (exit {r.returncode})\n" + "\n".join(said)
            + f"\n--- stderr ---\n{r.stderr[-3000:]}\n--- stdout ---\n{r.stdout[-2000:]}")


@pytest.mark.parametrize("line,body,name,skip,shown", BLOCKS, ids=[f"README.md:{b[0]}" + (f"-{b[2]}" if b[2] else "") for b in BLOCKS])
def test_every_readme_sh_block_runs_in_a_fresh_home(line, body, name, skip, shown, tmp_path):
    if skip:
        pytest.skip(f"README.md:{line}: {skip}")
    if name in REQUIRES:
        module, extra = REQUIRES[name]
        if importlib.util.find_spec(module) is None:
            reason = f"README.md:{line} needs {module} (pip install -e '.[{extra}]')"
            if os.environ.get("CI") == "true":
                pytest.fail(reason)
            pytest.skip(reason)
    for tool in ("jq",):
        if tool in body and shutil.which(tool) is None and os.environ.get("CI") != "true":
            pytest.skip(f"{tool} is not installed (.ci/run installs it)")
    r = run_block(line, body, tmp_path)
    assert r.returncode == 0, explain(line, body, r)
    if shown is not None:
        assert r.stdout == shown, f"README.md:{line} printed other than the README shows:\n{r.stdout}"
    CHECKS.get(name, lambda out, home: None)(r.stdout, tmp_path / "home")


def _agent_loop(out, home):
    assert '"status": "completed"' in out and '"turns": 4' in out
    assert "user: The login form rejects valid emails" in out


def _fork_follow_import(out, home):
    assert out.splitlines() == ["chat-b", "1 user: Plan the release", "2 user: Ship Friday", "Ship Monday instead",
                                '{"imported":1,"skipped":0}']
    # run with llm's default history under the fresh HOME, where a reader's real one is: the block uses a
    # throw-away LLM_USER_PATH, and never imports (or writes to) that history
    assert not any(home.rglob("logs.db")), "the README's llm example wrote to the reader's own llm history"


def _agent_tools(out, home):
    assert '"outcome":"completed"' in out and '"tools":["word_count"]' in out
    assert '{"key":"fake","input_tokens":9,"output_tokens":2}' in out


def _agent_loop_by_hand(out, home):
    assert out.splitlines()[-1] == '{"id":1,"status":"completed","attempts":1}'


def _hitl(out, home):
    lines = out.splitlines()
    assert lines[0] == "deploy" and lines[1] == "1 Deploy v2 to production?" and lines[3] == "yes", out  # asked, listed, answered


CHECKS = {"agent-loop": _agent_loop, "fork-follow-import": _fork_follow_import, "agent-tools": _agent_tools,
          "agent-loop-by-hand": _agent_loop_by_hand, "hitl": _hitl}


def test_every_named_check_has_its_block():
    names = {name for _, _, name, _, _ in BLOCKS}
    assert set(CHECKS) <= names and set(REQUIRES) <= names


def test_skips_are_few_and_say_why():
    """A skipped block is the exception: it says why, and most blocks run."""
    skipped = [(line, skip) for line, _, _, skip, _ in BLOCKS if skip]
    assert all(len(reason.split()) >= 3 for _, reason in skipped), skipped
    assert len(skipped) * 3 <= len(BLOCKS), skipped


def test_a_failing_block_names_its_line(tmp_path):
    body = "true\ndurable session show no-such-session\necho never\n"
    r = run_block(40, body, tmp_path)
    assert r.returncode == 3 and "never" not in r.stdout
    assert "README.md:41: exit 3: durable session show no-such-session" in r.stderr


def test_readme_setup_lines_are_what_ci_runs():
    line, body, _, _, _ = BLOCKS[0]
    assert line <= 5, "the set-up block opens the README"
    install, test_command = body.splitlines()
    assert install.startswith("python3 -m venv .venv") and "durable transcript append demo" in install
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert test_command in ci.splitlines()
    # pytest's exit 5 ("no tests ran") and every other failure fail CI: nothing swallows the status
    assert "set -euo pipefail" in ci and "|| true" not in ci
    assert "-rs" in test_command.split() and "-n" in test_command.split()  # parallel; a skip says why


def test_readme_library_example(tmp_path, monkeypatch):
    code = re.search(r"## Library\n\n```python\n(.*?)```", readme(), re.S).group(1)
    code = code.replace('"/tmp/agents"', repr(str(tmp_path / "agents")))
    exec(compile(code, "README", "exec"), {})


def test_readme_throw_away_homes_take_their_config_along():
    """A throw-away DURABLE_HOME alone still writes `config set` to ~/.config: the README sets DURABLE_CONFIG beside it."""
    lines = [line for line in readme().splitlines() if re.search(r"DURABLE_HOME=\"?\$\(mktemp", line)]
    assert lines
    for line in lines:
        assert re.search(r"DURABLE_CONFIG=\"?\$\(mktemp -d\)/", line), line


def test_readme_remote_mode_runs_as_printed(tmp_path):
    """The remote block from a clean HOME: `remote dev` serves the packaged Worker with the workerd on PATH."""
    from tests.remote.conftest import require_workerd

    require_workerd()
    from durable_cli.remote.dev import workerd_binary

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(workerd_binary(), bin_dir / "workerd")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DURABLE_")}
    env.update(PATH=os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable), os.environ["PATH"]]), HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", block("remote")], capture_output=True, text=True, env=env,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["1", "hello"]
