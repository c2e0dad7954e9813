"""The one place time comes from: epoch milliseconds read through time.time(), so freezegun and faketime both work."""

import time


def now() -> int:
    """Current time in integer epoch milliseconds."""
    return int(time.time() * 1000)


def iso(ms):
    """RFC 3339 UTC with milliseconds and Z, or None."""
    if ms is None:
        return None
    seconds, millis = divmod(int(ms), 1000)
    t = time.gmtime(seconds)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (t[0], t[1], t[2], t[3], t[4], t[5], millis)


def sleep(seconds: float) -> None:
    """Poll-friendly sleep; never a timed wait on a threading primitive (those can hang under faketime)."""
    time.sleep(seconds)
