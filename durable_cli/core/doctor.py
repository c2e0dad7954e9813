"""doctor: check every object and index.db, and with --repair rebuild the index from the objects.

A corrupt object is reported by id and never blocks the others; only what can be rebuilt from the
objects (index rows, interrupted purges, half-made files, stale locks, modes) is repaired.
"""

import os
import stat

from ..errors import DurableError
from ..store import paths as _paths
from ..store.lock import try_lock
from . import state
from .retention import address_of, finish_journal

COMPARED = ("scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
            "turns", "tokens", "expires_at", "next_alarm_at")


def doctor(store, *, repair=False, progress=None) -> dict:
    paths = store.objects.paths
    problems = []

    def problem(object_id, kind, detail, repaired=False):
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

    index = store.objects.index(create=False)
    index_ok = True
    try:
        bad = index.integrity()
        if bad:
            index_ok = False
            problem(None, "index_corrupt", "; ".join(bad[:3]), repaired=repair)
    except DurableError as e:
        index_ok = False
        problem(None, "index_corrupt", e.message, repaired=repair)
    if not index_ok and repair:
        index.recreate()  # keeps the secret's check value and intents where they still read
    indexed = {r["id"]: r for r in index.rows("SELECT * FROM objects")} if index_ok else {}
    journal = index.rows("SELECT * FROM purge_journal") if index_ok else []
    for row in journal:
        problem(row["id"], "unfinished_purge", "a purge was interrupted before it finished", repaired=repair)
    if journal and repair:
        finish_journal(store)
        indexed = {r["id"]: r for r in index.rows("SELECT * FROM objects")}

    ids = list(paths.iter_object_ids(skip_symlinks=True))  # a symlink is reported by _check_modes
    if progress:
        progress.start(len(ids))
    healthy_rows, corrupt = [], set()
    for object_id in ids:
        try:
            found = _check_object(store, object_id, problem, repair)
            if found is not None:
                healthy_rows.append(found)
                row = indexed.get(object_id)
                if row is None:
                    problem(object_id, "missing_index_row", "object file has no index row", repaired=repair)
                else:
                    differ = [k for k in COMPARED if row.get(k) != found[0].get(k)]
                    if differ:
                        problem(object_id, "index_mismatch", "index disagrees on " + ", ".join(differ), repaired=repair)
        except DurableError as e:
            if e.code == "not_found":
                continue
            if e.code == "busy":
                problem(object_id, "busy", "object is locked by another process; not checked")
                corrupt.add(object_id)
            else:
                problem(object_id, "corrupt", e.message)
                corrupt.add(object_id)
        finally:
            if progress:
                progress.advance()
    present = set(ids)
    for object_id in indexed:
        if object_id not in present:
            problem(object_id, "orphan_index_row", "index row for an object file that does not exist", repaired=repair)
    _check_locks(paths, present, problem, repair)

    if repair:
        keep = [(r, store.objects.index().rows("SELECT user, role FROM members WHERE object_id = ?", (r["id"],)))
                for i, r in indexed.items() if i in corrupt]
        store.objects.index().replace_all(healthy_rows + [(r, [(m["user"], m["role"]) for m in ms]) for r, ms in keep])
    healthy = all(p["repaired"] for p in problems)
    return {"healthy": healthy, "problems": problems}


def _check_object(store, object_id, problem, repair):
    """Integrity of one object: (index row, members) when healthy, None for a half-made file."""
    what = f"object {object_id}"
    with store.objects.open(object_id, create=False, what=what) as handle:
        result = [r[0] for r in handle.rows("PRAGMA integrity_check")]
        if result != ["ok"]:
            raise DurableError(f"{what} is corrupt: {'; '.join(result[:3])}", "storage")
        found = state.index_row(handle.db)
        if found is None:
            problem(object_id, "half_made", "object file without an object row (a create was interrupted)", repaired=repair)
            if repair:
                handle.delete()
            return None
        if found[0]["id"] != object_id:
            raise DurableError(f"{what} claims to be {found[0]['id']}", "storage")
        address_of(found[0])
        return found


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
    for shard in os.listdir(paths.objects):
        directory = os.path.join(paths.objects, shard)
        check(directory, _paths.DIR_MODE)
        if os.path.isdir(directory) and not os.path.islink(directory):
            for name in os.listdir(directory):
                check(os.path.join(directory, name), _paths.FILE_MODE)


def _check_locks(paths, present, problem, repair) -> None:
    """A lock file whose object is gone and that nobody holds is stale; only its holder may unlink it."""
    if not os.path.isdir(paths.objects):
        return
    for shard in sorted(os.listdir(paths.objects)):
        directory = os.path.join(paths.objects, shard)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".lock") or name[:-5] in present:
                continue
            path = os.path.join(directory, name)
            fd = try_lock(path)
            if fd is None:
                continue
            try:
                if not os.path.exists(os.path.join(directory, name[:-5] + ".sqlite3")):
                    problem(name[:-5], "stale_lock", "lock file without an object", repaired=repair)
                    if repair:
                        _paths.unlink_quiet(path)
            finally:
                os.close(fd)
