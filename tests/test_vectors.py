"""The contract's vectors and Unicode table (durable_cli/contract/): Python and the Worker answer alike.

durable_cli/contract/vectors.json holds input -> outcome for the rules both runtimes hold (names, users,
titles, request ids, invitations, elicit requests, rows, quoting in messages, the approx estimator over
every code point to U+FFFF, the context window over rows and its provider formats, the message catalog
filled); this module runs them against durable_cli, and `npm test` in worker/ runs them against
worker/src/rules with node's test runner (test_worker_rules_pass_the_vectors below).
"""

import importlib.util
import json
import os
import shutil
import subprocess
import unicodedata

import pytest

from durable_cli.contract import text
from tests.conftest import ROOT

CONTRACT = os.path.join(ROOT, "durable_cli", "contract")
WORKER = os.path.join(ROOT, "worker")


def _script(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_rules_give_the_vectors_outcomes():
    """Regenerating the vectors from durable_cli changes nothing: every outcome, message included, holds."""
    gen = _script("gen_vectors")
    with open(gen.TARGET, encoding="utf-8") as f:
        committed = json.load(f)
    fresh = gen.build()
    for rule, vectors in fresh.items():
        if isinstance(vectors, list):
            for want, got in zip(committed[rule], vectors):
                assert got == want, f"{rule}: durable_cli answers {got}, the contract says {want}"
    assert fresh == committed, "run: python scripts/gen_vectors.py (and check the diff: it changes a rule)"


def test_the_known_drifts_are_pinned():
    """Issue 24's drifts, as the file backend answers them (the Worker runs the same vectors)."""
    with open(os.path.join(CONTRACT, "vectors.json"), encoding="utf-8") as f:
        v = json.load(f)

    def look(rule, *args):
        return next(x for x in v[rule] if x["args"] == list(args))

    for c in ("\u00a0", "\u2028", "\u3000", "\U0001f6dc"):
        assert look("name", f"a{c}b", "name")["error"] == "invalid_input"
        assert look("request_id", f"r{c}1")["error"] == "invalid_input"
    assert look("title", "\x1cabc")["ok"] == "abc"
    assert look("title", "\ufeffabc")["error"] == "invalid_input"
    assert look("ask", "\ufeff", [])["ok"] == []
    assert look("approx", "a\ufeffb")["ok"] == 6
    feff = [w for w in v["window"] if w["args"][0][0]["content"] == "a\ufeffb"]
    assert [w["ok"] for w in feff] == [{"seqs": [2, 3], "tokens": 12}, {"seqs": [1, 2, 3], "tokens": 18}]  # 6 a row, not 7
    assert look("quote", "it's not")["ok"] == '"it\'s not"'
    assert look("quote", "a\xa0b")["ok"] == "'a\\xa0b'"


@pytest.mark.skipif(unicodedata.unidata_version != text.TABLE_VERSION, reason="the table is made with Python 3.11")
def test_unicode_table_is_generated():
    gen = _script("gen_unicode")
    with open(gen.TARGET, encoding="utf-8") as f:
        assert f.read() == gen.render(), "run: python scripts/gen_unicode.py"


def test_table_functions_agree_with_this_pythons_str_methods():
    """On the table's Unicode version the native str methods are the table: every code point."""
    with open(os.path.join(CONTRACT, "unicode.json"), encoding="utf-8") as f:
        assert json.load(f)["unicode_version"] == text.TABLE_VERSION
    if not text.NATIVE:
        pytest.skip("another Unicode version: durable_cli.contract.text uses the table itself")
    f = text.by_table()
    every = "".join(map(chr, range(0x110000)))
    shown = "".join(ch for ch in every if ch.isprintable())
    hidden = "".join(ch for ch in every if not ch.isprintable())
    assert f["printable"](shown)  # every printable code point, and (below) the unprintable ones of the BMP and a sample
    sample = "".join(ch for ch in hidden if ch < "\U00010000") + hidden[::31]
    assert len(text.table()["unprintable"].findall(sample)) == len(sample)
    assert f["word_count"](every) == len(every.split())
    assert f["strip"](every[:40] + "x" + every[:40]) == (every[:40] + "x" + every[:40]).strip()
    assert text.white_space() == "".join(ch for ch in every if ch.isspace())
    for s in ("it's not", 'a"b\'c', "\\\n\t\r\x00\x7f\xa0\u2028\ufeff\U0001f6dc\U0001f600\ud800", every[:0x3000:7]):
        assert f["quote"](s) == repr(s)


@pytest.mark.skipif(shutil.which("node") is None or not os.path.isdir(os.path.join(WORKER, "node_modules")),
                    reason="node and worker/node_modules are needed (cd worker && npm ci)")
def test_worker_rules_pass_the_vectors():
    """node's test runner over worker/test (the vectors against worker/src/rules) and the rules' unit tests beside
    them (worker/src/rules/**/*.test.ts, each rule over a real SQLite: worker/test/sqlite.ts)."""
    proc = subprocess.run(["npm", "test", "--silent"], cwd=WORKER, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_number_and_json_drifts_are_pinned():
    """Issue 24's numbers: `1.0` and 2^63 as a usage count, tokens 10^9 + 1, data `1e400` are refused alike."""
    with open(os.path.join(CONTRACT, "vectors.json"), encoding="utf-8") as f:
        v = json.load(f)

    def look(rule, *args):
        return next(x for x in v[rule] if x["args"] == list(args))

    assert look("field_text", "meta", '{"usage": {"input_tokens": 1.0, "output_tokens": 1}}')["error"] == "invalid_input"
    assert look("field_text", "meta", '{"usage": {"input_tokens": 9223372036854775808, "output_tokens": 1}}')["error"] == "invalid_input"
    assert look("field_text", "data", "1e400")["error"] == "invalid_input"
    assert look("field_text", "data", "[" * 201 + "]" * 201)["error"] == "invalid_input"
    assert look("field_text", "data", "[" * 200 + "]" * 200)["ok"] is None
    assert look("row", {"role": "user", "content": "x", "tokens": 10**9 + 1})["error"] == "invalid_input"
    assert look("row", {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 2**63 - 1, "output_tokens": 0}}})["error"] == "invalid_input"
