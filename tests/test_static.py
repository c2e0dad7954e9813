"""Static checks in the test suite (README's test command and .ci/run run them): ruff over the Python tree
(config in pyproject.toml), `tsc --noEmit` over the Worker and a budget of `any` in worker/src. mypy runs in
.ci/run (scripts/check_types.py, a baseline), node's test runner in tests/test_vectors.py."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

WORKER = os.path.join(ROOT, "worker")
IN_CI = os.environ.get("DURABLE_CI") == "1"


def _ruff():
    try:
        import ruff  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def test_ruff_check_passes():
    command = _ruff()
    if command is None:
        if IN_CI:
            pytest.fail("ruff is a test dependency: pip install -e '.[test]'")
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    proc = subprocess.run(command + ["check", "durable_cli", "tests", "scripts", "examples", "bench"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_worker_typechecks():
    tsc = os.path.join(WORKER, "node_modules", ".bin", "tsc")
    if shutil.which("node") is None or not os.path.exists(tsc):
        if IN_CI:
            pytest.fail("node and worker/node_modules are needed (cd worker && npm ci)")
        pytest.skip("node and worker/node_modules are needed (cd worker && npm ci)")
    proc = subprocess.run([tsc, "--noEmit"], cwd=WORKER, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


# `any` in worker/src outside generated/: a ratchet (STYLE.md: keep the counts going down, never up). What is left
# is named where it is deliberate (state.ts Row and DictRow: SQLite's dynamically typed values) or at a boundary
# not yet typed (parts.ts, object.ts's dispatch). Lower the budget when you remove one; never raise it.
ANY_BUDGET = 32
ANY = re.compile(r"\bany\b")


def ts_code(text: str) -> str:
    """TEXT with its comments dropped and its string literals emptied: what is left is the code."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif text[i] in "'\"`":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                j += 2 if text[j] == "\\" else 1
            out.append(quote * 2)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def any_counts() -> dict:
    """{path under worker/src: how many times its code says `any`}, generated/ left out."""
    src = os.path.join(WORKER, "src")
    counts = {}
    for folder, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != "generated"]
        for name in files:
            if name.endswith(".ts"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    n = len(ANY.findall(ts_code(f.read())))
                if n:
                    counts[os.path.relpath(path, src)] = n
    return counts


def test_the_any_count_reads_code_only():
    code = ts_code('const a: any = "any"; // any\n/* any */ let b: Record<string, any>[] = [`any ${1}`];')
    assert len(ANY.findall(code)) == 2


def test_worker_src_stays_within_its_any_budget():
    counts = any_counts()
    total = sum(counts.values())
    assert total <= ANY_BUDGET, (f"{total} `any` in worker/src (budget {ANY_BUDGET}): type the new ones "
                                 + "(generated/ops.ts has every op's arguments); per file: "
                                 + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def test_the_largest_rules_have_unit_tests_beside_them():
    """The ten largest rules of worker/src/rules (by lines) each have a node test beside them (NAME.test.ts, run by
    `npm test`), as the seeds keep contracts.test.ts beside contracts.ts."""
    rules = os.path.join(WORKER, "src", "rules")
    sizes = []
    for folder in (rules, os.path.join(rules, "transcript")):
        for name in os.listdir(folder):
            if name.endswith(".ts") and not name.endswith(".test.ts") and name != "index.ts":
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    sizes.append((sum(1 for _ in f), os.path.join(folder, name)))
    largest = [path for _, path in sorted(sizes, reverse=True)[:10]]
    missing = [os.path.relpath(p, WORKER) for p in largest if not os.path.exists(p[:-3] + ".test.ts")]
    assert missing == [], f"no unit test beside: {', '.join(missing)}"
    with open(os.path.join(WORKER, "package.json"), encoding="utf-8") as f:
        assert '"test": "node test/run.mjs"' in f.read()
    with open(os.path.join(WORKER, "test", "run.mjs"), encoding="utf-8") as f:
        runner = f.read()  # npm test bundles every *.test.ts it finds under test/ and src/ and runs them
    assert 'walk("src")' in runner and 'endsWith(".test.ts")' in runner


def test_every_package_and_data_file_is_in_the_wheel():
    """pyproject.toml lists the packages a `pip install .` ships (not `-e`, which reads the tree): a package added
    under durable_cli/ and not listed imports in every test and fails for every user (durable_cli.telemetry did)."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    packages = {os.path.relpath(base, ROOT).replace(os.sep, ".") for base, _, names in os.walk(os.path.join(ROOT, "durable_cli"))
                if "__init__.py" in names}
    assert packages == set(setuptools["packages"]), packages ^ set(setuptools["packages"])
    import glob

    data = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "durable_cli", "**", "*"), recursive=True)
            if os.path.isfile(p) and not p.endswith((".py", ".pyc")) and "__pycache__" not in p}
    shipped = {os.path.relpath(p, ROOT) for package, patterns in setuptools["package-data"].items() for pattern in patterns
               for p in glob.glob(os.path.join(ROOT, *package.split("."), pattern))}
    assert data <= shipped, sorted(data - shipped)
