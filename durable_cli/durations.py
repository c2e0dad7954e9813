"""Durations: "90d", "1h30m" <-> seconds. Units w d h m s, in that order, each at most once, no leading zeros."""

import re

from .errors import invalid

_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_GRAMMAR = re.compile(r"(?:([1-9][0-9]*)w)?(?:([1-9][0-9]*)d)?(?:([1-9][0-9]*)h)?(?:([1-9][0-9]*)m)?(?:([1-9][0-9]*)s)?")


def parse(text: str, *, allow_zero: bool = False, what: str = "duration") -> int:
    """Seconds for a duration string; exit 2 for anything outside the grammar."""
    if allow_zero and text == "0":
        return 0
    match = _GRAMMAR.fullmatch(text) if isinstance(text, str) and text else None
    if match is None or not any(match.groups()):
        hint = " (or 0)" if allow_zero else ""
        raise invalid(f"invalid {what} {text!r}: use a number with a unit of w d h m s, e.g. 90d, 1h30m, 45s{hint}")
    return sum(int(n) * size for n, (_, size) in zip(match.groups(), _UNITS) if n)


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
