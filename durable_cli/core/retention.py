"""One object's retention (docs/reference/retention.md §7 `durable ttl`): its TTL, expiry a number of seconds after its last
activity, rescheduled by every write. The twin of worker/src/rules/retention.ts; the services that
expire many objects (ls, delete, purge, sweep) are across/retention.py."""

from .. import clock
from . import state
from .lifecycle import require_session


def ttl(obj, *, seconds=None, clear=False) -> dict:
    """Show, set or clear the TTL: expiry SECONDS after last activity, rescheduled by every write."""
    meta = require_session(obj)
    obj.require_visible()
    if clear or seconds is not None:
        new = None if clear else seconds
        if new != meta["ttl_seconds"]:
            with obj.handle.transaction():
                obj.db.execute(
                    "UPDATE object SET ttl_seconds = ?, expires_at = CASE WHEN ? IS NULL THEN NULL ELSE last_active_at + ? * 1000 END",
                    (new, new, new),
                )
                state.event(obj, "ttl.set", {"ttl_seconds": new})
                state.touch(obj, active=False)
        meta = obj.meta()
    return {"name": meta["name"], "ttl_seconds": meta["ttl_seconds"], "expires_at": clock.iso(meta["expires_at"])}
