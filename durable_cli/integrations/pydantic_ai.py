"""durable as Pydantic AI's message history (docs/reference/integrations.md §12; extra `pydantic-ai`).

    from durable_cli.integrations.pydantic_ai import DurableMessageHistory

    history = DurableMessageHistory("pr-42")
    result = await agent.run(prompt, message_history=history.load())
    history.append(result.new_messages())

Each session id is one durable object (NAME by `durable_cli.integrations.object_name`, the id kept as
`external_id`). Each message becomes one or more consecutive rows, readable by the CLI, the windows of
`transcript recent --format …`, `search` and `usage`:

| Pydantic AI                       | row                                                            |
|-----------------------------------|----------------------------------------------------------------|
| `SystemPromptPart`                | `system`                                                       |
| `UserPromptPart`                  | `user`: a string as is, a list's strings joined with `\\n`     |
| `ToolReturnPart`                  | `tool`: `call_id`, `name`, `model_response_str()`              |
| `RetryPromptPart`                 | `tool` (with a tool name) or `user`: `model_response()`        |
| other request parts               | `user`, content `""`                                           |
| `ModelResponse`                   | one `assistant` row: its `text`, `ToolCallPart`s as `tool_calls`, `meta` model, provider, usage |

The first row of a message holds the whole message in `data` (`{"pydantic_ai": {"message": M}}`, M
its pydantic-ai JSON form), each later row `{"pydantic_ai": {"part": I}}`, so `load()` gives back the
messages exactly. Rows written otherwise (the CLI, other adapters, summaries, redacted rows) come back
as messages built from their fields. Only `pydantic_ai.messages` is imported (no model provider's
SDK), and only the library is used (`durable_cli.Store`), so the remote backend works the same.
"""

import asyncio
import datetime
import json
from collections.abc import Iterator

from .. import DurableError
from . import object_name

ADAPTER = "pydantic-ai"
KEY = "pydantic_ai"


def _messages_module():
    try:
        from pydantic_ai import messages
    except ImportError as e:  # the extra is not installed
        raise ImportError("durable_cli.integrations.pydantic_ai needs pydantic-ai: pip install 'durable-cli[pydantic-ai]'") from e
    return messages


# ---------------------------------------------------------------- messages -> rows

def message_rows(message, m=None) -> list:
    """The rows (docs/reference/transcript.md §6 input fields) of one ModelMessage, the message itself in the first row's `data`."""
    m = m or _messages_module()
    if isinstance(message, m.ModelResponse):
        rows = [_response_row(message, m)]
    elif isinstance(message, m.ModelRequest):
        rows = [_request_part_row(part, m) for part in message.parts] or [{"role": "user", "content": ""}]
    else:
        raise DurableError(f"a Pydantic AI message must be a ModelRequest or ModelResponse, not {type(message).__name__}",
                           "invalid_input")
    dumped = m.ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    rows[0]["data"] = {KEY: {"message": dumped}}
    for i, row in enumerate(rows[1:], 1):
        row["data"] = {KEY: {"part": i}}
    return rows


def _request_part_row(part, m) -> dict:
    if isinstance(part, m.SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, m.UserPromptPart):
        content = part.content
        if not isinstance(content, str):  # images, files... live only in data
            content = "\n".join(item for item in content if isinstance(item, str))
        return {"role": "user", "content": content}
    if isinstance(part, m.ToolReturnPart):
        return _tool_row(part, part.model_response_str())
    if isinstance(part, m.RetryPromptPart):
        if part.tool_name:
            return _tool_row(part, part.model_response())
        return {"role": "user", "content": part.model_response()}
    return {"role": "user", "content": ""}


def _tool_row(part, content) -> dict:
    row = {"role": "tool", "content": content, "call_id": part.tool_call_id}
    if part.tool_name:
        row["name"] = part.tool_name
    return row


def _response_row(response, m) -> dict:
    calls = []
    for part in response.parts:
        if isinstance(part, m.ToolCallPart):
            args = part.args
            arguments = args if isinstance(args, str) else "{}" if args is None else part.args_as_json_str()
            calls.append({"id": part.tool_call_id, "name": part.tool_name, "arguments": arguments})
    usage = response.usage
    meta = {}
    if response.model_name is not None:
        meta["model"] = response.model_name
    if response.provider_name is not None:
        meta["provider"] = response.provider_name
    # RequestUsage's input_tokens already include cache reads and writes: docs/reference/transcript.md §6's convention
    meta["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                     "cache_read_tokens": usage.cache_read_tokens, "cache_write_tokens": usage.cache_write_tokens}
    cost = getattr(usage, "cost", None)  # a provider-reported cost only; durable's price table computes the rest
    if cost is not None:
        meta["cost_usd"] = float(cost)
    return {"role": "assistant", "content": response.text or "", "tool_calls": calls or None, "meta": meta}


# ---------------------------------------------------------------- rows -> messages

def _ours(row):
    data = row.get("data")
    if isinstance(data, dict) and len(data) == 1 and isinstance(data.get(KEY), dict):
        return data[KEY]
    return None


def rows_to_messages(rows, m=None) -> list:
    """The ModelMessages of live rows in logical order (docs/reference/integrations.md §12 "Round trip" and "Rows the adapter did not write")."""
    m = m or _messages_module()
    out = []
    request_parts: list = []  # parts of a ModelRequest being built from consecutive non-adapter rows
    request_time = None
    call_names: dict = {}  # call id -> tool name, from every assistant row read so far
    later: Iterator[int] = iter(())  # the part indexes still to come of the last adapter message read

    def flush():
        nonlocal request_parts
        if request_parts:
            out.append(m.ModelRequest(parts=request_parts, timestamp=request_time))
            request_parts = []

    for row in rows:
        for call in row.get("tool_calls") or ():
            call_names.setdefault(call["id"], call["name"])
        ours = _ours(row)
        if ours is not None and "message" in ours and isinstance(ours["message"], dict):
            flush()
            try:
                message = m.ModelMessagesTypeAdapter.validate_json(json.dumps([ours["message"]]))[0]
            except ValueError:
                message = None  # not a message this pydantic-ai reads: built from the row's fields below
            if message is not None:
                out.append(message)
                count = len(message.parts) if isinstance(message, m.ModelRequest) else 1
                later = iter(range(1, count))
                continue
        if ours is not None and "part" in ours and ours["part"] == next(later, None):
            continue  # shown by its message, read above
        later = iter(())
        if not row["content"] and not row.get("tool_calls") and ours is None:
            continue
        when = _time(row)
        if row["role"] == "assistant" and row.get("kind") != "summary":
            flush()
            parts = [m.TextPart(content=row["content"])] if row["content"] else []
            parts += [m.ToolCallPart(tool_name=c["name"], args=c["arguments"], tool_call_id=c["id"]) for c in row.get("tool_calls") or ()]
            model = (row.get("meta") or {}).get("model")
            out.append(m.ModelResponse(parts=parts, model_name=model if isinstance(model, str) else None, timestamp=when))
            continue
        if not request_parts:
            request_time = when
        if row.get("kind") == "summary" or row["role"] in ("system", "developer"):
            request_parts.append(m.SystemPromptPart(content=row["content"], timestamp=when))
        elif row["role"] == "tool":
            name = row.get("name") or call_names.get(row.get("call_id")) or ""
            request_parts.append(m.ToolReturnPart(tool_name=name, content=row["content"], tool_call_id=row["call_id"], timestamp=when))
        else:
            request_parts.append(m.UserPromptPart(content=row["content"], timestamp=when))
    flush()
    return out


def _time(row):
    try:
        return datetime.datetime.fromisoformat(row["created_at"])
    except (KeyError, TypeError, ValueError):
        return datetime.datetime.now(datetime.timezone.utc)


# ---------------------------------------------------------------- the history

class DurableMessageHistory:
    """One durable session as a Pydantic AI message history (docs/reference/integrations.md §12).

    HOME, USER and TENANT are those of `durable_cli.Store`. A session that does not exist reads as
    empty and is not created by reading; the first non-empty `append` creates it. Errors are
    `DurableError`: a write to an archived session has code `conflict`, a lock not obtained in time
    `busy`; an append is one transaction (all messages or none).
    """

    def __init__(self, session_id: str, *, home=None, user=None, tenant=None):
        from ..library import Store

        self.session_id = session_id
        self.name = object_name(session_id)
        self.store = Store(home=home, user=user, tenant=tenant)

    def load(self) -> list:
        """The session's messages, for `agent.run(..., message_history=...)`."""
        m = _messages_module()
        try:
            with self.store.open(self.name) as session:
                rows = session.rows()
        except DurableError as e:
            if e.code == "not_found":
                return []
            raise
        return rows_to_messages(rows, m)

    def append(self, messages) -> None:
        """Append MESSAGES (any iterable of ModelMessage: a run's `new_messages()`) in one transaction."""
        m = _messages_module()
        rows = [row for message in messages for row in message_rows(message, m)]
        if not rows:
            return
        with self.store.open(self.name, create=True) as session:
            session.append_many(rows, seqs_only=True, origin=(self.session_id, ADAPTER))

    def clear(self) -> None:
        """Delete every message (`transcript clear`); the session itself stays."""
        try:
            with self.store.open(self.name) as session:
                session.clear()
        except DurableError as e:
            if e.code != "not_found":
                raise

    async def aload(self) -> list:
        return await asyncio.to_thread(self.load)

    async def aappend(self, messages) -> None:
        from .openai_agents import _finish  # a write that committed is reported even if the caller is cancelled

        messages = list(messages)
        await _finish(lambda: self.append(messages))

    async def aclear(self) -> None:
        from .openai_agents import _finish

        await _finish(self.clear)
