"""Every test gets its own data directory and config file; CLI helpers call the real entry point."""

import io
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What runs outside a test's own `home` (a session-scoped fixture, a call at import) still never reaches the
# user's own data directory or config: a throwaway one for the whole run (each test sets its own below).
_OUTSIDE = os.path.join(tempfile.mkdtemp(prefix="durable-tests-"), "outside")
os.environ["DURABLE_HOME"] = os.path.join(_OUTSIDE, "home")
os.environ["DURABLE_CONFIG"] = os.path.join(_OUTSIDE, "config.toml")

# pydantic keys its table of known types by datetime.datetime when pydantic._internal._generate_schema is
# first imported. Import it before any test freezes the clock (freezegun swaps datetime.datetime for its
# FakeDatetime): imported first inside a frozen test, every pydantic model with a datetime built later in
# that process fails ("Unable to generate pydantic-core schema for datetime.datetime"), which depends on
# the order pytest-xdist happens to give each worker.
try:
    import pydantic._internal._generate_schema  # noqa: F401
except ImportError:  # pydantic comes with the test extra; without it nothing here builds a model
    pass

# freezegun's start() records the freeze before it walks sys.modules patching clocks; if that walk raises
# (a module attribute whose lookup fails with an error freezegun does not expect), `with freeze_time()`
# never reaches __exit__ and the clock stays frozen for the rest of the worker: a later test that waits
# for time to pass (test_both_backends' "1 s old") then sleeps for ever. A start that fails stops what it
# began; and a test that leaves a freeze behind fails, named, instead of hanging a later one.
try:
    import freezegun
    import freezegun.api as _freezegun

    # The walk's getattr on langchain_core's lazy attributes imports submodules that build pydantic models
    # with datetime fields while datetime is already FakeDatetime: PydanticSchemaGenerationError, which
    # freezegun does not expect. Packages that load on attribute access are not walked (their own calls
    # to the clock read the real one; durable's, which the tests freeze, are not among them).
    freezegun.configure(extend_ignore_list=["langchain_core", "langchain", "langgraph", "langsmith", "pydantic",
                                            "openai", "anthropic", "agents", "mcp", "llm"])

    _start = _freezegun._freeze_time.start

    def _start_or_undo(self):
        try:
            return _start(self)
        except BaseException:
            try:
                self.stop()
            except Exception:  # the start's own error is the one to report
                pass
            raise

    _freezegun._freeze_time.start = _start_or_undo
except ImportError:  # freezegun comes with the test extra
    _freezegun = None


@pytest.fixture(autouse=True)
def no_frozen_clock_left_behind(request):
    yield
    if _freezegun is not None and _freezegun.freeze_factories:
        while _freezegun.freeze_factories:  # the fakes read the real clock again once none is left
            _freezegun.freeze_factories.pop()
            for stack in (_freezegun.ignore_lists, _freezegun.tick_flags, _freezegun.tz_offsets):
                if stack:
                    stack.pop()
        pytest.fail(f"{request.node.nodeid} left the clock frozen (freezegun); it is running again", pytrace=False)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: twice the usable cores, at most 8. Half the suite's time is waiting (real processes
    starting, locks, --wait, workerd), so two workers per core keep the cores busy; PYTEST_XDIST_AUTO_NUM_WORKERS
    overrides it. Every test has its own data directory and config (`home` below), its own ports (bound
    to 0) and its own workerd slots (one fleet per worker: tests/remote/conftest.py), so workers share nothing."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if given:
        return int(given)
    return max(2, min(8, 2 * len(os.sched_getaffinity(0))))


# Modules whose tests run on one pytest-xdist worker (docs/development.md: the suite's time), so that what
# they share is paid once, not once per worker: a module with a module-scoped fixture (a workerd, a
# browser, a home made once; found in its source, `one_worker_modules`), and these, which import an SDK in
# the test process that costs seconds of CPU (anthropic ~3.7 s, openai-agents ~3.6 s, pydantic-ai ~2.2 s,
# langgraph ~1.9 s, mcp ~2 s) in every worker that runs one of their tests.
SDK_MODULES = {
    "tests/core/test_formats.py", "tests/core/test_gemini_window.py", "tests/core/test_strict_input.py",
    "tests/core/test_derived_catch_up.py", "tests/integrations/test_langgraph.py",
    "tests/integrations/test_openai_agents.py", "tests/integrations/test_pydantic_ai.py",
    "tests/integrations/test_readme_examples.py", "tests/integrations/test_mcp.py",
}


# Tests that take seconds each (a whole-suite run's junit times: kill walks, soaks' short forms, workerd
# restarts, the README's pages) are handed out before the rest, so that none of them starts last and
# keeps the run going on one worker while the others are idle.
SLOW_FIRST = ("tests/reliability/", "tests/remote/", "tests/cli/test_readme.py", "tests/cli/test_work.py",
              "tests/core/test_session_model.py", "tests/store/test_readonly.py", "tests/store/test_sidecar_edges.py",
              "tests/store/test_locking.py")


def one_worker_modules() -> set:
    """SDK_MODULES and every test module with a module-scoped fixture of its own or the remote tests' `remote_dev`."""
    import glob
    import re

    shared = re.compile(r"""scope=["']module["']|\bremote_dev\b""")
    found = set(SDK_MODULES)
    for path in glob.glob(os.path.join(ROOT, "tests", "**", "test_*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            if shared.search(f.read()):
                found.add(os.path.relpath(path, ROOT).replace(os.sep, "/"))
    return found


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N` (pytest-xdist's `load`, which the README's command uses): load balancing one test at a time,
    except that the tests of a module of `one_worker_modules()` go to one worker together, the largest such
    modules first. (pytest-xdist's own xdist_group cannot do it under pytest 9.2: it renames the test through
    an attribute pytest no longer reads.) Any other --dist is pytest-xdist's own."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    together = one_worker_modules()

    class ModulesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = nodeid.split("::", 1)[0]
            return module if module in together else nodeid

        ordered = False

        def _assign_work_unit(self, node):
            if not self.ordered:  # the queue as first made: groups (largest first), then the slow tests, then the rest
                queue = sorted(self.workqueue.items(), key=lambda unit: (-len(unit[1]), not unit[0].startswith(SLOW_FIRST)))
                self.workqueue.clear()
                self.workqueue.update(queue)
                self.ordered = True
            super()._assign_work_unit(node)

    return ModulesTogether(config, log)


@dataclass
class Result:
    status: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)

    def lines(self):
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A fresh DURABLE_HOME (and config file) per test; no inherited identity."""
    data = tmp_path / "home"
    monkeypatch.setenv("DURABLE_HOME", str(data))
    monkeypatch.setenv("DURABLE_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("DURABLE_USER", "alice")
    for var in ("DURABLE_TENANT", "DURABLE_LOCK_TIMEOUT", "DURABLE_DEBUG", "NO_COLOR", "DURABLE_REMOTE", "DURABLE_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return data


def run_inprocess(*args, input=None, monkeypatch=None):
    """Run `durable ARGS` in this process (fast; freezegun works); returns a Result."""
    from durable_cli.cli.app import run

    stdin = io.TextIOWrapper(io.BytesIO(input.encode() if isinstance(input, str) else (input or b"")), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, out, err
    try:
        status = run([str(a) for a in args])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Result(status, out.getvalue(), err.getvalue())


# Backends (docs/reference/remote.md §13). A module marked `pytestmark = pytest.mark.both_backends` runs each test using the
# `durable` fixture twice: against files ("local") and against a real workerd ("remote": the Worker of
# `durable remote dev`, each test a fresh one with its own storage and secret, several served by one
# workerd: tests/remote/conftest.py Fleet), acting through the admin token so that --as and
# DURABLE_USER work as locally, and test-local names and users need no rewriting. Tests about files, the clock (freezegun cannot reach the Worker) or local-only commands carry
# `@pytest.mark.local_only("why")`. Tests of commands across objects (ls, purge, sweep, forget, export,
# import, usage, search: remote since part 2) carry `@pytest.mark.cross_object`; DURABLE_TEST_CROSS_OBJECT=0
# keeps them local (e.g. against a Worker without part 2).
CROSS_OBJECT_REMOTE = os.environ.get("DURABLE_TEST_CROSS_OBJECT", "1") == "1"


def backends_of(item_or_definition) -> list:
    get = item_or_definition.get_closest_marker
    if get("both_backends") is None:
        return ["local"]
    local_only = get("local_only")
    if local_only is not None:
        if not (local_only.args and str(local_only.args[0]).strip()):
            raise pytest.UsageError(f"{item_or_definition.nodeid}: @pytest.mark.local_only needs its reason")
        return ["local"]
    if get("cross_object") is not None and not CROSS_OBJECT_REMOTE:
        return ["local"]
    return ["local", "remote"]


def pytest_generate_tests(metafunc):
    given = any("backend" in str(m.args[0]) for m in metafunc.definition.iter_markers("parametrize"))
    if "backend" in metafunc.fixturenames and not given:  # a test may name its backend itself
        backends = backends_of(metafunc.definition)
        if len(backends) > 1:  # elsewhere no parameter: test ids stay as they were
            metafunc.parametrize("backend", backends, scope="function")


@pytest.fixture(scope="session")
def _remote_pool(tmp_path_factory):
    from tests.remote.conftest import DevPool

    pool = DevPool(tmp_path_factory)
    yield pool
    pool.close()


@pytest.fixture
def backend(request):
    return getattr(request, "param", "local")


@pytest.fixture
def durable(backend, request, monkeypatch):
    """`durable ARGS` in this process, against files or (backend "remote") a fresh, empty Worker of this test's own."""
    if backend == "remote":
        from tests.remote.conftest import require_workerd

        require_workerd()
        dev = request.getfixturevalue("_remote_pool").take()
        request.node.remote_dev = dev
        monkeypatch.setenv("DURABLE_REMOTE", dev.url)
        monkeypatch.setenv("DURABLE_TOKEN", dev.admin_token)
    return run_inprocess


def run_process(*args, input=None, env=None, timeout=60):
    """Run the installed console script in a real process."""
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-m", "durable_cli", *[str(a) for a in args]],
        input=input.encode() if isinstance(input, str) else input,
        capture_output=True, env=full_env, timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def durable_proc():
    return run_process


# llm's own CLI (click), run in one process for all four prompts: llm's start-up (~1 s of CPU) paid once
_LLM_RUN = """import json, sys
from llm.cli import cli
for args in json.loads(sys.argv[1]):
    cli.main(args, prog_name="llm", standalone_mode=False)
"""


@pytest.fixture(scope="session")
def real_logs(tmp_path_factory):
    """A logs.db written by the real llm CLI with its offline echo model, tool call included (read-only
    for the tests that use it: tests/core/test_llm_import.py checks that not a byte of it changes)."""
    import importlib.util

    if importlib.util.find_spec("llm") is None or importlib.util.find_spec("llm_echo") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("llm and llm-echo must be installed in CI (the e2e extra)")
        pytest.skip("llm and llm-echo are not installed (pip install -e '.[e2e]')")
    where = tmp_path_factory.mktemp("llm")
    prompts = [["-m", "echo", "hi there"], ["-m", "echo", "-s", "be brief", "second"], ["-c", "-m", "echo", "continued"],
               ["-m", "echo", "--functions", "def add(a: int, b: int) -> int:\n    return a + b",
                '{"prompt": "add them", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}']]
    subprocess.run([sys.executable, "-c", _LLM_RUN, json.dumps(prompts)], check=True, capture_output=True,
                   env=dict(os.environ, LLM_USER_PATH=str(where)), timeout=120)
    return where
