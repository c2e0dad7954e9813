"""A session's turns as OpenTelemetry GenAI spans (docs/reference/traces.md §15.2, §15.4).

Pure Python over one export record (core/rights.py `dump`, or the Worker's paged export): no
OpenTelemetry import here, so the ids and the shape are the same in batch, live and remote export.
telemetry/otlp.py turns these spans into the SDK's own spans and sends or writes them.
"""

import hashlib
import json

# span kinds and status codes as OTLP numbers them
INTERNAL, CLIENT = 1, 3
UNSET, OK, ERROR = 0, 1, 2
CONTENT_LIMIT = 64 * 1024
_FAILURES = {"stopped": "stopped", "cancelled": "cancelled", "timed out": "timed_out"}


class Span:
    __slots__ = ("trace_id", "span_id", "parent_id", "name", "kind", "start", "end", "attributes", "status",
                 "description")

    def __init__(self, trace_id, span_id, parent_id, name, kind, start, end, attributes):
        self.trace_id, self.span_id, self.parent_id = trace_id, span_id, parent_id
        self.name, self.kind, self.start, self.end = name, kind, start, end  # epoch nanoseconds
        self.attributes = attributes
        self.status, self.description = UNSET, None


def _id(prefix: str, oid: str, key: str, size: int) -> bytes:
    text = f"{prefix}\0{oid}\0{key}"
    raw = hashlib.sha256(text.encode()).digest()[:size]
    if not any(raw):  # all zero is invalid in OTLP
        raw = hashlib.sha256((text + "\0").encode()).digest()[:size]
    return raw


def trace_id(oid: str, key: str) -> bytes:
    return _id("durable.otel.trace", oid, key, 16)


def span_id(oid: str, key: str) -> bytes:
    return _id("durable.otel.span", oid, key, 8)


def traceparent(oid: str, prompt_id: int) -> str:
    """W3C trace context of a prompt's invoke_agent span (§15.5), for CMD's environment."""
    key = f"p{prompt_id}"
    return f"00-{trace_id(oid, key).hex()}-{span_id(oid, key).hex()}-01"


def rfc3339_ns(text):
    """An RFC 3339 time with a zone as epoch nanoseconds, or None when it is not one (the rule of meta's times)."""
    from ..core.transcript.row import time_ns

    return time_ns(text)


def _ms(ms) -> int:
    return int(ms) * 1_000_000


def _json(text):
    if text is None:
        return None
    if isinstance(text, (dict, list)):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


class _Content:
    """Content values cut to 64 KiB of UTF-8 at a character boundary (§15.4); remembers whether it cut."""

    def __init__(self):
        self.truncated = False
        self.cut_values: set = set()  # ids of the values that were cut, to mark their spans

    def __call__(self, text) -> str:
        text = "" if text is None else str(text)
        raw = text.encode("utf-8", "surrogatepass")
        if len(raw) <= CONTENT_LIMIT:
            return text
        self.truncated = True
        value = raw[:CONTENT_LIMIT].decode("utf-8", "ignore")
        self.cut_values.add(id(value))
        return value


def _message(row, calls) -> dict:
    parts = []
    if row["role"] == "tool":
        parts.append({"type": "tool_call_response", "id": row.get("call_id"), "response": row["content"]})
    elif row["content"]:
        parts.append({"type": "text", "content": row["content"]})
    for call in calls:
        parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("arguments")})
    return {"role": row["role"], "parts": parts}


def _messages(rows) -> str:
    return json.dumps([_message(r, _calls(r)) for r in rows], ensure_ascii=False, separators=(",", ":"))


def _calls(row) -> list:
    calls = _json(row.get("tool_calls")) if row["role"] == "assistant" else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _failure(error) -> str:
    return _FAILURES.get(error or "", "failed")


def session_spans(record: dict, *, content: bool = False, since_ns=None) -> list:
    """Every span of one exported object (§15.2), roots and children, in trace order."""
    oid = record["id"]
    meta = record.get("object") or {}
    base = {"gen_ai.conversation.id": oid}
    cut = _Content()
    if content:
        base["durable.session.name"] = cut(record.get("name"))
        if meta.get("title") is not None:
            base["durable.session.title"] = cut(meta["title"])
        if record.get("scope") == "user":
            base["user.id"] = cut(record.get("owner"))
        elif record.get("scope") == "tenant":
            base["durable.tenant"] = cut(record.get("owner"))
    rows = sorted((r for r in record.get("turns", ()) if r.get("kind") != "summary" and r.get("forked_from") is None),
                  key=lambda r: r["seq"])
    results: dict = {}
    for r in rows:
        if r["role"] == "tool" and r.get("call_id") is not None:
            results.setdefault(r["call_id"], []).append(r)
    turns: list = []
    for r in rows:
        if r["role"] == "user":
            turns.append([r])
        elif turns:
            turns[-1].append(r)
    finished = {}
    for p in record.get("prompts", ()):
        if p.get("status") in ("completed", "failed") and p.get("started_at") is not None and (p.get("attempts") or 1) > 0:
            finished[p["id"]] = p
    by_turn = {p["turn_seq"]: p for p in finished.values() if p.get("turn_seq") is not None}
    row_seqs = {r["seq"] for r in rows}
    out: list = []
    prompt_roots: list = []  # (prompt, root span) for the elicitations' parents

    def add_turn(user_rows, prompt):
        first = user_rows[0] if user_rows else None
        key = f"p{prompt['id']}" if prompt is not None else f"r{first['seq']}"
        tid, root_id = trace_id(oid, key), span_id(oid, key)
        attrs = dict(base)
        attrs["gen_ai.operation.name"] = "invoke_agent"
        if first is not None:
            attrs["durable.turn.seq"] = first["seq"]
        if prompt is not None:
            attrs["durable.prompt.id"] = prompt["id"]
            attrs["durable.prompt.attempts"] = prompt.get("attempts") or 1
            attrs["durable.prompt.outcome"] = prompt["status"]
            start, end = _ms(prompt["started_at"]), _ms(prompt.get("completed_at") or prompt["started_at"])
        else:
            start = end = _ms(first["created_at"])
        root = Span(tid, root_id, None, "invoke_agent", INTERNAL, start, end, attrs)
        children = []
        previous_end = start
        for r in user_rows[1:]:
            if r["role"] != "assistant":
                continue
            m = _json(r.get("meta"))
            m = m if isinstance(m, dict) else {}
            row_end = _ms(r["created_at"])
            calls = _calls(r)
            if "model" in m or "usage" in m or "started_at" in m:
                model = m.get("model") if isinstance(m.get("model"), str) else None
                a = dict(base)
                a["gen_ai.operation.name"] = "chat"
                if model is not None:
                    a["gen_ai.request.model"] = a["gen_ai.response.model"] = model
                if isinstance(m.get("provider"), str):
                    a["gen_ai.provider.name"] = m["provider"]
                usage = m.get("usage") if isinstance(m.get("usage"), dict) else {}
                for field, name in (("input_tokens", "gen_ai.usage.input_tokens"),
                                    ("output_tokens", "gen_ai.usage.output_tokens"),
                                    ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
                                    ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
                                    ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens")):
                    if type(usage.get(field)) is int:
                        a[name] = usage[field]
                if type(m.get("cost_usd")) in (int, float):
                    a["durable.cost_usd"] = float(m["cost_usd"])
                a["durable.row.seq"] = r["seq"]
                s, e = rfc3339_ns(m.get("started_at")), rfc3339_ns(m.get("ended_at"))
                if s is not None and e is not None and e >= s:
                    a["durable.timing"] = "measured"
                else:
                    a["durable.timing"] = "inferred"
                    s, e = min(previous_end, row_end), row_end
                if content:
                    before = [x for x in user_rows if x["seq"] < r["seq"]]
                    a["gen_ai.input.messages"] = cut(_messages(before))
                    a["gen_ai.output.messages"] = cut(_messages([r]))
                chat = Span(tid, span_id(oid, f"c{r['seq']}"), root_id, f"chat {model}" if model else "chat", CLIENT, s, e, a)
                children.append(chat)
                previous_end = e
                call_start = e
            else:
                call_start = row_end
            for index, call in enumerate(calls):
                a = dict(base)
                a["gen_ai.operation.name"] = "execute_tool"
                a["gen_ai.tool.name"] = str(call.get("name"))
                a["gen_ai.tool.call.id"] = str(call.get("id"))
                a["gen_ai.tool.type"] = "function"
                a["durable.row.seq"] = r["seq"]
                answer = next((x for x in results.get(call.get("id"), ()) if x["seq"] > r["seq"]), None)
                if answer is not None:
                    a["durable.result.seq"] = answer["seq"]
                    am = _json(answer.get("meta"))
                    e = rfc3339_ns(am.get("ended_at")) if isinstance(am, dict) else None
                    e = _ms(answer["created_at"]) if e is None else e
                else:
                    e = call_start
                if content:
                    a["gen_ai.tool.call.arguments"] = cut(call.get("arguments"))
                    if answer is not None:
                        a["gen_ai.tool.call.result"] = cut(answer["content"])
                tool = Span(tid, span_id(oid, f"t{r['seq']}.{index}"), root_id, f"execute_tool {call.get('name')}",
                            INTERNAL, call_start, max(e, call_start), a)
                if answer is None:
                    tool.status, tool.attributes["error.type"] = ERROR, "missing_result"
                children.append(tool)
                previous_end = max(previous_end, tool.end)
            if not ("model" in m or "usage" in m or "started_at" in m):
                previous_end = max(previous_end, row_end)
        if prompt is not None:
            if prompt["status"] == "completed":
                root.status = OK
            else:
                root.status = ERROR
                attrs["error.type"] = _failure(prompt.get("error"))
                if content and prompt.get("error"):
                    root.description = cut(prompt["error"])
        else:
            root.end = max([c.end for c in children], default=root.start)
        if content and first is not None:
            # rows before the first user row (a system prompt) belong to no turn: they are the first turn's input
            leading = [x for x in rows if x["seq"] < first["seq"]] if turns and first is turns[0][0] else []
            attrs["gen_ai.input.messages"] = cut(_messages(leading + [first]))
            final = [x for x in user_rows if x["role"] == "assistant" and not _calls(x)]
            if final:
                attrs["gen_ai.output.messages"] = cut(_messages([final[-1]]))
        _nest(root, children)
        out.append([root] + children)
        if prompt is not None:
            prompt_roots.append((prompt, root))

    for part in turns:
        add_turn(part, by_turn.get(part[0]["seq"]))
    for p in finished.values():  # a finished prompt whose turn is gone still makes its span
        if p.get("turn_seq") is None or p["turn_seq"] not in row_seqs:
            add_turn([], p)
    for q in record.get("requests", ()):
        if q.get("status") not in ("answered", "expired"):
            continue
        end_ms = q.get("answered_at") if q["status"] == "answered" else q.get("expires_at")
        start, end = _ms(q["created_at"]), _ms(end_ms if end_ms is not None else q["created_at"])
        choices = _json(q.get("choices"))
        choices = [str(c) for c in choices] if isinstance(choices, list) else []
        a = dict(base)
        a["durable.elicit.id"] = q["id"]
        a["durable.elicit.status"] = q["status"]
        a["durable.elicit.choice_made"] = q["status"] == "answered" and q.get("answer") is not None and q["answer"] in choices
        if content:
            a["durable.elicit.prompt"] = cut(q.get("prompt"))
            a["durable.elicit.choices"] = [cut(c) for c in choices]
            if q.get("answer") is not None:
                a["durable.elicit.answer"] = cut(q["answer"])
            if q.get("comment") is not None:
                a["durable.elicit.comment"] = cut(q["comment"])
        parent = None
        for p, root in prompt_roots:
            if p["started_at"] <= q["created_at"] <= (p.get("completed_at") or p["started_at"]):
                parent = root
        if parent is not None:
            span = Span(parent.trace_id, span_id(oid, f"e{q['id']}"), parent.span_id, "elicit", INTERNAL, start, end, a)
            group = next(g for g in out if g[0] is parent)
            group.append(span)
            _nest(parent, group[1:])
        else:
            key = f"e{q['id']}"
            span = Span(trace_id(oid, key), span_id(oid, key), None, "elicit", INTERNAL, start, end, a)
            out.append([span])
        if q["status"] == "expired":
            span.attributes["error.type"] = "timeout"
    if since_ns is not None:
        out = [g for g in out if g[0].end >= since_ns]
    spans = [s for g in out for s in g]
    if cut.truncated:  # the spans that hold a value that was cut (values stay alive in the spans: their ids are theirs)
        for s in spans:
            if any(id(v) in cut.cut_values or (isinstance(v, list) and any(id(x) in cut.cut_values for x in v))
                   for v in s.attributes.values()):
                s.attributes["durable.content.truncated"] = True
    return spans


def _nest(parent, children) -> None:
    """A child never starts before its parent; a parent ends no earlier than its last child (§15.2)."""
    for c in children:
        if c.start < parent.start:
            c.start = parent.start
        if c.end < c.start:
            c.end = c.start
        if c.end > parent.end:
            parent.end = c.end
