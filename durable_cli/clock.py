"""The one place time comes from: epoch milliseconds read through time.time(), so freezegun and faketime both work."""

import time


def now() -> int:
    """Current time in integer epoch milliseconds."""
    return int(time.time() * 1000)


_FIRST_MS = -62135596800000  # 0001-01-01T00:00:00.000Z
_LAST_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


def iso(ms):
    """RFC 3339 UTC with milliseconds and Z, or None."""
    if ms is None:
        return None
    # Clamped to what RFC 3339 can say (years 1-9999): an old object may hold any number, and one
    # absurd expires_at must not make every listing fail.
    seconds, millis = divmod(min(max(int(ms), _FIRST_MS), _LAST_MS), 1000)
    t = time.gmtime(seconds)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (t[0], t[1], t[2], t[3], t[4], t[5], millis)


def sleep(seconds: float) -> None:
    """Poll-friendly sleep; never a timed wait on a threading primitive (those can hang under faketime)."""
    time.sleep(seconds)
