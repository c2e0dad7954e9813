"""durable as the session store of the OpenAI Agents SDK (docs/reference/integrations.md §12; extra `openai-agents`).

    from agents import Agent, Runner
    from durable_cli.integrations.openai_agents import DurableSession

    result = await Runner.run(agent, "hello", session=DurableSession("chat-42"))

Each session id is one durable object (NAME by `durable_cli.integrations.object_name`, the id kept
as `external_id`). Every item the SDK adds becomes one transcript row holding the item verbatim in
`data`, and readable fields beside it, so `durable transcript show` reads as a conversation:

| SDK item                                         | row                                              |
|--------------------------------------------------|--------------------------------------------------|
| message (`user`, `assistant`, `system`, `developer`) | that role, its text parts joined as `content` |
| `function_call`                                  | `assistant`, `tool_calls` = [{id, name, arguments}] |
| `function_call_output`                           | `tool`, `call_id`, the output's text as `content` |
| anything else (reasoning, hosted tool calls, ...) | `assistant` (`tool` for an `*_output` with a call id), `content` "" |

Rows written without `data` (by the CLI, summaries, redacted rows) come back as SDK items: text as
a message, a summary as a `system` message, tool calls as `function_call` items, `tool` rows as
`function_call_output` items. Each call opens the object under its lock and closes it again, as a
CLI command would: other processes (the CLI, another agent) may use the session in between.
"""

import asyncio
import contextvars
import json

from .. import DurableError
from . import object_name

ADAPTER = "openai-agents"
_TEXT_PARTS = ("input_text", "output_text", "text", "refusal")


def _text_of(content) -> str:
    """The readable text of a message's or an output's content: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
                text = part.get("text", part.get("refusal"))
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    return ""


def item_to_row(item) -> dict:
    """The transcript row (docs/reference/transcript.md §6 input fields) of one SDK item; the item itself goes in `data`."""
    if not isinstance(item, dict):
        raise DurableError(f"an Agents SDK item must be a dict, not {type(item).__name__}", "invalid_input")
    kind = item.get("type")
    role = item.get("role")
    if kind in (None, "message") and role in ("user", "assistant", "system", "developer"):
        return {"role": role, "content": _text_of(item.get("content")), "data": item}
    if kind == "function_call" and _nonempty(item.get("call_id")) and _nonempty(item.get("name")):
        arguments = item.get("arguments")
        call = {"id": item["call_id"], "name": item["name"], "arguments": arguments if isinstance(arguments, str) else "{}"}
        return {"role": "assistant", "content": "", "tool_calls": [call], "data": item}
    if isinstance(kind, str) and kind.endswith("_output") and _nonempty(item.get("call_id")):
        content = _text_of(item.get("output")) if kind == "function_call_output" else ""
        return {"role": "tool", "content": content, "call_id": item["call_id"], "data": item}
    return {"role": "assistant", "content": "", "data": item}


def _nonempty(value) -> bool:
    return isinstance(value, str) and value != ""


def row_to_items(row: dict) -> list:
    """The SDK items of one row: its `data` as stored, or (a row written without it) items made from its fields."""
    if row["data"] is not None:
        return [row["data"]]
    role = "system" if row["kind"] == "summary" else row["role"]
    if role == "tool":
        return [{"type": "function_call_output", "call_id": row["call_id"], "output": row["content"]}]
    items = [{"role": role, "content": row["content"]}] if row["content"] or not row["tool_calls"] else []
    for call in row["tool_calls"] or ():
        items.append({"type": "function_call", "call_id": call["id"], "name": call["name"], "arguments": call["arguments"]})
    return items


def _stored_to_items(stored) -> list:
    """row_to_items of a row read by `stored_rows` (data, role, kind, content, call_id, tool_calls)."""
    data, role, kind, content, call_id, calls = stored
    if data is not None:
        return [json.loads(data)]
    return row_to_items({"data": None, "role": role, "kind": kind, "content": content, "call_id": call_id,
                         "tool_calls": json.loads(calls) if calls is not None else None})


async def _finish(blocking):
    """Run BLOCKING in a worker thread and wait for its outcome even if the caller is cancelled
    meanwhile (a write that committed is reported, then the cancellation is raised), as the SDK's
    own sessions do. (asyncio.to_thread's executor call, awaited through a shield: the cancellation
    reaches the caller, never the write.)"""
    future = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, blocking)
    cancelled = None
    while True:
        try:
            result = await asyncio.shield(future)
            break
        except asyncio.CancelledError as e:
            if future.done() and future.cancelled():
                raise
            cancelled = cancelled or e
            if future.done():
                break
    if cancelled is not None:
        future.exception()  # retrieved, so it is not reported as never retrieved
        raise cancelled
    return result


class DurableSession:
    """The Agents SDK `Session` protocol over one durable object (docs/reference/integrations.md §12).

    HOME, USER and TENANT are those of `durable_cli.Store` (default: DURABLE_HOME, the acting user,
    no tenant). A session that does not exist reads as empty and is not created by reading; the
    first `add_items` creates it (status `active`). Errors are `DurableError`: a write to an archived
    session has code `conflict`, a lock not obtained in time `busy`, an item over
    transcript.max_turn_bytes `invalid_input` (nothing of that batch is stored).
    """

    def __init__(self, session_id: str, *, home=None, user=None, tenant=None, session_settings=None):
        from ..library import Store

        self.session_id = session_id
        self.name = object_name(session_id)
        self.store = Store(home=home, user=user, tenant=tenant, keep_open=True)
        self.store.warm()  # as SQLiteSession opens its file when made
        self._closed = False
        try:
            from agents.memory.session_settings import SessionSettings, coerce_session_settings
        except ImportError:  # the SDK is not installed: the protocol still works without its settings type
            self.session_settings = session_settings
        else:
            self.session_settings = coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()

    # -- the protocol ---------------------------------------------------------------------------------

    async def get_items(self, limit=None) -> list:
        """The items in the order they were added; with LIMIT, the newest LIMIT of them (0: none)."""
        self._check_open()
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        return await asyncio.to_thread(self.get_items_sync, limit)

    async def add_items(self, items) -> None:
        """Append ITEMS in one transaction: all stored or none (an item json cannot encode: a TypeError,
        which is also a DurableError with code invalid_input)."""
        self._check_open()
        items = list(items)
        if items:
            await _finish(lambda: self.add_items_sync(items))

    async def pop_item(self):
        """Remove and return the newest item (`transcript pop`); None when the session is empty."""
        self._check_open()
        return await _finish(self.pop_item_sync)

    async def clear_session(self) -> None:
        """Delete every item (`transcript clear`); the session itself stays."""
        self._check_open()
        await _finish(self.clear_session_sync)

    # -- the same, synchronous ------------------------------------------------------------------------

    def get_items_sync(self, limit=None) -> list:
        self._check_open()
        if limit is not None and limit == 0:
            return []
        last = limit if limit is not None and limit > 0 else None  # a negative limit means all, as in SQLiteSession
        try:
            with self.store.open(self.name) as session:
                stored = session.stored_rows(last=last)
        except DurableError as e:
            if e.code == "not_found":
                return []
            raise
        loads = json.loads
        items = []
        for row in stored:
            if row[0] is not None:
                items.append(loads(row[0]))
            else:
                items += _stored_to_items(row)
        return items[-last:] if last is not None else items

    def add_items_sync(self, items) -> None:
        self._check_open()
        rows = [item_to_row(item) for item in items]
        if not rows:
            return
        with self.store.open(self.name, create=True) as session:
            session.append_many(rows, seqs_only=True, origin=(self.session_id, ADAPTER))

    def pop_item_sync(self):
        self._check_open()
        try:
            with self.store.open(self.name) as session:
                if not session.rows(last=1):
                    return None
                removed = session.pop(1)
        except DurableError as e:
            if e.code == "not_found":
                return None
            raise
        return row_to_items(removed[0])[-1]

    def clear_session_sync(self) -> None:
        self._check_open()
        try:
            with self.store.open(self.name) as session:
                session.clear()
        except DurableError as e:
            if e.code != "not_found":
                raise

    # -- the SDK's compaction (OpenAIResponsesCompactionSession) -----------------------------------------

    async def _get_compaction_snapshot(self, limit, *, prune_prefix=None):
        """The SDK's private hook for compacting a suffix atomically (as its SQLiteSession has): the newest
        LIMIT items, whether they are the whole history, and `replace_suffix(start, output)`, which swaps
        items[start:] for OUTPUT in one transaction only if those rows are still the newest (else False,
        nothing changed). So an item another writer appends while the model compacts is never lost: the
        replacement is refused and the SDK keeps the history as it is (on either backend: one request to the
        Worker). None (the SDK's fallback) for a PRUNE_PREFIX (an expiring wrapper's), or rows that are not
        one item each."""
        self._check_open()
        if prune_prefix is not None:
            return None
        try:
            from agents.memory.session import _CompactionSnapshot
        except ImportError:  # an SDK without the hook: it never asks
            return None

        def read():
            try:
                with self.store.open(self.name) as session:
                    return session.rows(last=limit + 1)
            except DurableError as e:
                if e.code == "not_found":
                    return []
                raise

        rows = await asyncio.to_thread(read)
        complete = len(rows) <= limit
        rows = rows[-limit:] if limit > 0 else []
        if any(r["data"] is None or r["kind"] != "turn" for r in rows):
            return None
        items = [r["data"] for r in rows]
        seqs = [r["seq"] for r in rows]

        async def replace_suffix(start, output) -> bool:
            expected = seqs[start:]
            if not expected:
                return False
            new_rows = [item_to_row(item) for item in output]

            def replace() -> bool:  # one transaction on either backend
                with self.store.open(self.name) as session:
                    return session.replace_tail(expected, new_rows, origin=(self.session_id, ADAPTER))

            return await _finish(replace)

        return _CompactionSnapshot(items, complete, replace_suffix)

    def close(self) -> None:
        """Release the kept connections; the session then refuses every call (RuntimeError), as SQLiteSession does."""
        self._closed = True
        self.store.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"DurableSession {self.session_id!r} is closed")
