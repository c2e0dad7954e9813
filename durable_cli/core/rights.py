"""Export and import of ONE opened object (docs/reference/retention.md §7): its export record, and one checked record written
into it under its lock. The twin of worker/src/rules/rights.ts.

The services that walk many objects through a Store (export --all/--user, import of a file of records,
forget, backup) are across/rights.py, which calls these; the record's format and checks are
core/records.py.
"""

from .. import clock
from ..contract.messages import say
from ..errors import conflict, denied
from . import records as _records
from . import state

FORMAT = "durable-export"
VERSION = 8  # 8: schedules, hooks, prompt schedule_id; 7: each object's step journal, elicit requests' binding and approvers, tags; 2: turns carry tool_calls, name, meta, data, forked_from, request_hash, request_last; 3: object external_id, adapter; 4: LangGraph tables; 5: prompt attempts, hand-back order, delay, lease policy; 6: prompt start numbers
TABLES = ("object", "participants", "prompts", "turns", "events", "requests", "facts", "buckets",
          "lg_checkpoints", "lg_writes", "lg_mirrored", "steps", "tags", "schedules", "hooks")  # not deliveries (docs/reference/sessions.md §5.3)


def dump(db) -> dict:
    """The object open on DB as one export record: every table as stored (`SELECT *`)."""
    record: dict = {}
    for table in TABLES:
        cur = db.execute(f"SELECT * FROM {table}")
        columns = [c[0] for c in cur.description]
        record[table] = [{c: _records.blob_text(v) if isinstance(v, bytes) else v for c, v in zip(columns, r)}
                         for r in cur.fetchall()]
    record["sequences"] = {t: n for t, n in db.execute("SELECT name, seq FROM sqlite_sequence") if t in _records.SEQUENCED}
    meta = record.pop("object")[0]
    meta.pop("one", None)
    return {"format": FORMAT, "version": VERSION, "id": meta["id"], "scope": meta["scope"], "owner": meta["owner"],
            "name": meta["name"], "object": meta, **record}


class AlreadyImported(Exception):
    """The record is already in the object (or, with keep_existing, the object holds other content):
    the record is listed in `skipped` with REASON, and is not a failure."""

    def __init__(self, entry, reason="already imported"):
        super().__init__(reason)
        self.entry = entry
        self.reason = reason


def import_locked(handle, checked, address, label, columns, *, actor, listed, replace, all_users, made, refusal,
                  keep_existing=False) -> dict:
    """Under the object's lock (HANDLE, opened by the caller): the existence check, the identity check and
    the write, in one transaction."""
    entry_ = {"id": handle.id, "owner": address.owner, "name": address.name}
    handle.on_sleep = state.sync_index
    absent = False
    try:
        with handle.transaction() as db:
            stored = _records.dump_object(db, columns)
            meta = stored["object"]
            absent = meta is None
            present = meta is not None and (meta["expires_at"] is None or meta["expires_at"] > clock.now())
            if present:
                role = next((p["role"] for p in stored["participants"] if p["user"] == actor), None)
                if address.id_scope == "tenant" and not all_users:
                    if role is None:
                        raise conflict(say("import_name_taken", label=label))
                    if role != "owner":
                        raise denied(say("import_owner_only", label=label))
                if _records.same_content(stored, checked, handle.id):
                    raise AlreadyImported(entry_)
                if not replace and keep_existing:
                    raise AlreadyImported(entry_, say("already_imported_changed"))
                if not replace:
                    raise conflict(say("import_exists", label=label))
                if not listed:
                    raise denied(say("import_takes_session", label=label, actor=actor))
                handle.evict_search()  # the old rows leave the owner's search side file before they are replaced
            elif not listed:
                raise denied(refusal)
            _records.write_object(db, checked, handle.id, columns)
    except AlreadyImported:
        state.sync_index(handle)  # a re-run after a kill between commit and index update completes the index
        raise
    except BaseException:
        if made or absent:
            handle.delete()  # a file this import made (or a half-made one): leave nothing behind
        raise
    if not absent:
        handle.checkpoint()  # the replaced rows leave the WAL too (secure_delete wiped them from the file)
    return dict(entry_, what="replaced" if present else "imported")
