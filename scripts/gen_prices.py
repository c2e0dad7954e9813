"""Write durable_cli/prices.toml, the price table shipped with durable (docs/reference/retention.md §7 Prices), from
Pydantic's genai-prices data, and the README's line that names its models and date.

Run at release time, never by durable itself (`usage` reads the TOML; genai-prices is not imported at run
time): `pip install genai-prices==PINNED` and `python scripts/gen_prices.py`. `--check` exits 1 when the
committed files differ from what this script makes (tests/test_prices.py runs it). To move to a newer
genai-prices, change PINNED and AS_OF below together and regenerate.

What is kept, one price per model (tiers, long-context prices, batch discounts and 1-hour cache writes are
not modelled): the models of OpenAI, Anthropic and Google that genai-prices does not mark deprecated and
prices per text token (input and output), but not audio, image, video, speech or embedding models;
each at the price in force on AS_OF (a price with a start date after it is left out), a tiered price at
its base tier. A model several providers list keeps the first provider's price (OpenAI, Anthropic, then
Google: Anthropic's own price for a Claude model, not Vertex's).
"""

import argparse
import datetime
import os
import sys

PINNED = "0.2.5"  # the genai-prices release the shipped table is made from
AS_OF = "2026-12-05"  # the date its prices were taken (the table's `as_of`)
PROVIDERS = ("openai", "anthropic", "google")
SKIP_WORDS = ("audio", "image", "video", "tts", "transcribe", "embedding", "realtime", "live", "search",
              "robotics", "computer-use", "omni", "vision", "instruct")
FIELDS = (("input", "input_mtok"), ("output", "output_mtok"), ("cache_read", "cache_read_mtok"),
          ("cache_write", "cache_write_mtok"))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(ROOT, "durable_cli", "prices.toml")
README = os.path.join(ROOT, "README.md")
EXAMPLES = ("gpt-4o", "gpt-4.1", "gpt-5", "claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "gemini-2.5-pro",
            "gemini-2.5-flash")
PROVIDER_OF: dict = {}  # model key -> the provider's name (models() fills it)
README_START, README_END = "<!-- prices: scripts/gen_prices.py -->", "<!-- /prices -->"


def _price_at(model, day: datetime.date):
    """MODEL's ModelPrice in force on DAY (the last active conditional price), or None."""
    prices = model.prices
    if not isinstance(prices, list):
        return prices
    found = None
    for conditional in prices:
        constraint = conditional.constraint
        if constraint is None or (getattr(constraint, "start_date", None) is not None and constraint.start_date <= day):
            found = conditional.prices
    return found


def _number(value):
    """A per-million price as a TOML number: a tiered price's base tier; None when absent."""
    if value is None:
        return None
    value = getattr(value, "base", value)
    number = float(value)
    return int(number) if number == int(number) else number


def models() -> dict:
    """{key: {"input", "output", ["cache_read"], ["cache_write"]}} from the installed genai-prices."""
    import genai_prices
    from genai_prices.data import providers

    if genai_prices.__version__ != PINNED:
        sys.exit(f"gen_prices.py: genai-prices {genai_prices.__version__} is installed; the table is made from {PINNED}"
                 " (pip install genai-prices==" + PINNED + ", or change PINNED and AS_OF together)")
    day = datetime.date.fromisoformat(AS_OF)
    by_id = {p.id: p for p in providers}
    out: dict = {}
    for provider in PROVIDERS:
        for model in by_id[provider].models:
            key = model.id
            if model.deprecated or key in out or ":" in key or "/" in key or key.endswith("-") or any(w in key for w in SKIP_WORDS):
                continue
            price = _price_at(model, day)
            if price is None:
                continue
            entry = {name: _number(getattr(price, attr, None)) for name, attr in FIELDS}
            if entry["input"] is None or entry["output"] is None:
                continue
            out[key] = {k: v for k, v in entry.items() if v is not None}
            PROVIDER_OF[key] = by_id[provider].name
    return dict(sorted(out.items()))


def render_table(table: dict) -> str:
    lines = ["# The price table shipped with durable (docs/reference/retention.md §7): USD per million tokens, made by",
             f"# scripts/gen_prices.py from genai-prices {PINNED} at the prices in force on {AS_OF}. Do not edit by hand.",
             f'as_of = "{AS_OF}"', ""]
    for key, entry in table.items():
        lines.append(f'[models."{key}"]')
        lines.extend(f"{k} = {v!r}" for k, v in entry.items())
        lines.append("")
    return "\n".join(lines)


def _families(table: dict) -> str:
    """Each provider's count of models and a few well-known names among them."""
    parts = []
    for provider in dict.fromkeys(PROVIDER_OF[k] for k in table):
        mine = [k for k in table if PROVIDER_OF[k] == provider]
        named = [n for n in EXAMPLES if n in mine] or mine[-3:]
        parts.append(f"{len(mine)} {provider} ({', '.join(f'`{n}`' for n in named)}, …)")
    return ", ".join(parts)


def render_readme(table: dict, readme: str) -> str:
    """README with the block between the markers naming the shipped table's models and date."""
    start, end = readme.index(README_START), readme.index(README_END)
    block = (f"{README_START}\nThe shipped table (prices as of {AS_OF}, from genai-prices {PINNED}) has {_families(table)}"
             " models; `durable usage --show-prices` lists them all.\n")
    return readme[:start] + block + readme[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed files are not what this script makes")
    args = parser.parse_args()
    table = models()
    with open(README, encoding="utf-8") as f:
        readme = f.read()
    wanted = {TARGET: render_table(table), README: render_readme(table, readme)}
    stale = []
    for path, text in wanted.items():
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run python scripts/gen_prices.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
