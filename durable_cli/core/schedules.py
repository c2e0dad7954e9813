"""Schedules: prompts that enqueue themselves later (docs/reference/sessions.md §5.3).

A schedule is a row of the object; it is fired by the object's alarm (core/alarms.py), at any wake, by
`sweep` and by `work`'s polls. One firing enqueues at most one prompt, for the latest due time that has
passed (the catch-up rule), never while the schedule's last prompt is unfinished (the overlap rule), and
never while the session is archived. Cron expressions are parsed and stepped by `cronsim`, in time zones of
`zoneinfo` (the `tzdata` package backs it), never by code of ours.
"""

import hashlib
import json
import re
from datetime import datetime, timedelta, timezone

from .. import clock, durations
from ..contract.messages import say
from ..errors import conflict, denied, invalid, not_found
from . import state
from .lifecycle import RESERVED_PREFIX, check, require_session, valid_own_request_id

COLUMNS = ("id", "kind", "content", "source", "author", "at", "every", "cron", "tz", "next_at", "last_fired_at",
           "last_prompt_id", "fired", "missed", "request_id", "created_at")
_TIMES = ("at", "next_at", "last_fired_at", "created_at")
MAX_SCHEDULES = 20
MIN_EVERY = 60  # seconds: `--every` is at least 1m
MAX_AHEAD_MS = 36500 * 86400 * 1000
CRON_HORIZON_DAYS = 3653  # "no due time in the next 10 years" is exit 2
DEFAULT_SOURCE = "schedule"

# RFC 3339 with an explicit offset (docs/reference/sessions.md §5.3 TIME): a date and a time, fractional seconds
# allowed, and Z or ±HH:MM; ASCII digits only (the Worker's rule, worker/src/rules/schedules.ts, is the same)
_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})", re.ASCII)
_ALIASES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
            "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_NAMES = {"month": "JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC", "dow": "SUN|MON|TUE|WED|THU|FRI|SAT"}
_RANGES = ((0, 59, None), (0, 23, None), (1, 31, None), (1, 12, "month"), (0, 7, "dow"))


def parse_time(text: str, what: str = "--at") -> int:
    """TIME as epoch ms (kept to the millisecond); exit 2 for anything but RFC 3339 with an explicit offset."""
    m = _TIME.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise invalid(f"invalid {what} {text!r}: use an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00Z "
                      "or 2026-12-01T09:00:00+01:00")
    year, month, day, hour, minute, second, frac, offset = m.groups()
    if offset not in ("Z", "z") and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59):
        raise invalid(f"invalid {what} {text!r}: the offset {offset} is out of range (hours 00-23, minutes 00-59)")
    try:
        if offset in ("Z", "z"):
            tz = timezone.utc
        else:
            sign = -1 if offset[0] == "-" else 1
            tz = timezone(sign * timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])))
        dt = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=tz)
    except ValueError as e:
        raise invalid(f"invalid {what} {text!r}: {e}") from None
    ms = int((frac or "0").ljust(3, "0")[:3])
    return int(dt.timestamp()) * 1000 + ms


def valid_tz(tz: str):
    """The ZoneInfo of an IANA name the zone database knows; exit 2 for another."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(tz, str) or not tz or len(tz) > 255:
        raise invalid(f"unknown time zone {tz!r}: use an IANA name such as UTC, Europe/Paris or America/New_York")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise invalid(f"unknown time zone {tz!r}: use an IANA name such as UTC, Europe/Paris or America/New_York") from None


def _field_ok(field: str, low: int, high: int, names) -> bool:
    """One cron field of the dialect: `*`, a value, a range, a list, a step `*/n` or `a-b/n`."""
    value = r"(?:\d{1,2}" + (f"|{_NAMES[names]}" if names else "") + ")"
    item = re.compile(rf"(?:\*|{value}(?:-{value})?)(?:/\d{{1,2}})?", re.IGNORECASE | re.ASCII)
    for part in field.split(","):
        if not item.fullmatch(part):
            return False
        for number in re.findall(r"[0-9]+", part.split("/")[0]):
            if not low <= int(number) <= high:
                return False
        if "/" in part and int(part.split("/")[1]) < 1:
            return False
        if "/" in part and not part.startswith("*") and "-" not in part:
            return False  # `a/n` is not in the dialect
    return True


def valid_cron(expr: str) -> str:
    """The five fields cronsim is given (an alias resolved); exit 2 for anything outside the dialect."""
    bad = f"invalid --cron {expr!r}: use five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly"
    if not isinstance(expr, str) or len(expr) > 256:
        raise invalid(bad)
    text = expr.strip()
    if text.startswith("@"):
        if text.lower() not in _ALIASES:
            raise invalid(bad)
        return _ALIASES[text.lower()]
    fields = text.split()
    if len(fields) != 5 or not all(_field_ok(f, *r) for f, r in zip(fields, _RANGES)):
        raise invalid(bad)
    return " ".join(fields)


_EPOCH = datetime(1970, 1, 1)


def _ms(due) -> int:
    """Epoch ms of an aware datetime, its fold honoured (a repeated wall time's second occurrence is an hour later)."""
    return (due.replace(tzinfo=None) - due.utcoffset() - _EPOCH) // timedelta(milliseconds=1)


def cron_times(fields: str, tz, after_ms: int):
    """The due times (epoch ms) strictly after AFTER_MS, in order, from cronsim; stops where cronsim finds none."""
    from cronsim import CronSim, CronSimError

    last, stalled = after_ms, 0
    try:
        it = CronSim(fields, datetime.fromtimestamp(after_ms // 1000, timezone.utc).astimezone(tz))
        while True:
            ms = _ms(next(it))
            if ms > last:  # cronsim starts at the minute of START: a due time at START itself is not after it
                last, stalled = ms, 0
                yield ms
                continue
            stalled += 1
            if stalled > 2:  # never loop on a time that does not move (a patched clock's datetime can lose a fold)
                last += 60_000
                it, stalled = CronSim(fields, datetime.fromtimestamp(last // 1000, timezone.utc).astimezone(tz)), 0
    except (CronSimError, StopIteration):
        return


def cron_next(fields: str, tz, after_ms: int, *, horizon_ms=None):
    """The first due time strictly after AFTER_MS (epoch ms), or None when there is none before HORIZON_MS."""
    for ms in cron_times(fields, tz, after_ms):
        return None if horizon_ms is not None and ms > horizon_ms else ms
    return None


def plan(now: int, *, at=None, after=None, every=None, cron=None, tz=None) -> dict:
    """The schedule's kind and times for the options as given; exit 2 for a bad combination or value."""
    given = [k for k, v in (("--at", at), ("--in", after), ("--every", every), ("--cron", cron)) if v is not None]
    if given == ["--at", "--every"]:
        given = ["--every"]
    if len(given) != 1:
        raise invalid("give one of --at TIME, --in DUR, --every DUR (with --at TIME for its first time) or --cron EXPR"
                      + (f" (not {' and '.join(given)})" if given else ""))
    if tz is not None and cron is None:
        raise invalid("--tz is for --cron only")
    first = None
    if at is not None:
        first = parse_time(at)
        if first <= now:
            raise invalid(f"--at {at} is in the past")
        if first - now > MAX_AHEAD_MS:
            raise invalid(f"--at {at} is more than 36500 days ahead")
    if after is not None:
        first = now + durations.parse(after, what="--in") * 1000
        return {"kind": "at", "at": first, "every": None, "cron": None, "tz": None, "next_at": first}
    if every is not None:
        seconds = durations.parse(every, what="--every")
        if seconds < MIN_EVERY:
            raise invalid(f"--every {every} is too short: the minimum is 1m")
        first = first if first is not None else now + seconds * 1000
        return {"kind": "every", "at": first, "every": seconds, "cron": None, "tz": None, "next_at": first}
    if cron is not None:
        zone_name = "UTC" if tz is None else tz
        fields = valid_cron(cron)
        due = cron_next(fields, valid_tz(zone_name), now, horizon_ms=now + CRON_HORIZON_DAYS * 86400 * 1000)
        if due is None:
            raise invalid(f"--cron {cron!r} has no due time in the next 10 years")
        return {"kind": "cron", "at": None, "every": None, "cron": cron, "tz": zone_name, "next_at": due}
    return {"kind": "at", "at": first, "every": None, "cron": None, "tz": None, "next_at": first}


def schedule_json(row) -> dict:
    s = dict(zip(COLUMNS, row))
    for key in _TIMES:
        s[key] = clock.iso(s[key])
    return s


def _row(obj, schedule_id):
    return obj.handle.row(f"SELECT {', '.join(COLUMNS)} FROM schedules WHERE id = ?", (schedule_id,))


def _request_hash(content, source, at, after, every, cron, tz) -> str:
    text = json.dumps([content, source, at, after, every, cron, tz], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def create(obj, content: str, *, source=None, request_id=None, at=None, after=None, every=None, cron=None, tz=None,
           created=False) -> dict:
    """`session prompt NAME TEXT --at/--in/--every/--cron`: store a schedule (nothing is queued, the status does
    not change); event `schedule.created`."""
    from .transcript import check_content

    check_content(obj, content)
    valid_own_request_id(request_id)
    now = clock.now()
    planned = plan(now, at=at, after=after, every=every, cron=cron, tz=tz)
    digest = _request_hash(content, source, at, after, every, cron, tz)
    with obj.handle.transaction():
        meta = state.meta_for_write(obj, created=created, status="created")
        if request_id is not None:
            found = obj.db.execute("SELECT id, request_hash FROM schedules WHERE request_id = ?", (request_id,)).fetchone()
            if found is not None:
                if found[1] != digest:
                    raise conflict(f"request id {request_id!r} was already used with another schedule in {obj.what}")
                return schedule_json(_row(obj, found[0]))
        check(obj, "prompt", status=meta["status"])  # archived: exit 4, nothing stored
        count = obj.db.execute("SELECT count(*) FROM schedules").fetchone()[0]
        if count >= MAX_SCHEDULES:
            raise conflict(f"too many schedules: {obj.what} has {count} (at most {MAX_SCHEDULES}); unschedule one first")
        cur = obj.db.execute(
            "INSERT INTO schedules (kind, content, source, author, at, every, cron, tz, next_at, request_id, request_hash,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (planned["kind"], content, source if source is not None else DEFAULT_SOURCE, obj.actor, planned["at"],
             planned["every"], planned["cron"], planned["tz"], planned["next_at"], request_id, digest, now),
        )
        schedule_id = cur.lastrowid
        state.event(obj, "schedule.created", {"schedule_id": schedule_id, "kind": planned["kind"],
                                              "next_at": clock.iso(planned["next_at"])})
        state.touch(obj)
    return schedule_json(_row(obj, schedule_id))


def schedules(obj) -> list:
    """`session schedules`: oldest id first."""
    require_session(obj)
    obj.require_visible()
    return [schedule_json(r) for r in obj.db.execute(f"SELECT {', '.join(COLUMNS)} FROM schedules ORDER BY id")]


def unschedule(obj, schedule_id: int) -> dict:
    """`session unschedule`: delete it (prompts it queued stay); its author or an owner."""
    require_session(obj)
    obj.require_visible()
    row = _row(obj, schedule_id)
    if row is None:
        raise not_found(say("schedule_not_found", id=schedule_id, what=obj.what, name=obj.name))
    found = schedule_json(row)
    if found["author"] != obj.actor and obj.role() != "owner":
        raise denied(say("unschedule_denied", id=schedule_id, what=obj.what))
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))
        state.event(obj, "schedule.deleted", {"schedule_id": schedule_id})
        state.touch(obj)
    return found


def _due_times(s: dict, now: int):
    """(latest due time <= NOW, how many due times <= NOW from next_at on, the first due time after NOW or None)."""
    if s["kind"] == "at":
        return s["next_at"], 1, None
    if s["kind"] == "every":
        step = s["every"] * 1000
        k = (now - s["at"]) // step
        latest = s["at"] + k * step
        return latest, (latest - s["next_at"]) // step + 1, latest + step
    fields, tz = valid_cron(s["cron"]), valid_tz(s["tz"])
    latest, count = s["next_at"], 1
    for n, due in enumerate(cron_times(fields, tz, s["next_at"])):
        if due > now:
            return latest, count, due
        if n >= 100_000:  # an every-minute expression after a very long gap: counted up to here
            return latest, count, cron_next(fields, tz, now)
        latest, count = due, count + 1
    return latest, count, None


def fire_due(obj, now: int) -> int:
    """Alarm: each schedule with next_at <= NOW fires once (inside the caller's transaction); returns how many
    prompts were queued."""
    queued = 0
    for row in obj.db.execute(f"SELECT {', '.join(COLUMNS)} FROM schedules WHERE next_at <= ? ORDER BY next_at, id",
                              (now,)).fetchall():
        s = dict(zip(COLUMNS, row))
        latest, count, following = _due_times(s, now)
        meta = obj.meta()
        reason = None
        if meta["status"] == "archived":
            reason = "archived"
        elif s["kind"] != "at" and s["last_prompt_id"] is not None and obj.db.execute(
                "SELECT 1 FROM prompts WHERE id = ? AND status IN ('pending', 'processing')", (s["last_prompt_id"],)).fetchone():
            reason = "unfinished"
        elif obj.db.execute("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')").fetchone()[0] \
                >= obj.config.get("queue.max_unfinished"):
            reason = "queue_full"
        request_id = f"{RESERVED_PREFIX}{s['id']}:{clock.iso(latest)}"
        if reason is None and obj.db.execute("SELECT 1 FROM prompts WHERE request_id = ?", (request_id,)).fetchone():
            reason = "unfinished"  # that due time already queued its prompt (never twice)
        if reason is not None:
            state.event(obj, "schedule.missed", {"schedule_id": s["id"], "due_at": clock.iso(latest), "reason": reason,
                                                 "count": count}, actor=None)
            if following is None:
                obj.db.execute("DELETE FROM schedules WHERE id = ?", (s["id"],))
            else:
                obj.db.execute("UPDATE schedules SET next_at = ?, missed = missed + ? WHERE id = ?",
                               (following, count, s["id"]))
            state.touch(obj, active=False)
            continue
        to = check(obj, "prompt", status=meta["status"])
        cur = obj.db.execute(
            "INSERT INTO prompts (status, content, author, source, request_id, created_at, schedule_id)"
            " VALUES ('pending', ?, ?, ?, ?, ?, ?)",
            (s["content"], s["author"], s["source"], request_id, now, s["id"]),
        )
        prompt_id = cur.lastrowid
        state.event(obj, "prompt.queued", {"prompt_id": prompt_id}, actor=s["author"])
        state.event(obj, "schedule.fired", {"schedule_id": s["id"], "prompt_id": prompt_id, "due_at": clock.iso(latest),
                                            "missed": count - 1}, actor=s["author"])
        if following is None:
            obj.db.execute("DELETE FROM schedules WHERE id = ?", (s["id"],))
        else:
            obj.db.execute(
                "UPDATE schedules SET next_at = ?, last_fired_at = ?, last_prompt_id = ?, fired = fired + 1,"
                " missed = missed + ? WHERE id = ?", (following, latest, prompt_id, count - 1, s["id"]))
        if to != meta["status"]:
            obj.db.execute("UPDATE object SET status = ?", (to,))
            state.event(obj, "session.status", {"from": meta["status"], "to": to}, actor=s["author"])
        state.touch(obj)
        queued += 1
    return queued


def count(db) -> int:
    return db.execute("SELECT count(*) FROM schedules").fetchone()[0]
