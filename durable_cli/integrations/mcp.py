"""`durable mcp` (docs/reference/mcp.md §14): durable's sessions, memory and human-in-the-loop served over the Model
Context Protocol on stdio, with the official `mcp` SDK (extra `mcp`; imported by this command only).

The server acts as one user (the Store it is given: `--as`, `--tenant`, `--remote` as every command).
Each tool call is one wake/work/sleep through the library's public API (durable_cli.library), run in a
worker thread so the protocol keeps flowing while a call waits for a lock. Arguments are checked here
with the CLI's rules; every refusal or failure is a tool error (`isError`) whose text is the docs/reference/output.md §4
message and whose structured content is the §4 JSON error.

Both revisions the SDK serves: with a 2025-11-25 (or older) client, `elicitation/create` requests and
`resources/subscribe`; with a 2026-07-28 client, `InputRequiredResult` rounds and `subscriptions/listen`.
A question for the person (`ask_human`) is stored in the session first, so it outlives the connection
and the server: the same `request_id` returns that request and asks nothing twice.
"""

import json
import re
from contextlib import contextmanager
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import durations
from ..contract.messages import say
from ..core import strict_json
from ..errors import DurableError, Interrupted, conflict, denied, invalid

INT64 = (-(2 ** 63), 2 ** 63 - 1)
POLL_LOCAL, POLL_REMOTE = 0.2, 0.5  # seconds between looks at index.db (or the remote index) for subscribers
from ..contract.vocabulary import ROW_ROLES as ROLES  # noqa: E402

WINDOW_FORMATS = ("messages", "responses", "anthropic", "gemini", "json")
RECENT_FORMATS = ("json", "messages", "responses", "anthropic", "gemini")
SESSIONS_URI = "durable://sessions"
SESSION_PREFIX = "durable://session/"
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource
# What a lone surrogate (a "\\ud800" escape, or a byte of invalid UTF-8) in a message becomes before the SDK
# parses it (it would drop the whole message, unanswered): a noncharacter no client sends, which the
# argument checks refuse as invalid UTF-8 (exit 2), as the CLI refuses such an argument.
NOT_TEXT = "\U0010ffff"
_SURROGATES = re.compile("[\ud800-\udfff]")

# The argument schemas (JSON Schema 2020-12, advertised as each tool's input schema and applied by
# `check_arguments` with the CLI's messages; the SDK's low-level server applies nothing itself). An argument
# that is an op's argument takes its schema from the contract (seam.json_schema: type, range and what its
# named check refuses), so a schema is as strict as the server: what it admits the server takes, but for
# bounds no schema states (a duration's 100 years, a turn's bytes); the library refuses the rest, exit 2.
from .. import seam  # noqa: E402
from ..checks import NAME_SCHEMA  # noqa: E402

S = {"type": "string"}
NAME = dict(NAME_SCHEMA, description="Session NAME (1-200 printable characters, no blank at either end).")
KEY = dict(NAME_SCHEMA, description="A key (1-200 printable characters, no blank at either end).")
DURATION = dict(durations.SCHEMA, description="A duration: 90d, 1h30m, 45s.")
DURATION_OR_ZERO = dict(durations.SCHEMA_OR_ZERO, description="A duration: 90d, 1h30m, 45s, or 0.")
COUNT = {"type": "integer", "minimum": 0, "maximum": INT64[1]}
ANY = {"description": "Any JSON value."}
TEXT = {"type": "string", "minLength": 1}
RATE = {"type": "string", "pattern": "^[1-9][0-9]{0,18}/" + durations.SCHEMA["pattern"][1:],
        "description": "N/DUR: N tokens per duration, e.g. 5/1m."}
ROW_PROPERTIES = {
    "role": {"type": "string", "enum": list(ROLES)},
    "text": {"type": "string", "description": "The row's content."},
    "tool_calls": {"type": "array", "items": {"type": "object"}, "description": 'Assistant rows: [{"id", "name", "arguments"}].'},
    "call_id": {"type": "string", "description": "Tool rows: the id of the call this result answers."},
    "tool_name": {"type": "string", "description": "Tool rows: the tool's name (the row's `name`)."},
    "meta": {"type": "object", "description": "A JSON object about the turn (model, usage, cost_usd, ...)."},
    "data": ANY,
    "tokens": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000},
}


# Tags (docs/reference/sessions.md §5): a KEY is 1-64 characters from A-Z a-z 0-9 . _ - : /, beginning with a letter or a
# digit; a VALUE 1-256 printable characters with no blank at either end (the library checks it: invalid_input)
TAG_KEY = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$"}
TAGS = {"type": "object", "propertyNames": TAG_KEY, "additionalProperties": dict(NAME_SCHEMA, maxLength=256),
        "description": "Tags, KEY -> VALUE."}
TAG_FILTER = {"type": "array", "items": {"type": "string"},
              "description": 'Only sessions with each tag: "KEY=VALUE" (that value) or "KEY" (any value), as `ls --tag`.'}


def _tool(description, properties=None, required=(), result=None):
    return {"description": description, "properties": properties or {}, "required": list(required), "result": result}


def _arg(op, arg, scope="object", **extra):
    return seam.json_schema(op, arg, scope, **extra)


TOOLS = {
    "sessions_list": _tool(
        "List your sessions, newest activity first (as `durable ls`; archived ones only with all).",
        {"status": {k: v for k, v in _arg("ls", "statuses", "index").items() if k != "maxItems"}, "all": {"type": "boolean"},  # repeats are one
         "older_than": DURATION, "limit": COUNT, "tag": TAG_FILTER}, result="object*"),  # `ls` rows, not sessions
    "session_create": _tool(
        "Create a session (status created); the session object. Without name, ephemeral makes a random one.",
        {"name": NAME, "title": _arg("create", "title"), "ephemeral": {"type": "boolean"}, "ttl": DURATION, "tags": TAGS},
        result="session"),
    "session_tag": _tool(
        "Set tags (tags: KEY -> VALUE, replacing a KEY's value) and remove tags (untag: KEYs) of a session; the session "
        "object. With neither, changes nothing.",
        {"name": NAME, "tags": TAGS, "untag": {"type": "array", "items": TAG_KEY}}, ["name"], result="session"),
    "session_show": _tool("Show a session: status, queue, turns, tokens, participants.", {"name": NAME}, ["name"],
                          result="session"),
    "session_prompt": _tool(
        "Queue a prompt (creates the session if needed); the prompt object.",
        {"name": NAME, "text": _arg("prompt", "content", minLength=1), "source": _arg("prompt", "source"),
         "request_id": _arg("prompt", "request_id"), "wait": DURATION_OR_ZERO, "no_create": {"type": "boolean"}},
        ["name", "text"], result="prompt"),
    "session_next": _tool(
        "Take the oldest pending prompt for work; with context_tokens it carries the context window.",
        {"name": NAME, "wait": DURATION_OR_ZERO, "lease": DURATION, "context_tokens": COUNT,
         "format": {"type": "string", "enum": list(WINDOW_FORMATS)}}, ["name"], result="prompt"),
    "session_finish": _tool(
        "Finish a processing prompt with its reply, the turn's rows and meta, in one transaction.",
        {"name": NAME, "prompt_id": _arg("finish", "prompt_id"), "reply": S,
         "rows": {"type": "array", "items": {"type": "object"}}, "meta": {"type": "object"},
         "failed": {"type": "boolean"}, "error": S, "attempt": _arg("finish", "attempt")},
        ["name", "prompt_id"], result="prompt"),
    "transcript_append": _tool(
        "Append one row (role and text, ...) or rows (an array of rows) in one transaction.",
        {"name": NAME, **ROW_PROPERTIES, "rows": {"type": "array", "items": {"type": "object"}},
         "request_id": _arg("append_many", "request_id"), "no_create": {"type": "boolean"}}, ["name"], result="row|row*"),
    "transcript_recent": _tool(
        "The context window: pinned turns, then the newest rows within the token budget.",
        {"name": NAME, "tokens": COUNT, "limit": COUNT, "format": {"type": "string", "enum": list(RECENT_FORMATS)}},
        ["name"]),
    "transcript_search": _tool(
        "Full-text search over your sessions' transcripts, best match first. query is plain text: every word "
        "must match, \"a phrase\", prefix*; with fts true it is SQLite FTS5 syntax (OR, NOT, NEAR).",
        {"query": _arg("search", "query", "objects", pattern=r"\S"), "fts": {"type": "boolean"}, "session": NAME,
         "role": {"type": "string", "enum": list(ROLES)}, "newer_than": DURATION, "superseded": {"type": "boolean"},
         "limit": COUNT}, ["query"]),
    "memory_set": _tool(
        "Remember a fact about the user (replacing one under the same key). It is stored as source model and "
        "unconfirmed, whatever is sent: only a person confirms it (memory_confirm).",
        {"key": KEY, "value": _arg("set_fact", "value", minLength=1), "expires": DURATION, "source": S,
         "confirmed": {"type": "boolean"}}, ["key", "value"], result="fact"),
    "memory_get": _tool("A confirmed, unexpired fact.", {"key": KEY}, ["key"], result="fact"),
    "memory_list": _tool("Every confirmed, unexpired fact.", result="fact*"),
    "memory_confirm": _tool("Ask the person to confirm a remembered fact; confirmed only if they accept.", {"key": KEY},
                            ["key"]),
    "ask_human": _tool(
        "Ask the person a question (stored in the session first); returns the request, answered when the client "
        "could ask, else pending (answerable with 'durable elicit answer'). The same request_id returns the same request.",
        {"name": NAME, "prompt": _arg("ask", "prompt"), "choices": _arg("ask", "choices"), "timeout": DURATION,
         "request_id": _arg("ask", "request_id"), "call_id": _arg("ask", "call_id"), "args": _arg("ask", "args"),
         "approve": _arg("ask", "approve"), "approvers": _arg("ask", "approvers")},
        ["name", "prompt"], result="request"),
    "limit_hit": _tool(
        "Take one token from the user's rate-limit bucket KEY (rate N/DUR, e.g. 5/1m); refused: error rate_limited.",
        {"key": KEY, "rate": RATE, "burst": {"type": "integer", "minimum": 1, "maximum": INT64[1]}}, ["key", "rate"],
        result="limit"),
}


# Tools that change nothing (the client may call them without asking the person); of the others only
# memory_set replaces what was there (a fact under the same key, confirmed or not).
READ_ONLY = {"sessions_list", "session_show", "transcript_recent", "transcript_search", "memory_get", "memory_list"}
DESTRUCTIVE = {"memory_set"}


def input_schema(name: str) -> dict:
    spec = TOOLS[name]
    return {"type": "object", "properties": spec["properties"], "required": spec["required"], "additionalProperties": False}


def _shape(name: str) -> dict:
    """The contract's shape NAME (its fields, each present) as JSON Schema: an object, other fields allowed."""
    from ..contract.ops import contract

    if name == "object":
        return {"type": "object"}
    fields = contract()["shapes"][name]
    return {"type": "object", "properties": {f: {} for f in fields}, "required": list(fields)}


def output_schema(name: str) -> dict:
    """What TOOL's result (its structured content) holds: a shape of the contract's "shapes" ("session"), a list
    of them under "result" ("session*"; "object*": of objects), either ("row|row*"), or any object (a tool whose
    result has no shape)."""
    result = TOOLS[name]["result"]
    if result is None:
        return {"type": "object"}
    forms = []
    for form in result.split("|"):
        if form.endswith("*"):
            forms.append({"type": "object", "properties": {"result": {"type": "array", "items": _shape(form[:-1])}},
                          "required": ["result"]})
        else:
            forms.append(_shape(form))
    return forms[0] if len(forms) == 1 else {"type": "object", "anyOf": forms}


# ---- arguments, checked with the CLI's rules -------------------------------------------------------

_KINDS = {"string": "a string", "integer": "an integer", "boolean": "true or false", "array": "an array", "object": "an object"}


def _text(value, what):
    if NOT_TEXT in value or _SURROGATES.search(value):
        raise invalid(f"invalid UTF-8 in {what} (a lone surrogate or a byte that is not UTF-8); nothing was changed")


def _check_value(value, schema, what):
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise invalid(f"{what} must be {_KINDS[kind]}")
        _text(value, what)
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise invalid(f"{what} must be {_KINDS[kind]}")
        low, high = schema.get("minimum", INT64[0]), schema.get("maximum", INT64[1])
        if not low <= value <= high:
            raise invalid(f"{what} must be an integer from {low} to {high}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise invalid(f"{what} must be {_KINDS[kind]}")
    elif kind == "array":
        if not isinstance(value, list):
            raise invalid(f"{what} must be {_KINDS[kind]}")
        items = schema.get("items")
        if items:
            value = [_check_value(v, items, f"{what}[{i}]") for i, v in enumerate(value)]
    elif kind == "object":
        if not isinstance(value, dict):
            raise invalid(f"{what} must be {_KINDS[kind]}")
    if "enum" in schema and value not in schema["enum"]:
        raise invalid(f"invalid {what} {value!r}: use one of {', '.join(map(str, schema['enum']))}")
    return value


def check_arguments(tool: str, arguments) -> dict:
    """The arguments of a call to TOOL, checked against its schema; exit-2 errors naming the argument."""
    spec = TOOLS[tool]
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise invalid(f"the arguments of {tool} must be a JSON object")
    unknown = sorted(set(arguments) - set(spec["properties"]))
    if unknown:
        raise invalid(f"unknown argument {unknown[0]!r} for {tool}: use {', '.join(spec['properties']) or 'none'}")
    checked = {}
    for key, value in arguments.items():
        _text(key, "an argument name")
        if value is None:
            continue  # null: as if not given
        checked[key] = _check_value(value, spec["properties"][key], f"argument {key!r}")
    for key in spec["required"]:
        if key not in checked:
            raise invalid(f"missing argument {key!r} for {tool}")
    return checked


class Wire:
    """What the tools know of the connection: whether stdin has closed (the client is gone)."""

    closing = False


def still_wanted():
    """None while the call that runs this thread is still wanted; raises once its client went away (its
    request cancelled, stdin closed, or the server stopping), so a waiting poll ends with nothing changed."""
    anyio.from_thread.check_cancelled()
    if Wire.closing:
        raise DurableError("the client closed stdin while this call waited; nothing was taken", "timeout")


class Gone(Exception):
    """The client closed stdin while the person was being asked through it."""


async def until_gone(asking):
    """The client's answer to ASKING (an elicitation/create awaiting its response); raises Gone once stdin has
    closed: a client that went away answers nothing, and the server must not wait for it for ever (docs/reference/mcp.md §14:
    the request stays pending, and the server exits 0 when its stdin closes)."""
    answer, failure = None, None

    async def ask():
        nonlocal answer, failure
        try:
            answer = await asking
        except Exception as e:  # noqa: BLE001 - handed to the caller
            failure = e
        tg.cancel_scope.cancel()

    async def watch():
        nonlocal failure
        while not Wire.closing:
            await anyio.sleep(0.05)
        failure = Gone()
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        tg.start_soon(watch)
    if failure is not None:
        raise failure
    return answer


def _seconds(args, key, *, allow_zero=False):
    value = args.get(key)
    return None if value is None else durations.parse(value, allow_zero=allow_zero, what=key)


# ---- the tools, over the library ---------------------------------------------------------------------

class Tools:
    """The synchronous tools: each one call of the library (run in a worker thread)."""

    def __init__(self, store):
        self.store = store
        if hasattr(store, "delivering"):  # docs/reference/sessions.md §5.3: a tool's outcome is sent off the request
            store.delivering = "thread"

    def _open(self, name, **kw):
        from ..config import valid_name

        valid_name(name)
        return self.store.open(name, **kw)

    def sessions_list(self, a):
        older = _seconds(a, "older_than")
        from .. import checks

        tags = checks.tag_pairs(a.get("tag") or (), values_required=False)
        rows = list(self.store.ls(statuses=tuple(a.get("status") or ()), all_objects=a.get("all", False),
                                  older_than=older, limit=a.get("limit"), **({"tags": tags} if tags else {})))
        return {"result": rows}

    def session_create(self, a):
        return self.store.create_session(a.get("name"), title=a.get("title"), ttl_seconds=_seconds(a, "ttl"),
                                         ephemeral=a.get("ephemeral", False), tags=a.get("tags"))

    def session_tag(self, a):
        from ..config import valid_name

        valid_name(a["name"])
        return self.store.run(a["name"], "tag", set=a.get("tags"), untag=a.get("untag"))

    def session_show(self, a):
        with self._open(a["name"]) as s:
            return s.show()

    def session_prompt(self, a):
        from ..config import valid_name
        from ..core import sessions, transcript

        valid_name(a["name"])
        wait = _seconds(a, "wait", allow_zero=True) or 0
        content, source, request_id, create = a["text"], a.get("source"), a.get("request_id"), not a.get("no_create", False)
        transcript.check_text(self.store.config, content)
        sessions.valid_request_id(request_id)
        doc = self.store.poll(
            a["name"], lambda s, _more: still_wanted() or s.prompt(content, source=source, request_id=request_id, created=create, waiting=wait > 0),
            wait_seconds=wait, create=create)
        if doc is None:
            raise conflict(f"the queue of session \"{a['name']}\" is still full after waiting {a['wait']}; nothing was stored "
                           "(raise the cap with 'durable config set queue.max_unfinished N')")
        return doc

    def session_next(self, a):
        from ..config import valid_name

        valid_name(a["name"])
        wait = _seconds(a, "wait", allow_zero=True) or 0
        context, fmt = a.get("context_tokens"), a.get("format")
        if fmt is not None and context is None:
            raise invalid("format goes with context_tokens")
        lease = _seconds(a, "lease") or self.store.config.seconds("queue.lease")
        doc = self.store.poll(a["name"], lambda s, _more: still_wanted() or s.next_prompt(
            lease_seconds=lease, waiting=wait > 0, context=context, format=fmt or "messages"), wait_seconds=wait)
        if doc is None:
            after = f" after waiting {a['wait']}" if wait else ""
            raise DurableError(f"no pending prompt in session \"{a['name']}\"{after}", "timeout")
        return doc

    def session_finish(self, a):
        from .. import checks
        from ..config import valid_name
        from ..core import transcript

        valid_name(a["name"])
        rows = None
        if a.get("rows") is not None:  # as `finish --rows` reads them (append --batch's JSONL), one a line
            rows = transcript.prepare_batch(self.store.config, [json.dumps(r) for r in a["rows"]]) if a["rows"] else []
        failed = a.get("failed", False) or a.get("error") is not None
        checks.attempt(a.get("attempt"))
        # input first (docs/reference/output.md §4), as `session finish` does: exit 2 whether NAME exists or not
        turn = checks.finish(self.store.config, reply=a.get("reply"), meta=a.get("meta"), rows=rows, failed=failed)
        with self._open(a["name"]) as s:
            return s.finish(a["prompt_id"], rows=turn, failed=a.get("failed", False), error=a.get("error"),
                            attempt=a.get("attempt"))

    def transcript_append(self, a):
        from ..core import sessions, transcript

        config = self.store.config
        sessions.valid_request_id(a.get("request_id"))
        single = [k for k in ROW_PROPERTIES if k in a]
        if "rows" in a:
            if single:
                raise invalid(f"rows holds the rows; {single[0]} does not go with it")
            rows = transcript.prepare_batch(config, [json.dumps(r) for r in a["rows"]])
        else:
            if "role" not in a:
                raise invalid("missing argument 'role': use one of " + ", ".join(ROLES))
            fields = {"role": a["role"], "content": a.get("text", ""), "tool_calls": a.get("tool_calls"),
                      "call_id": a.get("call_id"), "name": a.get("tool_name"), "meta": a.get("meta"),
                      "data": a.get("data"), "tokens": a.get("tokens")}
            rows = [transcript.prepare(config, fields)]
        create = not a.get("no_create", False)
        with self._open(a["name"], create=create) as s:
            made = s.append_many(rows, request_id=a.get("request_id"), create=create)
        return {"result": made} if "rows" in a else made[0]

    def transcript_recent(self, a):
        fmt = a.get("format", "json")
        with self._open(a["name"]) as s:
            window = s.context_window(budget=a.get("tokens"), limit=a.get("limit"))
        if fmt == "json":
            return window
        from ..core import formats

        rendered = formats.render(window["turns"], fmt)
        return rendered if isinstance(rendered, dict) else {"result": rendered}

    def transcript_search(self, a):
        from ..config import valid_name

        if a.get("session") is not None:
            valid_name(a["session"])
        hits, skipped = self.store.search(a["query"], session=a.get("session"), role=a.get("role"),
                                          newer_than=_seconds(a, "newer_than"), superseded=a.get("superseded", False),
                                          limit=a.get("limit", 20), fts=a.get("fts", False))
        out = {"result": hits}
        if skipped["skipped"]:
            out["skipped"] = skipped["skipped"]
        return out

    def memory_set(self, a):
        expires = _seconds(a, "expires")  # docs/reference/mcp.md §14: always source model, unconfirmed
        return self.store.run_reserved("set_fact", a["key"], a["value"], source="model", confirmed=False,
                                       expires_seconds=expires, create=True)

    def _reserved(self, fn, empty=None):
        try:
            with self.store.open_reserved() as m:
                return fn(m)
        except DurableError as e:
            if e.code == "not_found" and empty is not None:
                return empty()
            raise

    def exists(self, key) -> bool:
        """Whether fact KEY is stored (confirmed or not): only asked for an operation span (traces.md §15.6)."""
        try:
            return self._reserved(lambda m: m.get_fact(key, all_facts=True), empty=lambda: None) is not None
        except DurableError:
            return False

    def memory_get(self, a):
        return self._reserved(lambda m: m.get_fact(a["key"]))

    def memory_list(self, a):
        return {"result": self._reserved(lambda m: m.facts(), empty=list)}

    def fact(self, key):
        """Any fact KEY (confirmed or not), for memory_confirm."""
        from ..config import valid_name

        valid_name(key, "memory key")
        return self._reserved(lambda m: m.get_fact(key, all_facts=True))

    def confirm_seen(self, key, value):
        """Confirm KEY if it still holds the VALUE the person was shown (else exit 4, nothing confirmed)."""
        def confirm(m):
            fact = m.get_fact(key, all_facts=True)
            if fact["value"] != value:
                raise conflict(f"fact {key!r} changed while the person was asked; nothing was confirmed (ask again)")
            return m.confirm_fact(key)
        return self._reserved(confirm)

    def limit_hit(self, a):
        from ..config import valid_name
        from ..core.limits import parse_rate

        valid_name(a["key"], "limit key")
        parse_rate(a["rate"])
        with self.store.open_reserved(create=True) as m:
            return m.hit(a["key"], rate=a["rate"], burst=a.get("burst"))

    # ask_human's steps
    def ask(self, a):
        """Store the question (idempotent under request_id): (request, made_now)."""
        from .. import seam
        from ..config import valid_name

        valid_name(a["name"])
        # input first (docs/reference/output.md §4), as `elicit ask`: exit 2 whether NAME exists or not, and nothing is touched
        timeout = _seconds(a, "timeout")
        args = seam.bind("ask", a["prompt"], choices=a.get("choices") or [], timeout_seconds=timeout,
                         request_id=a.get("request_id"), call_id=a.get("call_id"), args=a.get("args"),
                         approve=a.get("approve"), approvers=a.get("approvers"))
        with self._open(a["name"]) as s:
            before = {r["id"] for r in s.requests(pending_only=True)} if a.get("request_id") is not None else set()
            request = s.run("ask", args)
        return request, request["status"] == "pending" and request["id"] not in before

    def request(self, name, request_id):
        with self._open(name) as s:
            return s.request(request_id)

    def record(self, name, request_id, action, choice):
        """The person's answer (accept with CHOICE, or decline/cancel) on the stored request; a request
        no longer pending (answered elsewhere, expired) is returned as it stands."""
        with self._open(name) as s:
            try:
                # the person's answer, whatever the request's approvers (docs/reference/hitl.md §8)
                return s.decline(request_id, action, choice=choice if action == "accept" else None)
            except DurableError as e:
                if e.code != "conflict":
                    raise
                return s.request(request_id)


def unanswered(request) -> dict:
    """An ask_human whose request expired unanswered: error timeout, carrying the request."""
    if request["status"] == "expired":
        raise DurableError(f"request {request['id']} expired with no answer", "timeout", document=request)
    return request


# ---- results and errors ----------------------------------------------------------------------------------

def ok(doc) -> types.CallToolResult:
    text = json.dumps(doc, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=doc)


def error_document(e: DurableError) -> dict:
    err = {"code": e.code, "message": e.message, "exit_status": e.exit_status}
    if isinstance(e.document, dict):
        if e.code == "rate_limited":
            err["retry_after"] = e.document.get("retry_after")
        err["document"] = e.document
    return {"error": err}


_QUOTED_COMMAND = re.compile(r"('durable [^']*')")
_CLI_OPTION = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?: (?:[A-Z][A-Z_]*|DUR)\b)?")


def mcp_words(message: str) -> str:
    """MESSAGE (the library's, which speaks of the CLI's options) as an MCP client reads it: an option
    `--rate` becomes the tool argument `rate`, `--call-id ID` becomes `call_id` (docs/reference/mcp.md §14: a refusal names
    MCP arguments, never CLI options); a whole command to run ('durable memory list --all') stays as it
    is, and `--tenant ORG` (chosen when the server starts) becomes that command line."""
    def option(m: re.Match) -> str:
        if m.group(1) == "tenant":
            return "'durable --tenant ORG mcp'"
        return m.group(1).replace("-", "_")

    parts = _QUOTED_COMMAND.split(message)
    return "".join(part if i % 2 else _CLI_OPTION.sub(option, part) for i, part in enumerate(parts))


def failed(e: DurableError) -> types.CallToolResult:
    if "--" in e.message:
        e, status = DurableError(mcp_words(e.message), e.code, document=e.document), e.exit_status
        e.exit_status = status
    return types.CallToolResult(content=[types.TextContent(type="text", text=e.message)],
                                structured_content=error_document(e), is_error=True)


def as_durable_error(e: BaseException) -> DurableError:
    if isinstance(e, DurableError):
        return e
    if isinstance(e, OSError):
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        return DurableError(f"{e.strerror or e}{where}; nothing was changed", "storage")
    import os

    if os.environ.get("DURABLE_DEBUG") == "1":
        import traceback

        traceback.print_exception(e)
    return DurableError(f"internal error: {type(e).__name__}: {e}; run with DURABLE_DEBUG=1 for details", "internal")


# ---- resources ---------------------------------------------------------------------------------------------

def session_uri(name: str, transcript=False) -> str:
    return SESSION_PREFIX + quote(name, safe="") + ("/transcript" if transcript else "")


def parse_uri(uri: str):
    """("sessions", None) | ("session", NAME) | ("transcript", NAME); None for a URI we do not serve."""
    if uri == SESSIONS_URI:
        return "sessions", None
    if not uri.startswith(SESSION_PREFIX):
        return None
    rest = uri[len(SESSION_PREFIX):]
    kind = "session"
    if rest.endswith("/transcript"):
        kind, rest = "transcript", rest[: -len("/transcript")]
    if not rest or "/" in rest:
        return None
    try:
        name = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        return None
    return kind, name


# ---- the wire ---------------------------------------------------------------------------------------------

def _unsurrogated(value):
    if isinstance(value, str):
        return _SURROGATES.sub(NOT_TEXT, value)
    if isinstance(value, list):
        return [_unsurrogated(v) for v in value]
    if isinstance(value, dict):
        return {_unsurrogated(k): _unsurrogated(v) for k, v in value.items()}
    return value


# Every line is screened before the SDK parses it (docs/reference/mcp.md §14: every request that has an id is answered).
# The SDK alone drops a message nested deeper than its parser goes (200 levels counted from the message), and
# takes what durable's JSON rules refuse (a duplicate key, NaN, a number that overflows a double: docs/reference/transcript.md §6).
# - within a tools/call's `arguments`: such arguments become {HELD: token}, and call_tool takes them (or
#   their refusal, a §4 tool error) back from HELD_CALLS; so do arguments merely too deep for the SDK.
# - anywhere else in a request's params (`_meta` and every other field, in every method): JSON-RPC -32602,
#   sent by `Lines` itself, the request never reaching the SDK; a notification so refused is dropped.
# - a message durable takes (nested 200 levels or less per field) but deeper than the SDK's parser goes
#   outside `arguments` has what lies below the SDK's depth emptied (only free-form fields, such as `_meta`
#   entries or a capability's `experimental`, can nest so deep, and durable reads none of them).
HELD = NOT_TEXT + "held"
HELD_CALLS: dict = {}
SDK_DEPTH = 190  # pydantic's JSON parser stops at 200 levels; the envelope takes 3 of them
SDK_MESSAGE_DEPTH = 200  # the deepest message (counted from the message itself) the SDK parses
CUT_DEPTH = 250  # deeper than this (from the message) is over MAX_DEPTH for any field: cut before parsing
TOO_DEEP = NOT_TEXT + "deep"  # what a cut container becomes
INVALID_PARAMS = -32602


class _Bad:
    """A JSON number durable refuses (NaN, Infinity, one that overflows a double), kept where it stood."""

    def __init__(self, why):
        self.why = why


class _Twice(dict):
    """A JSON object in which a key appears twice (the last value kept, the key remembered)."""

    key = None


def _twice(pairs):
    value = _Twice(pairs)
    if len(value) == len(pairs):
        return dict(value)
    seen = set()
    for key, _ in pairs:
        if key in seen:
            value.key = key
            break
        seen.add(key)
    return value


def _lenient_float(text):
    value = float(text)
    return value if value == value and value not in (float("inf"), float("-inf")) else _Bad(say("json_overflow", number=text[:40]))


def _lenient_int(text):
    if len(text) > 308 and float(text) in (float("inf"), float("-inf")):
        return _Bad(say("json_overflow", number=text[:40]))
    return int(text)


_LENIENT = json.JSONDecoder(parse_constant=lambda name: _Bad(f"{name} is not a JSON number"), parse_float=_lenient_float,
                            parse_int=_lenient_int, object_pairs_hook=_twice)
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _cut(text: str, depth: int) -> str:
    """TEXT with every array or object that opens deeper than DEPTH levels replaced by the string TOO_DEEP
    (Python's parser would end in RecursionError on thousands of levels; no field may nest this deep)."""
    out, level, start, last = [], 0, None, 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            level += 1
            if level == depth + 1 and start is None:
                start = m.start()
        elif token in "]}":
            if level == depth + 1 and start is not None:
                out.append(text[last:start])
                out.append(json.dumps(TOO_DEEP, ensure_ascii=False))
                last, start = m.end(), None
            level -= 1
    out.append(text[last:])
    return "".join(out)


def _refused_json(value):
    """Why VALUE breaks durable's JSON rules (docs/reference/transcript.md §6: a duplicate key, NaN, an overflowing number, a cut
    container), or None. Nesting is judged by the caller, per field."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, _Bad):
            return v.why
        if isinstance(v, str):
            if v == TOO_DEEP:
                return say("json_nested", max=strict_json.MAX_DEPTH)
            continue
        if isinstance(v, dict):
            if isinstance(v, _Twice):
                return say("json_duplicate_key", key=v.key)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _refused_fields(fields: dict):
    """Why one of FIELDS (each judged from its own value) is refused, or None."""
    for key, value in fields.items():
        why = _refused_json(value)
        if why is None and strict_json.too_deep(value):
            why = say("json_nested", max=strict_json.MAX_DEPTH)
        if why is not None:
            return key, why
    return None


def _emptied_below(value, depth: int):
    """VALUE with every array or object deeper than DEPTH levels (VALUE is level 1) emptied, in place."""
    stack = [(value, 1)]
    while stack:
        v, level = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, child in list(items):
            if isinstance(child, (dict, list)):
                if level + 1 >= depth:
                    v[k] = type(child)()
                else:
                    stack.append((child, level + 1))
    return value


class Refusal:
    """A request answered with JSON-RPC error CODE by `Lines` itself (the SDK never sees it)."""

    def __init__(self, request_id, message):
        self.request_id, self.message = request_id, message


DROP = object()  # a notification durable refuses: dropped, as JSON-RPC says


def screen(line: str):
    """LINE as the SDK may parse it, a Refusal to answer, or DROP (see above)."""
    import secrets

    text = _cut(line, CUT_DEPTH) if strict_json.may_be_too_deep(line, CUT_DEPTH) else line
    try:
        message = _LENIENT.decode(text)
    except (ValueError, RecursionError):
        return line  # not JSON at all: the SDK answers (or drops) it as before
    if not isinstance(message, dict) or "method" not in message:
        if isinstance(message, dict) and strict_json.too_deep(message, SDK_MESSAGE_DEPTH):  # a response: keep it readable
            return json.dumps(_emptied_below(message, SDK_MESSAGE_DEPTH), ensure_ascii=False, default=lambda _: None)
        return line
    request_id = message.get("id")
    answerable = "id" in message and type(request_id) in (int, str)
    params = message.get("params")
    arguments = None
    if message.get("method") == "tools/call" and isinstance(params, dict) and isinstance(params.get("arguments"), dict):
        arguments = params["arguments"]
    refusal = None
    if "params" in message and not isinstance(params, dict):
        refusal = "params must be a JSON object"
    else:
        rest = {k: v for k, v in (params or {}).items() if not (k == "arguments" and arguments is not None)}
        envelope = {k: v for k, v in message.items() if k != "params"}
        found = _refused_fields(rest) or _refused_fields(envelope)
        if found is not None:
            where = f"params field {found[0]!r}" if found[0] in rest else f"field {found[0]!r}"
            refusal = f"{where} is refused: {found[1]}"
    if refusal is not None:
        if not answerable:
            return DROP if "id" not in message else line
        return Refusal(request_id, f"invalid params of {str(message.get('method'))[:60]!r}: {refusal}; nothing was changed")
    if arguments is not None and answerable:
        found = _refused_fields(arguments)
        if found is not None:
            why = found[1]
            held = invalid(f"argument {found[0]!r} is {why}; nothing was changed" if why.startswith("nested")
                           else f"the arguments are not RFC 8259 JSON (argument {found[0]!r}: {why}); nothing was changed")
        elif strict_json.may_be_too_deep(line, SDK_DEPTH):
            held = arguments
        else:
            held = None
        if held is not None:
            token = secrets.token_hex(16)
            HELD_CALLS[token] = held
            params["arguments"] = {HELD: token}
            return json.dumps(_emptied_below(message, SDK_MESSAGE_DEPTH), ensure_ascii=False)
    if text is not line or (strict_json.may_be_too_deep(line, SDK_MESSAGE_DEPTH) and strict_json.too_deep(message, SDK_MESSAGE_DEPTH)):
        return json.dumps(_emptied_below(message, SDK_MESSAGE_DEPTH), ensure_ascii=False, default=lambda _: None)
    return line


def held_arguments(arguments):
    """The arguments of a call `screen` held back (raises its refusal), or ARGUMENTS as they came."""
    if isinstance(arguments, dict) and len(arguments) == 1 and HELD in arguments:
        found = HELD_CALLS.pop(arguments[HELD], None) if isinstance(arguments[HELD], str) else None
        if isinstance(found, DurableError):
            raise found
        if found is None:
            raise invalid("unknown argument in a tools/call; nothing was changed")
        return found
    return arguments


def marked(line: str):
    """LINE as the SDK can parse it (`screen`; a Refusal or DROP instead when durable refuses it): lone
    surrogates (escaped, or invalid UTF-8 decoded with surrogateescape) become NOT_TEXT, so the request is
    answered with an exit-2 tool error instead of being dropped."""
    line = screen(line)
    if not isinstance(line, str):
        return line
    if "\\u" not in line and not _SURROGATES.search(line):
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _SURROGATES.sub(NOT_TEXT, line)
    text = json.dumps(_unsurrogated(message), ensure_ascii=False)
    return line if text == json.dumps(message, ensure_ascii=False) else text


class Lines:
    """stdin, one JSON-RPC message a line, bytes that are not UTF-8 kept as surrogates for `marked`.

    At its end the calls in flight are answered before the server stops (`printf ... | durable mcp` gets
    every answer); calls that wait stop waiting (Wire.closing), with nothing changed."""

    def __init__(self, app, binary):
        import io

        self.app = app
        self.file = io.TextIOWrapper(binary, encoding="utf-8", errors="surrogateescape")

    @classmethod
    def of_stdin(cls, app):
        """Over a duplicate of fd 0 when sys.stdin is it (the command line); else over what sys.stdin reads
        (a caller that replaced it, as the tests' in-process runs do)."""
        import io
        import os
        import sys

        try:
            if sys.stdin is not None and sys.stdin.fileno() == 0:
                return cls(app, os.fdopen(os.dup(0), "rb"))
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            pass
        return cls(app, getattr(sys.stdin, "buffer", None) or io.BytesIO())

    def __aiter__(self):
        return self

    async def __anext__(self):
        while True:
            # abandoned on cancel: a signal must not wait for a client that keeps its stdin open and silent
            line = await anyio.to_thread.run_sync(self.file.readline, abandon_on_cancel=True)
            if not line:
                Wire.closing = True
                while self.app.inflight:
                    await anyio.sleep(0.01)
                await anyio.sleep(0.05)  # their answers are on their way to stdout
                raise StopAsyncIteration
            screened = marked(line)
            if isinstance(screened, str):
                return screened
            if isinstance(screened, Refusal):
                await self.refuse(screened)

    async def refuse(self, refusal: "Refusal"):
        """Answer a request durable refuses with JSON-RPC -32602 (its data the §4 JSON error)."""
        from mcp.shared.message import SessionMessage

        await self.app.wired.wait()
        err = invalid(refusal.message)
        await self.app.wire.send(SessionMessage(types.JSONRPCError(
            jsonrpc="2.0", id=refusal.request_id,
            error=types.ErrorData(code=INVALID_PARAMS, message=err.message, data=error_document(err)))))


async def well_formed_calls(ctx, call_next):
    """Middleware: a tools/call whose name is not a string or whose arguments are not an object is an exit-2
    tool error like any other refused argument (the SDK would answer a bare -32602)."""
    if ctx.method == "tools/call" and ctx.request_id is not None:
        p = ctx.params if isinstance(ctx.params, dict) else {}
        if not isinstance(p.get("name"), str) or not isinstance(p.get("arguments", {}), (dict, type(None))):
            return failed(invalid("a tools/call needs a tool name (a string) and its arguments (a JSON object)"))
    return await call_next(ctx)


# ---- the server --------------------------------------------------------------------------------------------

class Guard:
    """The commit guard while `durable mcp` serves (durable_cli.guard): once SIGINT/SIGTERM came, a commit
    that has not started raises Interrupted (its transaction rolls back: nothing of the call in hand
    changed); one that has started finishes, and the exit waits for it."""

    stopping = None

    @contextmanager
    def __call__(self):
        if self.stopping is not None:
            raise Interrupted(self.stopping)
        yield


class _Server(Server):
    """The SDK's server, advertising only the notifications durable sends (docs/reference/mcp.md §14): resources/list_changed
    (in both revisions; `DurableMCP.watch` sends it), never tools/list_changed (the tools never change)."""

    def get_capabilities(self, *args, **kw):
        caps = super().get_capabilities(*args, **kw)
        if caps.tools is not None:
            caps.tools.list_changed = False
        if caps.resources is not None:
            caps.resources.list_changed = True
        return caps


class DurableMCP:
    def __init__(self, store, units=None):
        from .. import __version__

        self.store = store
        self.units = units  # with telemetry.traces = all: a `durable mcp <tool>` span per call (docs/reference/traces.md §15.6)
        self.tools = Tools(store)
        self.remote = not hasattr(store, "objects")
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.legacy_subscribers = {}  # uri -> the ServerSession that subscribed (one connection on stdio)
        self.listened = {}  # uri -> number of open subscriptions/listen streams naming it
        self.legacy_client = None  # the ServerSession of a 2025-11-25 (or older) client, told of list changes
        self.list_listeners = 0  # open subscriptions/listen streams that asked for resources list changes
        self.limiter = anyio.CapacityLimiter(4)
        self.waits = anyio.CapacityLimiter(32)  # calls that wait (holding no lock) have threads of their own
        self.server = _Server(
            "durable", version=__version__,
            instructions="durable: sessions, memory and questions for the person, kept on disk (or in Cloudflare "
                         "Durable Objects). Facts you remember stay unconfirmed until the person confirms them.",
            on_list_tools=self.list_tools, on_call_tool=self.call_tool,
            on_list_resources=self.list_resources, on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource, on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe, on_subscriptions_listen=self.subscriptions_listen,
        )
        self.server.middleware.append(well_formed_calls)
        self.server.middleware.append(self.counted)
        self.inflight = 0
        self.wire = self.wired = None  # set by _serve

    async def counted(self, ctx, call_next):
        """Middleware: how many requests are in flight (answered before the server stops at stdin's end); and
        the client's session, told when the list of sessions changes (a legacy client; a modern one listens)."""
        if self.legacy_client is None and not self.modern(ctx):
            self.legacy_client = ctx.session
        if ctx.request_id is None or ctx.method in ("initialize", "subscriptions/listen"):
            return await call_next(ctx)
        self.inflight += 1
        try:
            return await call_next(ctx)
        finally:
            self.inflight -= 1

    async def run_sync(self, fn, *args, limiter=None):
        return await anyio.to_thread.run_sync(fn, *args, limiter=limiter or self.limiter)

    # tools
    async def list_tools(self, ctx, params):
        return types.ListToolsResult(tools=[
            types.Tool(name=name, description=spec["description"], input_schema=input_schema(name),
                       output_schema=output_schema(name),
                       annotations=types.ToolAnnotations(read_only_hint=name in READ_ONLY, destructive_hint=name in DESTRUCTIVE,
                                                         open_world_hint=False))
            for name, spec in TOOLS.items()])

    async def call_tool(self, ctx, params):
        if self.units is None:
            return await self.call(ctx, params)
        import time

        from ..telemetry.operation import unit

        wakes, started = unit(), time.time_ns()
        existed = None
        if params.name == "memory_set" and isinstance(params.arguments, dict):  # a new key or an existing one
            existed = await self.run_sync(self.tools.exists, params.arguments.get("key"))
        result = await self.call(ctx, params)
        status, code, extra = 0, None, {}
        if getattr(result, "is_error", False):
            error = (result.structured_content or {}).get("error") or {}
            status, code = error.get("exit_status", 1), error.get("code")
        else:
            extra = self.memory_span(params.name, getattr(result, "structured_content", None), existed)
        self.units.span(f"mcp {params.name}" if params.name in TOOLS else "mcp", status, code, wakes=wakes,
                        start_ns=started, extra=extra)
        return result

    def memory_span(self, tool, doc, existed) -> dict:
        """memory_set and memory_confirm are memory operations of the conventions (docs/reference/traces.md §15.6)."""
        if tool not in ("memory_set", "memory_confirm") or not isinstance(doc, dict):
            return {}
        if tool == "memory_confirm" and not doc.get("confirmed"):
            return {}  # the person did not confirm: nothing was written
        out = {"gen_ai.operation.name": "update_memory" if existed or tool == "memory_confirm" else "create_memory",
               "durable.memory.source": doc.get("source"), "durable.memory.confirmed": bool(doc.get("confirmed"))}
        if self.store.config.get("telemetry.content"):
            out.update({"durable.memory.key": doc.get("key"), "durable.memory.value": doc.get("value")})
        return {k: v for k, v in out.items() if v is not None}

    async def call(self, ctx, params):
        try:
            arguments = held_arguments(params.arguments)
            if params.name not in TOOLS:
                raise invalid(f"unknown tool {params.name!r}: use one of {', '.join(TOOLS)}")
            args = check_arguments(params.name, arguments)
            self.within_ceiling(args)
            if params.name == "ask_human":
                return await self.ask_human(ctx, params, args)
            if params.name == "memory_confirm":
                return await self.memory_confirm(ctx, params, args)
            # a call that waits (session_next/session_prompt with wait) has threads of its own: four of them
            # took every thread, and the call that would end their wait (a prompt) queued behind them
            waits = self.waits if args.get("wait") is not None else None
            return ok(await self.run_sync(getattr(self.tools, params.name), args, limiter=waits))
        except Exception as e:  # noqa: BLE001 - every failure is a tool error, never a crash of the server
            return failed(as_durable_error(e))

    def within_ceiling(self, args):
        """No text argument above the turn ceiling (transcript.max_turn_bytes, 2 MiB), whatever it is for:
        exit 2, nothing stored (rows and JSON values are measured by the rules that store them)."""
        limit = self.store.config.get("transcript.max_turn_bytes")
        for key, value in args.items():
            texts = [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
            if sum(len(t) for t in texts) * 4 > limit:  # an array of texts (choices) counts as all of them together
                size = sum(len(t.encode("utf-8")) for t in texts)
                if size > limit:
                    raise invalid(say("text_too_large", what=f"argument {key!r}", size=size, limit=limit))

    # asking the person
    @staticmethod
    def can_elicit(ctx) -> bool:
        caps = ctx.session.client_capabilities
        return caps is not None and caps.elicitation is not None

    @staticmethod
    def modern(ctx) -> bool:
        return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    @staticmethod
    def answer_schema(choices) -> dict:
        if choices:
            field = {"type": "string", "title": "Answer", "enum": list(choices)}
        else:
            field = {"type": "string", "title": "Answer"}
        return {"type": "object", "properties": {"answer": field}, "required": ["answer"]}

    @staticmethod
    def response_of(params, key):
        responses = params.input_responses or {}
        value = responses.get(key)
        if value is None:
            return None
        if isinstance(value, types.ElicitResult):
            return value
        try:
            return types.ElicitResult.model_validate(value if isinstance(value, dict) else value.model_dump(by_alias=True))
        except Exception:  # noqa: BLE001 - a response that is not an elicitation result
            raise invalid(f"the input response {key!r} is not an elicitation result") from None

    @staticmethod
    def state_of(params) -> dict:
        try:
            state = json.loads(params.request_state)
            if not isinstance(state, dict):
                raise ValueError
            return state
        except (TypeError, ValueError):
            raise invalid("invalid request_state: call the tool again without it") from None

    async def ask_human(self, ctx, params, a):
        if self.modern(ctx) and params.request_state is not None:
            state = self.state_of(params)
            request_id = state.get("request")
            if type(request_id) is not int or not 1 <= request_id <= INT64[1]:  # 2**64 reached SQLite: internal error
                raise invalid("invalid request_state: call the tool again without it")
            request = await self.run_sync(self.tools.request, a["name"], request_id)
            if request["prompt"] != a["prompt"]:
                raise invalid("the request_state belongs to another question: call the tool again without it")
            response = self.response_of(params, "answer")
            if response is not None and request["status"] == "pending":
                request = await self.record(a["name"], request, response)
            return ok(unanswered(request))
        request, made_now = await self.run_sync(self.tools.ask, a)
        if not made_now or not self.can_elicit(ctx):
            return ok(unanswered(request))
        message = request["prompt"]
        if request.get("call_id") is not None:  # the person sees the very call they approve (docs/reference/hitl.md §8)
            message += f"\n\ntool call {request['call_id']}, arguments: {json.dumps(request['args'], ensure_ascii=False)}"
        question = types.ElicitRequestFormParams(message=message, requested_schema=self.answer_schema(request["choices"]))
        if self.modern(ctx):
            return types.InputRequiredResult(
                input_requests={"answer": types.ElicitRequest(params=question)},
                request_state=json.dumps({"request": request["id"]}))
        timeout = _seconds(a, "timeout")  # the request was just made: it expires this long from now
        left = None if timeout is None else timeout + 0.3
        response = None
        with anyio.move_on_after(left):
            try:
                response = await until_gone(ctx.session.elicit_form(question.message, question.requested_schema, ctx.request_id))
            except Exception:  # noqa: BLE001 - the client could not ask (or went away): the request stays pending
                response = None
        if response is None:  # not asked, or not answered in time: the request as it stands (expired: timeout)
            return ok(unanswered(await self.run_sync(self.tools.request, a["name"], request["id"])))
        return ok(unanswered(await self.record(a["name"], request, response)))

    async def record(self, name, request, response: types.ElicitResult):
        if response.action == "accept":
            choice = (response.content or {}).get("answer")
            if not isinstance(choice, str) or not choice or (request["choices"] and choice not in request["choices"]):
                raise invalid(f"the answer {choice!r} was not one of the choices offered")
            _text(choice, "the answer")
            limit = self.store.config.get("transcript.max_turn_bytes")  # bounded as every text argument is
            if len(choice) * 4 > limit and len(choice.encode("utf-8")) > limit:
                raise invalid(say("text_too_large", what="the answer", size=len(choice.encode("utf-8")), limit=limit))
            return await self.run_sync(self.tools.record, name, request["id"], "accept", choice)
        return await self.run_sync(self.tools.record, name, request["id"], response.action, None)

    async def memory_confirm(self, ctx, params, a):
        key = a["key"]
        fact = await self.run_sync(self.tools.fact, key)
        if fact["confirmed"]:
            return ok(fact)
        if not self.can_elicit(ctx):
            raise denied(f"memory_confirm needs a person to confirm {key!r}, and this MCP client cannot ask one "
                         f"(no elicitation capability); the person can run 'durable memory confirm {key}'")
        message = f"Remember this as a fact? {key} = {fact['value']}"
        schema = {"type": "object", "properties": {}}
        if self.modern(ctx):
            if params.request_state is None:
                return types.InputRequiredResult(
                    input_requests={"confirm": types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))},
                    request_state=json.dumps({"key": key, "value": fact["value"]}))
            state = self.state_of(params)
            if state.get("key") != key:
                raise invalid("the request_state belongs to another fact: call the tool again without it")
            response = self.response_of(params, "confirm")
            seen = state.get("value")
        else:
            try:
                response = await until_gone(ctx.session.elicit_form(message, schema, ctx.request_id))
            except Exception:  # noqa: BLE001 - the client could not ask (or went away): nothing is confirmed
                raise denied(f"the person could not be asked to confirm {key!r}; nothing was confirmed "
                             f"(the person can run 'durable memory confirm {key}')") from None
            seen = fact["value"]
        if response is None or response.action != "accept":
            return ok(await self.run_sync(self.tools.fact, key))
        return ok(await self.run_sync(self.tools.confirm_seen, key, seen))

    async def list_changed(self):
        if self.legacy_client is not None:
            try:
                await self.legacy_client.send_resource_list_changed()
            except Exception:  # noqa: BLE001 - the client went away
                self.legacy_client = None
        if self.list_listeners:
            await self.bus.publish(ResourcesListChanged())

    # resources
    async def list_resources(self, ctx, params):
        rows = await self.run_sync(lambda: list(self.store.ls(limit=100)))
        resources = [types.Resource(uri=SESSIONS_URI, name="sessions", description="Your sessions (as durable ls)",
                                    mime_type="application/json")]
        for row in rows:
            resources.append(types.Resource(uri=session_uri(row["name"]), name=row["name"], title=row["title"],
                                            mime_type="application/json"))
        return types.ListResourcesResult(resources=resources)

    async def list_templates(self, ctx, params):
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template="durable://session/{name}", name="session",
                                   description="A session (as durable session show); NAME percent-encoded",
                                   mime_type="application/json"),
            types.ResourceTemplate(uri_template="durable://session/{name}/transcript", name="transcript",
                                   description="A session's live transcript rows", mime_type="application/json"),
        ])

    def resource_document(self, uri):
        parsed = parse_uri(uri)
        if parsed is None:
            raise DurableError(f"no such resource {uri!r}: use {SESSIONS_URI} or durable://session/NAME[/transcript]", "not_found")
        kind, name = parsed
        if kind == "sessions":
            return list(self.store.ls(all_objects=True))
        with self.tools._open(name) as s:
            return s.show() if kind == "session" else list(s.show_transcript())

    async def read_resource(self, ctx, params):
        uri = str(params.uri)
        try:
            doc = await self.run_sync(self.resource_document, uri)
        except Exception as e:  # an MCP error carrying the §4 JSON error
            err = as_durable_error(e)
            code = RESOURCE_NOT_FOUND if err.code == "not_found" else -32602 if err.code == "invalid_input" else -32603
            raise MCPError(code, err.message, error_document(err)) from e
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(doc, ensure_ascii=False))])

    def check_uri(self, uri):
        """A URI one may subscribe to: ours, and its NAME valid (refused as resources/read refuses it; a valid
        NAME that does not exist yet may be subscribed to)."""
        from ..config import valid_name

        parsed = parse_uri(uri)
        if parsed is None:
            err = DurableError(f"no such resource {uri!r}: use {SESSIONS_URI} or durable://session/NAME[/transcript]", "not_found")
            raise MCPError(RESOURCE_NOT_FOUND, err.message, error_document(err))
        if parsed[1] is not None:
            try:
                valid_name(parsed[1])
            except DurableError as err:
                raise MCPError(-32602, err.message, error_document(err)) from None

    async def subscribe(self, ctx, params):
        uri = str(params.uri)
        self.check_uri(uri)
        self.legacy_subscribers[uri] = ctx.session
        return types.EmptyResult()

    async def unsubscribe(self, ctx, params):
        self.legacy_subscribers.pop(str(params.uri), None)
        return types.EmptyResult()

    async def subscriptions_listen(self, ctx, params):
        uris = list((params.notifications.resource_subscriptions or []) if params.notifications else [])
        for uri in uris:  # refused as resources/subscribe refuses them: not ours, or an invalid NAME
            self.check_uri(uri)
        lists = bool(params.notifications and params.notifications.resources_list_changed)
        for uri in uris:
            self.listened[uri] = self.listened.get(uri, 0) + 1
        self.list_listeners += lists
        try:
            return await self.listen(ctx, params)
        finally:
            self.list_listeners -= lists
            for uri in uris:
                self.listened[uri] -= 1
                if not self.listened[uri]:
                    del self.listened[uri]

    def marks(self, uris):
        """What each subscribed URI stands on now, from index.db (or the remote index) alone: `ls` rows,
        never an opened object. A change in a mark means rows landed (or the session changed). Also the
        names of the sessions (a change: the list of resources changed)."""
        rows = {row["name"]: row for row in self.store.ls(all_objects=True)}
        marks = {}
        for uri in uris:
            parsed = parse_uri(uri)
            if parsed is None:
                continue
            kind, name = parsed
            if kind == "sessions":
                marks[uri] = tuple(sorted((r["name"], r["updated_at"], r["status"], r["turns"], r["title"]) for r in rows.values()))
            else:
                row = rows.get(name)
                marks[uri] = None if row is None else (row["updated_at"], row["status"], row["turns"], row["tokens"], row["title"])
        return marks, frozenset(rows)

    async def watch(self):
        """Notify subscribers within a second of a change from any process (docs/reference/mcp.md §14); and the client, of a
        session created or deleted (resources/list_changed)."""
        seen, names = {}, None
        interval = POLL_REMOTE if self.remote else POLL_LOCAL
        while True:
            await anyio.sleep(interval)
            uris = set(self.legacy_subscribers) | set(self.listened)
            lists = self.legacy_client is not None or self.list_listeners > 0
            if not lists:
                names = None
            if not uris and not lists:
                seen = {}
                continue
            try:
                marks, now = await self.run_sync(self.marks, uris)
            except Exception:  # noqa: BLE001 - a busy or unreadable index: look again next time
                continue
            if lists:
                if names is not None and now != names:
                    await self.list_changed()
                names = now
            for uri, mark in marks.items():
                if uri in seen and seen[uri] != mark:
                    session = self.legacy_subscribers.get(uri)
                    if session is not None:
                        try:
                            await session.send_resource_updated(uri)
                        except Exception:  # noqa: BLE001 - the client went away
                            self.legacy_subscribers.pop(uri, None)
                    if uri in self.listened:
                        await self.bus.publish(ResourceUpdated(uri=uri))
                seen[uri] = mark
            for uri in set(seen) - uris:
                del seen[uri]


def _stdout():
    """None (the SDK claims fd 1, so stray prints cannot corrupt the wire) when sys.stdout is fd 1; else
    what sys.stdout writes to (a caller that replaced it)."""
    import sys

    try:
        if sys.stdout is not None and sys.stdout.fileno() == 1:
            return None
    except (AttributeError, OSError, ValueError):
        pass
    return anyio.wrap_file(sys.stdout)


async def _serve(app: DurableMCP, guard: Guard) -> int:
    import signal

    status = 0
    app.wired = anyio.Event()
    async with anyio.create_task_group() as tg:
        async def on_signal():
            nonlocal status
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    status = 128 + signum
                    guard.stopping = status
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(on_signal)
        tg.start_soon(app.watch)
        async with stdio_server(stdin=Lines.of_stdin(app), stdout=_stdout()) as (read_stream, write_stream):
            app.wire = write_stream  # for the answers `Lines` gives itself (requests durable refuses)
            app.wired.set()
            await app.server.run(read_stream, write_stream, app.server.create_initialization_options())
        tg.cancel_scope.cancel()  # stdin closed: the client is done
    return status


def serve(store, units=None) -> int:
    """Serve MCP on stdin/stdout until stdin closes (exit 0) or SIGINT/SIGTERM (130/143: the call in hand
    either committed before the signal, or changed nothing)."""
    from .. import guard as _guard

    guard = Guard()
    _guard.commit_guard = guard
    Wire.closing = False
    app = DurableMCP(store, units)
    status_line(store)
    try:
        return anyio.run(_serve, app, guard)
    except BaseException as e:
        if not _pipe_closed(e):
            raise
    # the client closed its end of stdout (it is gone): as `durable ls | head -1`, exit 0, not an internal error
    import sys

    sys.stderr.write("durable: note: the MCP client closed stdout; the server stopped (a call it could not answer "
                     "may have been committed)\n")
    return 0


def status_line(store) -> None:
    """docs/reference/mcp.md §14: with stderr on a terminal, one line saying the server is up and as whom it serves (a person
    who ran `durable mcp` by hand otherwise sees nothing and cannot tell it from a hang); nothing when
    stderr is not a terminal (a client's log)."""
    import sys

    try:
        if sys.stderr is None or not sys.stderr.isatty():
            return
        who = f"user {store.user}" if store.user else "the token's user"
        if store.tenant:
            who += f" (tenant {store.tenant})"
        where = f"the Worker at {store.url}" if getattr(store, "remote", False) is True else f"the data in {store.home}"
        sys.stderr.write(f"durable mcp: serving {who}, {where}, to an MCP client on stdin/stdout; "
                         "waiting for its messages (Ctrl-D or Ctrl-C ends it)\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _pipe_closed(e: BaseException) -> bool:
    """E is a broken pipe on stdout, alone or as every leaf of the task groups' exception groups."""
    if isinstance(e, BrokenPipeError):
        return True
    inner = getattr(e, "exceptions", None)
    return bool(inner) and all(_pipe_closed(x) for x in inner)
