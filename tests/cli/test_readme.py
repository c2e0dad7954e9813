"""The README's and the docs' examples run as printed, as a reader runs them.

Each page (README.md, then every page of docs/) runs top to bottom in ONE home and one shell, as a reader
follows it in one terminal: what a block makes or exports, the next block of that page sees (issue 33: the
README's search block made `deploy`, and its human-in-the-loop block's `session create deploy` then failed).
Each page gets a fresh home of its own (HOME, DURABLE_HOME, DURABLE_CONFIG, no DURABLE_* identity
inherited), in an empty working directory holding only a link to examples/, under `bash -euo pipefail`
(`set -e`: a failing line fails the page). A failure names the page's line that failed. A block that cannot
run offline carries `<!-- skip-test: REASON -->` on the line above its fence (docs/development.md says so);
a block followed by its closing marker and a bare ``` block must print exactly that block. A named block
(`<!-- NAME -->`) may live on any of those pages: its checks below follow it.
"""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers import prose

README = os.path.join(ROOT, "README.md")
# every page whose shell blocks run: the README first, then the docs site's pages
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
SKIP = re.compile(r"<!-- skip-test: (.+?) -->")
# blocks that need an optional extra: (python module, extra); skipped without it, a failure under CI
REQUIRES = {"agents-sdk": ("agents", "openai-agents")}


def read(page: str) -> str:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def sh_blocks(page="README.md"):
    """Every ```sh block of PAGE: (first line of its body, body, marker name or None, skip reason or None, shown output or None)."""
    lines = read(page).splitlines(keepends=True)
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
# (page, line, body, name, skip, shown) of every page
ALL_BLOCKS = [(page, *b) for page in PAGES for b in sh_blocks(page)]


def block(marker):
    return next(body for _, _, body, name, _, _ in ALL_BLOCKS if name == marker)


def new_home(tmp_path):
    """A new user's home, working directory and environment: (work, env)."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    os.symlink(os.path.join(ROOT, "examples"), work / "examples")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DURABLE_", "LLM_", "XDG_")) and k not in ("COLUMNS", "LINES")}
    env.update(HOME=str(home), DURABLE_HOME=str(tmp_path / "durable"), DURABLE_CONFIG=str(tmp_path / "config.toml"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    return work, env


def run_block(line, body, tmp_path, timeout=120, page="README.md"):
    """Run one block alone, in a fresh home; the completed process."""
    work, env = new_home(tmp_path)
    # the ERR trap names the page's line that failed (LINENO counts the trap's own line as 1)
    trap = f"trap '__rc=$?; echo \"{page}:$(({line} + LINENO - 2)): exit $__rc: $BASH_COMMAND\" >&2' ERR\n"
    return subprocess.run(["bash", "-euo", "pipefail", "-c", trap + body], capture_output=True, text=True,
                          env=env, cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)


def explain(line, body, r, page="README.md") -> str:
    lines = read(page).splitlines()
    where = re.findall(rf"^{re.escape(page)}:(\d+): exit (\d+): (.*)$", r.stderr, re.M)
    said = [f"{page}:{n}: {lines[int(n) - 1].strip()!r} exited {rc}" for n, rc, _ in where]
    if not said:  # no command failed where `set -e` stops: the status is the last command's (`a && b`, ...)
        last = line + len(body.rstrip("\n").splitlines()) - 1
        said = [f"{page}:{last}: the block's last command {lines[last - 1].strip()!r} exited {r.returncode}"]
    return (f"the ```sh block at {page}:{line} failed (exit {r.returncode})\n" + "\n".join(said)
            + f"\n--- stderr ---\n{r.stderr[-3000:]}\n--- stdout ---\n{r.stdout[-2000:]}")


def _skip_reason(page, line, body, name, skip):
    """Why a block cannot run here (None: it runs); a missing extra or tool fails under CI instead."""
    if skip:
        return f"{page}:{line}: {skip}"
    missing = None
    if name in REQUIRES and importlib.util.find_spec(REQUIRES[name][0]) is None:
        missing = f"{page}:{line} needs {REQUIRES[name][0]} (pip install -e '.[{REQUIRES[name][1]}]')"
    elif "jq" in body and shutil.which("jq") is None:
        missing = "jq is not installed (.ci/run installs it)"
    if missing and os.environ.get("CI") == "true":
        pytest.fail(missing)
    return missing


RUNNABLE_PAGES = [p for p in PAGES if any(not skip for _, _, _, skip, _ in sh_blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_each_page_runs_top_to_bottom_in_one_home(page, tmp_path):
    """A new user follows a page in one terminal: every block in order, in one home and one shell."""
    work, env = new_home(tmp_path)
    try:  # a block may start `durable remote dev`: the workerd the remote tests use, on PATH as installed
        from durable_cli.remote.dev import workerd_binary
        from tests.remote.conftest import _missing

        if not _missing():
            (tmp_path / "bin").mkdir()
            os.symlink(workerd_binary(), tmp_path / "bin" / "workerd")
            env["PATH"] = str(tmp_path / "bin") + os.pathsep + env["PATH"]
    except ImportError:
        pass
    blocks = sh_blocks(page)
    script, where, ran = ["trap 'echo \"@@ERR $LINENO $?: $BASH_COMMAND\" >&2' ERR"], [0], []
    for line, body, name, skip, shown in blocks:
        if _skip_reason(page, line, body, name, skip):
            continue
        ran.append((line, name, shown))
        script.append(f"echo '@@BLOCK:{line}@@'")
        where.append(line)
        for k, text in enumerate(body.rstrip("\n").split("\n")):
            script.append(text)
            where.append(line + k)
    if not ran:
        pytest.skip(f"{page}: no block can run here")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(script) + "\n"], capture_output=True, text=True,
                       env=env, cwd=work, timeout=900, stdin=subprocess.DEVNULL)
    lines = read(page).splitlines()
    failed = [f"{page}:{where[int(n) - 1]}: {lines[where[int(n) - 1] - 1].strip()!r} exited {rc}"
              for n, rc in re.findall(r"^@@ERR (\d+) (\d+): ", r.stderr, re.M)]
    assert r.returncode == 0, (f"{page} stopped (exit {r.returncode})\n" + "\n".join(failed)
                               + f"\n--- stderr ---\n{r.stderr[-3000:]}\n--- stdout ---\n{r.stdout[-2000:]}")
    outputs = dict(zip(map(int, re.findall(r"@@BLOCK:(\d+)@@\n", r.stdout)), re.split(r"@@BLOCK:\d+@@\n", r.stdout)[1:]))
    assert sorted(outputs) == [line for line, _, _ in ran]
    for line, name, shown in ran:
        if shown is not None:
            assert outputs[line] == shown, f"{page}:{line} printed other than the page shows:\n{outputs[line]}"
        CHECKS.get(name, lambda out, home: None)(outputs[line], tmp_path / "home")


def _agent_loop(out, home):
    assert '"status": "completed"' in out and '"turns": 4' in out
    assert "user: The login form rejects valid emails" in out


def _fork_follow_import(out, home):
    assert out.splitlines() == ["plan-b", "1 user: Plan the release", "2 user: Ship Friday", "Ship Monday instead",
                                '{"imported":1,"skipped":0}']
    # run with llm's default history under the fresh HOME, where a reader's real one is: the block uses a
    # throw-away LLM_USER_PATH, and never imports (or writes to) that history (`llm --no-log` in the blocks
    # before it, run in the same home, leaves an empty one there)
    for history in home.rglob("logs.db*"):
        assert b"hello from llm" not in history.read_bytes(), "the README's llm example wrote to the reader's own llm history"


def _agent_tools(out, home):
    assert '"outcome":"completed"' in out and '"tools":["word_count"]' in out
    assert '{"key":"fake","input_tokens":9,"output_tokens":2}' in out


def _agent_loop_by_hand(out, home):
    assert out.splitlines()[-1] == '{"id":1,"status":"completed","attempts":1}'


def _hitl(out, home):
    lines = out.splitlines()
    assert lines[0] == "ship-v2" and lines[1] == "1 Deploy v2 to production?" and lines[3] == "yes", out  # asked, listed, answered


CHECKS = {"agent-loop": _agent_loop, "fork-follow-import": _fork_follow_import, "agent-tools": _agent_tools,
          "agent-loop-by-hand": _agent_loop_by_hand, "hitl": _hitl}


def test_every_named_check_has_its_block():
    names = [name for _, _, _, name, _, _ in ALL_BLOCKS if name]
    assert set(CHECKS) <= set(names) and set(REQUIRES) <= set(names)
    on_docs = [name for page, _, _, name, _, _ in ALL_BLOCKS if name and page != "README.md"]
    assert len(on_docs) == len(set(on_docs)), "a block name stands on one docs page"


def test_skips_are_few_and_say_why():
    """A skipped block is the exception: it says why, and most blocks run."""
    skipped = [(page, line, skip) for page, line, _, _, skip, _ in ALL_BLOCKS if skip]
    assert all(len(reason.split()) >= 3 for _, _, reason in skipped), skipped
    # the pages that teach (the README and the guide) run nearly everything; the in-depth pages may show a
    # deployment to Cloudflare, which cannot run here, and say so
    teaching = [(page, skip) for page, _, _, _, skip, _ in ALL_BLOCKS if page == "README.md" or page.startswith("docs/guide/")]
    assert sum(1 for _, skip in teaching if skip) * 3 <= len(teaching), teaching


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
    code = re.search(r"## Library\n\n```python\n(.*?)```", prose(), re.S).group(1)
    code = code.replace('"/tmp/agents"', repr(str(tmp_path / "agents")))
    exec(compile(code, "README", "exec"), {})


def test_readme_throw_away_homes_take_their_config_along():
    """A throw-away DURABLE_HOME alone still writes `config set` to ~/.config: the README sets DURABLE_CONFIG beside it."""
    lines = [line for line in prose().splitlines() if re.search(r"DURABLE_HOME=\"?\$\(mktemp", line)]
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
