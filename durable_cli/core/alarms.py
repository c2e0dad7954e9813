"""Alarms: due times stored in the object, fired on its next wake (before the command runs) and by sweep.

TTL expiry deletes the object; lease expiry fails the prompt "timed out"; elicitation expiry marks the
request `expired`. The earliest due time is mirrored in index.db's next_alarm_at for `sweep`.
"""

from .. import clock
from . import elicit, sessions, state


def fire_due(obj) -> str:
    """Fire what is due. Returns "absent" (no object row), "expired" (TTL fired, object deleted) or "ok"."""
    known = obj.handle.known  # a kept connection nobody else committed through since: its facts hold
    if known is not None and known.get("present"):
        due = known["due"]
        if due is None or due > clock.now():
            return "ok"
    meta = obj.meta()
    if meta is None:
        return "absent"
    now = clock.now()
    due = state.next_alarm_at(obj.db)
    if due is None or due > now:
        return "ok"
    if meta["expires_at"] is not None and meta["expires_at"] <= now:
        obj.handle.delete(owner=meta["owner"], name=meta["name"], created_at=meta["created_at"])  # via the intent journal
        obj.handle.alarms_fired += 1
        return "expired"
    with obj.handle.transaction():
        fired = sessions.expire_leases(obj, now) + elicit.expire(obj, now)
        if obj.db.execute("SELECT 1 FROM schedules WHERE next_at <= ? LIMIT 1", (now,)).fetchone():
            from . import schedules  # docs/reference/sessions.md §5.3: imported only when one is due

            fired += schedules.fire_due(obj, now)
    obj.handle.alarms_fired += fired  # an operation span's durable.alarms.fired (docs/reference/traces.md §15.6)
    if obj.db.execute("SELECT 1 FROM deliveries WHERE status = 'pending' AND next_attempt_at <= ? LIMIT 1", (now,)).fetchone():
        from .. import deliver  # docs/reference/sessions.md §5.3: the command that woke it sends them after its own work

        deliver.note(obj.handle)
    return "fired"
