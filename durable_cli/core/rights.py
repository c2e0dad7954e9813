"""Data rights (SPEC §7): forget a user, export and import objects, back the whole directory up.

forget leaves no byte of the erased objects' content in any file under the data directory: their
files are unlinked, and index.db erases with secure_delete and then truncates its WAL.
"""

import json
import os
import sqlite3

from .. import clock
from ..errors import DurableError, conflict, denied, invalid, not_found
from ..store import paths as _paths
from ..store.objects import ObjectStore, connect
from . import state
from .retention import address_of, entry, erase, receipt

FORMAT = "durable-export"
VERSION = 1
TABLES = ("object", "participants", "prompts", "turns", "events", "requests", "facts", "buckets")


def forget(store, user: str, progress=None) -> dict:
    """Erase USER: objects they own (and their reserved object), and their traces in tenant objects."""
    from ..config import valid_name

    valid_name(user, "user")
    out = receipt()
    index = store.objects.index(create=False)
    owned = index.rows(
        "SELECT * FROM objects WHERE owner = ? AND scope IN ('user', 'session', 'reserved') ORDER BY id", (user,)
    )
    reserved_id = store.objects.object_id("reserved", user, "", create=False)
    if reserved_id and not any(r["id"] == reserved_id for r in owned):
        owned.append({"id": reserved_id, "owner": user, "name": "", "scope": "reserved"})
    shared = index.rows(
        "SELECT o.* FROM objects o JOIN members m ON m.object_id = o.id WHERE m.user = ? AND o.scope = 'tenant' ORDER BY o.id",
        (user,),
    )
    _add_unindexed(store, user, owned, shared)
    if progress:
        progress.start(len(owned) + len(shared))
    for row in owned:
        _guard(out, row, progress, lambda: _erase_owned(store, row, out))
    for row in shared:
        _guard(out, row, progress, lambda: _leave_tenant(store, row, user, out))
    index.wipe_free_space()
    if out["skipped"]:
        raise DurableError(
            f"forget skipped {len(out['skipped'])} busy object(s) of {user!r}; run it again when they are free",
            "busy", document=out,
        )
    return out


def _add_unindexed(store, user, owned, shared) -> None:
    """Objects on disk that index.db does not know (a crash between commit and index update): open
    just those, so forget never misses a user's object because the index fell behind."""
    known = {r["id"] for r in store.objects.index(create=False).rows("SELECT id FROM objects")}
    known |= {r["id"] for r in owned}
    for object_id in store.objects.paths.iter_object_ids():
        if object_id in known:
            continue
        try:
            with store.objects.open(object_id, create=False, what=f"object {object_id}") as handle:
                found = state.index_row(handle.db)
        except DurableError as e:
            if e.code in ("not_found", "busy"):
                continue
            raise
        if found is None:
            continue
        row, members = found
        if row["owner"] == user and row["scope"] in ("user", "session", "reserved"):
            owned.append(row)
        elif row["scope"] == "tenant" and any(u == user for u, _ in members):
            shared.append(row)


def _guard(out, row, progress, job) -> None:
    try:
        job()
    except DurableError as e:
        if e.code == "busy":
            out["skipped"].append(entry(row, reason="busy"))
        elif e.code != "not_found":
            raise
    finally:
        if progress:
            progress.advance()


def _erase_owned(store, row, out) -> None:
    try:
        with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
            meta = state.Opened(handle, address_of(row), None, store.config).meta()
            erase(store, handle, meta or {"id": row["id"], "owner": row["owner"], "name": row["name"], "created_at": None})
    except DurableError as e:
        if e.code == "not_found":
            store.objects.index().remove(row["id"])
        raise
    out["deleted"].append(entry(row))


def _leave_tenant(store, row, user, out) -> None:
    with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
        handle.on_sleep = state.sync_index
        obj = state.Opened(handle, address_of(row), None, store.config)
        db = obj.db
        with handle.transaction():
            db.execute("DELETE FROM participants WHERE user = ?", (user,))
            for table, column in (("turns", "author"), ("prompts", "author"), ("events", "actor"), ("requests", "answered_by")):
                db.execute(f"UPDATE {table} SET {column} = NULL WHERE {column} = ?", (user,))
            db.execute(
                "UPDATE events SET data = '{}' WHERE type IN ('participant.added', 'participant.removed')"
                " AND json_extract(data, '$.user') = ?",
                (user,),
            )
            left = db.execute("SELECT user, role FROM participants ORDER BY joined_at, user").fetchall()
            state.event(obj, "participant.removed", {}, actor=None)
            if left and not any(role == "owner" for _, role in left):
                db.execute("UPDATE participants SET role = 'owner' WHERE user = ?", (left[0][0],))
        if not left:
            erase(store, handle, obj.meta())
            out["deleted"].append(entry(row))
            return
        handle.checkpoint()
        out["changed"].append(entry(row, what="participant removed"))


# -- export / import --------------------------------------------------------------------------------

def _dump(db) -> dict:
    record = {}
    for table in TABLES:
        cur = db.execute(f"SELECT * FROM {table}")
        columns = [c[0] for c in cur.description]
        record[table] = [dict(zip(columns, r)) for r in cur.fetchall()]
    record["sequences"] = dict(db.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    meta = record.pop("object")[0]
    meta.pop("one", None)
    return {"format": FORMAT, "version": VERSION, "id": meta["id"], "scope": meta["scope"], "owner": meta["owner"],
            "name": meta["name"], "object": meta, **record}


def export(store, *, name=None, user=None, all_objects=False, progress=None):
    """Versioned JSONL records, one per object with all its rows (a generator)."""
    if name is not None:
        with store.open(name) as obj:
            yield _dump(obj.db)
        return
    if all_objects:
        rows = store.objects.index(create=False).rows("SELECT * FROM objects ORDER BY id")
    else:
        rows = store.objects.index(create=False).rows(
            "SELECT * FROM objects WHERE owner = ? AND scope IN ('user', 'session', 'reserved') ORDER BY id", (user,)
        )
    if progress:
        progress.start(len(rows))
    for row in rows:
        try:
            with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
                yield _dump(handle.db)
        except DurableError as e:
            if e.code != "not_found":
                raise
        finally:
            if progress:
                progress.advance()


def parse_records(lines):
    """(line number, record) for each non-blank line; a line that is not a JSON object is exit 2 before
    anything is imported (the file is not an export, or is damaged). Records are checked one by one
    at import, so one bad record does not stop the others."""
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            raise invalid(f"line {number} of the export is not JSON ({e}); nothing was imported")
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise invalid(f"line {number} is not a durable export record; nothing was imported")
        records.append((number, record))
    return records


def import_records(store, records, *, replace=False, all_users=False) -> dict:
    """Re-create exported objects, each all or nothing under its lock (ids recomputed from this
    installation's secret). A record is imported only where the acting user could have made it, unless
    ALL_USERS (an installation restore). A failing record is listed in `skipped` with its reason and
    the others go on; the exit is the first failure's. A record already imported identically is
    skipped without error, so re-running an interrupted import completes it."""
    out = receipt()
    failures = []
    for number, item in enumerate(records, 1):
        line, record = item if isinstance(item, tuple) else (number, item)
        try:
            what = _import_one(store, line, record, replace=replace, all_users=all_users)
        except _AlreadyImported as e:
            out["skipped"].append(dict(e.entry, reason="already imported"))
            continue
        except DurableError as e:
            failures.append(e)
            out["skipped"].append(_skipped_entry(store, record, e.message))
            continue
        out["changed"].append(what)
    if failures:
        first = failures[0]
        more = f" ({len(failures)} records were not imported; see the receipt)" if len(failures) > 1 else ""
        raise DurableError(first.message + more, first.code, document=out)
    return out


class _AlreadyImported(Exception):
    def __init__(self, entry):
        super().__init__("already imported")
        self.entry = entry


def _skipped_entry(store, record, reason) -> dict:
    """The receipt's entry for a record that was not imported; its id only when this installation has one."""
    try:
        address = address_of(record)
        object_id = store.objects.object_id(address.id_scope, address.owner, address.name, create=False)
    except Exception:  # noqa: BLE001 - a record too broken to address
        object_id = None
    owner, name = (record.get(k) if isinstance(record, dict) else None for k in ("owner", "name"))
    return {"id": object_id, "owner": owner if isinstance(owner, str) else None,
            "name": name if isinstance(name, str) else None, "reason": reason}


def _import_one(store, line, record, *, replace, all_users) -> dict:
    from . import records as _records

    actor = store.user
    columns = _records.current_columns()
    checked = _records.check_record(record, line=line, max_turn_bytes=store.config.get("transcript.max_turn_bytes"),
                                    columns=columns)
    address = address_of(record)
    label = f"line {line}: {address.what}" + (f" of user \"{address.owner}\"" if address.id_scope == "user" else "")
    if not all_users:
        if address.id_scope in ("user", "reserved") and address.owner != actor:
            raise denied(f"{label} belongs to another user; only they can import it "
                         "(or an installation restore with --all-users)")
    listed = all_users or address.id_scope != "tenant" or actor in checked.owners()
    object_id = store.objects.object_id(address.id_scope, address.owner, address.name, create=listed)
    refusal = (f"{label} does not list you ({actor!r}) as an owner; import it as one of its owners "
               "(or an installation restore with --all-users)")
    if object_id is None:
        raise denied(refusal)
    if (not all_users and address.id_scope == "tenant" and not store.tenant_visible(object_id, actor)
            and store.tenant_taken(object_id)):
        # decided from index.db before the lock (SPEC §2): busy or corrupt, an invisible object is only "taken"
        raise conflict(f"line {line}: {address.taken}")
    for _attempt in range(3):
        if not listed and not os.path.exists(store.objects.paths.object_file(object_id)):
            raise denied(refusal)
        made = not os.path.exists(store.objects.paths.object_file(object_id))
        try:
            with store.objects.open(object_id, create=listed, what=address.what) as handle:
                return _import_locked(handle, checked, address, label, columns, actor=actor, listed=listed,
                                      replace=replace, all_users=all_users, made=made, refusal=refusal)
        except DurableError as e:
            if e.code != "not_found" or listed:
                raise
            # the object went away between our look and our lock: look again
    raise denied(refusal)  # pragma: no cover - it kept vanishing


def _import_locked(handle, checked, address, label, columns, *, actor, listed, replace, all_users, made, refusal) -> dict:
    """Under the object's lock: the existence check, the identity check and the write, in one transaction."""
    from . import records as _records

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
                        raise conflict(f"{label}: the name is taken")
                    if role != "owner":
                        raise denied(f"{label}: only an owner of it can import over it; ask an owner")
                if _records.same_content(stored, checked, handle.id):
                    raise _AlreadyImported(entry_)
                if not replace:
                    raise conflict(f"{label} already exists with other content; use --replace to overwrite it")
                if not listed:
                    raise denied(f"{label} does not list you ({actor!r}) as an owner; importing it would take "
                                 "the session from you")
            elif not listed:
                raise denied(refusal)
            _records.write_object(db, checked, handle.id, columns)
    except _AlreadyImported:
        state.sync_index(handle)  # a re-run after a kill between commit and index update completes the index
        raise
    except BaseException:
        if made or absent:
            handle.delete()  # a file this import made (or a half-made one): leave nothing behind
        raise
    if not absent:
        handle.checkpoint()  # the replaced rows leave the WAL too (secure_delete wiped them from the file)
    return dict(entry_, what="replaced" if present else "imported")


# -- backup ------------------------------------------------------------------------------------------

def backup(store, dest: str, progress=None) -> dict:
    """Copy secret.key and every object (under its lock, SQLite backup API) to DEST, then build DEST's index."""
    source = store.objects.paths
    dest = os.path.abspath(dest)
    real_home = os.path.realpath(source.home)
    real_dest = os.path.realpath(dest)
    if real_dest == real_home or real_dest.startswith(real_home + os.sep):
        raise invalid(f"backup destination {dest} is inside the data directory; choose a path outside {source.home}")
    if os.path.lexists(dest) and (not os.path.isdir(dest) or os.listdir(dest)):
        raise invalid(f"backup destination {dest} exists and is not empty; choose a new or empty directory")
    secret = store.objects.secret(create=False)
    if secret is None:
        raise not_found(f"nothing to back up: {source.home} holds no data")
    target = ObjectStore(dest)
    target.paths.make_home()
    _write_secret(target.paths.secret, secret)
    ids = list(source.iter_object_ids())
    if progress:
        progress.start(len(ids))
    rows, copied = [], 0
    for object_id in ids:
        try:
            with store.objects.open(object_id, create=False, what=f"object {object_id}") as handle:
                target.paths.make_shard(object_id)
                path = target.paths.object_file(object_id)
                _paths.create_file(path)
                copy = connect(path, f"backup of {object_id}")
                try:
                    handle.db.backup(copy)
                    found = state.index_row(copy)
                    if found is not None:
                        rows.append(found)
                finally:
                    copy.close()
                copied += 1
        except sqlite3.Error as e:
            raise DurableError(f"backup of object {object_id} failed: {e}", "storage")
        finally:
            if progress:
                progress.advance()
    target.index().replace_all(rows)
    target.close()
    return {"dest": dest, "objects": copied, "at": clock.iso(clock.now())}


def _write_secret(path: str, secret: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _paths.FILE_MODE)
    try:
        os.write(fd, secret)
        os.fsync(fd)
    finally:
        os.close(fd)
