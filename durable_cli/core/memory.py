"""Remembered facts with provenance, in the user's reserved object.

A fact starts unconfirmed unless --confirmed; a `model` fact can only be confirmed later by a person
(`memory confirm`). Reads return confirmed, unexpired facts unless asked for --all.
"""

from .. import clock
from ..config import valid_name
from ..contract.messages import say
from ..errors import conflict, invalid, not_found

SOURCES = ("user", "model", "external")
COLUMNS = "key, value, source, confirmed, created_at, confirmed_at, expires_at"


def fact_json(r) -> dict:
    return {
        "key": r[0], "value": r[1], "source": r[2], "confirmed": bool(r[3]), "created_at": clock.iso(r[4]),
        "confirmed_at": clock.iso(r[5]), "expires_at": clock.iso(r[6]),
    }


def _visible(r, now) -> bool:
    return bool(r[3]) and (r[6] is None or r[6] > now)


def check_set(key: str, value: str, source: str, confirmed: bool) -> None:
    valid_name(key, "memory key")
    if source not in SOURCES:
        raise invalid(say("invalid_memory_source", source=source))
    if source == "model" and confirmed:
        raise invalid(say("model_fact_confirmed"))
    if value == "":
        raise invalid(say("empty_value"))


def set_fact(obj, key: str, value: str, *, source="user", confirmed=False, expires_seconds=None) -> dict:
    check_set(key, value, source, confirmed)
    now = clock.now()
    with obj.handle.transaction():
        if obj.meta() is None:
            from .state import create_object

            create_object(obj, "active")
        obj.db.execute(
            "INSERT OR REPLACE INTO facts (key, value, source, confirmed, created_at, confirmed_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, value, source, int(confirmed), now, now if confirmed else None,
             now + expires_seconds * 1000 if expires_seconds else None),
        )
    return fact_json(obj.handle.row(f"SELECT {COLUMNS} FROM facts WHERE key = ?", (key,)))


def _row(obj, key):
    valid_name(key, "memory key")
    return obj.handle.row(f"SELECT {COLUMNS} FROM facts WHERE key = ?", (key,)) if obj.meta() else None


def get_fact(obj, key: str, *, all_facts=False) -> dict:
    row = _row(obj, key)
    if row is None:
        raise not_found(say("fact_not_found", key=key))
    if not all_facts and not row[3]:
        raise not_found(say("fact_unconfirmed", key=key))
    if not all_facts and not _visible(row, clock.now()):
        raise not_found(say("fact_expired", key=key))
    return fact_json(row)


def list_facts(obj, *, all_facts=False) -> list:
    if obj is None or obj.meta() is None:
        return []
    now = clock.now()
    return [fact_json(r) for r in obj.db.execute(f"SELECT {COLUMNS} FROM facts ORDER BY key") if all_facts or _visible(r, now)]


def confirm(obj, key: str) -> dict:
    row = _row(obj, key)
    if row is None:
        raise not_found(say("fact_not_found", key=key))
    if not row[3]:
        if row[6] is not None and row[6] <= clock.now():  # an expired fact is not confirmed (docs/reference/ui.md §16.4)
            raise conflict(say("fact_expired_confirm", key=key))
        with obj.handle.transaction():
            obj.db.execute("UPDATE facts SET confirmed = 1, confirmed_at = ? WHERE key = ?", (clock.now(), key))
    return fact_json(obj.handle.row(f"SELECT {COLUMNS} FROM facts WHERE key = ?", (key,)))


def forget_fact(obj, key: str) -> dict:
    row = _row(obj, key)
    if row is None:
        raise not_found(say("fact_not_found", key=key))
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM facts WHERE key = ?", (key,))
    obj.handle.checkpoint()
    return fact_json(row)
