"""Enumeration and expiry (docs/reference/retention.md §7): ls from index.db, delete, purge by age, sweep of due alarms (one
object's TTL: core/retention.py).

index.db finds candidates; every deletion is re-checked under the object's own lock (the index can be
stale) and journaled in index.db before any file is unlinked, so a crash at any point is finished by
the next purge (or `doctor --repair`) and never leaves a row pointing at nothing or a file nobody finds.
"""

import json
import os
import sys

from .. import clock
from ..core import alarms, sessions, state
from ..errors import DurableError

LS_KEYS = ("name", "id", "scope", "owner", "title", "status", "created_at", "updated_at", "last_active_at",
           "turns", "tokens", "expires_at", "external_id", "tags", "cost_given_usd", "pending_requests")


def receipt(dry_run=False) -> dict:
    return {"deleted": [], "skipped": [], "changed": [], "dry_run": dry_run}


def entry(row, **extra) -> dict:
    return {"id": row["id"], "owner": row.get("owner"), "name": row.get("name"), **extra}


def address_of(row) -> state.Address:
    """The address an index row or object row stands for."""
    scope = row["scope"]
    id_scope = "user" if scope in ("user", "session") else scope
    return state.Address(id_scope, row["owner"], row["name"], scope)


def ls(store, *, statuses=(), all_objects=False, user=None, older_than=None, limit=None, tags=()):
    """Objects the user participates in, newest activity first, from index.db alone; TAGS: (KEY, VALUE or None)
    filters that must all hold."""
    for row in ls_rows(store, statuses=statuses, all_objects=all_objects, user=user, older_than=older_than, limit=limit,
                       tags=tags, cost=True):
        yield ls_json(row)


# Each listed row's tags as one JSON object, keys sorted (docs/reference/storage.md §3: index.db's copy, read per row listed)
_TAGS_OF_ROW = ("(SELECT json_group_object(key, value) FROM (SELECT key, value FROM tags t WHERE t.object_id = o.id"
                " ORDER BY key)) AS tags_json")
# Each listed row's recorded cost: the given costs its usage totals keep (docs/reference/storage.md §3), per row listed
_COST_OF_ROW = "(SELECT total(u.cost_usd) FROM usage u WHERE u.object_id = o.id) AS cost_given_usd"


def ls_rows(store, *, limit=None, extra=(), extra_params=(), order="o.last_active_at DESC, o.id DESC", cost=False, **filters):
    """The index rows `ls` lists (EXTRA, EXTRA_PARAMS: more conditions on `o`), as stored; COST: with each one's
    `cost_given_usd`."""
    where, params = ls_where(store, **filters)
    where += extra
    params += list(extra_params)
    sql = f"SELECT o.*, {_TAGS_OF_ROW}{', ' + _COST_OF_ROW if cost else ''} FROM objects o WHERE {' AND '.join(where)} ORDER BY {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return store.objects.index(create=False).rows(sql, params)


def ls_where(store, *, statuses=(), all_objects=False, user=None, older_than=None, everyone=False, tags=()):
    """The conditions (on index.db's `objects o`) and parameters of what `ls` lists; EVERYONE: every
    user's objects (installation-wide commands), not only those USER participates in; TAGS: (KEY, VALUE or
    None) pairs, each a tag the object must have (with that VALUE unless None), found through index.db's
    tags_by_key (docs/reference/retention.md §7)."""
    now = clock.now()
    where = ["o.scope != 'reserved'", "(o.expires_at IS NULL OR o.expires_at > ?)"]
    params = [now]
    if not everyone:
        where.append("EXISTS (SELECT 1 FROM members m WHERE m.user = ? AND m.object_id = o.id)")
        params.append(user or store.user)
    if statuses:
        where.append(f"o.status IN ({','.join('?' * len(statuses))})")
        params += list(statuses)
    elif not all_objects:
        where.append("o.status != 'archived'")
    if older_than is not None:
        where.append("o.last_active_at < ?")
        params.append(now - older_than * 1000)
    if store.tenant is not None:
        where.append("o.scope = 'tenant' AND o.owner = ?")
        params.append(store.tenant)
    for key, value in tags:
        if value is None:
            where.append("o.id IN (SELECT t.object_id FROM tags t WHERE t.key = ?)")
            params.append(key)
        else:
            where.append("o.id IN (SELECT t.object_id FROM tags t WHERE t.key = ? AND t.value = ?)")
            params += [key, value]
    return where, params


def ls_json(row) -> dict:
    out = {k: row[k] for k in LS_KEYS[:-3]}
    if "tags_json" in row:  # index.db's rows
        out["tags"] = json.loads(row["tags_json"]) if row["tags_json"] else {}
    else:  # the index shards' rows (remote): [KEY, VALUE] pairs, sorted by KEY
        out["tags"] = dict(row.get("tags") or ())
    out["cost_given_usd"] = round(float(row.get("cost_given_usd") or 0), 10)
    out["pending_requests"] = int(row.get("pending_requests") or 0)
    for k in ("created_at", "updated_at", "last_active_at", "expires_at"):
        out[k] = clock.iso(out[k])
    return out


def delete(store, address) -> dict:
    """Delete one object by id under its lock, through the intent journal. Deleting never needs to read
    the object: one that cannot be opened (corrupt) is deleted all the same (a tenant object's owner
    is then taken from index.db)."""
    out = receipt()
    try:
        with store.open(address=address) as obj:
            meta = obj.meta()
            if address.id_scope == "tenant":
                obj.require_owner("delete it")
            erase(store, obj.handle, meta)
            out["deleted"].append(entry(meta))
        return out
    except DurableError as e:
        if e.code != "storage":
            raise
        object_id = store.objects.object_id(address.id_scope, address.owner, address.name)
        if object_id is None or not os.path.exists(store.objects.paths.object_file(object_id)):
            raise
        if address.id_scope == "tenant" and not store.objects.index(create=False).rows(
            "SELECT 1 FROM members WHERE object_id = ? AND user = ? AND role = 'owner'", (object_id, store.user)
        ):
            raise  # cannot tell that the acting user may delete it
        store.objects.remove(object_id, address.what, owner=address.owner, name=address.name)
        out["deleted"].append({"id": object_id, "owner": address.owner, "name": address.name})
        return out


def erase(store, handle, meta) -> None:
    """Remove the object through the intent journal (file, WAL/SHM, index row, lock file)."""
    meta = meta or {}
    handle.delete(owner=meta.get("owner"), name=meta.get("name"), created_at=meta.get("created_at"))


# -- many objects, one policy --------------------------------------------------------------------------

def each_object(store, rows, job, out, *, progress=None, on_skip=None):
    """Run JOB(row) for every row (an index row, or at least {"id"}) under one policy, yielding what it
    returns (when not None). A busy object is skipped with reason "busy"; one that fails with a storage
    error (corrupt, unreadable) is skipped with the reason; a missing one has its index row removed.
    One object never stops the others; `conclude` turns the skips into the exit status at the end."""
    def skip(row, reason):
        out["skipped"].append(entry(row, reason=reason))

    on_skip = on_skip or skip
    if progress:
        progress.start(len(rows))
    for row in rows:
        try:
            result = job(row)
        except DurableError as e:
            if e.code == "not_found":
                store.objects.forget_missing(row["id"])
            elif e.code == "busy":
                on_skip(row, "busy")
            elif e.code == "storage":
                on_skip(row, e.message)
            else:
                raise
            result = None
        finally:
            if progress:
                progress.advance()
        if result is not None:
            yield result


def run_each(store, rows, job, out, **kw) -> None:
    for _ in each_object(store, rows, job, out, **kw):
        pass


def conclude(out, what, *, busy_ok=False) -> dict:
    """After every object was tried: exit 7 when one was corrupt, 6 when one was busy (unless BUSY_OK:
    purge and sweep), the receipt printed whatever the exit."""
    corrupt = [s for s in out["skipped"] if s["reason"] != "busy"]
    busy = [s for s in out["skipped"] if s["reason"] == "busy"]
    if corrupt:
        raise DurableError(f"{what} skipped {len(corrupt)} object(s) that could not be read ({corrupt[0]['reason']})",
                           "storage", document=out)
    if busy and not busy_ok:
        raise DurableError(f"{what} skipped {len(busy)} busy object(s); run it again when they are free",
                           "busy", document=out)
    return out


def conclude_import(out, failures) -> dict:
    """After every record was tried (both backends' import): the receipt, or the first failure's exit status
    raised with it, saying how many records were not imported when more than one."""
    if failures:
        first = failures[0]
        more = f" ({len(failures)} records were not imported; see the receipt)" if len(failures) > 1 else ""
        raise DurableError(first.message + more, first.code, document=out)
    return out


def _candidates(store, where, params):
    return store.objects.index(create=False).rows(f"SELECT * FROM objects WHERE {' AND '.join(where)} ORDER BY id", params)


def purge(store, *, older_than: int, user=None, statuses=(), dry_run=False, progress=None) -> dict:
    """Delete every object idle for longer than OLDER_THAN (re-checked under each lock); busy ones are skipped."""
    out = receipt(dry_run)
    cutoff = clock.now() - older_than * 1000
    where, params = ["scope != 'reserved'", "last_active_at < ?"], [cutoff]
    if user is not None:
        where.append("owner = ? AND scope IN ('user', 'session')")
        params.append(user)
    if store.tenant is not None:
        where.append("scope = 'tenant' AND owner = ?")
        params.append(store.tenant)
    if statuses:
        where.append(f"status IN ({','.join('?' * len(statuses))})")
        params += list(statuses)
    if dry_run:
        out["deleted"] = [entry(r) for r in _candidates(store, where, params)]
        return out
    finish_journal(store, out)
    rows = _candidates(store, where, params)
    # out of the search side files first, one transaction per owner (each removal then finds nothing to do)
    store.objects.evict_search_many([(r["id"], address_of(r).id_scope, r["owner"]) for r in rows], deferred=True)

    def job(row):
        with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
            meta = state.Opened(handle, address_of(row), None, store.config).meta()
            if meta is None or meta["last_active_at"] >= cutoff or (statuses and meta["status"] not in statuses):
                return
            erase(store, handle, meta)
            out["deleted"].append(entry(meta))

    with store.objects.deferred_dir_sync():
        run_each(store, rows, job, out, progress=progress)
    return conclude(out, "purge", busy_ok=True)


def finish_journal(store, out=None) -> list:
    """Finish the intents a crash interrupted, each under its object's lock: removed only if the file is
    still the one durable left when it journaled the intent, else the intent is dropped (docs/reference/storage.md §3)."""
    out = receipt() if out is None else out
    rows = store.objects.index(create=False).rows("SELECT * FROM purge_journal ORDER BY id")
    return list(each_object(store, rows, lambda row: row if store.objects.finish_intent(row) == "finished" else None, out))


def sweep(store, progress=None) -> dict:
    """Fire every due alarm across all objects (through next_alarm_at), then the draft expiry."""
    out = receipt()
    now = clock.now()
    due = _candidates(store, ["next_alarm_at IS NOT NULL", "next_alarm_at <= ?"], [now])
    draft_cutoff = now - store.config.seconds("retention.draft_expiry") * 1000
    drafts = _candidates(store, ["status = 'created'", "updated_at < ?", "scope != 'reserved'"], [draft_cutoff])
    rows = [dict(r, job="alarm") for r in due] + [dict(r, job="draft") for r in drafts]

    def job(row):
        kind = row.pop("job")
        with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
            handle.on_sleep = state.sync_index
            obj = state.Opened(handle, address_of(row), None, store.config)
            if kind == "alarm":
                before = handle.alarms_fired
                schedule_due = obj.meta() is not None and obj.db.execute(
                    "SELECT 1 FROM schedules WHERE next_at <= ? LIMIT 1", (clock.now(),)).fetchone() is not None
                fired = alarms.fire_due(obj)
                if fired == "expired":
                    out["deleted"].append(entry(row, reason="ttl expired"))
                elif fired == "fired" and schedule_due:  # docs/reference/retention.md §7: where a schedule fired
                    out["changed"].append(entry(row, what="schedule fired"))
                elif fired == "fired" and handle.alarms_fired > before:  # a lease or an elicit request expired
                    out["changed"].append(entry(row, what="alarm fired"))
                elif fired == "ok":
                    state.sync_index(handle)  # the index was stale
            elif sessions.expire_draft(obj, draft_cutoff):
                out["changed"].append(entry(row, what="draft archived"))

    run_each(store, rows, job, out, progress=progress)
    if "durable_cli.deliver" in sys.modules:  # the wakes above found due deliveries (docs/reference/sessions.md §5.3)
        by_id = {r["id"]: r for r in due}
        for object_id, tally in sys.modules["durable_cli.deliver"].sweep_send():
            what = ", ".join(f"{tally[k]} {k}" for k in ("delivered", "pending", "failed"))
            out["changed"].append(entry(by_id.get(object_id, {"id": object_id}), what=f"deliveries: {what}"))
    return conclude(out, "sweep", busy_ok=True)
