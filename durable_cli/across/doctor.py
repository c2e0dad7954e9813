"""doctor: check every object and index.db, and with --repair rebuild the index from the objects.

A corrupt object is reported by id and never blocks the others; only what can be rebuilt from the
objects (index rows, interrupted purges, half-made files, stale locks and sidecars, modes) is repaired.
"""

import os
import sqlite3
import stat

from .. import clock
from ..contract.messages import say
from ..core import state
from ..errors import DurableError
from ..store import paths as _paths
from ..store.lock import ObjectLock, try_lock
from ..store.schema import PRICED_FROM_ROWS, TOTAL_COLUMNS, catch_up
from .retention import address_of, finish_journal, receipt, run_each

COMPARED = ("scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
            "turns", "tokens", "expires_at", "next_alarm_at")


def doctor(store, *, repair=False, purge_quarantine=False, progress=None) -> dict:
    paths = store.objects.paths
    problems = []

    labels: dict = {}  # object id -> the session it is, as index.db knows it (filled once the index is read)

    def problem(object_id, kind, detail, repaired=False):
        if object_id in labels and not detail.startswith(labels[object_id]):
            detail = f"{labels[object_id]}: {detail}"
        problems.append({"id": object_id, "kind": kind, "detail": detail, "repaired": repaired})

    if not paths.home_exists():
        return {"healthy": True, "problems": []}
    try:
        secret = store.objects.secret(create=False)
    except DurableError as e:
        problem(None, "secret", e.message)
        return {"healthy": False, "problems": problems}
    try:
        mismatch = secret is not None and store.objects.index(create=False).secret_matches(secret) is False
    except DurableError:
        mismatch = False  # a damaged index is reported below
    if mismatch:  # nothing else can be checked (or repaired) under the wrong secret
        problem(None, "secret_mismatch", f"{paths.secret} is not the secret index.db recorded for these objects; "
                "restore the matching secret.key (repair cannot fix this)")
        return {"healthy": False, "problems": problems}

    _check_modes(paths, problem, repair)
    if purge_quarantine:
        _purge_quarantine(paths, problem)

    index = store.objects.index(create=False)
    index_ok, rebuilt = True, False
    try:
        bad = index.integrity()
        if bad:
            index_ok = False
            problem(None, "index_corrupt", "; ".join(bad[:3]), repaired=repair)
    except DurableError as e:
        index_ok = False
        problem(None, "index_corrupt", e.message, repaired=repair)
    if not index_ok and repair:
        index.recreate()  # keeps the secret's check value and intents where they still read; filled per object below
        index_ok = rebuilt = True
    if index_ok:
        labels.update((r["id"], _label(r)) for r in index.rows("SELECT id, scope, owner, name FROM objects"))
    journal = index.rows("SELECT * FROM purge_journal") if index_ok else []
    scratch = receipt()
    if journal:
        if repair:
            finish_journal(store, scratch)
        busy_intents = {s["id"] for s in scratch["skipped"] if s["reason"] == "busy"}
        for row in journal:
            if row["id"] in busy_intents:
                problem(row["id"], "busy", "object is locked by another process; its interrupted purge was not finished")
            else:
                problem(row["id"], "unfinished_purge", "a purge was interrupted before it finished", repaired=repair)

    def check(row):
        object_id = row["id"]
        with store.objects.open(object_id, create=False, what=f"object {object_id}") as handle:
            found = _check_object(store, handle, problem, repair)
            if found is None:
                return
            # Compared and repaired under the object's lock: a writer's own upsert after its commit
            # cannot be overwritten by an older reading, and no row of a new object is lost.
            indexed = index.rows("SELECT * FROM objects WHERE id = ?", (object_id,)) if index_ok else []
            if not indexed:
                problem(object_id, "missing_index_row", "object file has no index row", repaired=repair)
            else:
                members = sorted(tuple(m.values()) for m in index.rows("SELECT user, role FROM members WHERE object_id = ?", (object_id,)))
                differ = [k for k in COMPARED if indexed[0].get(k) != found[0].get(k)]
                if members != sorted(tuple(m) for m in found[1]):
                    differ.append("participants")
                if "usage" in found[0] and [tuple(u.values()) for u in index.rows(_INDEXED_USAGE, (object_id,))] != \
                        [tuple(u) for u in found[0]["usage"]]:
                    differ.append("usage")
                if "tags" in found[0] and [tuple(t.values()) for t in index.rows(
                        "SELECT key, value FROM tags WHERE object_id = ? ORDER BY key", (object_id,))] != [tuple(t) for t in found[0]["tags"]]:
                    differ.append("tags")  # docs/reference/retention.md §7: index tags that disagree with their object
                if not differ:
                    return
                problem(object_id, "index_mismatch", "index disagrees on " + ", ".join(differ), repaired=repair)
            if repair:
                store.objects.index().upsert(*found)

    def skipped(row, reason):
        if reason == "busy":
            problem(row["id"], "busy", "object is locked by another process; not checked")
            return
        quarantined = _quarantine(store, row["id"]) if repair else None
        reason = _without_doctor_hint(reason)
        if quarantined:
            reason += f"; moved to {quarantined}"
        elif not repair:
            reason += "; 'durable doctor --repair' moves it into quarantine/"
        problem(row["id"], "corrupt", reason, repaired=bool(quarantined))

    ids = [{"id": i} for i in paths.iter_object_ids(skip_symlinks=True)]  # a symlink is reported by _check_modes
    run_each(store, ids, check, receipt(), progress=progress, on_skip=skipped)
    present = {r["id"] for r in ids}
    if index_ok:
        for row in index.rows("SELECT id FROM objects ORDER BY id"):
            if row["id"] in present or os.path.exists(paths.object_file(row["id"])):
                continue
            if repair:
                gone = _drop_orphan(store, row["id"])
            else:
                gone = True
            if gone:
                problem(row["id"], "orphan_index_row", "index row for an object file that does not exist", repaired=repair)
    _check_locks(paths, present, problem, repair)
    _check_search(store, problem, repair)
    if repair and rebuilt:
        index.record_check()  # checked against the rows just rebuilt from the objects

    healthy = all(p["repaired"] for p in problems)
    return {"healthy": healthy, "problems": problems}


def _check_search(store, problem, repair) -> None:
    """docs/reference/storage.md §3, §7: an erasure a killed command left unfinished in a search side file (its rollback journal,
    a merge it owes, rows of removed objects) is a problem; --repair finishes it as `forget` does."""
    found = store.objects.search_leftovers()
    busy = set(store.objects.settle_search()[1]) if repair and found else set()
    for sid, why in found:
        if sid in busy:
            problem(sid, "busy", "search side file is locked by another process; its unfinished erasure was not finished")
        else:
            problem(sid, "search_leftover", f"search side file holds removed text: {why}", repaired=repair)


def _label(row) -> str:
    """The session an index row names, for a problem's detail (doctor looks across users)."""
    address = address_of(row)
    return say("owned_label", what=address.what, user=address.owner) if address.id_scope == "user" else address.what


_DOCTOR_HINTS = ("; run 'durable doctor' to see what can be repaired", "; run 'durable doctor' to check it")


def _without_doctor_hint(message: str) -> str:
    """A storage error's message without its advice to run doctor: doctor is running."""
    for hint in _DOCTOR_HINTS:
        message = message.replace(hint, "")
    return message


def _check_object(store, handle, problem, repair):
    """Integrity of one object: (index row, members) when healthy, None for a half-made file."""
    object_id, what = handle.id, handle.what
    result = [r[0] for r in handle.rows("PRAGMA integrity_check")]
    if result != ["ok"]:
        raise DurableError(f"{what} is corrupt: {'; '.join(result[:3])}", "storage")
    try:
        found = state.index_row(handle.db)
    except sqlite3.DatabaseError as e:
        raise DurableError(f"{what} is corrupt: {e}", "storage") from e
    if found is None:
        problem(object_id, "half_made", "object file without an object row (a create was interrupted)", repaired=repair)
        if repair:
            handle.delete()
        return None
    if found[0]["id"] != object_id:
        raise DurableError(f"{what} claims to be {found[0]['id']}", "storage")
    if _usage_totals_differ(handle):
        problem(object_id, "usage_totals", "the object's usage totals disagree with its rows", repaired=repair)
        if repair:
            with handle.transaction() as db:
                catch_up(db)  # rows written since the last commit (an outside writer): indexed, then counted once
                db.execute("DELETE FROM usage_totals")
                db.execute(f"INSERT INTO usage_totals (key, day, model, {', '.join(TOTAL_COLUMNS)}) " + PRICED_FROM_ROWS)
            found = state.index_row(handle.db)
    address_of(found[0])
    return found


_INDEXED_USAGE = (f"SELECT day, model, {', '.join(TOTAL_COLUMNS)} FROM usage"
                  " WHERE object_id = ? ORDER BY day || coalesce('=' || model, '')")


def _usage_totals_differ(handle) -> bool:
    """usage_totals (kept at each commit) against the same totals recomputed from the rows; costs (doubles, added
    a batch at a time as they were written, so rounded in another order than one sum) within 1e-9 of their size."""
    columns = ("key", *(c for c in TOTAL_COLUMNS if c != "cost_usd"), "cost_usd")  # the cost last
    kept = handle.rows(f"SELECT {', '.join(columns)} FROM usage_totals ORDER BY key")
    fresh = handle.rows(f"SELECT {', '.join(columns)} FROM ({PRICED_FROM_ROWS}) ORDER BY key")
    return len(kept) != len(fresh) or any(a[:-1] != b[:-1] or abs(a[-1] - b[-1]) > 1e-9 * max(1.0, abs(a[-1]), abs(b[-1]))
                                          for a, b in zip(kept, fresh))


def _quarantine(store, object_id):
    """Move a corrupt object into quarantine/ under its lock, through the intent journal, so that its
    name can be used again. None when it is busy, gone or no longer corrupt."""
    objects = store.objects
    path = objects.paths.object_file(object_id)
    try:
        with objects.locked(object_id, f"object {object_id}") as lock:
            if not _still_corrupt(path):
                return None
            name = f"{object_id}.{clock.now()}.sqlite3"
            objects.remove_locked(object_id, lock, quarantine=f"quarantine/{name}")
            return os.path.join(objects.paths.quarantine, name)
    except DurableError:
        return None


def _still_corrupt(path) -> bool:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return [r[0] for r in db.execute("PRAGMA integrity_check")] != ["ok"] or \
                db.execute("SELECT count(*) FROM object").fetchone()[0] != 1
        finally:
            db.close()
    except sqlite3.Error:
        return True


def _purge_quarantine(paths, problem) -> None:
    """`doctor --purge-quarantine`: delete what an earlier repair moved aside."""
    try:
        names = sorted(os.listdir(paths.quarantine))
    except FileNotFoundError:
        return
    for name in names:
        _paths.unlink_quiet(os.path.join(paths.quarantine, name))
        if name.endswith(".sqlite3"):
            problem(name.split(".")[0], "quarantined", f"deleted quarantine/{name}", repaired=True)
    _paths.fsync_dir(paths.quarantine)


def _drop_orphan(store, object_id) -> bool:
    """Remove the index row of an object that does not exist, checked under its lock (a creator holds
    it from before the file exists until after its own index update). False when busy or present."""
    from ..store.lock import ObjectLock

    objects = store.objects
    lock = ObjectLock(objects.paths.lock_file(object_id), 0, f"object {object_id}")
    shard = os.path.dirname(objects.paths.lock_file(object_id))
    if os.path.islink(shard) or os.path.islink(objects.paths.objects):
        return False  # reported as a symlink; no lock file is made or removed through it
    if not os.path.isdir(shard):
        objects.index().remove(object_id)
        return True
    try:
        lock.acquire(create=True)
    except DurableError:
        return False
    try:
        if os.path.lexists(objects.paths.object_file(object_id)):
            return False
        objects.index().remove(object_id)
        lock.unlink()
        return True
    finally:
        lock.release()


def _check_modes(paths, problem, repair) -> None:
    def check(path, want):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            problem(None, "symlink", f"{path} is a symlink")
            return
        mode = stat.S_IMODE(st.st_mode)
        if mode != want:
            problem(None, "mode", f"{path} has mode {mode:o}, not {want:o}", repaired=repair)
            if repair:
                os.chmod(path, want)

    # The data directory itself may be one the user made (e.g. `mkdir` under umask 022): only what
    # durable creates inside it is held to 0700/0600.
    for name in ("secret.key", "index.db", "index.db-wal", "index.db-shm"):
        check(os.path.join(paths.home, name), _paths.FILE_MODE)
    check(paths.objects, _paths.DIR_MODE)
    if os.path.islink(paths.objects) or not os.path.isdir(paths.objects):
        return  # nothing is read through a symlink
    for shard in sorted(os.listdir(paths.objects)):
        directory = os.path.join(paths.objects, shard)
        if _stray(directory, want_dir=True, problem=problem):
            continue
        check(directory, _paths.DIR_MODE)
        if os.path.isdir(directory) and not os.path.islink(directory):
            for name in sorted(os.listdir(directory)):
                if not _stray(os.path.join(directory, name), want_dir=False, problem=problem):
                    check(os.path.join(directory, name), _paths.FILE_MODE)


def _stray(path, *, want_dir, problem) -> bool:
    """A file where durable keeps only shard directories (objects/), or a directory where it keeps only
    files (a shard): not durable's, so it is reported and never chmodded or removed by --repair."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode) == want_dir:
        return False  # a symlink is reported by check(); the right kind of entry is checked for its mode
    kind = "file" if stat.S_ISREG(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) else "special file"
    where = "shard directories" if want_dir else "object files"
    problem(None, "stray_file", f"{path} is a stray {kind}: durable keeps only {where} there; "
            "move it out of the data directory (--repair leaves it alone)")
    return True


def _check_locks(paths, present, problem, repair) -> None:
    """A lock file whose object is gone and that nobody holds is stale; only its holder may unlink it. So is a
    WAL, SHM or journal beside no object file (a removal killed between its unlinks): it may hold the text
    that was removed, and SQLite would read it into a new object of that id; removed under the lock. Nothing
    is looked at through a symlink (a symlinked objects/, shard or file is reported by _check_modes), so
    --repair never removes a file outside the data directory."""
    if not _real_dir(paths.objects):
        return
    for shard in sorted(os.listdir(paths.objects)):
        directory = os.path.join(paths.objects, shard)
        if not _real_dir(directory):
            continue
        names = sorted(os.listdir(directory))
        for name in names:
            if os.path.islink(os.path.join(directory, name)):
                continue
            if name.endswith(".sqlite3" + _paths.UNPUBLISHED):
                _unpublished(directory, name, name[:-len(".sqlite3" + _paths.UNPUBLISHED)], problem, repair)
                continue
            side = next((s for s in _paths.SIDE_SUFFIXES if name.endswith(".sqlite3" + s)), None)
            object_id = name[:-len(".sqlite3" + side)] if side is not None else None
            if object_id is not None and object_id not in present and object_id + ".lock" not in names:  # (else below, under its lock)
                if not repair:
                    _stale_sidecar(directory, name, object_id, problem, False)
                    continue
                lock = ObjectLock(os.path.join(directory, object_id + ".lock"), 0, f"object {object_id}")
                try:
                    lock.acquire(create=True)  # nobody makes the object meanwhile
                except DurableError:
                    continue
                try:
                    _stale_sidecar(directory, name, object_id, problem, True)
                    if not os.path.lexists(os.path.join(directory, object_id + ".sqlite3")):
                        lock.unlink()
                finally:
                    lock.release()
            if not name.endswith(".lock") or name[:-5] in present:
                continue
            path = os.path.join(directory, name)
            fd = try_lock(path)
            if fd is None:
                continue
            try:
                if not os.path.lexists(os.path.join(directory, name[:-5] + ".sqlite3")):
                    for suffix in _paths.SIDE_SUFFIXES:
                        if name[:-5] + ".sqlite3" + suffix in names:
                            _stale_sidecar(directory, name[:-5] + ".sqlite3" + suffix, name[:-5], problem, repair)
                    problem(name[:-5], "stale_lock", "lock file without an object", repaired=repair)
                    if repair:
                        _paths.unlink_quiet(path)
            finally:
                os.close(fd)


def _real_dir(path) -> bool:
    """A directory that is not a symlink (os.path.isdir follows one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _unpublished(directory, name, object_id, problem, repair) -> None:
    """A new object a kept-open store (an adapter) wrote whole beside its path and never renamed into place: its
    run was killed first, so nothing of it was acknowledged, but the file holds the text. Checked under the
    object's lock (its creator holds it until the rename) and, with REPAIR, removed."""
    path = os.path.join(directory, name)
    lock = ObjectLock(os.path.join(directory, object_id + ".lock"), 0, f"object {object_id}")
    try:
        held = lock.acquire(create=repair)  # False: no lock file, so nobody is writing it
    except DurableError:
        return  # its creator is writing it now
    try:
        if not os.path.lexists(path):
            return
        problem(object_id, "half_made", "a new object's file never put in place (its create was killed before "
                "the rename; nothing of it was acknowledged)", repaired=repair)
        if repair:
            _paths.unlink_quiet(path)
            if held and not os.path.lexists(os.path.join(directory, object_id + ".sqlite3")):
                lock.unlink()
    finally:
        lock.release()


def _stale_sidecar(directory, name, object_id, problem, repair) -> None:
    """(With REPAIR, called holding the object's lock: nobody is making the object.)"""
    path = os.path.join(directory, name)
    if os.path.lexists(path[:path.rindex(".sqlite3") + len(".sqlite3")]) or os.path.islink(path):
        return
    suffix = name[name.rindex(".sqlite3") + len(".sqlite3"):]
    problem(object_id, "stale_sidecar", f"{suffix} file left without its object file (it may hold removed text)", repaired=repair)
    if repair:
        _paths.unlink_quiet(path)
