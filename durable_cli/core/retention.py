"""Enumeration and expiry (SPEC §7): ls from index.db, TTL, delete, purge by age, sweep of due alarms.

index.db finds candidates; every deletion is re-checked under the object's own lock (the index can be
stale) and journaled in index.db before any file is unlinked, so a crash at any point is finished by
the next purge (or `doctor --repair`) and never leaves a row pointing at nothing or a file nobody finds.
"""

from .. import clock
from ..errors import DurableError
from . import alarms, sessions, state

LS_KEYS = ("name", "id", "scope", "owner", "title", "status", "created_at", "updated_at", "last_active_at",
           "turns", "tokens", "expires_at")


def receipt(dry_run=False) -> dict:
    return {"deleted": [], "skipped": [], "changed": [], "dry_run": dry_run}


def entry(row, **extra) -> dict:
    return {"id": row["id"], "owner": row["owner"], "name": row["name"], **extra}


def address_of(row) -> state.Address:
    """The address an index row or object row stands for."""
    scope = row["scope"]
    id_scope = "user" if scope in ("user", "session") else scope
    return state.Address(id_scope, row["owner"], row["name"], scope)


def ls(store, *, statuses=(), all_objects=False, user=None, older_than=None, limit=None):
    """Objects the user participates in, newest activity first, from index.db alone."""
    now = clock.now()
    where = ["o.scope != 'reserved'", "(o.expires_at IS NULL OR o.expires_at > ?)",
             "EXISTS (SELECT 1 FROM members m WHERE m.user = ? AND m.object_id = o.id)"]
    params = [now, user or store.user]
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
    sql = f"SELECT * FROM objects o WHERE {' AND '.join(where)} ORDER BY o.last_active_at DESC, o.id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    for row in store.objects.index(create=False).rows(sql, params):
        yield ls_json(row)


def ls_json(row) -> dict:
    out = {k: row[k] for k in LS_KEYS}
    for k in ("created_at", "updated_at", "last_active_at", "expires_at"):
        out[k] = clock.iso(out[k])
    return out


def ttl(obj, *, seconds=None, clear=False) -> dict:
    """Show, set or clear the TTL: expiry SECONDS after last activity, rescheduled by every write."""
    from .sessions import require_session

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


def delete(store, address) -> dict:
    out = receipt()
    with store.open(address=address) as obj:
        meta = obj.meta()
        if address.id_scope == "tenant":
            obj.require_owner("delete it")
        erase(store, obj.handle, meta)
        out["deleted"].append(entry(meta))
    return out


def erase(store, handle, meta) -> None:
    """Journal the intent in index.db, then unlink the object (file, WAL/SHM, index row, lock file)."""
    store.objects.index().journal([(meta["id"], meta["owner"], meta["name"], meta["created_at"], clock.now())])
    handle.delete()


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
    rows = _candidates(store, where, params)
    if dry_run:
        out["deleted"] = [entry(r) for r in rows]
        return out
    finish_journal(store)
    if progress:
        progress.start(len(rows))
    for row in rows:
        try:
            with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
                meta = state.Opened(handle, address_of(row), None, store.config).meta()
                if meta is None or meta["last_active_at"] >= cutoff or (statuses and meta["status"] not in statuses):
                    continue
                erase(store, handle, meta)
                out["deleted"].append(entry(meta))
        except DurableError as e:
            if e.code == "not_found":
                store.objects.index().remove(row["id"])
            else:
                out["skipped"].append(entry(row, reason="busy" if e.code == "busy" else e.message))
        finally:
            if progress:
                progress.advance()
    return out


def finish_journal(store) -> list:
    """Finish deletions a crash interrupted: each journaled object is removed (if still the same object)."""
    finished = []
    for row in store.objects.index(create=False).rows("SELECT * FROM purge_journal ORDER BY id"):
        try:
            with store.objects.open(row["id"], create=False, what=f"object {row['id']}") as handle:
                created = handle.row("SELECT created_at FROM object")
                if created is None or created[0] == row["created_at"]:
                    handle.delete()
                else:
                    store.objects.index().unjournal(row["id"])  # re-created since: not the one we meant
        except DurableError as e:
            if e.code != "not_found":
                raise
            store.objects.forget_missing(row["id"])
        finished.append(row)
    return finished


def sweep(store, progress=None) -> dict:
    """Fire every due alarm across all objects (through next_alarm_at), then the draft expiry."""
    out = receipt()
    now = clock.now()
    due = _candidates(store, ["next_alarm_at IS NOT NULL", "next_alarm_at <= ?"], [now])
    draft_cutoff = now - store.config.seconds("retention.draft_expiry") * 1000
    drafts = _candidates(store, ["status = 'created'", "updated_at < ?", "scope != 'reserved'"], [draft_cutoff])
    if progress:
        progress.start(len(due) + len(drafts))
    for rows, job in ((due, "alarm"), (drafts, "draft")):
        for row in rows:
            try:
                with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
                    handle.on_sleep = state.sync_index
                    obj = state.Opened(handle, address_of(row), None, store.config)
                    if job == "alarm":
                        fired = alarms.fire_due(obj)
                        if fired == "expired":
                            out["deleted"].append(entry(row, reason="ttl expired"))
                        elif fired == "fired":
                            out["changed"].append(entry(row, what="alarm fired"))
                        elif fired == "ok":
                            state.sync_index(handle)  # the index was stale
                    elif sessions.expire_draft(obj, draft_cutoff):
                        out["changed"].append(entry(row, what="draft archived"))
            except DurableError as e:
                if e.code == "not_found":
                    store.objects.index().remove(row["id"])
                else:
                    out["skipped"].append(entry(row, reason="busy" if e.code == "busy" else e.message))
            finally:
                if progress:
                    progress.advance()
    return out


