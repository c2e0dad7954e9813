"""Rate limits: a token bucket per key in the user's reserved object, exact under concurrent processes
because the object's lock serializes every hit."""

import math
import re

from .. import clock, durations
from ..config import valid_name
from ..contract.messages import say
from ..errors import DurableError, invalid


def parse_rate(text: str):
    """"N/DUR" -> (N, seconds)."""
    match = re.fullmatch(r"([1-9][0-9]*)/(.+)", text or "")
    if not match or len(match.group(1)) > 19 or int(match.group(1)) > 2 ** 63 - 1:  # docs/reference/output.md §4: beyond 2^63-1 is exit 2
        raise invalid(say("invalid_rate", rate=text))
    return int(match.group(1)), durations.parse(match.group(2), what="rate period")


def hit(obj, key: str, *, rate: str, burst=None) -> dict:
    """Take one token: the document, or exit 8 carrying it (retry_after in whole seconds, rounded up)."""
    valid_name(key, "limit key")
    n, per = parse_rate(rate)
    if burst is not None and burst < 1:
        raise invalid(say("invalid_burst"))
    capacity = burst or n
    refill_per_ms = n / (per * 1000)
    now = clock.now()
    with obj.handle.transaction():
        if obj.meta() is None:
            from .state import create_object

            create_object(obj, "active")
        row = obj.db.execute("SELECT tokens, updated_at FROM buckets WHERE key = ?", (key,)).fetchone()
        tokens = capacity if row is None else min(capacity, row[0] + max(0, now - row[1]) * refill_per_ms)
        allowed = tokens >= 1
        if allowed:
            tokens -= 1
        obj.db.execute("INSERT OR REPLACE INTO buckets (key, tokens, updated_at) VALUES (?, ?, ?)", (key, tokens, now))
    retry = None if allowed else max(1, math.ceil((1 - tokens) / refill_per_ms / 1000 - 1e-9))
    doc = {"key": key, "allowed": allowed, "remaining": min(capacity, int(math.floor(tokens + 1e-9))), "retry_after": retry}
    if not allowed:
        raise DurableError(say("rate_limited", key=key, rate=f"{n}/{durations.format(per)}", retry=retry), "rate_limited", document=doc)
    return doc
