"""The export format (docs/reference/retention.md §7): one JSONL record per object, and the rules `import` holds a record to.

A record is checked with the rules of the commands that would have made it (names, roles, statuses,
sizes, times, JSON fields, the type of every column, unique keys) before anything of it is stored.
`FIELDS` maps each format version to its tables and columns: a new version is the previous one plus
its new fields (`_extend`), so import keeps reading every earlier version. A checked record comes
back normalized to the current schema's columns, in a canonical form that `dump_object` also
produces from a stored object, so "already imported identically" is one comparison.
"""

import json
import math

from ..contract.messages import say
from ..contract.text import printable, strip
from ..contract.vocabulary import LIMITS, ROW_ROLES
from ..errors import invalid
from . import state, strict_json

FORMAT = "durable-export"
SCOPES = ("user", "session", "tenant", "reserved")
MAX_TIME = 253402300799999  # 9999-12-31T23:59:59.999Z in ms: every time must print as RFC 3339
MAX_INT = 2**63 - 1
MAX_TTL = 36500 * 86400
EVENT_TYPES = frozenset((
    "session.created", "session.status", "session.title", "participant.added", "participant.removed",
    "prompt.queued", "prompt.started", "prompt.completed", "prompt.failed", "prompt.lease_expired",
    "prompt.dequeued", "transcript.summarized", "transcript.pruned", "transcript.redacted", "elicit.asked",
    "elicit.answered", "elicit.expired", "ttl.set", "transcript.popped", "transcript.cleared", "session.forked",
    "prompt.released", "schedule.created", "schedule.fired", "schedule.missed", "schedule.deleted", "hook.created",
    "hook.deleted", "delivery.failed", "session.tagged",
))
# Primary keys (rows are compared and listed in this order) and the AUTOINCREMENT tables among them.
KEYS = {"participants": "user", "prompts": "id", "turns": "seq", "events": "seq", "requests": "id",
        "facts": "key", "buckets": "key", "tags": "key", "schedules": "id", "hooks": "id"}
SEQUENCED = ("prompts", "turns", "events", "requests", "schedules", "hooks")
# Tables keyed by several columns (an adapter's tables): rows are unique and listed in this order.
COMPOSITE_KEYS = {"lg_checkpoints": ("checkpoint_ns", "checkpoint_id"),
                  "lg_writes": ("checkpoint_ns", "checkpoint_id", "task_id", "idx"), "lg_mirrored": ("message_id",),
                  "steps": ("prompt_id", "key")}
# Tables only a LangGraph thread's object holds (docs/reference/integrations.md §12: object.adapter = "langgraph").
ADAPTER_TABLES = {"lg_checkpoints": "langgraph", "lg_writes": "langgraph", "lg_mirrored": "langgraph"}
# Columns a record may carry but import recomputes (a cache, or a generated column).
DERIVED = {"object": ("one", "live_turns", "live_tokens"), "turns": ("pos",)}


class Bad(Exception):
    """One field's violation; `check_record` turns it into exit 2 naming the line and the field."""


# -- field checks: each returns the value or raises Bad ------------------------------------------------

def _text(v):
    if not isinstance(v, str):
        raise Bad(say("record_not_string", kind=_kind(v)))
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise Bad(say("record_surrogate")) from None
    return v


def _nonempty(v):
    if _text(v) == "":
        raise Bad(say("record_empty"))
    return v


def _name(v):
    from ..config import valid_name

    _text(v)
    try:
        return valid_name(v)
    except Exception:  # noqa: BLE001 - whatever valid_name refuses, the record says which NAME
        raise Bad(say("record_name", value=v)) from None


def _int(v):
    if type(v) is not int or not -MAX_INT - 1 <= v <= MAX_INT:
        raise Bad(say("record_not_integer", kind=_kind(v)))
    return v


def _count(v):
    if _int(v) < 0:
        raise Bad(say("record_negative"))
    return v


def _positive(v):
    if _int(v) < 1:
        raise Bad(say("record_not_positive"))
    return v


def _time(v):
    if type(v) is not int or not 0 <= v <= MAX_TIME:
        raise Bad(say("record_time", max=MAX_TIME, value=v)[:300])
    return v


def _tag_key(v):
    from ..errors import DurableError
    from .tags import valid_key

    try:
        return valid_key(v)
    except DurableError as e:
        raise Bad(e.message) from None


def _tag_value(v):
    from ..errors import DurableError
    from .tags import valid_value

    try:
        return valid_value("", v)
    except DurableError:
        raise Bad(say("record_tag_value")) from None


def _ttl(v):
    if _positive(v) > MAX_TTL:
        raise Bad(say("record_ttl"))
    return v


def _title(v):
    _text(v)
    if not 1 <= len(v) <= 200 or not printable(v) or v != strip(v):
        raise Bad(say("record_title"))
    return v


def _request_id(v):
    _text(v)
    if not 1 <= len(v) <= 128 or not printable(v):
        raise Bad(say("record_request_id"))
    return v


def _hex_id(v):
    _text(v)
    if len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
        raise Bad(say("record_hex_id"))
    return v


def _flag(v):
    if type(v) is not int or v not in (0, 1):
        raise Bad(say("record_flag"))
    return v


def _number(v):
    if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
        raise Bad(say("record_number"))
    return v


def _parsed(v):
    """A JSON text column's value parsed: RFC 8259 (docs/reference/transcript.md §6), and no lone surrogate written as an escape
    ("\\ud800": no UTF-8 either, refused as in the text itself; stored, it broke usage and every read)."""
    _text(v)
    try:
        parsed = strict_json.loads(v)
    except strict_json.NotJSON as e:
        raise Bad(say("record_not_json") if e.syntax else say("record_not_rfc_json", why=e)) from e
    if "\\u" in v:
        _text(json.dumps(parsed, ensure_ascii=False))
    return parsed


def _json_object(v):
    parsed = _parsed(v)
    if not isinstance(parsed, dict):
        raise Bad(say("record_json_object"))
    return v


def _choices(v):
    parsed = _parsed(v)
    if not isinstance(parsed, list) or any(not isinstance(c, str) or c == "" for c in parsed):
        raise Bad(say("record_choices"))
    if len(set(parsed)) != len(parsed):
        raise Bad(say("record_duplicate_choice"))
    return v


def _one(v):
    if v != 1 or type(v) is not int:
        raise Bad(say("record_one"))
    return v


def _blob(v):
    """Bytes a framework serialized (LangGraph's checkpoints and writes): base64 text in the record."""
    import base64
    import binascii

    _text(v)
    try:
        return base64.b64decode(v.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise Bad(say("record_blob")) from None


def blob_text(value: bytes) -> str:
    """How a BLOB column goes into a record (the reverse of _blob)."""
    import base64

    return base64.b64encode(value).decode("ascii")


def as_json(content: dict) -> dict:
    """Checked content with its BLOB values as base64 text again (to send it as JSON)."""
    return {table: [{c: blob_text(v) if isinstance(v, bytes) else v for c, v in row.items()} for row in rows]
            if isinstance(rows, list) else rows for table, rows in content.items()}


def enum(*values):
    def check(v):
        if not isinstance(v, str) or v not in values:
            raise Bad(say("record_enum", value=v, values=", ".join(values))[:300])
        return v

    check.values = values
    return check


def opt(check):
    """A nullable column: null (or absent) is allowed."""

    def nullable(v):
        return None if v is None else check(v)

    nullable.optional = True
    nullable.inner = check
    return nullable


def _kind(v) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object", type(None): "null"}.get(type(v), type(v).__name__)


# -- the format's versions ----------------------------------------------------------------------------

V1 = {
    "object": {
        "one": opt(_one), "id": _hex_id, "scope": enum(*SCOPES), "owner": _name, "name": _text,
        "title": opt(_title), "status": enum(*state.STATUSES), "created_at": _time, "updated_at": _time,
        "last_active_at": _time, "ttl_seconds": opt(_ttl), "expires_at": opt(_time),
        "live_turns": opt(_count), "live_tokens": opt(_count),
    },
    "participants": {"user": _name, "role": enum(*state.ROLES), "joined_at": _time},
    "prompts": {
        "id": _positive, "status": enum("pending", "processing", "completed", "failed"), "content": _nonempty,
        "author": opt(_name), "source": opt(_text), "request_id": opt(_request_id), "turn_seq": opt(_positive),
        "created_at": _time, "started_at": opt(_time), "lease_expires_at": opt(_time),
        "completed_at": opt(_time), "error": opt(_text),
    },
    "turns": {
        "seq": _positive, "role": enum("system", "user", "assistant", "tool"), "content": _text,
        "tokens": _count, "author": opt(_name), "created_at": _time, "kind": enum("turn", "summary"),
        "superseded_by": opt(_count), "covers_first": opt(_positive), "covers_last": opt(_positive),
        "call_id": opt(_nonempty), "request_id": opt(_request_id), "pos": opt(_int),
    },
    "events": {"seq": _positive, "type": enum(*sorted(EVENT_TYPES)), "actor": opt(_name), "data": _json_object, "at": _time},
    "requests": {
        "id": _positive, "status": enum("pending", "answered", "expired"), "prompt": _nonempty, "choices": _choices,
        "created_at": _time, "expires_at": opt(_time), "answer": opt(_nonempty), "comment": opt(_text),
        "answered_by": opt(_name), "answered_at": opt(_time),
    },
    "facts": {
        "key": _name, "value": _nonempty, "source": enum("user", "model", "external"), "confirmed": _flag,
        "created_at": _time, "confirmed_at": opt(_time), "expires_at": opt(_time),
    },
    "buckets": {"key": _name, "tokens": _number, "updated_at": _time},
}


def _extend(base: dict, **tables) -> dict:
    """The next version: BASE plus new columns per table (`turns={"meta": opt(...)}`) or new tables."""
    out = {t: dict(cols) for t, cols in base.items()}
    for table, cols in tables.items():
        out.setdefault(table, {}).update(cols)
    return out


def _json_text(rule=None):
    """A column holding compact JSON text; RULE (a transcript input check) validates the parsed value."""

    def check(v):
        parsed = _parsed(v)
        if rule is not None:
            from ..errors import DurableError

            try:
                rule(parsed, "")
            except DurableError as e:
                raise Bad(say("record_not_valid", why=e.message)[:300]) from e
        return v

    check.rule = rule
    return check


def _tool_calls(value, where):
    from .transcript import row as transcript

    if not transcript._tool_calls(value, where):
        raise Bad(say("record_no_tool_call"))


def _meta(value, where):
    from .transcript import row as transcript

    transcript._meta(value, where)


# version 2 (docs/reference/transcript.md §6 rows that hold what agents write): the developer role, tool calls, the tool's
# name, meta, data, the fork origin, and what a request id made
V2 = _extend(V1, turns={
    "role": enum(*ROW_ROLES),
    "tool_calls": opt(_json_text(_tool_calls)), "name": opt(_nonempty), "meta": opt(_json_text(_meta)),
    "data": opt(_json_text()),
    "forked_from": opt(_hex_id), "request_hash": opt(_nonempty), "request_last": opt(_positive),
})

# version 3 (docs/reference/integrations.md §12): the id an adapter was given, and which adapter made the object
V3 = _extend(V2, object={"external_id": opt(_text), "adapter": opt(enum("openai-agents", "langgraph", "pydantic-ai"))})

# version 4 (docs/reference/retention.md §7 "the adapters' tables"): a LangGraph thread's checkpoints, pending writes and the
# messages already mirrored into its transcript; the serialized values as base64 text
V4 = _extend(
    V3,
    lg_checkpoints={"checkpoint_ns": _text, "checkpoint_id": _nonempty, "parent_checkpoint_id": opt(_nonempty),
                    "type": opt(_text), "checkpoint": opt(_blob), "metadata": _json_text()},
    lg_writes={"checkpoint_ns": _text, "checkpoint_id": _nonempty, "task_id": _nonempty, "task_path": _text,
               "idx": _int, "channel": _nonempty, "type": opt(_text), "value": opt(_blob)},
    lg_mirrored={"message_id": _nonempty, "seq": opt(_positive)},
)

# version 5 (docs/reference/sessions.md §5): a prompt's starts, its place among the prompts handed back, a release's delay, and the
# lease policy of its current start
V5 = _extend(V4, prompts={"attempts": _count, "handed_back": opt(_positive), "not_before": opt(_time),
                          "on_expiry": opt(enum("fail", "retry")), "max_attempts": opt(_positive)})

# version 6 (docs/reference/sessions.md §5): a prompt's start number (never lowered, unlike attempts); earlier versions' prompts take
# their attempts as it
V6 = _extend(V5, prompts={"start": _count})

# version 7 (docs/reference/sessions.md §5.2): each object's step journal (stdout as base64 text), and the tool call an elicit request
# is bound to (its arguments, their RFC 8785 hash, the approve set) and who may answer it; the object's tags
V7 = _extend(
    V6,
    steps={"prompt_id": _positive, "key": _nonempty, "seq": _positive, "status": enum("running", "done", "abandoned"),
           "attempt": _count, "token": opt(_nonempty), "renewed_at": opt(_time), "runs": _count, "replays": _count,
           "last_replay_attempt": opt(_positive), "exit_status": opt(_int), "stdout": opt(_blob),
           "stdout_bytes": opt(_count), "output_too_large": _flag, "redacted": _flag, "call_id": opt(_nonempty),
           "args_sha256": opt(_nonempty), "approval": opt(_positive), "started_at": _time, "ended_at": opt(_time)},
    requests={"call_id": opt(_nonempty), "args": opt(_json_text()), "args_sha256": opt(_nonempty),
              "approve": opt(_json_text()), "approvers": opt(_json_text())},
    tags={"key": _tag_key, "value": _tag_value},  # docs/reference/sessions.md §5 Tags: earlier versions import with none
)

# version 8 (docs/reference/sessions.md §5.3): the schedule that queued a prompt, the schedules and the hooks (secrets
# included; deliveries are not exported)
V8 = _extend(
    V7,
    prompts={"schedule_id": opt(_positive)},
    schedules={"id": _positive, "kind": enum("at", "every", "cron"), "content": _text, "source": opt(_text),
               "author": opt(_name), "at": opt(_time), "every": opt(_positive), "cron": opt(_nonempty), "tz": opt(_nonempty),
               "next_at": _time, "last_fired_at": opt(_time), "last_prompt_id": opt(_positive), "fired": _count,
               "missed": _count, "request_id": opt(_request_id), "request_hash": opt(_nonempty), "created_at": _time},
    hooks={"id": _positive, "url": _nonempty, "events": _json_text(), "include_reply": _flag, "secret": _nonempty,
           "author": opt(_name), "created_at": _time},
)

FIELDS = {1: V1, 2: V2, 3: V3, 4: V4, 5: V5, 6: V6, 7: V7, 8: V8}
TOP_LEVEL = ("format", "version", "id", "scope", "owner", "name", "object", "sequences")


def current_tables(version=None) -> list:
    return list(FIELDS[version or max(FIELDS)])


def describe(version=None) -> dict:
    """The current version's rules as data, for the Worker (scripts/gen_worker_records.py writes
    worker/src/generated/records.json; the Worker checks an import with the same table)."""
    named = {_text: "text", _nonempty: "nonempty", _name: "name", _int: "int", _count: "count", _positive: "positive",
             _time: "time", _ttl: "ttl", _title: "title", _request_id: "request_id", _hex_id: "hex_id", _flag: "flag",
             _number: "number", _json_object: "json_object", _choices: "choices", _one: "one", _blob: "blob",
             _tag_key: "tag_key", _tag_value: "tag_value"}
    rules = {None: "json", _tool_calls: "json_tool_calls", _meta: "json_meta"}

    def one(check):
        optional = getattr(check, "optional", False)
        check = getattr(check, "inner", check)
        if hasattr(check, "values"):
            return {"check": "enum", "optional": optional, "values": list(check.values)}
        if hasattr(check, "rule"):
            return {"check": rules[check.rule], "optional": optional}
        return {"check": named[check], "optional": optional}

    version = version or max(FIELDS)
    return {"format": FORMAT, "version": version, "max_time": MAX_TIME, "max_ttl": MAX_TTL,
            "tables": {t: {c: one(check) for c, check in cols.items()} for t, cols in FIELDS[version].items()},
            "keys": KEYS, "composite_keys": {t: list(c) for t, c in COMPOSITE_KEYS.items()},
            "adapter_tables": ADAPTER_TABLES, "sequenced": list(SEQUENCED), "derived": {t: list(c) for t, c in DERIVED.items()},
            "columns": {t: list(c) for t, c in current_columns().items()},
            "real": {t: [r for r in cols if r in real_columns().get(t, ())] for t, cols in current_columns().items()}}


def real_columns() -> dict:
    """table -> the columns declared REAL (a float in JSON, `1.0`, even where the Worker's JSON says `1`)."""
    return {t: [r[1] for r in info if r[2].upper() == "REAL"] for t, info in _table_info().items()}


# -- checking a record -------------------------------------------------------------------------------

class Checked:
    """A record that passed every rule: its address and its rows in canonical form (current columns)."""

    def __init__(self, line, scope, owner, name, content):
        self.line = line
        self.scope = scope
        self.owner = owner
        self.name = name
        self.content = content  # {"object": {...}, table: [rows by key], "sequences": {...}}

    def owners(self):
        return {p["user"] for p in self.content["participants"] if p["role"] == "owner"}


def check_record(record, *, line: int, max_turn_bytes: int, columns: dict) -> Checked:
    """The record in canonical form, or exit 2 naming LINE and the field; COLUMNS: table -> current columns."""
    where = ["record"]
    try:
        return _check(record, line, max_turn_bytes, columns, where)
    except Bad as e:
        raise invalid(f"line {line}: " + say("record_invalid", where="".join(where), why=e)) from e


def _check(record, line, limit, columns, where) -> Checked:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise Bad("is not a durable export record")
    version = record.get("version")
    if type(version) is not int or version not in FIELDS:
        where[:] = ["version"]
        raise Bad(f"{version!r} is not supported (this durable reads versions {min(FIELDS)} to {max(FIELDS)})")
    spec = FIELDS[version]
    for key in record:
        if key not in TOP_LEVEL and key not in spec:
            where[:] = [str(key)[:60]]
            raise Bad(say("record_unknown_field"))
    for key in ("id", "scope", "owner", "name", "object"):
        if key not in record:
            where[:] = [key]
            raise Bad(say("record_missing"))
    where[:] = ["scope"]
    scope = enum(*SCOPES)(record["scope"])
    where[:] = ["owner"]
    owner = _name(record["owner"])
    where[:] = ["name"]
    name = record["name"]
    if scope == "reserved":
        if name != "":
            raise Bad(say("record_reserved_name"))
    else:
        _name(name)
    where[:] = ["id"]
    _hex_id(record["id"])

    content: dict = {}
    where[:] = ["object"]
    obj = record["object"]
    if not isinstance(obj, dict):
        raise Bad(say("record_not_object"))
    content["object"] = _row(obj, spec["object"], columns["object"], where, "object")
    for key in ("id", "scope", "owner", "name"):
        if obj.get(key) != record[key]:
            where[:] = [f"object.{key}"]
            raise Bad(f"{obj.get(key)!r} disagrees with the record's {key} {record[key]!r}"[:300])
    meta = content["object"]
    if (meta["ttl_seconds"] is None) != (meta["expires_at"] is None):
        where[:] = ["object.expires_at"]
        raise Bad(say("record_ttl_expiry"))
    if scope == "reserved" and meta["title"] is not None:
        where[:] = ["object.title"]
        raise Bad(say("record_reserved_title"))

    for table in spec:
        if table == "object":
            continue
        rows = record.get(table, [])
        where[:] = [table]
        if not isinstance(rows, list):
            raise Bad(say("record_not_array"))
        key = KEYS.get(table)
        composite = COMPOSITE_KEYS.get(table)
        seen, out = set(), []
        for i, row in enumerate(rows):
            where[:] = [f"{table}[{i}]"]
            if not isinstance(row, dict):
                raise Bad(say("record_not_object"))
            checked = _row(row, spec[table], columns[table], where, f"{table}[{i}]")
            if key is not None:
                if checked[key] in seen:
                    where[:] = [f"{table}[{i}].{key}"]
                    raise Bad(say("record_twice", value=checked[key]))
                seen.add(checked[key])
            elif composite is not None:
                value = tuple(checked[c] for c in composite)
                if value in seen:
                    where[:] = [f"{table}[{i}]"]
                    raise Bad(say("record_repeats_key", columns=", ".join(composite), value=repr(value))[:300])
                seen.add(value)
            out.append(checked)
        if key:
            out.sort(key=lambda r: r[key])
        elif composite:
            out.sort(key=lambda r: tuple(r[c] for c in composite))
        content[table] = out
    for table in columns:  # tables newer than the record's version: none of their rows
        content.setdefault(table, [])
    if version < 6 and "start" in columns.get("prompts", ()):
        for prompt in content["prompts"]:
            prompt["start"] = prompt.get("attempts", 0)  # what its holder was told (docs/reference/sessions.md §5: start numbers)
    _check_relations(content, scope, owner, limit, where)
    content["sequences"] = _sequences(record.get("sequences", {}), content, where)
    _recount(content)
    return Checked(line, scope, owner, name, content)


def _row(row, spec, current, where, label) -> dict:
    for column in row:
        if column not in spec:
            where[:] = [f"{label}.{str(column)[:60]}"]
            raise Bad(say("record_unknown_column"))
    out = {}
    for column, check in spec.items():
        where[:] = [f"{label}.{column}"]
        if column not in row and not getattr(check, "optional", False):
            raise Bad(say("record_missing"))
        value = check(row.get(column))
        if column in current or column in DERIVED.get(label.split("[")[0], ()):
            out[column] = value
    for column, default in current.items():  # a column newer than the record's version: its default
        out.setdefault(column, default)
    return out


def row_size(row) -> int:
    """A row's size against transcript.max_turn_bytes: its text plus the compact JSON of its JSON fields."""
    size = len(row["content"].encode("utf-8"))
    for key in ("tool_calls", "meta", "data"):
        if row.get(key) is not None:
            value = row[key] if isinstance(row[key], str) else json.dumps(row[key], ensure_ascii=False, separators=(",", ":"))
            size += len(value.encode("utf-8"))
    return size


def _too_large(size, limit):
    if size > limit:
        raise Bad(say("record_too_large", size=size, limit=limit))


def _check_relations(c, scope, owner, limit, where) -> None:
    """The rules that tie fields and rows together: who takes part, sizes, what refers to what."""
    people = c["participants"]
    where[:] = ["participants"]
    if scope in ("user", "session"):
        if [(p["user"], p["role"]) for p in people] != [(owner, "owner")]:
            raise Bad(say("record_user_participants", owner=owner))
    elif scope == "tenant":
        if not any(p["role"] == "owner" for p in people):
            raise Bad(say("record_tenant_owner"))
    else:
        for table in ("participants", "prompts", "turns", "events", "requests", "steps"):
            if c.get(table):
                where[:] = [table]
                raise Bad(say("record_reserved_empty"))
    if scope != "reserved":
        for table in ("facts", "buckets"):
            if c.get(table):
                where[:] = [table]
                raise Bad(say("record_reserved_only"))
    if len(c.get("tags") or ()) > LIMITS["tags"]:  # docs/reference/sessions.md §5 Tags
        where[:] = ["tags"]
        raise Bad(say("record_too_many_tags", limit=LIMITS["tags"]))
    adapter = c["object"].get("adapter")
    for table, owner_adapter in ADAPTER_TABLES.items():
        if c.get(table) and adapter != owner_adapter:
            where[:] = [table]
            raise Bad(say("record_adapter_only", adapter=owner_adapter))

    turns = {t["seq"]: t for t in c["turns"]}
    for i, t in enumerate(c["turns"]):
        label = f"turns[{i}]"
        where[:] = [f"{label}.content"]
        if t["content"] == "" and not (t.get("tool_calls") or t.get("data") is not None):
            raise Bad(say("record_empty"))
        _too_large(row_size(t), limit)
        summary = t["kind"] == "summary"
        where[:] = [f"{label}.covers_first"]
        if summary:
            first, last = t["covers_first"], t["covers_last"]
            if last is None and first == t["seq"] and t.get("forked_from") is not None:
                pass  # a summary copied by fork stands at its own seq and covers nothing
            elif first is None or last is None or not first <= last < t["seq"]:
                raise Bad(say("record_covers"))
        elif t["covers_first"] is not None or t["covers_last"] is not None:
            raise Bad(say("record_covers_null"))
        where[:] = [f"{label}.call_id"]
        if t["call_id"] is not None and t["role"] != "tool":
            raise Bad(say("record_call_id_tool"))
        where[:] = [f"{label}.superseded_by"]
        by = t["superseded_by"]
        if by == 0:  # a row of a LangGraph branch the thread left (docs/reference/integrations.md §12)
            if summary or adapter != "langgraph":
                raise Bad(say("record_superseded_by", by=by))
        elif by is not None and (by not in turns or turns[by]["kind"] != "summary" or by <= t["seq"]):
            raise Bad(say("record_superseded_by", by=by))
        where[:] = [f"{label}.pos"]
        pos = (t["covers_first"] if summary else t["seq"])
        if t.get("pos") is not None and t["pos"] != pos:
            raise Bad(f"must be {pos} (the row's position)")
    _unique(c["turns"], "turns", "request_id", where)
    _unique(c["prompts"], "prompts", "request_id", where)
    for i, p in enumerate(c["prompts"]):
        where[:] = [f"prompts[{i}].content"]
        _too_large(len(p["content"].encode("utf-8")), limit)
    for i, r in enumerate(c["requests"]):
        where[:] = [f"requests[{i}].prompt"]
        _too_large(len(r["prompt"].encode("utf-8")) + len(r["choices"].encode("utf-8")), limit)
        where[:] = [f"requests[{i}].answer"]
        choices = json.loads(r["choices"])
        if r["status"] == "answered":
            if r["answer"] is None or (choices and r["answer"] not in choices):
                raise Bad(say("record_answer", answer=r["answer"]))
        elif r["answer"] is not None:
            raise Bad(say("record_answer_null", status=r["status"]))
    prompt_ids = {p["id"] for p in c["prompts"]}
    for i, st in enumerate(c.get("steps", [])):
        where[:] = [f"steps[{i}].prompt_id"]
        if st["prompt_id"] not in prompt_ids:
            raise Bad(f"names prompt {st['prompt_id']}, which the record does not hold")
        where[:] = [f"steps[{i}].stdout"]
        if st["stdout"] is not None and len(st["stdout"]) > 1_048_576:
            raise Bad("holds more than the 1 MiB a step keeps")
    _check_triggers(c, limit, where)
    for i, e in enumerate(c["events"]):
        where[:] = [f"events[{i}].data"]
        _too_large(len(e["data"].encode("utf-8")), limit)
    for i, f in enumerate(c["facts"]):
        where[:] = [f"facts[{i}].value"]
        _too_large(len(f["value"].encode("utf-8")), limit)


def _rule(check, *args):
    """A command's own input rule (it raises exit 2) as a field's violation."""
    from ..errors import DurableError

    try:
        return check(*args)
    except DurableError as e:
        raise Bad(say("record_not_valid", why=e.message)) from None


def _at_most(c, field, most, where) -> list:
    """The record's FIELD rows (schedules, hooks), no more than MOST of them (a session's limit)."""
    rows = c.get(field) or []
    if len(rows) > most:
        where[:] = [field]
        raise Bad(f"holds {len(rows)} {field}, more than the {most} a session may hold")
    return rows


def _check_triggers(c, limit, where) -> None:
    """docs/reference/retention.md §7: schedules and hooks are validated with the rules of docs/reference/sessions.md §5.3
    that made them: each kind's fields, the cron dialect and its zone, `--every` of at least 1m, the reserved
    request ids, URLs, events and secrets, and the limits of 20 schedules and 5 hooks."""
    from . import hooks, schedules

    rows = _at_most(c, "schedules", schedules.MAX_SCHEDULES, where)
    for i, sc in enumerate(rows):
        label = f"schedules[{i}]"
        where[:] = [f"{label}.content"]
        if sc["content"] == "":
            raise Bad(say("record_empty"))
        _too_large(len(sc["content"].encode("utf-8")), limit)
        where[:] = [f"{label}.request_id"]
        if sc.get("request_id") is not None and sc["request_id"].startswith(schedules.RESERVED_PREFIX):
            raise Bad(f"starts with {schedules.RESERVED_PREFIX!r}, which is reserved for the prompts schedules queue")
        kind = sc["kind"]
        wanted = {"at": ("at",), "every": ("at", "every"), "cron": ("cron", "tz")}[kind]
        for field in ("at", "every", "cron", "tz"):
            where[:] = [f"{label}.{field}"]
            if field in wanted and sc.get(field) is None:
                raise Bad(f"is missing (a schedule of kind {kind!r} has one)")
            if field not in wanted and sc.get(field) is not None:
                raise Bad(f"must be null for a schedule of kind {kind!r}")
        if kind == "every":
            where[:] = [f"{label}.every"]
            if not schedules.MIN_EVERY <= sc["every"] <= schedules.MAX_AHEAD_MS // 1000:
                raise Bad(f"must be from {schedules.MIN_EVERY} to {schedules.MAX_AHEAD_MS // 1000} seconds")
        if kind == "cron":
            where[:] = [f"{label}.cron"]
            fields = _rule(schedules.valid_cron, sc["cron"])
            where[:] = [f"{label}.tz"]
            zone = _rule(schedules.valid_tz, sc["tz"])
            where[:] = [f"{label}.cron"]
            if schedules.cron_next(fields, zone, sc["next_at"] - 1,
                                   horizon_ms=sc["next_at"] + schedules.CRON_HORIZON_DAYS * 86400 * 1000) is None:
                raise Bad("has no due time in the 10 years after its next_at")
    rows = _at_most(c, "hooks", hooks.MAX_HOOKS, where)
    for i, h in enumerate(rows):
        label = f"hooks[{i}]"
        where[:] = [f"{label}.url"]
        _rule(hooks.valid_url, h["url"])
        where[:] = [f"{label}.events"]
        kinds = json.loads(h["events"])
        if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds) \
                or _rule(hooks.valid_events, kinds) != kinds:
            raise Bad("must be a non-empty array of completed, failed, cancelled, in that order, each once")
        where[:] = [f"{label}.secret"]
        _rule(hooks.valid_secret, h["secret"])


def _unique(rows, table, column, where) -> None:
    seen = set()
    for i, row in enumerate(rows):
        value = row.get(column)
        if value is None:
            continue
        if value in seen:
            where[:] = [f"{table}[{i}].{column}"]
            raise Bad(say("record_twice", value=value))
        seen.add(value)


def _sequences(given, c, where) -> dict:
    """The AUTOINCREMENT counters: as given (never below a row's key, so no seq is reused), else the top key."""
    where[:] = ["sequences"]
    if not isinstance(given, dict):
        raise Bad(say("record_not_object"))
    out = {}
    for table, value in given.items():
        where[:] = [f"sequences.{str(table)[:60]}"]
        if table not in SEQUENCED or table not in c:
            raise Bad(say("record_no_sequence"))
        _count(value)
        top = max((r[KEYS[table]] for r in c[table]), default=0)
        if value < top:
            raise Bad(say("record_below_key", value=value, top=top))
        out[table] = value
    for table in SEQUENCED:
        if table in c and c[table] and table not in out:
            out[table] = max(r[KEYS[table]] for r in c[table])
    return out


def _recount(c) -> None:
    """The object's live counters are a cache of its rows: recomputed, never trusted."""
    live = [t for t in c["turns"] if t["superseded_by"] is None]
    meta = c["object"]
    for column in DERIVED["object"]:
        meta.pop(column, None)
    for t in c["turns"]:
        for column in DERIVED["turns"]:
            t.pop(column, None)
    c["live"] = {"live_turns": len(live), "live_tokens": sum(t["tokens"] for t in live)}


# -- a stored object in the same canonical form --------------------------------------------------------

_TABLE_INFO = None


def _table_info() -> dict:
    """table -> PRAGMA table_info rows of the current tables, read once from the object schema built in a
    scratch in-memory database."""
    global _TABLE_INFO
    if _TABLE_INFO is None:
        import sqlite3

        from ..store import schema

        db = sqlite3.connect(":memory:")
        try:
            for _name, ddl in schema.MIGRATIONS:
                for statement in schema.statements(ddl):
                    if statement.strip():
                        db.execute(statement)
            _TABLE_INFO = {table: db.execute(f"PRAGMA table_info({table})").fetchall() for table in current_tables()}
        finally:
            db.close()
    return _TABLE_INFO


def current_columns() -> dict:
    """table -> {column: default} for the columns an INSERT can set (generated ones excluded: table_info
    leaves them out)."""
    return {table: {r[1]: _default(r[4]) for r in info} for table, info in _table_info().items()}


def _default(sql):
    """A column's DEFAULT as a Python value (what a record of an older version gets for a newer column)."""
    if sql is None or sql.upper() == "NULL":
        return None
    if sql.startswith("'") and sql.endswith("'"):
        return sql[1:-1].replace("''", "'")
    for kind in (int, float):
        try:
            return kind(sql)
        except ValueError:
            pass
    return None


def dump_object(db, columns) -> dict:
    """The stored object in `Checked.content`'s form (derived columns left out), for the identity check."""
    c: dict = {}
    for table, cols in columns.items():
        keep = [k for k in cols if k not in DERIVED.get(table, ())]
        order = f" ORDER BY {KEYS[table]}" if table in KEYS else ""
        if table in COMPOSITE_KEYS:
            order = f" ORDER BY {', '.join(COMPOSITE_KEYS[table])}"
        rows = db.execute(f"SELECT {', '.join(keep)} FROM {table}{order}").fetchall()
        c[table] = [dict(zip(keep, r)) for r in rows]
    c["object"] = c["object"][0] if c["object"] else None
    c["sequences"] = {t: s for t, s in db.execute("SELECT name, seq FROM sqlite_sequence") if t in SEQUENCED}
    return c


def write_object(db, checked: Checked, object_id: str, columns) -> None:
    """Replace every row of the object with the record's (inside the caller's transaction)."""
    for table in columns:
        db.execute(f"DELETE FROM {table}")
    db.execute("DELETE FROM sqlite_sequence")
    c = checked.content
    meta = dict(c["object"], id=object_id, one=1, **c["live"])
    _insert(db, "object", [meta], columns["object"])
    for table in columns:
        if table != "object":
            _insert(db, table, c[table], columns[table])
    db.execute("DELETE FROM sqlite_sequence")
    db.executemany("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", list(c["sequences"].items()))


def _insert(db, table, rows, columns) -> None:
    keys = [k for k in columns]
    sql = f"INSERT INTO {table} ({', '.join(keys)}) VALUES ({', '.join('?' * len(keys))})"
    db.executemany(sql, [[row.get(k) for k in keys] for row in rows])


def same_content(stored: dict, checked: Checked, object_id: str) -> bool:
    want = {k: v for k, v in checked.content.items() if k != "live"}
    want = dict(want, object=dict(want["object"], id=object_id))
    return stored == want
