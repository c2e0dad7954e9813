"""docs/reference/retention.md §7 `durable usage` Cost, Prices, Which price, `--show-prices`: a row's `meta.cost_usd` is
given; a row with `meta.usage` and no cost is priced from the table in force (shipped, under the user's file),
cache reads and writes at their own prices; `usage --json` says which is which."""

import json
import sqlite3

import pytest

pytestmark = [pytest.mark.both_backends, pytest.mark.cross_object]

MINE = """\
as_of = 2026-11-01
[models."house-model"]
input = 2.0
output = 10.0
cache_read = 0.5
cache_write = 4.0
[models."plain-model"]
input = 1
output = 3
"""


def append(durable, name, meta, text="reply"):
    r = durable("transcript", "append", name, "--role", "assistant", text, "--meta", json.dumps(meta))
    assert r.status == 0, r.err


def usage(durable, *args):
    r = durable("usage", *args, "--json")
    assert r.status == 0, r.err
    return r.json()


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_costs_given_computed_and_unpriced(durable, tmp_path, monkeypatch):
    monkeypatch.setenv("DURABLE_PRICES", str(write(tmp_path / "mine.toml", MINE)))
    # 10,000 input tokens of which 6,000 cache reads and 1,000 cache writes: 3,000 at the base rate
    append(durable, "a", {"model": "house-model", "usage": {"input_tokens": 10000, "output_tokens": 200,
                                                             "cache_read_tokens": 6000, "cache_write_tokens": 1000}})
    append(durable, "a", {"model": "house-model", "usage": {"input_tokens": 5, "output_tokens": 5}, "cost_usd": 0.25})
    # the model less a date, less a provider prefix; cache counts above input_tokens bill no base input
    append(durable, "b", {"model": "openai:plain-model-2026-01-31", "usage": {"input_tokens": 100, "output_tokens": 0,
                                                                               "cache_read_tokens": 150}})
    append(durable, "b", {"model": "unknown-model", "usage": {"input_tokens": 7, "output_tokens": 7}})
    append(durable, "b", {"model": "house-model"})  # no usage: nothing to price

    doc = usage(durable)
    a_cost = (3000 * 2.0 + 6000 * 0.5 + 1000 * 4.0 + 200 * 10.0) / 1e6
    b_cost = (0 * 1 + 150 * 1 + 0 * 3) / 1e6  # cache_read defaults to input
    by_name = {g["name"]: g for g in doc["groups"]}
    a, b = by_name["a"], by_name["b"]
    assert (a["cost_given_usd"], a["cost_computed_usd"], a["cost_usd"]) == (0.25, round(a_cost, 10), round(0.25 + a_cost, 10))
    assert (a["priced_turns"], a["unpriced_turns"], a["cache_read_tokens"], a["cache_write_tokens"]) == (1, 0, 6000, 1000)
    assert (b["cost_given_usd"], b["cost_computed_usd"], b["priced_turns"], b["unpriced_turns"]) == (0.0, round(b_cost, 10), 1, 1)
    total = doc["total"]
    assert (total["priced_turns"], total["unpriced_turns"], total["input_tokens"]) == (2, 1, 10112)
    assert total["cost_usd"] == round(0.25 + a_cost + b_cost, 10) and total["cost_given_usd"] == 0.25
    path = str(tmp_path / "mine.toml")
    assert doc["prices"] == [{"source": "builtin", "as_of": doc["prices"][0]["as_of"]}, {"source": path, "as_of": "2026-11-01"}]

    models = {g["key"]: g for g in usage(durable, "--by", "model")["groups"]}
    assert models["openai:plain-model-2026-01-31"]["price"] == {
        "match": "plain-model", "source": path, "input": 1, "output": 3, "cache_read": 1, "cache_write": 1, "as_of": "2026-11-01"}
    assert models["unknown-model"]["price"] is None and models["unknown-model"]["unpriced_turns"] == 1
    plain = durable("usage", "--by", "model").out.splitlines()
    assert plain[-1].split("\t") == ["total", "2", "5", str(doc["total"]["tokens"]), "10112", "212", str(total["cost_usd"]),
                                     "6150", "1000", "0.25", str(total["cost_computed_usd"]), "2", "1"]

    # a changed table changes every past report; nothing is rewritten
    write(tmp_path / "mine.toml", MINE.replace("output = 10.0", "output = 20.0"))
    again = {g["name"]: g for g in usage(durable)["groups"]}
    assert again["a"]["cost_computed_usd"] == round(a_cost + 200 * 10.0 / 1e6, 10)


def test_the_web_views_usage_page_prices_as_usage_does(durable, tmp_path, monkeypatch):
    """Two pricing paths, one answer: `usage` prices in SQL per usage row (locally), the web view's page per day and
    model group in Python (as the remote backend's `usage` does); over rows of several models, cache counts above
    input included, both give the same costs and counts."""
    from durable_cli import Store

    monkeypatch.setenv("DURABLE_PRICES", str(write(tmp_path / "mine.toml", MINE)))
    for name, meta in [("a", {"model": "house-model", "usage": {"input_tokens": 10000, "output_tokens": 200,
                                                                 "cache_read_tokens": 6000, "cache_write_tokens": 1000}}),
                       ("a", {"model": "house-model", "usage": {"input_tokens": 3, "output_tokens": 7}}),
                       ("b", {"model": "plain-model", "usage": {"input_tokens": 100, "output_tokens": 9, "cache_read_tokens": 150}}),
                       ("b", {"model": "unknown-model", "usage": {"input_tokens": 7, "output_tokens": 7}}),
                       ("c", {"model": "house-model", "usage": {"input_tokens": 1, "output_tokens": 1}, "cost_usd": 0.125})]:
        append(durable, name, meta)
    cli = usage(durable, "--newer-than", "7d")["total"]
    store = Store()
    try:
        page = store.usage_by_day_and_model(7)["total"]
    finally:
        store.close()
    keys = ("cost_usd", "cost_given_usd", "cost_computed_usd", "priced_turns", "unpriced_turns", "input_tokens",
            "output_tokens", "cache_read_tokens", "cache_write_tokens", "sessions", "turns")
    assert {k: page[k] for k in keys} == {k: cli[k] for k in keys}
    assert cli["cost_computed_usd"] > 0 and cli["priced_turns"] == 3 and cli["unpriced_turns"] == 1

def test_shipped_table_prices_common_models(durable, monkeypatch):
    shown = durable("usage", "--show-prices", "--json").json()
    assert shown["sources"] == [{"source": "builtin", "as_of": shown["sources"][0]["as_of"]}]
    sonnet = shown["models"]["claude-sonnet-4-5"]
    assert sonnet["source"] == "builtin" and sonnet["cache_read"] < sonnet["input"] < sonnet["cache_write"]
    assert {"gpt-4o", "gemini-2.5-pro"} <= shown["models"].keys()
    append(durable, "s", {"model": "claude-sonnet-4-5@20250929", "usage": {"input_tokens": 12000, "output_tokens": 500,
                                                                            "cache_read_tokens": 10000}})
    want = (2000 * sonnet["input"] + 10000 * sonnet["cache_read"] + 500 * sonnet["output"]) / 1e6
    assert usage(durable)["total"]["cost_computed_usd"] == round(want, 10)


def test_user_file_replaces_entries_whole_or_the_whole_table(durable, tmp_path, monkeypatch):
    monkeypatch.setenv("DURABLE_PRICES", str(write(tmp_path / "p.toml", '[models."gpt-4o"]\ninput = 7\noutput = 8\n')))
    shown = durable("usage", "--show-prices", "--json").json()
    assert shown["models"]["gpt-4o"] == {"input": 7, "output": 8, "cache_read": 7, "cache_write": 7,
                                         "source": str(tmp_path / "p.toml"), "as_of": None}
    assert shown["models"]["gpt-4o-mini"]["source"] == "builtin"
    write(tmp_path / "p.toml", 'builtin = false\n[models."gpt-4o"]\ninput = 7\noutput = 8\n')
    shown = durable("usage", "--show-prices", "--json").json()
    assert list(shown["models"]) == ["gpt-4o"] and [s["source"] for s in shown["sources"]] == [str(tmp_path / "p.toml")]
    lines = durable("usage", "--show-prices").out.splitlines()
    assert lines == [f"gpt-4o\t7\t8\t7\t7\t{tmp_path / 'p.toml'}\t"]


@pytest.mark.local_only("the price file is the client's: both backends read it alike (test_costs_given_computed_and_unpriced)")
def test_config_names_the_file_relative_to_the_config_directory(durable, tmp_path, monkeypatch):
    write(tmp_path / "mine.toml", MINE)
    assert durable("config", "set", "usage.prices", "mine.toml").status == 0
    shown = durable("usage", "--show-prices", "--json").json()
    assert shown["sources"][-1] == {"source": str(tmp_path / "mine.toml"), "as_of": "2026-11-01"}
    assert durable("config", "get", "usage.prices").out.strip() == "mine.toml"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DURABLE_PRICES", "other.toml")  # the environment wins, relative to the working directory
    write(tmp_path / "other.toml", '[models."x"]\ninput = 1\noutput = 1\n')
    assert durable("usage", "--show-prices", "--json").json()["sources"][-1]["source"] == str(tmp_path / "other.toml")


BAD = [
    ("missing", None, "does not exist"),
    ("not TOML", "[models\n", "not valid TOML"),
    ("unknown top key", "currency = 'EUR'\n", "unknown key 'currency'"),
    ("unknown price key", '[models."m"]\ninput = 1\noutput = 1\nbatch = 0.5\n', "unknown key 'batch'"),
    ("missing output", '[models."m"]\ninput = 1\n', "missing 'output'"),
    ("text price", '[models."m"]\ninput = "1"\noutput = 1\n', "models.'m'.input"),
    ("negative", '[models."m"]\ninput = 1\noutput = -1\n', "models.'m'.output"),
    ("too big", '[models."m"]\ninput = 1\noutput = 1\ncache_read = 1000001\n', "models.'m'.cache_read"),
    ("infinite", '[models."m"]\ninput = inf\noutput = 1\n', "models.'m'.input"),
    ("boolean", '[models."m"]\ninput = true\noutput = 1\n', "models.'m'.input"),
    ("bad date", 'as_of = "June 2026"\n', "as_of"),
    ("long key", f'[models."{"m" * 201}"]\ninput = 1\noutput = 1\n', "1 to 200"),
    ("builtin not boolean", "builtin = 'no'\n", "builtin"),
]


@pytest.mark.parametrize("what,text,says", BAD, ids=[b[0] for b in BAD])
@pytest.mark.local_only("a bad price file is refused by the client before any request: one backend shows it")
def test_a_bad_price_file_is_exit_2_naming_file_and_key(durable, tmp_path, monkeypatch, what, text, says):
    path = tmp_path / "bad.toml"
    if text is not None:
        write(path, text)
    append(durable, "a", {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}})
    monkeypatch.setenv("DURABLE_PRICES", str(path))
    for args in (["usage"], ["usage", "--show-prices"], ["usage", "--by", "model", "--json"]):
        r = durable(*args)
        assert r.status == 2 and r.out == "", (args, r)
        assert len(r.err.splitlines()) == 1
        if "--json" in args:  # the error as JSON (docs/reference/output.md §4)
            message = json.loads(r.err)["error"]["message"]
        else:
            assert r.err.startswith("durable: error: ")
            message = r.err
        assert str(path) in message and says in message
    monkeypatch.delenv("DURABLE_PRICES")
    config = tmp_path / "config.toml"
    write(config, "[defaults]\nlock_timeout = '5s'\n")
    r = durable("config", "set", "usage.prices", str(path))
    assert r.status == 2 and str(path) in r.err and says in r.err
    assert config.read_text() == "[defaults]\nlock_timeout = '5s'\n"  # the config file stays as it was
    assert durable("ls").status == 0  # no other command reads the price table


@pytest.mark.local_only("index.db and the object files are the file backend's")
def test_totals_copied_before_the_priced_sums_are_read_again_once(durable, home, tmp_path, monkeypatch):
    monkeypatch.setenv("DURABLE_PRICES", str(write(tmp_path / "mine.toml", MINE)))
    append(durable, "a", {"model": "house-model", "usage": {"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 40}})
    want = usage(durable)["total"]
    db = sqlite3.connect(home / "index.db")  # as the index.db step leaves rows copied before it
    db.execute("UPDATE usage SET cache_read_tokens = NULL, cache_write_tokens = NULL, uncosted_rows = NULL,"
               " uncosted_base = NULL, uncosted_cache_read = NULL, uncosted_cache_write = NULL, uncosted_output = NULL")
    db.commit()
    db.close()
    assert usage(durable)["total"] == want and want["priced_turns"] == 1
    db = sqlite3.connect(home / "index.db")
    assert db.execute("SELECT count(*) FROM usage WHERE uncosted_rows IS NULL").fetchone() == (0,)
    db.close()
    assert durable("doctor").status == 0


@pytest.mark.local_only("doctor has no remote meaning")
def test_doctor_checks_the_priced_sums(durable, home):
    append(durable, "a", {"model": "m", "usage": {"input_tokens": 100, "output_tokens": 10, "cache_write_tokens": 30}})
    db = sqlite3.connect(durable("path", "a").out.strip())
    db.execute("UPDATE usage_totals SET uncosted_base = uncosted_base + 1")
    db.commit()
    db.close()
    assert "usage_totals" in {p["kind"] for p in durable("doctor", "--json").json()["problems"]}
    assert durable("doctor", "--repair").status == 0 and durable("doctor").status == 0


@pytest.mark.local_only("the table's footer is the client's rendering: one backend shows it")
def test_the_terminal_table_says_how_old_computed_prices_are(durable, tmp_path, monkeypatch):
    from durable_cli.cli import render

    monkeypatch.setenv("DURABLE_PRICES", str(write(tmp_path / "mine.toml", MINE)))
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(render, "pretty", lambda: True)  # as on a terminal
    append(durable, "a", {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}, "cost_usd": 0.5})
    assert "prices drift" not in durable("usage").out  # only given costs: nothing was computed
    append(durable, "a", {"model": "house-model", "usage": {"input_tokens": 1000, "output_tokens": 1}})
    out = durable("usage").out
    dates = usage(durable)["prices"]
    assert out.splitlines()[-1] == f"computed from prices as of {dates[0]['as_of']}, 2026-11-01; prices drift"
