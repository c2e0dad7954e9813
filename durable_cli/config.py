"""Settings with one precedence rule: option > environment > config file > default.

The file is TOML, read with tomllib (only when it exists) and written with tomli-w.
"""

import os

from . import durations
from .contract.messages import say
from .contract.text import printable, strip
from .errors import DurableError, invalid

MiB = 1024 * 1024

# key -> (kind, default)
KEYS = {
    "defaults.user": ("name", None),
    "defaults.home": ("path", None),
    "defaults.lock_timeout": ("duration0", "10s"),
    "transcript.token_budget": ("count", 4000),
    "transcript.tokenizer": ("text", "approx"),
    "transcript.max_turn_bytes": ("positive", 2 * MiB),
    "queue.max_unfinished": ("positive", 10),
    "queue.lease": ("duration", "2h"),
    "queue.on_lease_expiry": ("choice:fail,retry", "fail"),
    "queue.max_attempts": ("positive", 3),
    "work.command": ("text", None),
    "retention.draft_expiry": ("duration", "8h"),
    "retention.ephemeral_ttl": ("duration", "24h"),
    # remote mode (docs/reference/remote.md §13): read and validated here; the remote backend itself is not built yet
    "remote.url": ("url", None),
    "remote.token": ("text", None),
    "remote.timeout": ("duration", "10s"),
    "tags.max": ("tags", 32),  # docs/reference/sessions.md §5 Tags: 1-32
    "work.model": ("text", None),
    # docs/reference/retention.md §7 Prices: the user's price table (a TOML file), read by `usage` only
    "usage.prices": ("path", None),
    # traces (docs/reference/traces.md §15.1)
    "telemetry.traces": ("choice:off,work,all", "off"),
    "telemetry.endpoint": ("url", None),
    "telemetry.content": ("bool", False),
    "telemetry.timeout": ("duration10", "1s"),
}

ENVIRONMENT = {
    "defaults.user": "DURABLE_USER",
    "defaults.home": "DURABLE_HOME",
    "defaults.lock_timeout": "DURABLE_LOCK_TIMEOUT",
    "remote.url": "DURABLE_REMOTE",
    "remote.token": "DURABLE_TOKEN",
    "usage.prices": "DURABLE_PRICES",
    "telemetry.traces": "DURABLE_TRACES",
}


def user_dir(kind: str) -> str:
    """platformdirs' user_config_dir / user_data_dir for "durable".

    On Linux this is the XDG rule, computed here because importing platformdirs costs ~4 ms on
    every call (a test checks both agree); elsewhere platformdirs itself answers.
    """
    import sys

    if sys.platform.startswith("linux"):
        variable, fallback = {"config": ("XDG_CONFIG_HOME", "~/.config"), "data": ("XDG_DATA_HOME", "~/.local/share")}[kind]
        base = os.environ.get(variable, "").strip() or os.path.expanduser(fallback)
        return os.path.join(base, "durable")
    import platformdirs

    return platformdirs.user_config_dir("durable") if kind == "config" else platformdirs.user_data_dir("durable")


def config_path() -> str:
    explicit = os.environ.get("DURABLE_CONFIG")
    if explicit:
        return explicit
    return os.path.join(user_dir("config"), "config.toml")


def valid_name(text, what: str = "name") -> str:
    """docs/reference/concepts.md §2: 1-200 code points, printable, equal to its own strip(); else exit 2."""
    if not isinstance(text, str) or not 1 <= len(text) <= 200 or not printable(text) or text != strip(text):
        raise invalid(say("invalid_name", what=what, value=text))
    return text


def check_value(key: str, value, *, from_text: bool = False, origin: str = ""):
    """The typed value for KEY, or exit 2 naming the key. Text from the command line is converted first."""
    if key not in KEYS:
        raise invalid(f"unknown config key {key!r}; known keys: {', '.join(KEYS)}")
    kind = KEYS[key][0]
    where = f" in {origin}" if origin else ""
    if kind == "tags":
        if from_text and isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 32:
            raise invalid(f"config {key}{where} must be an integer from 1 to 32, not {value!r}")
        return value
    if kind in ("count", "positive"):
        if from_text and isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if kind == "positive" else 0):
            raise invalid(f"config {key}{where} must be a {'positive' if kind == 'positive' else 'non-negative'} integer, not {value!r}")
        return value
    if kind == "bool":
        if from_text and value in ("true", "false"):
            value = value == "true"
        if not isinstance(value, bool):
            raise invalid(f"config {key}{where} must be true or false, not {value!r}")
        return value
    if not isinstance(value, str):
        raise invalid(f"config {key}{where} must be a string, not {value!r}")
    if kind.startswith("choice:"):
        choices = kind[len("choice:"):].split(",")
        if value not in choices:
            raise invalid(f"config {key}{where} must be one of {', '.join(choices)}, not {value!r}")
    elif kind == "duration":
        durations.parse(value, what=f"duration for {key}")
    elif kind == "duration10":
        if durations.parse(value, what=f"duration for {key}") > 10:
            raise invalid(f"config {key}{where} must be at most 10s, not {value!r}")
    elif kind == "duration0":
        durations.parse(value, allow_zero=True, what=f"duration for {key}")
    elif kind == "name":
        valid_name(value, f"user for {key}")
    elif kind == "url":
        if not is_url(value):
            raise invalid(f"config {key}{where} must be an http:// or https:// URL, not {value!r}")
    elif not value:
        raise invalid(f"config {key}{where} must not be empty")
    return value


def is_url(value) -> bool:
    """An http:// or https:// URL with a host (and a valid port, when given): `http://` alone is not one."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")) or not value.isprintable() or " " in value:
        return False
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # raises ValueError for a port that is not one
    except ValueError:
        return False
    return bool(parts.hostname)


def _loads(tokenizer: str) -> None:
    """docs/reference/transcript.md §6: `config set transcript.tokenizer` loads the tokenizer before it writes it (one that does not
    load made every append exit 2 afterwards): exit 2 naming the key and what is missing, file unchanged."""
    from .core.tokens import estimator

    try:
        estimator(tokenizer)
    except DurableError as e:
        raise invalid(f"cannot set transcript.tokenizer: {e.message}; the config file was not changed") from None


def _prices_read(value: str, base: str) -> None:
    """docs/reference/retention.md §7 Prices: `config set usage.prices` checks the file (relative: to the config file's
    directory) is a valid price table before it writes the value: exit 2 naming the file and the key."""
    from .prices import check_file, resolve

    try:
        check_file(resolve(value, base))
    except DurableError as e:
        raise invalid(f"cannot set usage.prices: {e.message}; the config file was not changed") from None


class Config:
    """Effective settings. `overrides` holds options given on the command line (highest precedence)."""

    def __init__(self, overrides=None, path=None):
        self.overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        self._path = path
        self._file = None

    @property
    def path(self) -> str:
        if self._path is None:
            self._path = config_path()
        return self._path

    def file_values(self) -> dict:
        """The flat {key: value} of the config file, validated; {} when there is no file."""
        if self._file is None:
            self._file = {}
            try:
                with open(self.path, "rb") as f:
                    raw = f.read()
            except FileNotFoundError:
                return self._file
            except OSError as e:
                raise DurableError(f"cannot read config file {self.path}: {e.strerror}", "storage") from e
            import tomllib

            try:
                data = tomllib.loads(raw.decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                raise invalid(f"config file {self.path} is not valid TOML ({e}); fix or remove it") from e
            for section, table in data.items():
                if not isinstance(table, dict):
                    raise invalid(f"config file {self.path}: unknown key {section!r}")
                for name, value in table.items():
                    key = f"{section}.{name}"
                    self._file[key] = check_value(key, value, origin=self.path)
        return self._file

    def get(self, key: str):
        if key in self.overrides:
            return self.overrides[key]
        env = ENVIRONMENT.get(key)
        if env and os.environ.get(env):
            return check_value(key, os.environ[env], from_text=True, origin=f"${env}")
        values = self.file_values()
        if key in values:
            return values[key]
        return KEYS[key][1]

    def seconds(self, key: str) -> int:
        return durations.parse(self.get(key), allow_zero=KEYS[key][0] == "duration0", what=f"duration for {key}")

    def origin(self, key: str) -> str:
        """Where KEY's effective value comes from: option, env, file or default (`config list --origin`)."""
        if key in self.overrides:
            return "option"
        env = ENVIRONMENT.get(key)
        if env and os.environ.get(env):
            return "env"
        return "file" if key in self.file_values() else "default"

    def effective(self) -> dict:
        """Every key's value as a run would use it (the acting user and data directory resolved)."""
        values = {key: self.get(key) for key in KEYS}
        if values["defaults.user"] is None:
            import getpass

            values["defaults.user"] = getpass.getuser()
        if values["defaults.home"] is None:
            values["defaults.home"] = user_dir("data")
        return values

    def write(self, key: str, value=None, *, unset: bool = False):
        """Set (typed, validated) or unset one key in the file, written with tomli-w."""
        import tomli_w

        values = dict(self.file_values())
        if unset:
            if key not in KEYS:
                raise invalid(f"unknown config key {key!r}; known keys: {', '.join(KEYS)}")
            values.pop(key, None)
        else:
            values[key] = check_value(key, value, from_text=True)
            if key == "transcript.tokenizer":
                _loads(values[key])
            if key == "usage.prices":
                _prices_read(values[key], os.path.dirname(os.path.abspath(self.path)))
        nested: dict = {}
        for k, v in sorted(values.items()):
            section, name = k.split(".", 1)
            nested.setdefault(section, {})[name] = v
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(tomli_w.dumps(nested).encode())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._file = values
