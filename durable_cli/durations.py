"""Durations: "90d", "1h30m" <-> seconds. Units w d h m s, in that order, each at most once, no leading zeros."""

import re

from .errors import invalid

_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
MAX_SECONDS = 36500 * 86400  # docs/reference/output.md §4: a duration beyond 36,500 days (100 years) is exit 2
_GRAMMAR = re.compile(r"(?:([1-9][0-9]*)w)?(?:([1-9][0-9]*)d)?(?:([1-9][0-9]*)h)?(?:([1-9][0-9]*)m)?(?:([1-9][0-9]*)s)?")

# The grammar as a JSON Schema (ECMA-262 pattern), for schemas that advertise a DURATION (the MCP tools):
# the bound (at most 36500d) is the parser's alone. SCHEMA_OR_ZERO also takes "0".
_PATTERN = r"(?=[0-9])(?:[1-9][0-9]*w)?(?:[1-9][0-9]*d)?(?:[1-9][0-9]*h)?(?:[1-9][0-9]*m)?(?:[1-9][0-9]*s)?"
SCHEMA = {"type": "string", "pattern": f"^{_PATTERN}$"}
SCHEMA_OR_ZERO = {"type": "string", "pattern": f"^(?:0|{_PATTERN})$"}


def parse(text: str, *, allow_zero: bool = False, what: str = "duration") -> int:
    """Seconds for a duration string; exit 2 for anything outside the grammar."""
    if allow_zero and text == "0":
        return 0
    match = _GRAMMAR.fullmatch(text) if isinstance(text, str) and text else None
    if match is None or not any(match.groups()):
        hint = " (or 0)" if allow_zero else ""
        raise invalid(f"invalid {what} {text!r}: use a number with a unit of w d h m s, e.g. 90d, 1h30m, 45s{hint}")
    # A bound on the digits first: int() of thousands of digits is slow or refused outright.
    total = None if any(n and len(n) > 12 for n in match.groups()) else \
        sum(int(n) * size for n, (_, size) in zip(match.groups(), _UNITS) if n)
    if total is None or total > MAX_SECONDS:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise invalid(f"invalid {what} {shown!r}: at most 36500d (100 years)")
    return total


def format(seconds: int) -> str:
    """The canonical string for a number of seconds ("0" for zero)."""
    if seconds == 0:
        return "0"
    parts = []
    for unit, size in _UNITS:
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)
