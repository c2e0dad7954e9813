"""The price table `durable usage` prices tokens with (docs/reference/retention.md §7 Prices, Which price).

USD per million tokens, read as TOML: the table shipped in the package (prices.toml, made at release time by
scripts/gen_prices.py from Pydantic's genai-prices data; genai-prices is never imported here), under the
user's own file when config `usage.prices` (env `DURABLE_PRICES`) names one: an entry of the user's file
replaces the shipped entry of the same model whole; `builtin = false` drops the shipped table. Nothing is
fetched over the network. Only `usage`, `usage --show-prices` and `config set usage.prices` read it.
"""

import datetime
import math
import os
import re

from .errors import invalid

BUILTIN = "builtin"
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prices.toml")
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
MAX_PRICE = 10**6
# a trailing date: -YYYYMMDD, -YYYY-MM-DD or @YYYYMMDD
_DATED = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8})$")


class Table:
    """The table in force: `sources` [{"source", "as_of"}] (the shipped table first, then the user's file) and
    `models` {KEY: {"input", "output", "cache_read", "cache_write", "source", "as_of"}} (defaults filled in)."""

    def __init__(self, sources, models):
        self.sources = sources
        self.models = models
        self._found: dict = {}  # model -> find's answer (a report looks the same model up once per group)

    def find(self, model):
        """(KEY, entry) of MODEL's price, or None: the first of these keys the table has: the model as recorded,
        less a trailing date, then both again with a provider prefix removed (up to the first `:`, or up to
        the last `/`). Keys are compared exactly."""
        if not isinstance(model, str) or not model:
            return None
        if model not in self._found:
            self._found[model] = next(((k, self.models[k]) for k in candidates(model) if k in self.models), None)
        return self._found[model]

    def document(self) -> dict:
        """`usage --show-prices --json` (docs/reference/json.md §10)."""
        return {"sources": self.sources, "models": self.models}


def candidates(model: str) -> list:
    """The keys MODEL's price is looked up under, in order."""
    out = [model, _DATED.sub("", model)]
    if ":" in model:
        bare = model.split(":", 1)[1]
    elif "/" in model:
        bare = model.rsplit("/", 1)[1]
    else:
        bare = None
    if bare:
        out += [bare, _DATED.sub("", bare)]
    return list(dict.fromkeys(k for k in out if k))


def cost(entry: dict, base: int, cache_read: int, cache_write: int, output: int) -> float:
    """USD of token sums at ENTRY's prices: (base × input + cache reads × cache_read + cache writes ×
    cache_write + output × output) / 10^6."""
    return (base * entry["input"] + cache_read * entry["cache_read"] + cache_write * entry["cache_write"]
            + output * entry["output"]) / 1e6


def configured_path(config):
    """The user's price file named by config `usage.prices` (relative: to the config file's directory) or
    `DURABLE_PRICES` (relative: to the working directory), `~` expanded, absolute; None when neither names one."""
    env = os.environ.get("DURABLE_PRICES")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    value = config.get("usage.prices")
    if not value:
        return None
    return resolve(value, os.path.dirname(os.path.abspath(config.path)))


def resolve(value: str, base: str) -> str:
    path = os.path.expanduser(value)
    return os.path.normpath(os.path.join(base, path)) if not os.path.isabs(path) else os.path.normpath(path)


def load(config) -> Table:
    """The table in force for CONFIG: the shipped one, under the user's file when one is named. A bad file
    is exit 2 naming the file and the key."""
    return load_path(configured_path(config))


def load_path(user_path) -> Table:
    sources, models = [], {}
    user = _read(user_path, user=True) if user_path is not None else None
    if user is None or user["builtin"]:
        shipped = _read(SHIPPED, user=False)
        sources.append({"source": BUILTIN, "as_of": shipped["as_of"]})
        for key, entry in shipped["models"].items():
            models[key] = {**entry, "source": BUILTIN, "as_of": shipped["as_of"]}
    if user is not None:
        sources.append({"source": user_path, "as_of": user["as_of"]})
        for key, entry in user["models"].items():
            models[key] = {**entry, "source": user_path, "as_of": user["as_of"]}
    return Table(sources, dict(sorted(models.items())))


def check_file(path: str) -> None:
    """`config set usage.prices`: the file must be a valid price table (exit 2 naming the file and the key)."""
    _read(path, user=True)


def _read(path: str, *, user: bool) -> dict:
    """{"as_of", "builtin", "models"} of the price file at PATH, checked; exit 2 naming the file and the key."""
    import tomllib

    what = f"price table {path}"
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise invalid(f"{what} does not exist") from None
    except OSError as e:
        raise invalid(f"cannot read {what}: {e.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise invalid(f"{what} is not valid TOML ({e})") from None
    allowed = ("as_of", "builtin", "models") if user else ("as_of", "models")
    for key in data:
        if key not in allowed:
            raise invalid(f"{what}: unknown key {key!r} (known: {', '.join(allowed)})")
    as_of = _date(data.get("as_of"), what)
    builtin = data.get("builtin", True)
    if not isinstance(builtin, bool):
        raise invalid(f"{what}: builtin must be true or false, not {builtin!r}")
    table = data.get("models", {})
    if not isinstance(table, dict):
        raise invalid(f"{what}: models must be a table of [models.\"MODEL\"] entries")
    models = {}
    for key, entry in table.items():
        where = f"{what}: models.{key!r}"
        if not 1 <= len(key) <= 200:
            raise invalid(f"{where}: a model key is 1 to 200 characters")
        if not isinstance(entry, dict):
            raise invalid(f"{where} must be a table with input and output prices")
        for name in entry:
            if name not in PRICE_KEYS:
                raise invalid(f"{where}: unknown key {name!r} (known: {', '.join(PRICE_KEYS)})")
        for name in ("input", "output"):
            if name not in entry:
                raise invalid(f"{where}: missing {name!r} (USD per million tokens)")
        prices = {}
        for name in PRICE_KEYS:
            value = entry.get(name, entry["input"])
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not 0 <= value <= MAX_PRICE:
                raise invalid(f"{where}.{name} must be a number from 0 to {MAX_PRICE} (USD per million tokens), not {value!r}")
            prices[name] = value
        models[key] = prices
    return {"as_of": as_of, "builtin": builtin, "models": models}


def _date(value, what):
    """as_of: a TOML date or "YYYY-MM-DD" as "YYYY-MM-DD"; None when absent."""
    if value is None:
        return None
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return datetime.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise invalid(f"{what}: as_of must be a date (YYYY-MM-DD), not {value!r}")
