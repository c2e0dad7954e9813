"""docs/reference/retention.md §7 Prices: the shipped table is data made by scripts/gen_prices.py from the pinned genai-prices
release, never edited by hand and never imported at run time; Which price: the keys a model is looked up under."""

import os
import subprocess
import sys

import pytest

from durable_cli import prices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_shipped_table_and_readme_line_are_what_gen_prices_makes():
    genai_prices = pytest.importorskip("genai_prices", reason="genai-prices comes with the test extra")
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_prices", os.path.join(ROOT, "scripts", "gen_prices.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert genai_prices.__version__ == gen.PINNED, "pyproject's test extra pins the release the table is made from"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_prices.py"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    shipped = prices.load_path(None)
    assert shipped.sources == [{"source": "builtin", "as_of": gen.AS_OF}]
    assert {"gpt-4o", "claude-sonnet-4-5", "gemini-2.5-flash"} <= shipped.models.keys()


def test_usage_reads_the_table_without_genai_prices(tmp_path):
    code = ("import sys; from durable_cli.cli.app import run; status = run(['usage', '--show-prices', '--json']);"
            " assert status == 0; assert 'genai_prices' not in sys.modules, 'usage imported genai-prices'")
    env = dict(os.environ, DURABLE_HOME=str(tmp_path / "home"), DURABLE_CONFIG=str(tmp_path / "config.toml"),
               PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("model,key", [
    ("gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("openai:gpt-4o", "gpt-4o"),
    ("anthropic:claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("vertex/publishers/google/gemini-2.5-flash", "gemini-2.5-flash"),
    ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # a dated key of its own is found first
    ("GPT-4o", None),  # keys are compared exactly
    ("gpt-4o-mini-2", None),
    ("", None),
])
def test_which_price(model, key):
    found = prices.load_path(None).find(model)
    assert (found[0] if found else None) == key
