"""A transcript row (docs/reference/transcript.md §6): its columns, the checks that turn input into one (`prepare`, validated whole
before anything is opened or created), its JSON encoding and the shape docs/reference/json.md §10 shows (`row_json`);
and the guards every transcript operation shares."""

import json

from ... import clock
from ...contract.messages import say
from ...contract.text import quote
from ...contract.vocabulary import ROW_INPUT_KEYS as INPUT_KEYS
from ...contract.vocabulary import ROW_OUTPUT_KEYS as OUTPUT_KEYS
from ...contract.vocabulary import ROW_ROLES as ROLES
from ...errors import NotEncodable, conflict, invalid
from .. import strict_json
from .. import tokens as _tokens

ROW_COLUMNS = (
    "seq, role, content, tokens, author, created_at, kind, superseded_by, covers_first, covers_last, call_id, pos,"
    " tool_calls, name, meta, data, forked_from"
)
SEQ, ROLE, CONTENT, TOKENS, AUTHOR, CREATED, KIND, SUPERSEDED, FIRST, LAST, CALL_ID, POS, CALLS, NAME, META, DATA, FORKED = range(17)
REDACTED = "[redacted]"
PRUNED = "[pruned]"  # what a prompt's text becomes when prune deletes the turn it became
MAX_INT = 2**63 - 1
from ...contract.vocabulary import USAGE_KEYS as _USAGE_KEYS  # noqa: E402

MAX_USAGE = 10**12  # a usage count's ceiling: 9 million such rows before a 64-bit total could overflow
MAX_COST = 10**9  # meta.cost_usd's ceiling, in dollars

_estimators: dict = {}


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


def _loads(text):
    return None if text is None else json.loads(text)


def check_text(config, content, what="content") -> None:
    """Empty content or content over transcript.max_turn_bytes is exit 2: never truncated silently."""
    if not isinstance(content, str) or content == "":
        raise invalid(say("empty_text", what=what))
    limit = config.get("transcript.max_turn_bytes")
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise invalid(say("text_too_large", what=what, size=size, limit=limit))


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
        raise invalid(say("not_json", what=what, why=e)) from e


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
        raise invalid(where + say("tool_calls_not_array"))
    out, seen = [], set()
    for i, call in enumerate(value, 1):
        if not isinstance(call, dict):
            raise invalid(where + say("tool_call_not_object", n=i))
        extra = set(call) - {"id", "name", "arguments"}
        if extra:
            raise invalid(where + say("tool_call_unknown_keys", n=i, keys="[" + ", ".join(map(quote, sorted(extra))) + "]"))
        for key in ("id", "name"):
            if not isinstance(call.get(key), str) or not call[key]:
                raise invalid(where + say("tool_call_needs", n=i, key=key))
        arguments = call.get("arguments", "{}")
        if not isinstance(arguments, str):
            raise invalid(where + say("tool_call_arguments", n=i))
        if call["id"] in seen:
            raise invalid(where + say("tool_call_id_twice", id=call["id"]))
        seen.add(call["id"])
        out.append({"id": call["id"], "name": call["name"], "arguments": arguments})
    return out


def _meta(value, where):
    if not isinstance(value, dict):
        raise invalid(where + say("meta_not_object"))
    if "model" in value and not isinstance(value["model"], str):
        raise invalid(where + say("meta_model"))
    if "usage" in value:
        usage = value["usage"]
        if not isinstance(usage, dict):
            raise invalid(where + say("meta_usage"))
        for key in _USAGE_KEYS:
            required = key in ("input_tokens", "output_tokens")
            if key not in usage and not required:
                continue
            n = usage.get(key)
            if type(n) is not int or not 0 <= n <= MAX_USAGE:  # 5.0 and true are not integers
                raise invalid(where + say("meta_usage_count", key=key))
    if "cost_usd" in value:
        cost = value["cost_usd"]
        if type(cost) not in (int, float) or not 0 <= cost <= MAX_COST:  # NaN fails the comparison
            raise invalid(where + say("meta_cost"))
    if "started_at" in value or "ended_at" in value:  # when the model call ran (docs/reference/traces.md §15.2)
        if "started_at" not in value or "ended_at" not in value:
            raise invalid(where + say("meta_times_both"))
        start, end = time_ns(value["started_at"]), time_ns(value["ended_at"])
        if start is None or end is None:
            raise invalid(where + say("meta_time", key="started_at" if start is None else "ended_at"))
        if end < start:
            raise invalid(where + say("meta_times_order"))
    return value


_TIME = None
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def time_ns(text):
    """An RFC 3339 time with a zone (`2026-12-05T10:00:03.120Z`, fractions to nanoseconds, offsets) as epoch
    nanoseconds, or None when TEXT is not one (a bad date, a 60th second, no zone). The twin of row.ts timeNs."""
    global _TIME
    if type(text) is not str:
        return None
    if _TIME is None:
        import re

        _TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):(\d\d))", re.ASCII)
    m = _TIME.fullmatch(text)
    if m is None:
        return None
    y, mo, d, h, mi, sec = (int(m.group(i)) for i in range(1, 7))
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    if not (1 <= y and 1 <= mo <= 12 and 1 <= d <= _DAYS[mo - 1] + (mo == 2 and leap) and h <= 23 and mi <= 59 and sec <= 59):
        return None
    offset = 0
    if m.group(9):
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            return None
        offset = (oh * 60 + om) * 60 * (1 if m.group(9) == "+" else -1)
    # days from the civil date (Howard Hinnant's algorithm), exact in integers on both runtimes
    yy = y - (mo <= 2)
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * (mo + (-3 if mo > 2 else 9)) + 2) // 5 + d - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    seconds = days * 86400 + h * 3600 + mi * 60 + sec - offset
    return seconds * 1_000_000_000 + int((m.group(7) or "").ljust(9, "0"))


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
            data = _dumps(data)  # a private C encoder here saved 2-4% of a 1,000-item add_items' CPU: removed (docs/benchmarks.md)
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
        raise invalid(where + say("json_too_deep", what=what, max=strict_json.MAX_DEPTH)) from None
    except ValueError as e:  # allow_nan=False, or json's check_circular (only a library caller can pass one)
        if "ircular" in str(e):
            raise NotEncodable(f"{where}{what} holds a circular reference (a value inside itself), which JSON cannot"
                               " encode; nothing was stored") from e
        raise invalid(f"{where}{what} holds NaN or Infinity, which JSON (RFC 8259) has not; nothing was stored") from e
    except TypeError as e:
        raise NotEncodable(f"{where}{what} is not JSON-serializable ({e}); nothing was stored") from e
    return text


def prepare(config, fields: dict, *, where: str = "", _settings=None) -> Prepared:
    """Validate one input row (a dict of §6 input fields) as a whole; exit 2 naming what is wrong.

    WHERE prefixes messages (e.g. "line 3: ") so a batch names its bad line.
    """
    limit, count_tokens = _settings or (config.get("transcript.max_turn_bytes"), _estimator(config))
    role = fields.get("role")
    if role not in ROLES:
        raise invalid(where + say("invalid_row_role", role=role, roles=", ".join(ROLES)))
    content = fields.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise invalid(where + say("content_not_string"))
    calls = fields.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            raise invalid(where + say("tool_calls_not_assistant", role=role))
        calls = _tool_calls(calls, where) or None  # [] means none
    call_id, name = fields.get("call_id"), fields.get("name")
    if role == "tool":
        if not isinstance(call_id, str) or not call_id:
            raise invalid(where + say("tool_row_call_id"))
        if name is not None and (not isinstance(name, str) or not name):
            raise invalid(where + say("tool_row_name"))
    else:
        if call_id is not None:
            raise invalid(where + say("call_id_not_tool", role=role))
        if name is not None:
            raise invalid(where + say("name_not_tool", role=role))
    meta = fields.get("meta")
    if meta is not None:
        meta = _meta(meta, where)
    data = fields.get("data")
    if content == "" and not (calls and role == "assistant") and data is None:
        raise invalid(where + say("empty_content"))
    given = fields.get("tokens")
    if given is not None and (isinstance(given, bool) or not isinstance(given, int) or not 0 <= given <= _tokens.MAX_TOKENS):
        raise invalid(where + say("row_tokens", max=_tokens.MAX_TOKENS))
    row = Prepared()
    row.role, row.content, row.call_id, row.name, row.given_tokens = role, content, call_id, name, given
    row.tool_calls = _dumps(calls) if calls else None
    row.meta = _json_field(meta, "meta", where)
    row.data = _json_field(data, "data", where)
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise invalid(f"{where}content is not valid UTF-8") from None
    for what, x in (("tool calls", row.tool_calls), ("meta", row.meta), ("data", row.data)):
        if x is not None:
            try:
                size += len(x.encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate ("\ud83d"): no UTF-8 text to store, or to send
                raise invalid(f"{where}{what} is not valid UTF-8 (a lone surrogate); nothing was stored") from None
    if size > limit:
        raise invalid(where + say("row_too_large", size=size, limit=limit))
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
    rows: list = []
    settings = limit, count_tokens = _settings(config)
    scan, append = _DECODER.scan_once, rows.append  # type: ignore[attr-defined]  # set by json's C module  # the C scanner: decode() less its two regex passes
    for number, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise invalid(f"line {number}: not valid UTF-8 (byte {e.start}); nothing was stored") from e
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
    """A row as docs/reference/json.md §10 shows it."""
    summary = r[KIND] == "summary"
    return {
        "seq": r[SEQ], "role": r[ROLE], "content": r[CONTENT], "tool_calls": _loads(r[CALLS]), "call_id": r[CALL_ID],
        "name": r[NAME], "meta": _loads(r[META]), "data": _loads(r[DATA]), "forked_from": r[FORKED],
        "tokens": r[TOKENS], "author": r[AUTHOR], "created_at": clock.iso(r[CREATED]), "kind": r[KIND],
        "superseded_by": r[SUPERSEDED], "covers": [r[FIRST], r[LAST]] if summary and r[LAST] is not None else None,  # a forked summary covers nothing
    }


def _row(obj, seq):
    return obj.handle.row(f"SELECT {ROW_COLUMNS} FROM turns WHERE seq = ?", (seq,))


def _require(obj):
    from ..lifecycle import require_session

    meta = require_session(obj)
    obj.require_visible()
    return meta


def refuse_rewrite_if_owned(obj, meta, doing: str) -> None:
    """docs/reference/integrations.md §12: rows a LangGraph saver mirrors from its checkpoints are not rewritten behind its back
    (the checkpoints hold the same text): exit 4, delete the thread or the session instead."""
    if meta.get("adapter") == "langgraph":
        raise conflict(say("langgraph_owned", what=obj.what, doing=doing, name=obj.name))
