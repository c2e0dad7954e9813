"""The transcript and its context window (SPEC §6).

A row holds what an agent writes: text, tool calls (assistant rows), the result of one call (`tool`
rows, by `call_id`), the turn's `meta` and the caller's own item (`data`, verbatim).
Logical order: live rows (not superseded) by position, where a turn stands at its seq and a summary
at the first seq it covers. The leading `system` and `developer` turns of that order are pinned.
Summaries are an overlay: a `summary` row plus `superseded_by` on the rows it stands for.
The window and `rows(last=N)` are read backwards from the tail through a partial index on live
positions, so their cost grows with what they return, never with the transcript.
Input is validated whole (`prepare`) before anything is opened or created.
"""

import json

from ... import clock
from ...errors import NotEncodable, conflict, invalid, not_found
from .. import state, strict_json, tokens as _tokens

from ...vocabulary import PINNED_ROLES, ROW_INPUT_KEYS as INPUT_KEYS, ROW_OUTPUT_KEYS as OUTPUT_KEYS, ROW_ROLES as ROLES  # noqa: E402
ROW_COLUMNS = (
    "seq, role, content, tokens, author, created_at, kind, superseded_by, covers_first, covers_last, call_id, pos,"
    " tool_calls, name, meta, data, forked_from"
)
SEQ, ROLE, CONTENT, TOKENS, AUTHOR, CREATED, KIND, SUPERSEDED, FIRST, LAST, CALL_ID, POS, CALLS, NAME, META, DATA, FORKED = range(17)
REDACTED = "[redacted]"
PRUNED = "[pruned]"  # what a prompt's text becomes when prune deletes the turn it became
MAX_INT = 2**63 - 1
from ...vocabulary import USAGE_KEYS as _USAGE_KEYS  # noqa: E402
MAX_USAGE = 10**12  # a usage count's ceiling: 9 million such rows before a 64-bit total could overflow
MAX_COST = 10**9  # meta.cost_usd's ceiling, in dollars

_estimators = {}


def _estimator(config):
    name = config.get("transcript.tokenizer")
    if name not in _estimators:
        _estimators[name] = _tokens.estimator(name)
    return _estimators[name]


def estimate(obj, text: str) -> int:
    return _estimator(obj.config)(text)


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode  # json.dumps, made once


def _dumps(value) -> str:
    return _ENCODE(value)


def _c_encoder():
    """CPython's C encoder as _ENCODE sets it up on every call, set up once (None where there is none or it
    disagrees with _ENCODE): `"".join(it(value, 0))` is _ENCODE(value) less ~0.8 us of set-up a value. A
    value that refers to itself ends in RecursionError rather than ValueError."""
    try:
        from json.encoder import c_make_encoder, encode_basestring

        def default(value):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

        it = c_make_encoder(None, default, encode_basestring, None, ":", ",", False, False, False)
        probe = {"a": [1, 2.5, None, True, "\u00e9\n\"\ud800"], "b": {"c": -0.0, "d": 10**20}, "e": ""}
        return it if "".join(it(probe, 0)) == _ENCODE(probe) else None
    except Exception:  # noqa: BLE001 - another Python: the usual encoder
        return None


_C_ENCODE = _c_encoder()


def _loads(text):
    return None if text is None else json.loads(text)


def check_text(config, content, what="content") -> None:
    """Empty content or content over transcript.max_turn_bytes is exit 2: never truncated silently."""
    if not isinstance(content, str) or content == "":
        raise invalid(f"empty {what}: give TEXT, or - to read it from stdin")
    limit = config.get("transcript.max_turn_bytes")
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise invalid(f"{what} is {size} bytes, over the limit of {limit} (transcript.max_turn_bytes); nothing was stored")


def check_content(obj, content: str) -> None:
    check_text(obj.config, content)


_DECODER = strict_json.DECODER


def parse_json(text, what: str, *, depth: bool = True):
    """A JSON option's value, RFC 8259 JSON (strict_json: no NaN, 1e400, duplicate key or nesting over
    200 levels; DEPTH False: a batch line, whose fields are each checked by `prepare`); exit 2 naming it."""
    if text is None:
        return None
    try:
        return strict_json.loads(text, depth=depth)
    except strict_json.NotJSON as e:
        raise invalid(f"{what} is not valid JSON ({e})")


class Prepared:
    """One validated input row, its JSON columns already serialized and its tokens counted."""

    __slots__ = ("role", "content", "tokens", "tool_calls", "call_id", "name", "meta", "data", "given_tokens")
    role: str
    content: str
    tokens: int
    tool_calls: "str | None"
    call_id: "str | None"
    name: "str | None"
    meta: "str | None"
    data: "str | None"
    given_tokens: "int | None"

    def params(self, author, now, request_id=None, request_hash=None, request_last=None):
        return (self.role, self.content, self.tokens, author, now, self.call_id, self.tool_calls, self.name,
                self.meta, self.data, request_id, request_hash, request_last)

    def key(self):
        return (self.role, self.content, self.tool_calls, self.call_id, self.name, self.meta, self.data, self.given_tokens)


def _tool_calls(value, where):
    if not isinstance(value, list):
        raise invalid(f"{where}tool calls must be a JSON array of {{\"id\", \"name\", \"arguments\"}}")
    out, seen = [], set()
    for i, call in enumerate(value, 1):
        if not isinstance(call, dict):
            raise invalid(f"{where}tool call {i} is not a JSON object")
        extra = set(call) - {"id", "name", "arguments"}
        if extra:
            raise invalid(f"{where}tool call {i} has unknown keys {sorted(extra)}: use id, name and arguments")
        for key in ("id", "name"):
            if not isinstance(call.get(key), str) or not call[key]:
                raise invalid(f"{where}tool call {i} needs a non-empty string {key!r}")
        arguments = call.get("arguments", "{}")
        if not isinstance(arguments, str):
            raise invalid(f"{where}tool call {i}: 'arguments' must be a string (the model's JSON text)")
        if call["id"] in seen:
            raise invalid(f"{where}tool call id {call['id']!r} appears twice in one row")
        seen.add(call["id"])
        out.append({"id": call["id"], "name": call["name"], "arguments": arguments})
    return out


def _meta(value, where):
    if not isinstance(value, dict):
        raise invalid(f"{where}meta must be a JSON object")
    if "model" in value and not isinstance(value["model"], str):
        raise invalid(f"{where}meta.model must be a string")
    if "usage" in value:
        usage = value["usage"]
        if not isinstance(usage, dict):
            raise invalid(f"{where}meta.usage must be an object with input_tokens and output_tokens")
        for key in _USAGE_KEYS:
            required = key in ("input_tokens", "output_tokens")
            if key not in usage and not required:
                continue
            n = usage.get(key)
            if type(n) is not int or not 0 <= n <= MAX_USAGE:  # 5.0 and true are not integers
                raise invalid(f"{where}meta.usage.{key} must be an integer from 0 to 10^12")
    if "cost_usd" in value:
        cost = value["cost_usd"]
        if type(cost) not in (int, float) or not 0 <= cost <= MAX_COST:  # NaN fails the comparison
            raise invalid(f"{where}meta.cost_usd must be a finite number from 0 to 10^9")
    return value


_PLAIN_ROLES = ROLES[:4]  # every role but `tool` (a tuple: `in` must not hash what the input holds)
_BATCH_KEYS = frozenset(INPUT_KEYS + OUTPUT_KEYS)


def _settings(config):
    return config.get("transcript.max_turn_bytes"), _estimator(config)


def _plain(fields: dict, limit: int, count_tokens):
    """The common row, a role and its text (perhaps its token count, perhaps the caller's `data`, as an
    adapter writes a message), checked in a few comparisons.

    None when the row needs `prepare`'s general path: anything else it holds, and anything wrong
    with it, so that errors stay those of `prepare`. What is accepted here `prepare` accepts alike.
    """
    get = fields.get
    role, content, given, data = get("role"), get("content"), None, None
    if role not in _PLAIN_ROLES or type(content) is not str or not content:
        return None
    if len(fields) > 2:  # more than role and content
        given, data = get("tokens"), get("data")
        if (get("tool_calls") is not None or get("call_id") is not None or get("name") is not None
                or get("meta") is not None):
            return None
        if given is not None and (type(given) is not int or not 0 <= given <= _tokens.MAX_TOKENS):
            return None
    if content.isascii():
        size = len(content)
    else:
        try:
            size = len(content.encode("utf-8"))
        except UnicodeEncodeError:
            return None
    if data is not None:
        try:
            data = "".join(_C_ENCODE(data, 0)) if _C_ENCODE is not None else _ENCODE(data)
        except (TypeError, ValueError, RecursionError):
            return None
        if strict_json.may_be_too_deep(data):  # prepare decides
            return None
        if data.isascii():
            size += len(data)
        else:
            try:
                size += len(data.encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: prepare says so
                return None
    if size > limit:
        return None
    row = Prepared()
    row.role, row.content, row.call_id, row.name, row.given_tokens = role, content, None, None, given
    row.tool_calls = row.meta = None
    row.data = data
    row.tokens = count_tokens(content) if given is None else given
    return row


def _json_field(value, what, where):
    """The compact JSON text of a row's meta or data (None stays None); exit 2 for a value outside RFC 8259
    JSON (NaN, an infinity, nesting over 200 levels) or one json cannot encode."""
    if value is None:
        return None
    try:
        text = _dumps(value)
        strict_json.check_depth(value, text)
    except (RecursionError, strict_json.NotJSON):
        raise invalid(f"{where}{what} is nested deeper than {strict_json.MAX_DEPTH} levels; nothing was stored")
    except ValueError:  # allow_nan=False
        raise invalid(f"{where}{what} holds NaN or Infinity, which JSON (RFC 8259) has not; nothing was stored")
    except TypeError as e:
        raise NotEncodable(f"{where}{what} is not JSON-serializable ({e}); nothing was stored")
    return text


def prepare(config, fields: dict, *, where: str = "", _settings=None) -> Prepared:
    """Validate one input row (a dict of §6 input fields) as a whole; exit 2 naming what is wrong.

    WHERE prefixes messages (e.g. "line 3: ") so a batch names its bad line.
    """
    limit, count_tokens = _settings or (config.get("transcript.max_turn_bytes"), _estimator(config))
    role = fields.get("role")
    if role not in ROLES:
        raise invalid(f"{where}invalid role {role!r}: use one of {', '.join(ROLES)}")
    content = fields.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise invalid(f"{where}content must be a string")
    calls = fields.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise invalid(f"{where}tool calls belong on assistant rows, not {role} rows")
        calls = _tool_calls(calls, where) or None  # [] means none
    call_id, name = fields.get("call_id"), fields.get("name")
    if role == "tool":
        if not isinstance(call_id, str) or not call_id:
            raise invalid(f"{where}a tool row needs the id of the call it answers (--call-id ID)")
        if name is not None and (not isinstance(name, str) or not name):
            raise invalid(f"{where}the tool's name must be a non-empty string")
    else:
        if call_id is not None:
            raise invalid(f"{where}a call id belongs on tool rows only, not {role} rows")
        if name is not None:
            raise invalid(f"{where}a tool name belongs on tool rows only, not {role} rows")
    meta = fields.get("meta")
    if meta is not None:
        meta = _meta(meta, where)
    data = fields.get("data")
    if content == "" and not (calls and role == "assistant") and data is None:
        raise invalid(f"{where}empty content: give TEXT (only an assistant row with tool calls, or a row with data, may be empty)")
    given = fields.get("tokens")
    if given is not None and (isinstance(given, bool) or not isinstance(given, int) or not 0 <= given <= _tokens.MAX_TOKENS):
        raise invalid(f"{where}tokens must be an integer from 0 to {_tokens.MAX_TOKENS}")
    row = Prepared()
    row.role, row.content, row.call_id, row.name, row.given_tokens = role, content, call_id, name, given
    row.tool_calls = _dumps(calls) if calls else None
    row.meta = _json_field(meta, "meta", where)
    row.data = _json_field(data, "data", where)
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise invalid(f"{where}content is not valid UTF-8")
    for what, x in (("tool calls", row.tool_calls), ("meta", row.meta), ("data", row.data)):
        if x is not None:
            try:
                size += len(x.encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate ("\ud83d"): no UTF-8 text to store, or to send
                raise invalid(f"{where}{what} is not valid UTF-8 (a lone surrogate); nothing was stored")
    if size > limit:
        raise invalid(f"{where}the row is {size} bytes, over the limit of {limit} (transcript.max_turn_bytes); nothing was stored")
    if given is None:
        parts = [content]
        for call in calls or ():
            parts += [call["name"], call["arguments"]]
        row.tokens = count_tokens("\n".join(parts))
    else:
        row.tokens = given
    return row


def prepare_batch(config, lines) -> list:
    """JSONL input of `append --batch`: one row a line, validated whole; exit 2 naming the bad line.

    Output-only keys (what `show --jsonl` prints besides the input fields) are ignored, so a
    transcript's rows can be fed back in; any other key is refused.
    """
    rows = []
    settings = limit, count_tokens = _settings(config)
    scan, append = _DECODER.scan_once, rows.append  # the C scanner: decode() less its two regex passes
    for number, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise invalid(f"line {number}: not valid UTF-8 (byte {e.start}); nothing was stored")
        text = line.strip(" \t\r\n")  # JSON's white space, as decode() allows around the value
        if text[:1] == "{":
            try:
                fields, end = scan(text, 0)
            except (ValueError, StopIteration, RecursionError):
                fields, end = None, -1
            if end == len(text) and type(fields) is dict and fields.keys() <= _BATCH_KEYS:  # parsed once, whatever the row
                append(_plain(fields, limit, count_tokens) or prepare(config, fields, where=f"line {number}: ", _settings=settings))
                continue
        elif not line.strip():
            continue
        where = f"line {number}: "  # not an object of known keys: the general path, with its errors
        fields = parse_json(line, f"line {number}", depth=False)
        if not isinstance(fields, dict):
            raise invalid(f"{where}expected a JSON object with role and content")
        unknown = set(fields) - set(INPUT_KEYS) - set(OUTPUT_KEYS)
        if unknown:
            raise invalid(f"{where}unknown keys {sorted(unknown)}: use {', '.join(INPUT_KEYS)}")
        append(prepare(config, fields, where=where, _settings=settings))
    if not rows:
        raise invalid("the batch holds no rows; nothing was stored")
    return rows


def row_json(r) -> dict:
    """A row as SPEC §10 shows it."""
    summary = r[KIND] == "summary"
    return {
        "seq": r[SEQ], "role": r[ROLE], "content": r[CONTENT], "tool_calls": _loads(r[CALLS]), "call_id": r[CALL_ID],
        "name": r[NAME], "meta": _loads(r[META]), "data": _loads(r[DATA]), "forked_from": r[FORKED],
        "tokens": r[TOKENS], "author": r[AUTHOR], "created_at": clock.iso(r[CREATED]), "kind": r[KIND],
        "superseded_by": r[SUPERSEDED], "covers": [r[FIRST], r[LAST]] if summary and r[LAST] is not None else None,  # a forked summary covers nothing
    }


_INSERT = (
    "INSERT INTO turns (role, content, tokens, author, created_at, kind, call_id, tool_calls, name, meta, data,"
    " request_id, request_hash, request_last) VALUES (?, ?, ?, ?, ?, 'turn', ?, ?, ?, ?, ?, ?, ?, ?)"
)


# OR FAIL: a multi-row INSERT that may abort needs a statement journal (a temp file: ~3 MB written for
# 10,000 rows); a failing statement raises all the same, and the whole transaction is rolled back.
_PLAIN_HEAD, _PLAIN_VALUES = "INSERT OR FAIL INTO turns (role, content, tokens, author, created_at) VALUES ", "(?, ?, ?, ?, ?)"
_FULL_HEAD, _FULL_VALUES = _INSERT.split("VALUES ")[0].replace("INSERT INTO", "INSERT OR FAIL INTO") + "VALUES ", _INSERT.split("VALUES ")[1]
_PER_PLAIN, _PER_FULL = 199, 76  # rows a multi-row INSERT carries: at most 995 bound values, under SQLite's oldest limit (999)


def _is_plain(r) -> bool:
    return r.tool_calls is None and r.call_id is None and r.name is None and r.meta is None and r.data is None


def _insert_more(db, rows, author, now) -> None:
    """Rows[1:], in order, by multi-row INSERTs of up to _PER_PLAIN/_PER_FULL rows: one statement (one
    AUTOINCREMENT update, one statement journal) a chunk, not a row. A run of consecutive plain rows
    (text only: the other columns keep their defaults, 'turn' and nulls) binds 5 values a row, not 13."""
    n, start = len(rows), 1
    while start < n:
        plain = _is_plain(rows[start])
        end = start + 1
        while end < n and _is_plain(rows[end]) == plain:
            end += 1
        per = _PER_PLAIN if plain else _PER_FULL
        for i in range(start, end, per):
            chunk = rows[i:min(end, i + per)]
            if plain:
                values = [v for r in chunk for v in (r.role, r.content, r.tokens, author, now)]
                db.execute(_PLAIN_HEAD + ", ".join([_PLAIN_VALUES] * len(chunk)), values)
            else:
                values = [v for r in chunk for v in (r.role, r.content, r.tokens, author, now, r.call_id, r.tool_calls,
                                                     r.name, r.meta, r.data, None, None, None)]
                db.execute(_FULL_HEAD + ", ".join([_FULL_VALUES] * len(chunk)), values)
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


def _row(obj, seq):
    return obj.handle.row(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq = ?", (seq,))


def _rows_between(obj, first, last):
    return [row_json(r) for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq", (first, last))]


def _require(obj):
    from ..lifecycle import require_session

    meta = require_session(obj)
    obj.require_visible()
    return meta


def refuse_rewrite_if_owned(obj, meta, doing: str) -> None:
    """SPEC §12: rows a LangGraph saver mirrors from its checkpoints are not rewritten behind its back
    (the checkpoints hold the same text): exit 4, delete the thread or the session instead."""
    if meta.get("adapter") == "langgraph":
        raise conflict(f"{obj.what} is a LangGraph thread kept by DurableSaver; its checkpoints hold the same text, "
                       f"so it cannot {doing}: delete the thread (saver.delete_thread) or 'durable delete {obj.name}'")


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
        raise invalid("no rows to append; nothing was stored")
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
                    raise conflict(f"request id {request_id!r} was already used with another request in {obj.what}")
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
        if not _is_plain(r):
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


def show(obj, *, all_rows: bool = False, since: int = 0, last=None):
    """Live rows in logical order, or (--all) every row ever written in seq order; LAST keeps the
    newest N live rows (read backwards through the live-position index). A generator."""
    _require(obj)
    if last is not None:
        if all_rows:
            raise invalid("--last lists live rows; it does not go with --all")
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise invalid("--last must be a non-negative integer")
        tail = obj.handle.rows(
            f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos DESC LIMIT ?", (since, last)
        )
        return (row_json(r) for r in reversed(tail))
    if all_rows:
        sql = f"SELECT {ROW_COLUMNS} FROM turns WHERE seq > ? ORDER BY seq"
    else:
        sql = f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos"
    return (row_json(r) for r in obj.db.execute(sql, (since,)))


def follow_start(obj, *, all_rows: bool = False, since: int = 0, last=None):
    """`show --follow`'s first read: the rows `show` lists, the highest seq written so far (what
    follows must be newer) and the session's status."""
    first = list(show(obj, all_rows=all_rows, since=since, last=last))
    high = obj.db.execute("SELECT coalesce(max(seq), 0) FROM turns").fetchone()[0]
    return first, max([high, since or 0] + [r["seq"] for r in first]), obj.meta()["status"]


def rows_after(obj, seq: int):
    """Every row with a seq greater than SEQ, in seq order, and the session's status (one poll of `--follow`)."""
    _require(obj)
    found = [row_json(r) for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq > ? ORDER BY seq", (seq,))]
    return found, obj.meta()["status"]


def rows(obj, *, last=None, since: int = 0, all=False) -> list:  # noqa: A002 - the name SPEC §9 gives
    """The library's `rows(last=N | since=SEQ | all=True)`: a list of row dicts."""
    return list(show(obj, all_rows=all, since=since or 0, last=last))


STORED_COLUMNS = "data, role, kind, content, call_id, tool_calls"


def stored_rows(obj, *, last=None) -> list:
    """The live rows in logical order (LAST: the newest N) as tuples of STORED_COLUMNS, `data` and
    `tool_calls` as the JSON text stored: for a reader that needs only these (an adapter rebuilding its
    framework's items), without making whole row dicts. Read backwards through the live-position index."""
    _require(obj)
    if last is None:
        return obj.handle.rows(f"SELECT {STORED_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos")
    if isinstance(last, bool) or not isinstance(last, int) or last < 0:
        raise invalid("last must be a non-negative integer")
    tail = obj.handle.rows(f"SELECT {STORED_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT ?", (last,))
    tail.reverse()
    return tail


def _pinned(obj):
    """The leading system and developer turns of the logical order (read until the first other row)."""
    pinned = []
    for r in obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos"):
        if r[ROLE] in PINNED_ROLES and r[KIND] == "turn":
            pinned.append(r)
        else:
            break
    return pinned


def _call_ids(r):
    return [c["id"] for c in json.loads(r[CALLS])] if r[CALLS] else []


def context_window(obj, *, budget=None, limit=None, keep=None) -> dict:
    """Pinned turns, then the longest suffix of the other live rows within BUDGET and LIMIT.

    A tool call and its results come as one group: a `tool` row is taken only with the assistant
    row that called it (orphans are left out wherever they stand, costing nothing), and an assistant
    row is taken only with its results. KEEP (a seq, `session next --context`) forces the pinned rows
    and that row in even over the budget. When the pinned rows alone exceed the budget (and nothing
    is kept), the window is empty.
    """
    if budget is None:
        budget = obj.config.get("transcript.token_budget")
    if isinstance(budget, bool) or budget < 0 or (limit is not None and limit < 0):
        raise invalid("--tokens and --limit must be non-negative")
    _require(obj)
    pinned = _pinned(obj)
    total = sum(r[TOKENS] for r in pinned)
    if total > budget and keep is None:
        return {"turns": [], "tokens": 0, "budget": budget}
    boundary = pinned[-1][POS] if pinned else 0
    tail, count, waiting = [], 0, {}
    for r in obj.db.execute(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC", (boundary,)
    ):
        if r[ROLE] == "tool" and r[KIND] == "turn":
            waiting.setdefault(r[CALL_ID], []).append(r)
            continue
        group = [r]
        for call_id in _call_ids(r):
            group += waiting.pop(call_id, [])
        cost = sum(g[TOKENS] for g in group)
        if r[SEQ] != keep and (total + cost > budget or (limit is not None and count + len(group) > limit)):
            break
        tail += group
        total += cost
        count += len(group)
    tail.sort(key=lambda g: g[POS])
    return {"turns": [row_json(r) for r in pinned + tail], "tokens": total, "budget": budget}


def window(obj, *, tokens=None, limit=None, format="json", keep=None):  # noqa: A002 - SPEC §9's name
    """The context window as a document: `json` ({"turns", "tokens", "budget"}) or a provider's input."""
    if format not in ("json", "messages", "responses", "anthropic"):
        raise invalid(f"invalid format {format!r}: use json, messages, responses or anthropic")
    doc = context_window(obj, budget=tokens, limit=limit, keep=keep)
    if format == "json":
        return doc
    from .. import formats

    return formats.render(doc["turns"], format)


def _live_row(obj, seq: int):
    row = _row(obj, seq)
    if row is None or row[SUPERSEDED] is not None:
        raise not_found(f"row {seq} of {obj.what} is not a live row; see 'durable transcript show {obj.name}'")
    return row


def _splits_a_call(obj, covered, through_pos) -> bool:
    """Would a summary of COVERED (live rows up to THROUGH_POS) separate a tool call from a result?"""
    ids = [i for r in covered if r[KIND] == "turn" for i in _call_ids(r)]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        if obj.db.execute(
            f"SELECT 1 FROM turns WHERE call_id IN ({','.join('?' * len(chunk))}) AND role = 'tool'"
            " AND superseded_by IS NULL AND pos > ? LIMIT 1", (*chunk, through_pos)
        ).fetchone():
            return True
    return False


def _covered_rows(obj, through: int):
    """The live rows a summary through SEQ stands for (pinned turns excepted); exit 3/4/2 as SPEC §6."""
    row = _live_row(obj, through)
    pinned = _pinned(obj)
    boundary = pinned[-1][POS] if pinned else 0
    covered = obj.handle.rows(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos",
        (boundary, row[POS]),
    )
    if not covered:
        raise conflict(f"nothing to summarize through row {through} of {obj.what}: it is a pinned turn")
    if _splits_a_call(obj, covered, row[POS]):
        raise invalid(f"row {through} of {obj.what} would separate a tool call from its results; "
                      "summarize through the last result instead")
    return covered


class Plan:
    """What a summary will cover, read under the lock; checked again before it is committed."""

    def __init__(self, covered, high):
        self.covered = covered
        self.high = high  # the highest seq when the rows were read


def plan_summary(obj, *, through: int) -> Plan:
    meta = _require(obj)
    from ..lifecycle import check

    _live_row(obj, through)
    refuse_rewrite_if_owned(obj, meta, "be summarized")
    check(obj, "write", status=meta["status"])
    return _plan(obj, _covered_rows(obj, through))


def _plan(obj, covered) -> Plan:
    return Plan(covered, obj.db.execute("SELECT coalesce(max(seq), 0) FROM turns").fetchone()[0])


def summarize(obj, *, through: int, text=None, command=None, input_format="text", timeout=120) -> dict:
    """Summarize with TEXT under this lock. With a COMMAND, use `Store.summarize`, which releases the
    lock while the command runs (SPEC §3)."""
    if command is not None:
        raise invalid("a summarizer command runs without the object's lock: call Store.summarize(name, ..., command=CMD)")
    check_content(obj, text)
    return commit_summary(obj, plan_summary(obj, through=through), text)


def commit_summary(obj, plan: Plan, text: str) -> dict:
    """Insert the summary of PLAN, if every covered row is still live and unchanged and no `tool` row
    answering a covered call was appended meanwhile; otherwise exit 4 and nothing changes."""
    from ..lifecycle import check

    check_content(obj, text)
    meta = _require(obj)
    check(obj, "write", status=meta["status"])
    changed = conflict(f"the transcript of {obj.what} changed while summarizing; run it again")
    seqs = [r[SEQ] for r in plan.covered]
    now = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start:start + 500]
        now.update((r[SEQ], r) for r in obj.db.execute(
            f"SELECT {ROW_COLUMNS} FROM turns WHERE seq IN ({','.join('?' * len(chunk))})", chunk))
    if any(now.get(r[SEQ]) != r for r in plan.covered):
        raise changed
    ids = [i for r in plan.covered if r[KIND] == "turn" for i in _call_ids(r)]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        if obj.db.execute(
            f"SELECT 1 FROM turns WHERE seq > ? AND role = 'tool' AND call_id IN ({','.join('?' * len(chunk))}) LIMIT 1",
            (plan.high, *chunk),
        ).fetchone():
            raise changed
    return _insert_summary(obj, plan.covered, text)


def _insert_summary(obj, covered, text) -> dict:
    first = min(r[FIRST] if r[KIND] == "summary" else r[SEQ] for r in covered)
    last = max((r[LAST] or r[FIRST]) if r[KIND] == "summary" else r[SEQ] for r in covered)  # forked: [seq, null]
    count = estimate(obj, text)
    with obj.handle.transaction():
        cur = obj.db.execute(
            "INSERT INTO turns (role, content, tokens, author, created_at, kind, covers_first, covers_last)"
            " VALUES ('system', ?, ?, ?, ?, 'summary', ?, ?)",
            (text, count, obj.actor, clock.now(), first, last),
        )
        seq = cur.lastrowid
        obj.handle.evict_search(merge=False)  # rows change shape (superseded), not text: indexed again at the next search
        obj.db.executemany("UPDATE turns SET superseded_by = ? WHERE seq = ?", [(seq, r[SEQ]) for r in covered])
        obj.db.execute(
            "UPDATE object SET live_turns = live_turns - ? + 1, live_tokens = live_tokens - ? + ?",
            (len(covered), sum(r[TOKENS] for r in covered), count),
        )
        state.event(obj, "transcript.summarized", {"seq": seq, "covers": [first, last], "superseded": len(covered)})
        state.touch(obj)
    return {"summary": row_json(_row(obj, seq)), "superseded": len(covered)}


def check_summary_request(config, text, command, input_format) -> None:
    """Input first, for either backend: exactly one of TEXT or COMMAND, the text's size, a known --input."""
    if (text is None) == (command is None):
        raise invalid("give exactly one of a summary text or a command")
    if text is not None:
        check_text(config, text, "summary")
    else:
        summarizer_input([], input_format)  # exit 2 for a bad --input before anything runs


def summarizer_input(rows, input_format: str) -> str:
    if input_format == "jsonl":
        return "".join(json.dumps(row_json(r), ensure_ascii=False) + "\n" for r in rows)
    if input_format == "text":
        out = []
        for r in rows:
            text = r[CONTENT]
            for call in json.loads(r[CALLS]) if r[CALLS] else ():
                text += ("\n" if text else "") + f"[calls {call['name']}({call['arguments']})]"
            out.append(f"{r[ROLE]}: {text}\n\n")
        return "".join(out)
    raise invalid(f"invalid --input {input_format!r}: use text or jsonl")


def run_summarizer(command: str, rows, input_format: str, timeout: float) -> str:
    """Run CMD through the shell in its own process group with ROWS on stdin; its stdout, stripped.

    A non-zero exit, empty output or the timeout (the whole group is killed) is exit 4 with CMD's
    stderr, and nothing changes. An interrupt (SIGINT/SIGTERM raised as Interrupted) kills and
    reaps the group before it propagates. Waiting polls with sleep and counts the time slept.
    """
    import os
    import signal
    import subprocess
    import tempfile

    payload = summarizer_input(rows, input_format)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        stdin.write(payload.encode("utf-8", "surrogatepass"))
        stdin.seek(0)
        proc = subprocess.Popen(command, shell=True, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        waited, delay = 0.0, 0.005
        try:
            while proc.poll() is None:
                if waited >= timeout:
                    raise conflict(f"summarizer command timed out after {timeout:g}s and was killed; nothing was changed")
                clock.sleep(delay)
                waited += delay
                delay = min(delay * 2, 0.1)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the whole group: what CMD started in the background too
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        stdout.seek(0)
        stderr.seek(0)
        out = stdout.read().decode("utf-8", "replace").rstrip()
        err = stderr.read().decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        raise conflict(f"summarizer command exited {proc.returncode}: {err.splitlines()[-1] if err else '(no stderr)'}; nothing was changed")
    if not out:
        raise conflict(f"summarizer command printed nothing{': ' + err.splitlines()[-1] if err else ''}; nothing was changed")
    return out


def plan_compact(obj, *, max_tokens: int, keep_tokens: int):
    """The rows `compact` would summarize, or None when nothing is to change (SPEC §6).

    The cut falls just before a `user` turn (the newest such cut keeping >= KEEP tokens); failing
    that, before the newest non-`tool` row keeping >= KEEP; never between a tool call and a result.
    """
    if max_tokens < 0 or keep_tokens < 0:
        raise invalid("--max-tokens and --keep-tokens must be non-negative")
    if max_tokens < keep_tokens:
        raise invalid("--max-tokens must be at least --keep-tokens")
    meta = _require(obj)
    from ..lifecycle import check

    refuse_rewrite_if_owned(obj, meta, "be compacted")
    check(obj, "write", status=meta["status"])
    if meta["live_tokens"] <= max_tokens:
        return None
    pinned = _pinned(obj)
    boundary = pinned[-1][POS] if pinned else 0
    live = obj.handle.rows(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos", (boundary,)
    )
    kept, fallback = 0, None
    for i in range(len(live) - 1, 0, -1):  # a cut before live[i] keeps live[i:] and covers live[:i]
        kept += live[i][TOKENS]
        if kept < keep_tokens or live[i][ROLE] == "tool":
            continue
        if _splits_a_call(obj, live[:i], live[i - 1][POS]):
            continue
        if live[i][ROLE] == "user" and live[i][KIND] == "turn":
            return _plan(obj, live[:i])
        if fallback is None:
            fallback = i
    if fallback is None:
        return None
    return _plan(obj, live[:fallback])


def compact(obj, *, max_tokens: int, keep_tokens: int, text=None, command=None, input_format="text", timeout=120) -> dict:
    """When the live total exceeds MAX, summarize the oldest rows, keeping the newest worth >= KEEP
    (with TEXT; a COMMAND goes through `Store.compact`, which releases the lock while it runs)."""
    if command is not None:
        raise invalid("a summarizer command runs without the object's lock: call Store.compact(name, ..., command=CMD)")
    check_content(obj, text)
    plan = plan_compact(obj, max_tokens=max_tokens, keep_tokens=keep_tokens)
    if plan is None:
        return {"summary": None, "superseded": 0}
    return commit_summary(obj, plan, text)


def _forget_turns(obj, seqs) -> None:
    """The prompts whose turns are deleted keep their text, with turn_seq null (inside a transaction)."""
    obj.db.executemany("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", [(s,) for s in seqs])


def pop(obj, count: int = 1) -> list:
    """Remove the newest live row in logical order, COUNT times (a summary counts as one, and popping
    it brings back the rows it covered); returns the removed rows, newest first."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise invalid("--count must be at least 1")
    meta = _require(obj)
    from ..lifecycle import check

    refuse_rewrite_if_owned(obj, meta, "be popped")
    check(obj, "write", status=meta["status"])
    if obj.db.execute("SELECT 1 FROM turns WHERE superseded_by IS NULL LIMIT 1").fetchone() is None:
        raise conflict(f"the transcript of {obj.what} has no live row to pop")
    removed = []
    with obj.handle.transaction():
        for _ in range(count):
            r = obj.db.execute(
                f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1").fetchone()
            if r is None:
                break
            obj.db.execute("DELETE FROM turns WHERE seq = ?", (r[SEQ],))
            restored = (0, 0)
            if r[KIND] == "summary":
                restored = obj.db.execute(
                    "SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by = ?", (r[SEQ],)).fetchone()
                obj.db.execute("UPDATE turns SET superseded_by = NULL WHERE superseded_by = ?", (r[SEQ],))
            else:
                _forget_turns(obj, [r[SEQ]])
            obj.db.execute("UPDATE object SET live_turns = live_turns - 1 + ?, live_tokens = live_tokens - ? + ?",
                           (restored[0], r[TOKENS], restored[1]))
            removed.append(row_json(r))
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.popped", {"seqs": [r["seq"] for r in removed]})
        state.touch(obj)
    obj.handle.checkpoint()
    return removed


def replace_tail(obj, expected, rows, *, origin=None) -> bool:
    """Replace the newest live rows by ROWS in one transaction, if they are still EXPECTED (their seqs, in
    logical order): the Agents SDK's compaction of a suffix (DurableSession). False, and nothing changed,
    when another writer has added, popped or rewritten rows since they were read, or one is a summary."""
    from ..lifecycle import check

    settings = _settings(obj.config)
    rows = [prepare(obj.config, r, where=f"item {i}: ", _settings=settings) for i, r in enumerate(rows, 1)]
    meta = _require(obj)
    refuse_rewrite_if_owned(obj, meta, "be compacted")
    check(obj, "write", status=meta["status"])
    expected = list(expected)
    if not expected:
        return False
    with obj.handle.transaction():
        tail = obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT ?",
                              (len(expected),)).fetchall()[::-1]
        if [r[SEQ] for r in tail] != expected or any(r[KIND] != "turn" for r in tail):
            return False
        obj.db.executemany("DELETE FROM turns WHERE seq = ?", [(r[SEQ],) for r in tail])
        _forget_turns(obj, expected)
        obj.db.execute("UPDATE object SET live_turns = live_turns - ?, live_tokens = live_tokens - ?",
                       (len(tail), sum(r[TOKENS] for r in tail)))
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.popped", {"seqs": expected[::-1]})
        if origin is not None and meta["external_id"] is None:
            obj.db.execute("UPDATE object SET external_id = ?, adapter = ?", origin)
        if rows:
            insert_rows(obj, rows, author=obj.actor)
        state.touch(obj)
    obj.handle.checkpoint()
    return True


def clear(obj) -> dict:
    """Delete every row (pinned ones too); the session, queue, events and participants stay."""
    meta = _require(obj)
    refuse_rewrite_if_owned(obj, meta, "be cleared")
    n = obj.db.execute("SELECT count(*) FROM turns").fetchone()[0]
    if n == 0:
        return {"deleted": 0}
    from ..lifecycle import check

    check(obj, "write", status=meta["status"])
    with obj.handle.transaction():
        obj.db.execute("DELETE FROM turns")
        obj.db.execute("UPDATE prompts SET turn_seq = NULL WHERE turn_seq IS NOT NULL")
        obj.db.execute("UPDATE object SET live_turns = 0, live_tokens = 0")
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.cleared", {"deleted": n})
        state.touch(obj)
    obj.handle.checkpoint()
    return {"deleted": n}


def prune(obj, *, older_than: int, dry_run: bool = False) -> dict:
    """Delete turns and summaries created before the cutoff (never pinned turns), the rows superseded
    by a deleted summary, and the text of the prompts whose turns went ([pruned], turn_seq null);
    secure_delete plus a truncated WAL, so the text does not linger."""
    refuse_rewrite_if_owned(obj, _require(obj), "be pruned")
    cutoff = clock.now() - older_than * 1000
    pinned = {r[SEQ] for r in _pinned(obj)}
    doomed = {seq for (seq,) in obj.db.execute("SELECT seq FROM turns WHERE created_at < ?", (cutoff,))} - pinned
    frontier = [s for (s,) in obj.db.execute("SELECT seq FROM turns WHERE kind = 'summary' AND created_at < ?", (cutoff,))]
    frontier = [s for s in frontier if s in doomed]
    while frontier:
        marks = ",".join("?" * len(frontier))
        more = {s for (s,) in obj.db.execute(f"SELECT seq FROM turns WHERE superseded_by IN ({marks})", frontier)} - doomed
        doomed |= more
        frontier = [s for (s,) in obj.db.execute(
            f"SELECT seq FROM turns WHERE kind = 'summary' AND seq IN ({','.join('?' * len(more))})", list(more))] if more else []
    if dry_run or not doomed:
        return {"deleted": len(doomed), "dry_run": dry_run}
    with obj.handle.transaction():
        gone = sorted(doomed)
        obj.db.executemany("DELETE FROM turns WHERE seq = ?", [(s,) for s in gone])
        obj.db.executemany("UPDATE prompts SET content = ?, turn_seq = NULL WHERE turn_seq = ?", [(PRUNED, s) for s in gone])
        live = obj.db.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL").fetchone()
        obj.db.execute("UPDATE object SET live_turns = ?, live_tokens = ?", live)
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.pruned", {"deleted": len(doomed), "older_than_seconds": older_than})
        state.touch(obj, active=False)
    obj.handle.checkpoint()
    return {"deleted": len(doomed), "dry_run": False}


def redact(obj, seq: int) -> dict:
    """Replace one row's content (and its prompt's) with [redacted], its tool call arguments with {}
    and its data with null; works on archived objects too."""
    meta = _require(obj)
    row = _row(obj, seq)
    if row is None:
        raise not_found(f"row {seq} not found in {obj.what}; see 'durable transcript show {obj.name} --all'")
    refuse_rewrite_if_owned(obj, meta, "be redacted")
    calls = [dict(c, arguments="{}") for c in json.loads(row[CALLS])] if row[CALLS] else None
    parts = [REDACTED]
    for call in calls or ():
        parts += [call["name"], call["arguments"]]
    count = estimate(obj, "\n".join(parts))
    with obj.handle.transaction():
        obj.db.execute("UPDATE turns SET content = ?, tokens = ?, tool_calls = ?, data = NULL WHERE seq = ?",
                       (REDACTED, count, _dumps(calls) if calls else None, seq))
        if row[SUPERSEDED] is None:
            obj.db.execute("UPDATE object SET live_tokens = live_tokens - ? + ?", (row[TOKENS], count))
        obj.db.execute("UPDATE prompts SET content = ? WHERE turn_seq = ?", (REDACTED, seq))
        _drop_removed_tokens(obj)
        state.event(obj, "transcript.redacted", {"seq": seq})
        state.touch(obj)  # a redaction is activity (SPEC §3)
    obj.handle.checkpoint()
    return row_json(_row(obj, seq))


def _drop_removed_tokens(obj) -> None:
    """Removals (pop, clear, prune, redact) leave the owner's side file first, then merge the object's FTS
    index (inside the caller's transaction) so no segment keeps a token of what was removed (FTS5
    'optimize', or a fresh start when 3.40's structure record has grown: schema.merge_fts_segments;
    secure_delete zeroes the freed pages)."""
    from ...store.schema import merge_fts_segments

    obj.handle.evict_search()
    merge_fts_segments(obj.db, "turns_fts")
