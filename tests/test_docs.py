"""The docs site builds offline with no warning, and every section the code cites stands where it says.

The command pages and the contract's tables are checked against the parser and contract.json by
`scripts/gen_docs.py --check` (tests/cli/test_shell.py, with the man pages); every shell block of the
docs runs in tests/cli/test_readme.py.
"""

import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

REFERENCE = os.path.join(ROOT, "docs", "reference")
# a citation in code: `docs/reference/PAGE.md §N` (a `SPEC §N` is a file outside the repository: never)
CITATION = re.compile(r"(?:docs/reference/([a-z0-9_/-]+\.md)|SPEC) §(\d+(?:\.\d+)*)")


def sections() -> dict:
    """Section number -> the reference page (relative to docs/reference) whose heading holds it."""
    found = {}
    for path in glob.glob(os.path.join(REFERENCE, "*.md")):
        with open(path, encoding="utf-8") as f:
            for number in re.findall(r"^#{2,4} (\d+(?:\.\d+)*) ", f.read(), re.M):
                assert number not in found, f"section {number} stands on two pages"
                found[number] = os.path.basename(path)
    return found


def citations():
    """(file, page or None, section number) of every citation in the code, the scripts and the Worker's source."""
    files = glob.glob(os.path.join(ROOT, "durable_cli", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "scripts", "*.py")) + glob.glob(os.path.join(ROOT, "worker", "src", "**", "*.ts"), recursive=True)
    files += [os.path.join(ROOT, "durable_cli", "contract", "contract.json")]
    files += glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True) + glob.glob(os.path.join(ROOT, "bench", "*.py"))
    files = [f for f in files if os.path.basename(f) != "test_docs.py"]  # this file names the pattern
    for path in files:
        with open(path, encoding="utf-8") as f:
            for page, number in CITATION.findall(f.read()):
                yield os.path.relpath(path, ROOT), page or None, number


def test_every_cited_section_has_its_heading_on_its_page():
    where = sections()
    cited = list(citations())
    assert cited, "the code cites its contract"
    outside = sorted({(f, n) for f, page, n in cited if page is None})
    assert not outside, f"citations of SPEC §N, a file the repository does not hold (cite docs/reference/PAGE.md §N): {outside[:20]}"
    missing = sorted({(f, page, n) for f, page, n in cited if n not in where or where[n] != page})
    assert not missing, f"cited sections the reference lacks (or holds on another page): {missing[:20]}"


def test_the_reference_numbers_its_sections_in_order():
    """§1 to §16 each once, so a citation reads as the table of contents does."""
    top = {n for n in sections() if "." not in n}
    assert top == {str(n) for n in range(1, 17)}


def test_the_site_builds_offline_with_no_warning(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs is not installed (the test extra installs it)")
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_PROXY", "_proxy"))}
    env.update(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY="")  # no network to lean on
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "WARNING" not in r.stderr, r.stderr[-4000:]
    page = (tmp_path / "site" / "reference" / "sessions.html").read_text()
    assert 'id="51-the-worker-loop"' in page
    remote = [m for m in re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', page)]
    assert not remote, f"the site loads from the network: {remote}"
