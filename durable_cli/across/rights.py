"""Data rights (docs/reference/retention.md §7) over many objects through a Store: forget a user, export and import objects,
back the whole directory up. One object's export record and one record's import into one locked object
are core/rights.py (the twin of worker/src/rules/rights.ts).

forget leaves no byte of the erased objects' content in any file under the data directory: their
files are unlinked, and index.db erases with secure_delete and then truncates its WAL.
"""

import os
import sqlite3

from .. import clock
from ..contract.messages import say
from ..core import state, strict_json
from ..core.rights import FORMAT, AlreadyImported, dump, import_locked
from ..errors import DurableError, conflict, denied, invalid, not_found
from ..store import paths as _paths
from ..store.objects import ObjectStore, connect
from .retention import address_of, conclude, conclude_import, each_object, entry, erase, receipt, run_each


def forget(store, user: str, progress=None, dry_run=False) -> dict:
    """Erase USER: objects they own (and their reserved object), and their traces in tenant objects.
    DRY_RUN: the receipt of what would go, from the index (a tenant object USER is the last
    participant of would be deleted, any other changed), changing nothing."""
    from ..config import valid_name

    valid_name(user, "user")
    out = receipt(dry_run)
    rows = find_objects(store, out, owner=user, member=user)
    reserved_id = store.objects.object_id("reserved", user, "", create=False)
    if reserved_id and not any(r["id"] == reserved_id for r in rows) and os.path.exists(store.objects.paths.object_file(reserved_id)):
        rows.append({"id": reserved_id, "owner": user, "name": "", "scope": "reserved"})
    if dry_run:
        index = store.objects.index(create=False)
        for row in rows:
            others = row["scope"] == "tenant" and index.rows(
                "SELECT 1 FROM members WHERE object_id = ? AND user != ?", (row["id"], user))
            out["changed" if others else "deleted"].append(entry(row, what="participant removed") if others else entry(row))
        out["changed"] += [_side_entry(sid, what=f"search index: an interrupted erasure would be finished ({why})")
                           for sid, why in store.objects.search_leftovers()]
        return conclude(out, f"forget of {user!r}")

    def job(row):
        if row["scope"] != "tenant":
            _erase_owned(store, row, out)
        elif not os.path.lexists(store.objects.paths.object_file(row["id"])):
            # The index is ahead of the file: a forget killed after unlinking the object the user was the
            # last participant of. Finish it (the index row, its members, the lock) and say so.
            store.objects.forget_missing(row["id"])
            out["deleted"].append(entry(row))
        else:
            _leave_tenant(store, row, user, out)

    with store.objects.deferred_dir_sync():  # as purge: each directory fsync'd once, before the answer
        run_each(store, rows, job, out, progress=progress)
    # docs/reference/storage.md §3, §7: the side files too, every erasure a killed run (this user's or another's) began included
    done, busy = store.objects.settle_search()
    out["changed"] += [_side_entry(sid, what="search index: an interrupted erasure finished") for sid in done]
    out["skipped"] += [_side_entry(sid, reason="busy") for sid in busy]
    store.objects.index(create=False).erase_tombstones(user)  # docs/reference/integrations.md §12: a deleted thread's tombstone goes with its owner
    store.objects.index(create=False).wipe_free_space()
    return conclude(out, f"forget of {user!r}")


def _side_entry(sid, **extra) -> dict:
    """A receipt entry for a search side file (no owner or NAME: its id is an HMAC, as objects' are)."""
    return {"id": sid, "owner": None, "name": None, **extra}


def find_objects(store, out, *, owner=None, member=None) -> list:
    """The objects a many-object command covers: index.db's rows (OWNER's own objects, the tenant
    objects the index lists MEMBER in; all of them when neither is given) plus every object file the
    index does not know, opened under its lock to read its own scope, owner and participants (a
    crash between commit and index update leaves such a file). With MEMBER (forget), the tenant
    objects the index does not list MEMBER in are opened too when free: their participants in the
    index may be behind (a writer killed after its commit). A file that cannot be read is skipped
    into OUT (busy or corrupt) by each_object's policy."""
    index = store.objects.index(create=False)
    indexed = {r["id"]: r for r in index.rows("SELECT * FROM objects ORDER BY id")}
    users = {}
    for m in index.rows("SELECT user, object_id FROM members"):
        users.setdefault(m["object_id"], set()).add(m["user"])

    def wanted(row, members) -> bool:
        if owner is None and member is None:
            return True
        if owner is not None and row["owner"] == owner and row["scope"] in ("user", "session", "reserved"):
            return True
        return member is not None and row["scope"] == "tenant" and member in members

    found = {i: r for i, r in indexed.items() if wanted(r, users.get(i, ()))}

    def peek(row):
        with store.objects.open(row["id"], create=False, what=f"object {row['id']}") as handle:
            seen = state.index_row(handle.db)
        if seen is not None and seen[0]["id"] != row["id"]:
            raise DurableError(f"object {row['id']} claims to be {seen[0]['id']}", "storage")
        return None if seen is None else (seen[0], {u for u, _ in seen[1]})

    present = [{"id": i} for i in store.objects.paths.iter_object_ids()]
    unknown = [r for r in present if r["id"] not in indexed]
    for row, members in each_object(store, unknown, peek, out):
        if wanted(row, members):
            found[row["id"]] = row
    if member is not None:
        on_disk = {r["id"] for r in present}
        stale = [{"id": i, "owner": r["owner"], "name": r["name"]} for i, r in indexed.items()
                 if i not in found and i in on_disk and r["scope"] == "tenant"]
        # Busy right now means a live writer, which brings the index in step itself: not a skip.
        with _lock_timeout(store, 0):
            for row, members in each_object(store, stale, peek, out,
                                            on_skip=lambda r, why: why == "busy" or out["skipped"].append(entry(r, reason=why))):
                if wanted(row, members):
                    found[row["id"]] = row
    return [found[i] for i in sorted(found)]


class _lock_timeout:
    def __init__(self, store, seconds):
        self.objects, self.seconds = store.objects, seconds

    def __enter__(self):
        self.saved, self.objects.lock_timeout = self.objects.lock_timeout, self.seconds

    def __exit__(self, *exc):
        self.objects.lock_timeout = self.saved


def _erase_owned(store, row, out) -> None:
    """The index (or the file itself) says USER owns it: delete it by id under its lock without reading
    it, so a corrupt object is erased all the same (erasure before repair)."""
    store.objects.remove(row["id"], address_of(row).what, owner=row["owner"], name=row["name"],
                         created_at=row.get("created_at"))
    out["deleted"].append(entry(row))


def _leave_tenant(store, row, user, out) -> None:
    with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
        handle.on_sleep = state.sync_index
        obj = state.Opened(handle, address_of(row), None, store.config)
        db = obj.db
        if db.execute("SELECT 1 FROM participants WHERE user = ?", (user,)).fetchone() is None:
            # The object is ahead of the index: an earlier forget (or any writer) was killed after its
            # commit, before its index update or its erase. Finish that work, so the index forgets USER.
            if store.objects.index(create=False).rows("SELECT 1 FROM members WHERE object_id = ? AND user = ?", (row["id"], user)):
                _finish_leaving(store, handle, obj, row, out)
            return
        with handle.transaction():
            db.execute("DELETE FROM participants WHERE user = ?", (user,))
            for table, column in (("turns", "author"), ("prompts", "author"), ("events", "actor"), ("requests", "answered_by")):
                db.execute(f"UPDATE {table} SET {column} = NULL WHERE {column} = ?", (user,))
            # docs/reference/sessions.md §5.3: the schedules and hooks USER made go (a hook's deliveries with it)
            gone = [what for what, table in (("schedules", "schedules"), ("hooks", "hooks"))
                    if db.execute(f"SELECT 1 FROM {table} WHERE author = ? LIMIT 1", (user,)).fetchone()]
            db.execute("DELETE FROM schedules WHERE author = ?", (user,))
            db.execute("DELETE FROM deliveries WHERE hook_id IN (SELECT id FROM hooks WHERE author = ?)", (user,))
            db.execute("DELETE FROM hooks WHERE author = ?", (user,))
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
        out["changed"].append(entry(row, what=", ".join(["participant removed", *gone])))


def _finish_leaving(store, handle, obj, row, out) -> None:
    """What a killed forget left undone on a tenant object it had already removed the user from."""
    if handle.row("SELECT 1 FROM participants LIMIT 1") is None:
        erase(store, handle, obj.meta())  # the user was its last participant
        out["deleted"].append(entry(row))
        return
    state.sync_index(handle)
    handle.checkpoint()  # the first run may have died before folding its WAL: no old page keeps the name
    out["changed"].append(entry(row, what="participant removed"))


# -- export / import --------------------------------------------------------------------------------

def export(store, *, name=None, user=None, all_objects=False, progress=None, updated_since=None):
    """Versioned JSONL records, one per object with all its rows (a generator). Each record is read
    under its object's lock and yielded after the lock is released (a slow reader blocks no writer).
    Objects the index does not know are found as forget finds them; a busy or corrupt object is
    reported (store warnings, on stderr) and in the exit status after the others are yielded."""
    if name is not None:
        with store.open(name) as obj:
            record = dump(obj.db)
        yield record
        return
    out = receipt()
    rows = find_objects(store, out, owner=None if all_objects else user)
    if updated_since is not None:  # export --format otlp --since: an object last updated before it is not opened
        rows = [r for r in rows if r.get("updated_at") is None or r["updated_at"] >= updated_since]

    def job(row):
        with store.objects.open(row["id"], create=False, what=address_of(row).what) as handle:
            return dump(handle.db)

    yield from each_object(store, rows, job, out, progress=progress)
    conclude_export(out, store.objects.warnings)


def conclude_export(out, warnings: list) -> None:
    """After the records: each skipped object as a warning (stderr), then the exit status of the first
    failure, raised with the receipt (not the output: export's output is the records)."""
    for s in out["skipped"]:
        warnings.append(f"export skipped object {s['id']} ({s['name'] if s['name'] is not None else 'name unknown'}): {s['reason']}")
    try:
        conclude(out, "export")
    except DurableError as e:
        e.receipt, e.document = e.document, None  # export's output is the records; its receipt goes to stderr
        e.after_output = True
        raise


def parse_records(lines):
    """(line number, record) for each non-blank line; a line that is not a JSON object is exit 2 before
    anything is imported (the file is not an export, or is damaged). Records are checked one by one
    at import, so one bad record does not stop the others."""
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = strict_json.loads(line, depth=False)  # each JSON field of it is checked at import
        except strict_json.NotJSON as e:
            raise invalid(f"line {number} of the export is not RFC 8259 JSON ({e}); nothing was imported") from e
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise invalid(f"line {number} is not a durable export record; nothing was imported")
        records.append((number, record))
    return records


def import_records(store, records, *, replace=False, all_users=False, keep_existing=False) -> dict:
    """Re-create exported objects, each all or nothing under its lock (ids recomputed from this
    installation's secret). A record is imported only where the acting user could have made it, unless
    ALL_USERS (an installation restore). A failing record is listed in `skipped` with its reason and
    the others go on; the exit is the first failure's. A record already imported identically is
    skipped without error, so re-running an interrupted import completes it. KEEP_EXISTING (`import
    --from llm`): an object that exists with other content is skipped too (listed), not exit 4."""
    out = receipt()
    failures = []
    for number, item in enumerate(records, 1):
        line, record = item if isinstance(item, tuple) else (number, item)
        try:
            what = _import_one(store, line, record, replace=replace, all_users=all_users, keep_existing=keep_existing)
        except AlreadyImported as e:
            out["skipped"].append(dict(e.entry, reason=e.reason))
            continue
        except DurableError as e:
            failures.append(e)
            out["skipped"].append(_skipped_entry(store, record, e.message))
            continue
        out["changed"].append(what)
    return conclude_import(out, failures)


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


def _import_one(store, line, record, *, replace, all_users, keep_existing=False) -> dict:
    from ..core import records as _records

    if getattr(record, "error", None) is not None:
        raise record.error  # a source item that could not even be made into a record (import --from llm)

    actor = store.user
    columns = _records.current_columns()
    checked = _records.check_record(record, line=line, max_turn_bytes=store.config.get("transcript.max_turn_bytes"),
                                    columns=columns)
    address = address_of(record)
    label = f"line {line}: " + (say("owned_label", what=address.what, user=address.owner) if address.id_scope == "user" else address.what)
    if not all_users:
        if address.id_scope in ("user", "reserved") and address.owner != actor:
            raise denied(say("import_others", what=label))
    listed = all_users or address.id_scope != "tenant" or actor in checked.owners()
    object_id = store.objects.object_id(address.id_scope, address.owner, address.name, create=listed)
    refusal = say("import_not_listed", label=label, actor=actor)
    if object_id is None:
        raise denied(refusal)
    if (not all_users and address.id_scope == "tenant" and not store.tenant_visible(object_id, actor)
            and store.tenant_taken(object_id)):
        # decided from index.db before the lock (docs/reference/concepts.md §2): busy or corrupt, an invisible object is only "taken"
        raise conflict(f"line {line}: {address.taken}")
    for _attempt in range(3):
        if not listed and not os.path.exists(store.objects.paths.object_file(object_id)):
            raise denied(refusal)
        made = not os.path.exists(store.objects.paths.object_file(object_id))
        try:
            with store.objects.open(object_id, create=listed, what=address.what) as handle:
                return import_locked(handle, checked, address, label, columns, actor=actor, listed=listed,
                                     replace=replace, all_users=all_users, made=made, refusal=refusal,
                                     keep_existing=keep_existing)
        except DurableError as e:
            if e.code != "not_found" or listed:
                raise
            # the object went away between our look and our lock: look again
    raise denied(refusal)  # pragma: no cover - it kept vanishing


# -- backup ------------------------------------------------------------------------------------------

def backup(store, dest: str, progress=None) -> dict:
    """Copy secret.key and every object (under its lock, SQLite backup API) to DEST, then build DEST's index.

    Everything is built in a temporary directory beside DEST, renamed into place at the end: a failed
    or interrupted backup leaves neither DEST nor the temporary directory. Busy objects are retried
    until the lock timeout; one that still could not be copied (busy or corrupt) is listed in
    `skipped`, DEST is published with everything else, and the exit is 6 or 7.
    """
    import shutil
    import time

    source = store.objects.paths
    if not isinstance(dest, str) or dest == "" or "\0" in dest:
        raise invalid(f"cannot back up to {dest!r}: not a directory name")
    dest = os.path.abspath(dest)
    real_home = os.path.realpath(source.home)
    real_dest = os.path.realpath(dest)
    if real_dest == real_home or real_dest.startswith(real_home + os.sep):
        raise invalid(f"backup destination {dest} is inside the data directory; choose a path outside {source.home}")
    if os.path.lexists(dest) and (not os.path.isdir(dest) or os.path.islink(dest) or os.listdir(dest)):
        raise invalid(f"backup destination {dest} exists and is not empty; choose a new or empty directory")
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        raise invalid(f"cannot back up to {dest}: {parent} is not a directory")
    secret = store.objects.secret(create=False)
    if secret is None:
        raise not_found(f"nothing to back up: {source.home} holds no data")
    # The name is chosen before the directory exists, so an interrupt at any point (even inside mkdir)
    # is cleaned up by the handler below: the window between mkdtemp and a try is gone.
    building = os.path.join(parent, f".{os.path.basename(dest)}.durable-backup-{os.urandom(6).hex()}")
    try:
        try:
            os.mkdir(building, _paths.DIR_MODE)
        except OSError as e:
            raise _paths.os_error(e, parent) from e
        # the receipt of docs/reference/json.md §10 (each copied object under "changed"), plus where and when
        out = {"deleted": [], "skipped": [], "changed": [], "dry_run": False, "dest": dest, "objects": 0, "at": None}
        target = ObjectStore(building)
        os.chmod(building, _paths.DIR_MODE)
        _write_secret(target.paths.secret, secret)
        rows = []

        def job(row):
            object_id = row["id"]
            with store.objects.open(object_id, create=False, what=f"object {object_id}") as handle:
                target.paths.make_shard(object_id)
                path = target.paths.object_file(object_id)
                _paths.create_file(path)
                copy = connect(path, f"backup of {object_id}")
                try:
                    handle.db.backup(copy)
                    found = state.index_row(copy)
                except sqlite3.Error as e:
                    copy.close()
                    copy = None
                    from ..store.objects import remove_files

                    remove_files(path)
                    raise DurableError(f"backup of object {object_id} failed: {e}", "storage") from e
                finally:
                    if copy is not None:
                        copy.close()
            if found is not None:
                rows.append(found)
            seen = found[0] if found is not None else row
            out["changed"].append({"id": object_id, "owner": seen.get("owner"), "name": seen.get("name"), "what": "copied"})
            out["objects"] += 1

        # First every object without waiting; the busy ones are then retried until the lock timeout.
        busy = []
        indexed = {r["id"]: r for r in store.objects.index(create=False).rows("SELECT id, owner, name FROM objects")}
        pending = [indexed.get(i, {"id": i}) for i in source.iter_object_ids()]
        deadline = time.monotonic() + store.objects.lock_timeout
        with _lock_timeout(store, 0):
            run_each(store, pending, job, out, progress=progress,
                     on_skip=lambda r, why: busy.append(r) if why == "busy" else out["skipped"].append(entry(r, reason=why)))
        while busy:
            left = deadline - time.monotonic()
            retry, busy = busy, []
            with _lock_timeout(store, max(0.0, min(left, 0.05))):
                run_each(store, retry, job, out,
                         on_skip=lambda r, why: busy.append(r) if why == "busy" else out["skipped"].append(entry(r, reason=why)))
            if left <= 0:
                out["skipped"] += [entry(r, reason="busy") for r in busy]
                break
        target.index().replace_all(rows)
        target.close()
        os.rename(building, dest)  # over an empty DEST too
        _paths.fsync_dir(parent)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    out["at"] = clock.iso(clock.now())
    return conclude(out, "backup")


def _write_secret(path: str, secret: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _paths.FILE_MODE)
    try:
        os.write(fd, secret)
        os.fsync(fd)
    finally:
        os.close(fd)
