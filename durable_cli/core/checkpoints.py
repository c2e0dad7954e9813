"""A LangGraph thread's checkpoints and pending writes, kept in its own object (docs/reference/integrations.md §12).

The values are the framework's serialized bytes (its serializer's type tag and blob) and metadata
JSON: durable stores them and never interprets them. The root namespace's messages are mirrored into
transcript rows by the adapter's mapping, each message once (by its id), in the transaction that
stores the checkpoint. When a put of the root namespace moves the thread to another branch (time travel:
its parent is not the newest checkpoint), the mirrored rows follow the graph's state: the rows of messages the
new checkpoint no longer holds are superseded (`superseded_by` 0), those it holds again are live again
(follow_branch). The object is then owned by the saver (`adapter` = "langgraph"), so the
transcript commands that rewrite rows refuse it (transcript.refuse_rewrite_if_owned).
"""

import json
import sqlite3

from ..store.sqlite import sqlite_error
from . import state, transcript
from .transcript.row import _plain, _settings

ADAPTER = "langgraph"
_CHECKPOINT = "checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"


def _writable(obj, external_id, *, create: bool):
    """Inside a transaction: the object's row, creating it (active, owned by the saver) when CREATE."""
    from .sessions import check

    meta = obj.meta()
    if meta is None:
        if not create:
            return None
        state.create_object(obj, "active", origin=(external_id, ADAPTER))
        meta = obj.meta()
    else:
        obj.require_visible()
        if meta["external_id"] is None:
            obj.db.execute("UPDATE object SET external_id = ?, adapter = ?", (external_id, ADAPTER))
    check(obj, "write", status=meta["status"])
    return meta


def put_checkpoint(obj, *, external_id, ns, checkpoint_id, parent_id, type_, blob, metadata, mirror=(), keep=None):
    """Store one checkpoint (replacing one with the same id); append the MIRROR rows not mirrored yet, each
    (message id, its row fields or a function making them, None for a message not mirrored): only those
    are made and checked, so a step costs the same whatever the conversation's length; with KEEP, drop all
    but the newest KEEP checkpoints of NS and their writes.

    Which ids are mirrored (lg_mirrored) is read once and then carried by a kept connection to the next put
    (ObjectHandle.carry, trusted only while no other connection committed to the object): a graph step
    then asks the database nothing to find its new messages."""
    handle = obj.handle
    carried = handle.carry if handle.known is not None else None
    mirrored = carried.get(_MIRRORED) if carried else None
    mirror = list(mirror)
    with handle.transaction():
        _writable(obj, external_id, create=True)
        if ns == "" and _moves(obj, checkpoint_id, parent_id):
            follow_branch(obj, [mid for mid, _ in mirror])
        obj.db.execute(_PUT, (ns, checkpoint_id, parent_id, type_, blob, metadata))
        if mirrored is None:
            mirrored = {r[0] for r in obj.db.execute("SELECT message_id FROM lg_mirrored")}
        rows = []
        seen = set()
        settings = None
        for mid, fields in mirror:
            if mid in mirrored or mid in seen:
                continue
            seen.add(mid)  # a message once, by its id
            fields = fields() if callable(fields) else fields
            if fields is not None:
                if settings is None:
                    settings = _settings(obj.config)
                # a message's text and its `data` take append's quick path; the rest prepare's whole check
                row = _plain(fields, *settings) or transcript.prepare(obj.config, fields, _settings=settings)
                rows.append((mid, row))
        if rows:
            seqs = transcript.insert_rows(obj, [row for _, row in rows], author=obj.actor)
            obj.db.executemany("INSERT OR IGNORE INTO lg_mirrored (message_id, seq) VALUES (?, ?)",
                               [(mid, seq) for (mid, _), seq in zip(rows, seqs)])
        else:
            state.touch(obj)
        if keep is not None:
            old = [r[0] for r in obj.db.execute(
                "SELECT checkpoint_id FROM lg_checkpoints WHERE checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT -1 OFFSET ?",
                (ns, keep))]
            obj.db.executemany("DELETE FROM lg_checkpoints WHERE checkpoint_ns = ? AND checkpoint_id = ?", [(ns, c) for c in old])
            obj.db.executemany("DELETE FROM lg_writes WHERE checkpoint_ns = ? AND checkpoint_id = ?", [(ns, c) for c in old])
    # committed: the ids mirrored now, for the next put on this connection
    mirrored.update(mid for mid, _ in rows)
    handle.carry = dict(carried or (), **{_MIRRORED: mirrored})


def _moves(obj, checkpoint_id, parent_id) -> bool:
    """Whether putting CHECKPOINT_ID (root namespace) moves the thread to another branch: it becomes the newest
    checkpoint and its parent is not the one that was newest (a replay or fork from an earlier checkpoint)."""
    newest = obj.db.execute("SELECT max(checkpoint_id) FROM lg_checkpoints WHERE checkpoint_ns = ''").fetchone()[0]
    return newest is not None and checkpoint_id > newest and parent_id != newest


def follow_branch(obj, message_ids) -> None:
    """Inside a transaction, before the new checkpoint's own rows are mirrored: the mirrored rows of the messages
    in MESSAGE_IDS (the new checkpoint's messages channel: the messages of its line) are live, the other mirrored
    rows superseded with `superseded_by` 0 (no summary replaced them; `show --all` still shows them)."""
    ids = json.dumps(list(message_ids))
    mine = "seq IN (SELECT seq FROM lg_mirrored WHERE message_id {} (SELECT value FROM json_each(?)))"
    left = obj.db.execute(f"SELECT count(*) FROM turns WHERE superseded_by IS NULL AND {mine.format('NOT IN')}", (ids,)).fetchone()[0]
    back = obj.db.execute(f"SELECT count(*) FROM turns WHERE superseded_by = 0 AND {mine.format('IN')}", (ids,)).fetchone()[0]
    if not (left or back):
        return
    obj.handle.evict_search(merge=False)  # rows change shape (superseded), not text: indexed again at the next search
    obj.db.execute(f"UPDATE turns SET superseded_by = 0 WHERE superseded_by IS NULL AND {mine.format('NOT IN')}", (ids,))
    obj.db.execute(f"UPDATE turns SET superseded_by = NULL WHERE superseded_by = 0 AND {mine.format('IN')}", (ids,))
    live = obj.db.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL").fetchone()
    obj.db.execute("UPDATE object SET live_turns = ?, live_tokens = ?", live)


_MIRRORED = "lg_mirrored"
_PUT = f"INSERT OR REPLACE INTO lg_checkpoints ({_CHECKPOINT}) VALUES (?, ?, ?, ?, ?, ?)"


def put_writes(obj, *, external_id, ns, checkpoint_id, writes, replace: bool):
    """Store pending writes ((task_id, task_path, idx, channel, type, blob)); REPLACE overwrites
    same-keyed ones (special channels), else the first stored is kept."""
    verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
    with obj.handle.transaction():
        _writable(obj, external_id, create=True)
        obj.db.executemany(
            f"{verb} INTO lg_writes (checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(ns, checkpoint_id, *w) for w in writes])
        state.touch(obj)


def checkpoint_rows(obj, *, ns=None, checkpoint_id=None, before=None, limit=None):
    """Checkpoints newest first (by id), as (ns, id, parent, type, blob, metadata), at most LIMIT of them
    (the latest one is read without reading the others: a graph step asks for it); none for an object
    without a session row."""
    known = obj.handle.known  # a kept connection nobody else committed through since: its facts hold
    if not (known is not None and known.get("present") and not obj.handle.wrote) and obj.meta() is None:
        return []
    return obj.handle.rows(*_select(ns, checkpoint_id, before, limit))


def _select(ns, checkpoint_id, before, limit):
    where, params = [], []
    for column, value, op in (("checkpoint_ns", ns, "="), ("checkpoint_id", checkpoint_id, "="), ("checkpoint_id", before, "<")):
        if value is not None:
            where.append(f"{column} {op} ?")
            params.append(value)
    sql = f"SELECT {_CHECKPOINT} FROM lg_checkpoints"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY checkpoint_id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params


_LATEST = f"SELECT {_CHECKPOINT} FROM lg_checkpoints WHERE checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1"
_ONE = f"SELECT {_CHECKPOINT} FROM lg_checkpoints WHERE checkpoint_ns = ? AND checkpoint_id = ?"
_WRITES = "SELECT task_id, channel, type, value, task_path, idx FROM lg_writes WHERE checkpoint_ns = ? AND checkpoint_id = ?"


def latest_rows(db, ns, checkpoint_id=None):
    """(checkpoint row, its pending writes) of the newest checkpoint of NS (or the one CHECKPOINT_ID) of
    an object whose row exists, None when there is none; the caller holds a read transaction."""
    found = (db.execute(_LATEST, (ns,)) if checkpoint_id is None else db.execute(_ONE, (ns, checkpoint_id))).fetchone()
    return None if found is None else (found, db.execute(_WRITES, (ns, found[1])).fetchall())


def latest(obj, *, ns, checkpoint_id=None):
    """latest_rows of an opened object, in one read transaction (one WAL read lock for both queries)."""
    db = obj.db
    try:
        db.execute("BEGIN")
        try:
            known = obj.handle.known
            if not (known is not None and known.get("present") and not obj.handle.wrote) and obj.meta() is None:
                return None
            return latest_rows(db, ns, checkpoint_id)
        finally:
            db.execute("COMMIT")
    except sqlite3.Error as e:
        raise sqlite_error(e, obj.what) from e


def write_rows(obj, ns, checkpoint_id):
    """Pending writes of one checkpoint as (task_id, channel, type, blob, task_path, idx)."""
    return obj.handle.rows(_WRITES, (ns, checkpoint_id))


def newest_checkpoint_id(obj):
    row = obj.handle.row("SELECT max(checkpoint_id) FROM lg_checkpoints")
    return row[0] if row else None


def delete_thread(obj) -> None:
    """Delete the thread's object (through the intent journal), leaving a tombstone in index.db that
    remembers its newest checkpoint id: a late write from before the delete is then refused."""
    from .. import clock

    meta = obj.meta()
    # its readers: the participants it had (docs/reference/integrations.md §12: to anyone else a deleted thread reads as one never made)
    members = [u for (u,) in obj.handle.rows("SELECT user FROM participants ORDER BY user", ())] if meta else []
    obj.handle.store.index().bury(obj.id, obj.address.owner, newest_checkpoint_id(obj) if meta else None, clock.now(), members)
    obj.handle.delete(owner=obj.address.owner, name=obj.name, created_at=meta["created_at"] if meta else None)


def metadata_json(metadata) -> str:
    """A checkpoint's metadata as RFC 8259 JSON text (docs/reference/transcript.md §6: no NaN or infinity, at most 200 levels), else exit 2:
    what json.dumps would write for NaN is not JSON, and an export of it could not be imported again."""
    import json

    from ..contract.messages import say
    from ..errors import invalid
    from . import strict_json

    try:
        text = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
        strict_json.check_depth(metadata, text)
    except (RecursionError, strict_json.NotJSON):
        raise invalid(say("json_too_deep", what="checkpoint metadata", max=strict_json.MAX_DEPTH)) from None
    except ValueError:
        raise invalid("checkpoint metadata holds NaN or Infinity, which JSON (RFC 8259) has not; nothing was stored") from None
    return text
