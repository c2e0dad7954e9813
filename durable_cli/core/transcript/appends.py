"""Appending rows (docs/reference/transcript.md §6 `transcript append`, a prompt's turn, a reply): one transaction, all or none;
a --request-id replayed returns what it made."""


from ... import clock
from ...contract.messages import say
from ...errors import conflict, invalid, not_found
from .. import state
from .row import ROW_COLUMNS, Prepared, _dumps, _loads, _plain, _settings, prepare, row_json

_INSERT = (
    "INSERT INTO turns (role, content, tokens, author, created_at, kind, call_id, tool_calls, name, meta, data,"
    " request_id, request_hash, request_last) VALUES (?, ?, ?, ?, ?, 'turn', ?, ?, ?, ?, ?, ?, ?, ?)"
)


# OR FAIL: a multi-row INSERT that may abort needs a statement journal (a temp file: ~3 MB written for
# 10,000 rows); a failing statement raises all the same, and the whole transaction is rolled back.
_PLAIN_HEAD, _PLAIN_VALUES = "INSERT OR FAIL INTO turns (role, content, tokens, author, created_at) VALUES ", "(?, ?, ?, ?, ?)"
_DATA_HEAD, _DATA_VALUES = "INSERT OR FAIL INTO turns (role, content, tokens, author, created_at, data) VALUES ", "(?, ?, ?, ?, ?, ?)"
_FULL_HEAD, _FULL_VALUES = _INSERT.split("VALUES ")[0].replace("INSERT INTO", "INSERT OR FAIL INTO") + "VALUES ", _INSERT.split("VALUES ")[1]
# rows a multi-row INSERT carries, by shape: at most 995 bound values, under SQLite's oldest limit (999)
_PLAIN, _DATA, _FULL = 0, 1, 2
_SHAPES = {_PLAIN: (_PLAIN_HEAD, _PLAIN_VALUES, 199), _DATA: (_DATA_HEAD, _DATA_VALUES, 165), _FULL: (_FULL_HEAD, _FULL_VALUES, 76)}


def _shape(r) -> int:
    """Which columns a row needs bound: text only (the rest keep their defaults, 'turn' and nulls), text and
    `data` (an adapter's message), or all of them."""
    if r.tool_calls is None and r.call_id is None and r.name is None and r.meta is None:
        return _PLAIN if r.data is None else _DATA
    return _FULL


def _insert_more(db, rows, author, now) -> None:
    """Rows[1:], in order, by multi-row INSERTs of as many rows as fit: one statement (one AUTOINCREMENT
    update, one statement journal) a chunk, not a row. A run of consecutive rows of one shape binds only
    the columns that shape has (5 values a row of text, 6 with its `data`, 13 else): binding the nulls
    made a 1,000-item add_items' insert twice as slow."""
    n, start = len(rows), 1
    while start < n:
        shape = _shape(rows[start])
        end = start + 1
        while end < n and _shape(rows[end]) == shape:
            end += 1
        head, one, per = _SHAPES[shape]
        for i in range(start, end, per):
            chunk = rows[i:min(end, i + per)]
            if shape == _PLAIN:
                values = [v for r in chunk for v in (r.role, r.content, r.tokens, author, now)]
            elif shape == _DATA:
                values = [v for r in chunk for v in (r.role, r.content, r.tokens, author, now, r.data)]
            else:
                values = [v for r in chunk for v in (r.role, r.content, r.tokens, author, now, r.call_id, r.tool_calls,
                                                     r.name, r.meta, r.data, None, None, None)]
            db.execute(head + ", ".join([one] * len(chunk)), values)
        start = end


def insert_rows(obj, rows, *, author, request_id=None, request_hash=None, now=None) -> range:
    """Append prepared live rows (inside the caller's transaction) with one `now`, keep the live
    counters and record the activity; returns their seqs. A request id is kept on the first row,
    with the hash of the request and the last seq it made."""
    now = clock.now() if now is None else now
    first = obj.db.execute(_INSERT, rows[0].params(author, now, request_id, request_hash)).lastrowid
    if len(rows) > 1:
        _insert_more(obj.db, rows, author, now)
    last = first + len(rows) - 1
    if request_id is not None and last != first:
        obj.db.execute("UPDATE turns SET request_last = ? WHERE seq = ?", (last, first))
    obj.db.execute(
        "UPDATE object SET live_turns = live_turns + ?, live_tokens = live_tokens + ?, updated_at = ?, last_active_at = ?,"
        " expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END",
        (len(rows), sum(r.tokens for r in rows), now, now, now),
    )
    return range(first, last + 1)


def insert_turn(obj, role, content, *, author, tokens=None) -> dict:
    """Append one plain text turn (a prompt's user turn, a reply) inside the caller's transaction."""
    row = prepare(obj.config, {"role": role, "content": content, "tokens": tokens})
    seq = insert_rows(obj, [row], author=author)[0]
    return {"seq": seq}


def _rows_between(obj, first, last):
    return [row_json(r) for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq", (first, last))]


def _request_hash(rows) -> str:
    import hashlib

    return hashlib.sha256(_dumps([list(r.key()) for r in rows]).encode("utf-8", "surrogatepass")).hexdigest()


def append_many(obj, rows, *, request_id=None, create=True, one=False, seqs_only=False, origin=None):
    """Append ROWS (dicts of §6 input fields, or prepared rows) in one transaction: all or none.

    Returns the new rows (ONE: the single row; SEQS_ONLY: their seqs, without reading them back). A
    --request-id replayed with the same request returns what it made, as it stands now; with another
    request it is exit 4. ORIGIN (an adapter's (external_id, adapter)) is recorded on the object it
    creates, or on an object that has none yet.
    """
    from ..lifecycle import check, valid_request_id

    settings = _settings(obj.config)
    rows = [r if isinstance(r, Prepared) else (type(r) is dict and _plain(r, *settings))
            or prepare(obj.config, r, where=f"row {i}: " if not one else "", _settings=settings)
            for i, r in enumerate(rows, 1)]
    if not rows:
        raise invalid(say("no_rows"))
    valid_request_id(request_id)
    digest = _request_hash(rows) if request_id is not None else None
    with obj.handle.transaction():
        meta = obj.meta()
        if meta is None:
            if not create:
                raise not_found(obj.address.missing)
            state.create_object(obj, "active", origin=origin)
            meta = obj.meta()
        else:
            obj.require_visible()
            if origin is not None and meta["external_id"] is None:
                obj.db.execute("UPDATE object SET external_id = ?, adapter = ?", origin)
        if request_id is not None:
            found = obj.db.execute(
                "SELECT seq, role, content, request_hash, coalesce(request_last, seq) FROM turns WHERE request_id = ?", (request_id,)
            ).fetchone()
            if found is not None:
                same = found[3] == digest if found[3] is not None else (
                    len(rows) == 1 and (found[1], found[2]) == (rows[0].role, rows[0].content))
                if not same:
                    raise conflict(say("append_request_id_reused", request_id=request_id, what=obj.what))
                made = _rows_between(obj, found[0], found[4])
                return [r["seq"] for r in made] if seqs_only else made[0] if one else made
        check(obj, "write", status=meta["status"])
        now = clock.now()
        seqs = insert_rows(obj, rows, author=obj.actor, request_id=request_id, request_hash=digest, now=now)
    if seqs_only:
        return list(seqs)
    made = _inserted(rows, seqs, obj.actor, now)
    return made[0] if one else made


def _inserted(rows, seqs, author, now) -> list:
    """The rows just inserted, as `row_json` would read them back (built from what was written)."""
    base = {"seq": None, "role": None, "content": None, "tool_calls": None, "call_id": None, "name": None, "meta": None,
            "data": None, "forked_from": None, "tokens": None, "author": author, "created_at": clock.iso(now), "kind": "turn",
            "superseded_by": None, "covers": None}  # row_json's keys, in its order
    made = []
    for seq, r in zip(seqs, rows):
        row = base.copy()
        row["seq"], row["role"], row["content"], row["tokens"] = seq, r.role, r.content, r.tokens
        if _shape(r) != _PLAIN:
            row["tool_calls"], row["call_id"], row["name"] = _loads(r.tool_calls), r.call_id, r.name
            row["meta"], row["data"] = _loads(r.meta), _loads(r.data)
        made.append(row)
    return made


def append(obj, content="", *, role: str, tool_calls=None, call_id=None, name=None, meta=None, data=None,
           tokens=None, request_id=None, create=True) -> dict:
    """Append one row; returns it."""
    fields = {"role": role, "content": content, "tool_calls": tool_calls, "call_id": call_id, "name": name,
              "meta": meta, "data": data, "tokens": tokens}
    return append_many(obj, [prepare(obj.config, fields)], request_id=request_id, create=create, one=True)
