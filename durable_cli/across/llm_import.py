"""`import --from llm` (docs/reference/retention.md §7): the conversations of the `llm` CLI's logs.db, one session each.

logs.db is opened read-only through SQLite's URI (`mode=ro`), so it is never written, created or
migrated. Both of llm's layouts are read: the older `conversations`/`responses` tables (with
`tool_calls`/`tool_results`), and the content-addressed store llm 0.36 writes instead (`threads`
point at the newest of a parent-linked chain of `messages`, each made of `parts`; `turns` record
each model call: model, token counts, time). A conversation in both is read from the newer tables.

Each conversation becomes one export record (the format of core/records.py) and goes through the
import machinery of across/rights.py: the same validation, ownership rules and per-object transaction
(core/rights.py).
A record is built deterministically from logs.db, so importing again finds it "already imported";
a conversation that exists with other content (llm added turns since, or someone wrote to the
session) is skipped too, unless --replace.
"""

import json
import os
import sqlite3

from ..contract.text import printable, rstrip, strip
from ..core import strict_json, transcript
from ..errors import DurableError, invalid, storage

ZERO_ID = "0" * 64  # the record's id is recomputed from its scope, owner and NAME at import


def default_path() -> str:
    """Where llm keeps logs.db: $LLM_USER_PATH, else llm's own app directory (click's get_app_dir
    for "io.datasette.llm": ~/.config on Linux, Application Support on macOS, %APPDATA% on Windows)."""
    base = os.environ.get("LLM_USER_PATH")
    if not base:
        import sys

        if sys.platform == "win32":
            base = os.path.join(os.environ.get("APPDATA") or os.path.expanduser("~"), "io.datasette.llm")
        elif sys.platform == "darwin":
            base = os.path.join(os.path.expanduser("~/Library/Application Support"), "io.datasette.llm")
        else:
            base = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "io.datasette.llm")
    return os.path.join(base, "logs.db")


def open_logs(path: str) -> sqlite3.Connection:
    """logs.db read-only (exit 2 when it is missing or not an llm logs database)."""
    from urllib.parse import quote

    if not os.path.isfile(path):
        raise invalid(f"no llm logs database at {path}; give its PATH (see 'llm logs path')")
    # A read-only connection to a WAL database leaves -wal and -shm files behind; when there is no
    # -wal file (nothing uncheckpointed to read), the file alone is the database: read it immutable.
    with open(path, "rb") as f:
        header = f.read(100)
    wal = len(header) == 100 and header[18] == 2 and not os.path.exists(path + "-wal")
    db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?{'immutable=1' if wal else 'mode=ro'}", uri=True)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        db.close()
        raise invalid(f"{path} is not an llm logs database ({e})") from e
    if not ({"threads", "messages", "parts", "turns"} <= tables or {"conversations", "responses"} <= tables):
        db.close()
        raise invalid(f"{path} holds neither llm's conversations/responses nor its threads/turns tables")
    db.row_factory = sqlite3.Row
    return db


def title_of(name):
    """A conversation's name as a title: non-printable characters as spaces, stripped, at most 200."""
    if not isinstance(name, str):
        return None
    title = strip("".join(c if printable(c) else " " for c in name))[:200]
    return rstrip(title) or None


def ms(text) -> int:
    """llm's datetime_utc ('2026-11-30T12:53:26.805548+00:00', or naive UTC) in epoch milliseconds."""
    from datetime import datetime, timezone

    when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


# What llm may have left malformed in one conversation's rows: a date, JSON or count that does not parse.
_MALFORMED = (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError)


class Malformed(Exception):
    """A conversation whose rows llm left malformed: skipped, with REASON in the receipt (exit 7)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def conversations(db):
    """(id, name, created_at ms, [rows as §6 input fields with a `created_at`]) per conversation; in place
    of the rows, a Malformed for a conversation whose rows could not be read (the others go on)."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    seen = set()
    if {"threads", "messages", "parts", "turns"} <= tables:
        for thread in db.execute("SELECT id, name, tip_message_hash, datetime_utc FROM threads ORDER BY datetime_utc, id").fetchall():
            seen.add(thread["id"])
            try:
                rows = _thread_rows(db, thread)
                if rows:
                    yield thread["id"], thread["name"], ms(thread["datetime_utc"]) if thread["datetime_utc"] else rows[0]["created_at"], rows
            except _MALFORMED as e:
                yield thread["id"], thread["name"], None, Malformed(_reason(e))
    if {"conversations", "responses"} <= tables:
        for conv in db.execute("SELECT id, name FROM conversations ORDER BY id").fetchall():
            if conv["id"] in seen:
                continue
            try:
                rows = _response_rows(db, conv["id"], tables)
                if rows:
                    yield conv["id"], conv["name"], rows[0]["created_at"], rows
            except _MALFORMED as e:
                yield conv["id"], conv["name"], None, Malformed(_reason(e))


def _reason(error) -> str:
    if isinstance(error, RecursionError):
        return "JSON nested too deep"
    return f"{type(error).__name__}: {error}"[:300]


# -- llm 0.36: threads, messages, parts, turns -----------------------------------------------------

def _text(db, part) -> str:
    if part["text"] is not None:
        return part["text"]
    payload = strict_json.loads(part["payload"]) if part["payload"] else {}
    if "text" in payload:
        return payload["text"] or ""
    pieces = []
    for piece in payload.get("text_ref") or []:
        if "literal" in piece:
            pieces.append(piece["literal"])
        else:
            found = db.execute("SELECT content FROM fragments WHERE id = ?", (piece.get("fragment"),)).fetchone()
            pieces.append(found[0] if found else "")
    return "".join(pieces)


class _Calls:
    """Tool call ids: llm's own, or made up (llm-N) where it recorded none, so results find their calls."""

    def __init__(self):
        self.count = 0
        self.open = []  # (id, name) of calls not answered yet

    def call(self, given, name):
        call_id = given or self._new()
        self.open.append((call_id, name))
        return call_id

    def result(self, given, name):
        if given:
            self.open = [c for c in self.open if c[0] != given]
            return given
        for i, (call_id, called) in enumerate(self.open):
            if called == name:
                del self.open[i]
                return call_id
        return self._new()

    def _new(self):
        self.count += 1
        return f"llm-{self.count}"


def _usage(turn):
    meta = {}
    if turn["model"]:
        meta["model"] = turn["model"]
    if turn["input_tokens"] is not None and turn["output_tokens"] is not None:
        for key in ("input_tokens", "output_tokens"):
            if type(turn[key]) is not int or not 0 <= turn[key] <= transcript.MAX_USAGE:
                raise ValueError(f"{key} {turn[key]!r} is not a count from 0 to 10^12")
        meta["usage"] = {"input_tokens": turn["input_tokens"], "output_tokens": turn["output_tokens"]}
    return meta


def _thread_rows(db, thread) -> list:
    chain, at = [], thread["tip_message_hash"]
    while at is not None and len(chain) < 1_000_000:
        message = db.execute("SELECT hash, parent_hash, role FROM messages WHERE hash = ?", (at,)).fetchone()
        if message is None:
            break
        chain.append(message)
        at = message["parent_hash"]
    chain.reverse()
    if not chain:
        return []
    hashes = [m["hash"] for m in chain]
    index = {h: i for i, h in enumerate(hashes)}
    turns = {}
    for turn in db.execute(
        "SELECT * FROM turns WHERE thread_id = ? OR tip_message_hash IN (SELECT value FROM json_each(?))"
        " ORDER BY thread_id = ? DESC, datetime_utc", (thread["id"], json.dumps(hashes), thread["id"])
    ):
        if turn["tip_message_hash"] in index:
            turns.setdefault(turn["tip_message_hash"], turn)  # this thread's own turn first
    # each message takes the time of the turn that recorded it; a turn's output messages its model and usage
    times, metas = [None] * len(chain), [None] * len(chain)
    start = 0
    for i, h in enumerate(hashes):
        turn = turns.get(h)
        if turn is None:
            continue
        when = ms(turn["datetime_utc"]) if turn["datetime_utc"] else None
        for j in range(start, i + 1):
            times[j] = when
        first_output = index.get(turn["parent_message_hash"], start - 1) + 1
        outputs = [j for j in range(max(first_output, start), i + 1) if chain[j]["role"] == "assistant"]
        meta = _usage(turn)
        for j in outputs:
            metas[j] = {k: v for k, v in meta.items() if k == "model" or j == outputs[-1]}
        start = i + 1
    fallback = ms(thread["datetime_utc"]) if thread["datetime_utc"] else 0
    last = fallback
    for i in range(len(times)):
        last = times[i] = times[i] if times[i] is not None else last

    rows, calls = [], _Calls()
    for i, message in enumerate(chain):
        parts = db.execute("SELECT * FROM parts WHERE message_hash = ? ORDER BY position", (message["hash"],)).fetchall()
        texts, tool_calls = [], []
        for part in parts:
            payload = strict_json.loads(part["payload"]) if part["payload"] else {}
            if part["type"] == "text":
                texts.append(_text(db, part))
            elif part["type"] == "tool_call":
                name = payload.get("name") or part["tool_name"] or "tool"
                arguments = payload.get("arguments", {})
                tool_calls.append({"id": calls.call(payload.get("tool_call_id"), name), "name": name,
                                   "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)})
            elif part["type"] == "tool_result":
                name = payload.get("name") or part["tool_name"]
                rows.append(_tool_row(calls.result(payload.get("tool_call_id"), name), name, payload.get("output"),
                                      payload.get("exception"), times[i], payload))
        role = message["role"] if message["role"] in ("system", "user", "assistant", "developer") else None
        content = "".join(texts)
        if role is None or (content == "" and not tool_calls):
            continue  # a tool message (its results are above), or nothing a model reads (reasoning, attachments)
        rows.append({"role": role, "content": content, "tool_calls": tool_calls if role == "assistant" and tool_calls else None,
                     "meta": metas[i] or None if role == "assistant" else None, "created_at": times[i]})
    return rows


def _tool_row(call_id, name, output, exception, when, payload):
    content = output if isinstance(output, str) else "" if output is None else json.dumps(output, ensure_ascii=False)
    return {"role": "tool", "content": content, "call_id": call_id, "name": name or None,
            "meta": {"error": exception} if exception else None,
            "data": payload if content == "" else None, "created_at": when}


# -- older llm: conversations, responses, tool_calls, tool_results ---------------------------------

def _response_rows(db, conversation_id, tables) -> list:
    rows, calls, system = [], _Calls(), None
    has = {t: t in tables for t in ("tool_calls", "tool_results", "prompt_fragments", "system_fragments", "fragments")}
    for r in db.execute("SELECT * FROM responses WHERE conversation_id = ? ORDER BY datetime_utc, id", (conversation_id,)).fetchall():
        when = ms(r["datetime_utc"]) if r["datetime_utc"] else (rows[-1]["created_at"] if rows else 0)
        keys = r.keys()
        fragments = {}
        for kind in ("prompt", "system"):
            if has[f"{kind}_fragments"] and has["fragments"]:
                fragments[kind] = [f[0] for f in db.execute(
                    f'SELECT f.content FROM {kind}_fragments pf JOIN fragments f ON f.id = pf.fragment_id'
                    f' WHERE pf.response_id = ? ORDER BY pf."order"', (r["id"],))]
        bits = [b.strip() for b in fragments.get("system", []) + [r["system"] or ""] if b.strip()]
        this_system = "\n\n".join(bits)
        if this_system and this_system not in (system or ""):  # a system prompt repeated (or a part of it) is not a new turn
            rows.append({"role": "system", "content": this_system, "created_at": when})
            system = this_system
        if has["tool_results"]:
            for t in db.execute("SELECT * FROM tool_results WHERE response_id = ? ORDER BY id", (r["id"],)).fetchall():
                exception = t["exception"] if "exception" in t.keys() else None
                rows.append(_tool_row(calls.result(t["tool_call_id"], t["name"]), t["name"], t["output"], exception, when,
                                      {"name": t["name"], "output": t["output"], "tool_call_id": t["tool_call_id"]}))
        prompt = "\n".join(fragments.get("prompt", []) + ([r["prompt"]] if r["prompt"] else []))
        if prompt:
            rows.append({"role": "user", "content": prompt, "created_at": when})
        tool_calls = []
        if has["tool_calls"]:
            for c in db.execute("SELECT * FROM tool_calls WHERE response_id = ? ORDER BY id", (r["id"],)).fetchall():
                name = c["name"] or "tool"
                tool_calls.append({"id": calls.call(c["tool_call_id"], name), "name": name, "arguments": c["arguments"] or "{}"})
        content = r["response"] or ""
        if content or tool_calls:
            meta = _usage({"model": r["model"], "input_tokens": r["input_tokens"] if "input_tokens" in keys else None,
                           "output_tokens": r["output_tokens"] if "output_tokens" in keys else None})
            rows.append({"role": "assistant", "content": content, "tool_calls": tool_calls or None, "meta": meta or None,
                         "created_at": when})
    return rows


# -- records ---------------------------------------------------------------------------------------

def record(store, conversation_id, name, created_at, rows) -> dict:
    """One conversation as an export record in the acting user's scope (or --tenant's), status active."""
    from ..config import valid_name
    from ..core import records, rights

    actor = store.whoami()["user"] if getattr(store, "remote", False) else store.user
    try:
        address = store.address(conversation_id)
    except DurableError:
        address = None
    scope = address.scope if address else "user"
    owner = (address.owner if address else None) or actor
    try:
        valid_name(conversation_id)
    except DurableError:
        conversation_id = str(conversation_id)
    turns = []
    for seq, row in enumerate(rows, 1):
        fields = {k: row.get(k) for k in transcript.INPUT_KEYS if row.get(k) is not None}
        prepared = transcript.prepare(store.config, fields, where=f"conversation {conversation_id}, row {seq}: ")
        turns.append({
            "seq": seq, "role": prepared.role, "content": prepared.content, "tokens": prepared.tokens, "author": actor,
            "created_at": row["created_at"], "kind": "turn", "superseded_by": None, "covers_first": None,
            "covers_last": None, "call_id": prepared.call_id, "request_id": None, "tool_calls": prepared.tool_calls,
            "name": prepared.name, "meta": prepared.meta, "data": prepared.data, "forked_from": None,
            "request_hash": None, "request_last": None,
        })
    created_at = min([created_at] + [t["created_at"] for t in turns])
    last = max([created_at] + [t["created_at"] for t in turns])
    return {
        "format": records.FORMAT, "version": rights.VERSION, "id": ZERO_ID, "scope": scope, "owner": owner,
        "name": conversation_id,
        "object": {"id": ZERO_ID, "scope": scope, "owner": owner, "name": conversation_id, "title": title_of(name),
                   "status": "active", "created_at": created_at, "updated_at": last, "last_active_at": last,
                   "ttl_seconds": None, "expires_at": None},
        "participants": [{"user": actor, "role": "owner", "joined_at": created_at}],
        "prompts": [], "turns": turns,
        "events": [{"seq": 1, "type": "session.created", "actor": actor, "at": created_at,
                    "data": json.dumps({"scope": scope, "status": "active"}, separators=(",", ":"))}],
        "requests": [], "facts": [], "buckets": [],
        "sequences": {"turns": len(turns), "events": 1},
    }


def import_llm(store, path=None, *, replace=False) -> dict:
    """Import every conversation of logs.db at PATH (default: llm's own); a receipt. logs.db is read
    whole, read-only, and closed before anything is written."""
    path = path or default_path()
    db = open_logs(path)
    items = []
    try:
        for number, (conversation_id, name, created_at, rows) in enumerate(conversations(db), 1):
            try:
                if isinstance(rows, Malformed):
                    raise rows
                items.append((number, record(store, conversation_id, name, created_at, rows)))
            except Malformed as e:
                items.append((number, _Refused(conversation_id, _malformed(conversation_id, e.reason))))
            except DurableError as e:
                items.append((number, _Refused(conversation_id, e)))
            except _MALFORMED as e:
                items.append((number, _Refused(conversation_id, _malformed(conversation_id, _reason(e)))))
    except sqlite3.DatabaseError as e:
        raise invalid(f"cannot read {path} as an llm logs database ({e}); nothing was imported") from e
    finally:
        db.close()
    return store.import_records(items, replace=replace, keep_existing=True)


def _malformed(conversation_id, reason) -> DurableError:
    """docs/reference/retention.md §7: a conversation llm left malformed is skipped and counts as exit 7 (the others are imported)."""
    return storage(f"conversation {conversation_id} in llm's logs.db is malformed ({reason}); skipped")


class _Refused(dict):
    """A conversation that could not be made into a record: import_records lists it as skipped."""

    def __init__(self, conversation_id, error):
        super().__init__(name=str(conversation_id), owner=None)
        self.error = error
