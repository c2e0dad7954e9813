"""A context window rendered as a provider's request input (docs/reference/transcript.md §6, `transcript recent --format`).

Pure functions over §6 row dicts already chosen by the window (logical order, pinned rows first).
What they guarantee is input the provider's API accepts, not only its SDK types: every tool call
stands before its results with nothing in between, a call without a result in the window and a
result without its call are left out, and a call id is answered once. Only `json` is imported:
this runs on the hot path of `session next --context`.
"""


from ..errors import conflict, invalid
from . import strict_json

FORMATS = ("messages", "responses", "anthropic", "gemini")


def render(rows, fmt: str):
    """The window `rows` in format `fmt` (one of FORMATS), as a JSON-ready value."""
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise invalid(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    return renderer(rows)


def render_messages(rows) -> list:
    """OpenAI Chat Completions `messages`: tool calls merged into one assistant message, its results right after."""
    out = []
    for step in _steps(rows):
        if step[0] == "text":
            row = step[1]
            out.append({"role": _text_role(row), "content": row["content"]})
            continue
        _, callers, calls, results = step
        out.append({
            "role": "assistant",
            "content": callers[0]["content"] or None,
            "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": _arguments(c)}}
                for c, _ in calls
            ],
        })
        out.extend({"role": "tool", "tool_call_id": r["call_id"], "content": r["content"]} for r in results)
    return out


def render_responses(rows) -> list:
    """OpenAI Responses API input items: messages, function_call and function_call_output items."""
    out = []
    for step in _steps(rows):
        if step[0] == "text":
            row = step[1]
            out.append({"type": "message", "role": _text_role(row), "content": row["content"]})
            continue
        _, callers, calls, results = step
        if callers[0]["content"]:
            out.append({"type": "message", "role": "assistant", "content": callers[0]["content"]})
        out.extend(
            {"type": "function_call", "call_id": c["id"], "name": c["name"], "arguments": _arguments(c)}
            for c, _ in calls
        )
        out.extend({"type": "function_call_output", "call_id": r["call_id"], "output": r["content"]} for r in results)
    return out


def render_anthropic(rows) -> dict:
    """Anthropic Messages API `{"system", "messages"}`: system, developer and summary rows make `system`;
    messages alternate user/assistant and start with the user's."""
    system = []
    messages: list = []  # [role, blocks]; a tool_use block keeps its call and row until it is known to be sent

    def add(role, blocks):
        if not blocks:
            return
        if messages and messages[-1][0] == role:
            messages[-1][1].extend(blocks)
        else:
            messages.append([role, blocks])

    for step in _steps(rows):
        if step[0] == "text":
            row = step[1]
            if row.get("kind") == "summary" or row["role"] in ("system", "developer"):
                if row["content"].strip():
                    system.append(row["content"])
            else:
                add("user" if row["role"] == "user" else "assistant", _text_blocks(row["content"]))
            continue
        _, callers, calls, results = step
        add("assistant", _text_blocks(callers[0]["content"]) + [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": None, "source": (c, row)} for c, row in calls
        ])
        add("user", [{"type": "tool_result", "tool_use_id": r["call_id"], "content": r["content"]} for r in results])

    # The API wants the user's message first: drop what leads it, and the results of calls so dropped.
    dropped: set = set()
    while messages:
        role, blocks = messages[0]
        if role == "user":
            blocks[:] = [b for b in blocks if not (b["type"] == "tool_result" and b["tool_use_id"] in dropped)]
            if blocks:
                break
        else:
            dropped.update(b["id"] for b in blocks if b["type"] == "tool_use")
        messages.pop(0)

    for _, blocks in messages:
        for block in blocks:
            if block["type"] == "tool_use":
                call, row = block.pop("source")
                block["input"] = _input_object(call, row, "anthropic", "tool_use input")
    out: dict = {"system": "\n\n".join(system)} if system else {}
    out["messages"] = [{"role": role, "content": blocks} for role, blocks in messages]
    return out


def render_gemini(rows) -> dict:
    """Gemini API `generateContent` body `{"systemInstruction", "contents"}` (REST names): system, developer
    and summary rows make `systemInstruction`, one text part each; contents alternate user/model, start with
    the user's, and every set of function calls is answered by the next content's function responses."""
    system = []
    contents: list = []  # [role, parts]; a functionCall part keeps its call and row until it is known to be sent

    def add(role, parts):
        if not parts:
            return
        if contents and contents[-1][0] == role:
            contents[-1][1].extend(parts)
        else:
            contents.append([role, parts])

    for step in _steps(rows):
        if step[0] == "text":
            row = step[1]
            if row.get("kind") == "summary" or row["role"] in ("system", "developer"):
                system.append({"text": row["content"]})
            else:
                add("user" if row["role"] == "user" else "model", [{"text": row["content"]}])
            continue
        _, callers, calls, results = step
        text = [{"text": callers[0]["content"]}] if callers[0]["content"] else []
        add("model", text + [{"functionCall": {"id": c["id"], "name": c["name"], "args": None}, "source": (c, row)} for c, row in calls])
        names = {c["id"]: c["name"] for c, _ in calls}
        add("user", [
            {"functionResponse": {"id": r["call_id"], "name": r.get("name") or names[r["call_id"]], "response": {"output": r["content"]}}}
            for r in results
        ])

    # The API wants the user's content first: drop what leads it, and the responses to calls so dropped.
    dropped: set = set()
    while contents:
        role, parts = contents[0]
        if role == "user":
            parts[:] = [p for p in parts if not ("functionResponse" in p and p["functionResponse"]["id"] in dropped)]
            if parts:
                break
        else:
            dropped.update(p["functionCall"]["id"] for p in parts if "functionCall" in p)
        contents.pop(0)

    for _, parts in contents:
        for part in parts:
            if "functionCall" in part:
                call, row = part.pop("source")
                part["functionCall"]["args"] = _input_object(call, row, "gemini", "functionCall args")
    out: dict = {"systemInstruction": {"parts": system}} if system else {}
    out["contents"] = [{"role": role, "parts": parts} for role, parts in contents]
    return out


_RENDERERS = {"messages": render_messages, "responses": render_responses, "anthropic": render_anthropic, "gemini": render_gemini}


def _steps(rows):
    """The window as a list of steps every format shares:
    ("text", row) for a text row, or ("calls", caller_rows, [(call, row)], result_rows) for one or
    more consecutive assistant rows with tool calls (the later ones calling tools only) followed by
    all their results, in logical order. Rows with neither text nor tool calls are left out, so are
    results without an earlier call and calls without a result (no API accepts either), and a call
    id used twice counts once; a row standing between a call and its result follows the results."""
    rows = [r for r in rows if r.get("content") or r.get("tool_calls")]
    first_call = {}  # call id -> index of the row that first made it
    result = {}  # call id -> index of its first result after the call
    for i, row in enumerate(rows):
        if row["role"] == "assistant":
            for call in row.get("tool_calls") or ():
                first_call.setdefault(call["id"], i)
        elif row["role"] == "tool":
            cid = row.get("call_id")
            if cid in first_call and cid not in result:
                result[cid] = i

    def answered_calls(i, row):
        seen = set()
        calls = []
        for call in row.get("tool_calls") or ():
            if first_call.get(call["id"]) == i and call["id"] in result and call["id"] not in seen:
                seen.add(call["id"])
                calls.append((call, row))
        return calls

    steps = []
    used = set()  # row indexes already placed in a calls step
    i = 0
    while i < len(rows):
        row = rows[i]
        if i in used:
            i += 1
            continue
        calls = answered_calls(i, row) if row["role"] == "assistant" else []
        if calls:
            callers = [row]
            j = i + 1
            while j < len(rows) and rows[j]["role"] == "assistant" and not rows[j].get("content"):
                more = answered_calls(j, rows[j])
                if not more:
                    break
                callers.append(rows[j])
                calls.extend(more)
                used.add(j)
                j += 1
            places = sorted(result[c["id"]] for c, _ in calls)
            used.update(places)
            steps.append(("calls", callers, calls, [rows[k] for k in places]))
        elif row["role"] == "tool":
            pass  # a result whose call is not in the window, or a second result for one call
        elif row["content"]:
            steps.append(("text", row))  # an assistant row whose calls all went unanswered keeps its text
        i += 1
    return steps


def _text_role(row) -> str:
    return "system" if row.get("kind") == "summary" else row["role"]


def _arguments(call) -> str:
    arguments = call.get("arguments")
    return "{}" if arguments is None else arguments


def _text_blocks(text) -> list:
    # Anthropic refuses text blocks that are empty or white space only.
    return [{"type": "text", "text": text}] if text and text.strip() else []


def _input_object(call, row, fmt, what) -> dict:
    try:  # RFC 8259 (docs/reference/transcript.md §6): NaN, 1e400, a duplicate key or 201 levels are not a JSON object either
        value = strict_json.loads(_arguments(call))
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise conflict(
            f"row {row.get('seq')}: the arguments of tool call {call['id']!r} ({call['name']}) are not a JSON object,"
            f" as the {fmt} format's {what} must be; use --format messages or responses,"
            " or redact the row ('durable transcript redact')"
        )
    return value
