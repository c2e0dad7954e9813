"""durable as a LangGraph checkpointer (docs/reference/integrations.md §12; extra `langgraph`).

    from durable_cli.integrations.langgraph import DurableSaver
    graph = builder.compile(checkpointer=DurableSaver())
    graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "chat-42"}})

One durable object per thread_id (NAME by `durable_cli.integrations.object_name`, the thread id kept
as `external_id`), holding the thread's checkpoints and pending writes in its own tables. The root
namespace's `messages` channel is mirrored into transcript rows (each message once, by id, when a
checkpoint first holds it), so `durable transcript show`, `ls`, `ttl`, `purge`, `forget` and `export`
work on the thread; the transcript commands that rewrite rows refuse a thread the saver owns (exit 4).
`delete_thread` deletes the object and leaves a tombstone: a late `put`/`put_writes` carrying a
checkpoint id from before the delete raises `DurableError` (code `conflict`) instead of resurrecting
the thread. `keep_checkpoints=N` keeps only the newest N checkpoints per thread and namespace.
"""

import asyncio
import json
import random
import re
from functools import partial

from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)

from .. import DurableError
from ..contract.messages import say
from ..library import KEPT_MISS as _KEPT_MISS
from ..library import checkpoint_metadata as _metadata_json
from . import object_name

ADAPTER = "langgraph"


def _fields(message):
    row = message_row(message)
    return None if row is None else row[1]


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p if isinstance(p, str) else p.get("text", "") for p in content
                         if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str)))
    return ""


def message_row(message):
    """(message id, row fields) of a LangChain message, or None for a message that is not mirrored."""
    kind = getattr(message, "type", None)
    mid = getattr(message, "id", None)
    if not mid:
        return None
    content = _text(getattr(message, "content", ""))
    data = {"type": kind, "id": mid}
    if kind == "human":
        return mid, {"role": "user", "content": content, "data": data}
    if kind == "system":
        return mid, {"role": "system", "content": content, "data": data}
    if kind == "ai":
        calls = [{"id": c["id"], "name": c["name"], "arguments": json.dumps(c.get("args", {}), ensure_ascii=False)}
                 for c in getattr(message, "tool_calls", None) or () if c.get("id") and c.get("name")]
        return mid, {"role": "assistant", "content": content, "tool_calls": calls or None, "data": data}
    if kind == "tool" and getattr(message, "tool_call_id", None):
        return mid, {"role": "tool", "content": content, "call_id": message.tool_call_id,
                     "name": getattr(message, "name", None) or None, "data": data}
    return None


_FILTER_KEY = re.compile(r"^[a-zA-Z0-9_.-]+$")
_MISSING = object()


def _metadata_filter(filter):  # noqa: A002 - LangGraph's own parameter name
    """`list(filter=...)` as SqliteSaver reads it: each key a dotted path into the metadata
    (`{"user.access-level": 2}`), keys of other characters a ValueError; None matches a missing value or
    null, a dict or list its JSON. None when there is no filter."""
    if not filter:
        return None
    for key in filter:
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise ValueError(f"Invalid filter key: {key!r}. Filter keys must contain only alphanumeric characters, "
                             "underscores, dots, and hyphens.")
    paths = [(key.split("."), value) for key, value in filter.items()]

    def lookup(metadata, path):
        for part in path:
            if not isinstance(metadata, dict) or part not in metadata:
                return _MISSING
            metadata = metadata[part]
        return metadata

    def matches(metadata) -> bool:
        for path, wanted in paths:
            found = lookup(metadata, path)
            if wanted is None:
                if found is not _MISSING and found is not None:
                    return False
            elif found is _MISSING or found != wanted or isinstance(found, (dict, list)) != isinstance(wanted, (dict, list)):
                return False
        return True

    return matches


def _checkpoint_key(config):
    c = config["configurable"]
    return (str(c.get("thread_id")), c.get("checkpoint_ns", ""), c.get("checkpoint_id"))


class DurableSaver(BaseCheckpointSaver):
    """A LangGraph checkpointer over durable objects (sync and async methods)."""

    def __init__(self, *, home=None, user=None, tenant=None, keep_checkpoints=None, serde=None):
        super().__init__(serde=serde)
        from ..library import Store

        if keep_checkpoints is not None and (isinstance(keep_checkpoints, bool) or not isinstance(keep_checkpoints, int)
                                             or keep_checkpoints < 1):
            raise DurableError(say("keep_checkpoints"), "invalid_input")
        self.keep_checkpoints = keep_checkpoints
        self.store = Store(home=home, user=user, tenant=tenant, keep_open=True)
        self._local = not getattr(self.store, "remote", False)

    # -- helpers --------------------------------------------------------------------------------------

    def _refuse_late(self, name, thread_id, *ids) -> None:
        if getattr(self.store, "remote", False):
            return  # the Worker judges the put by the tombstone in the same request (worker/src/rules/checkpoints.ts)
        grave = self.store.tombstone(name)
        if grave is None or not grave["last_checkpoint"]:
            return
        if any(i is not None and i <= grave["last_checkpoint"] for i in ids):
            raise DurableError(say("thread_deleted", thread=thread_id), "conflict")

    def _tuple(self, session, thread_id, row, writes=None):
        ns, cid, parent, type_, blob, metadata = row
        if writes is None:
            writes = session.checkpoint_writes(ns, cid)
        writes = sorted(writes, key=lambda r: writes_sort_key(r[4], r[0], r[5]))
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}
        parent_config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}} if parent else None
        return CheckpointTuple(config, self.serde.loads_typed((type_, blob)), json.loads(metadata), parent_config,
                               [(task, channel, self.serde.loads_typed((t, v))) for task, channel, t, v, _, _ in writes])

    def _read(self, thread_id, work):
        try:
            with self.store.open(object_name(str(thread_id))) as session:
                return work(session)
        except DurableError as e:
            if e.code == "not_found":
                return None
            raise

    # -- the checkpointer contract ---------------------------------------------------------------------

    def get_tuple(self, config):
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        cid = get_checkpoint_id(config) or None  # "" means the latest, as in SqliteSaver and InMemorySaver

        if self._local:
            # once per graph step: read on the kept connection when nothing needs doing first (Store.read_kept)
            found = self.store.read_checkpoint_kept(object_name(thread_id), ns, cid)
            if found is not _KEPT_MISS:
                return self._tuple(None, thread_id, *found) if found else None

        def work(session):
            found = session.checkpoint_latest(ns=ns, checkpoint_id=cid)
            return self._tuple(session, thread_id, *found) if found else None

        return self._read(thread_id, work)

    def list(self, config, *, filter=None, before=None, limit=None):  # noqa: A002 - LangGraph's own parameter name
        before_id = (get_checkpoint_id(before) or None) if before else None
        matches = _metadata_filter(filter)
        if config is not None:
            threads = [str(config["configurable"]["thread_id"])]
            ns = config["configurable"].get("checkpoint_ns")
            cid = get_checkpoint_id(config) or None
        else:
            threads = [r["external_id"] for r in self.store.ls(all_objects=True) if r.get("external_id") is not None]
            ns = cid = None
        found = []
        for thread_id in threads:
            def work(session, thread_id=thread_id):
                meta = session.meta()
                if meta is None or meta["adapter"] != ADAPTER:
                    return []
                out = []
                for row in session.checkpoint_rows(ns=ns, checkpoint_id=cid, before=before_id):
                    if matches is not None and not matches(json.loads(row[5])):
                        continue
                    out.append(self._tuple(session, thread_id, row))
                    if limit is not None and config is not None and len(out) >= limit:
                        break
                return out

            found += self._read(thread_id, work) or []
        found.sort(key=lambda t: t.config["configurable"]["checkpoint_id"], reverse=True)
        yield from found[:limit] if limit is not None else found

    def put(self, config, checkpoint, metadata, new_versions):
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        parent = config["configurable"].get("checkpoint_id")
        name = object_name(thread_id)
        self._refuse_late(name, thread_id, parent)
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = _metadata_json(get_checkpoint_metadata(config, metadata))
        mirror = ()
        if ns == "":
            # (id, a function making its row): a row is made only for a message not mirrored yet
            mirror = [(message.id, partial(_fields, message))
                      for message in (checkpoint.get("channel_values") or {}).get("messages") or () if getattr(message, "id", None)]
        with self.store.open(name, create=True) as session:
            session.put_checkpoint(external_id=thread_id, ns=ns, checkpoint_id=checkpoint["id"], parent_id=parent,
                                   type_=type_, blob=blob, metadata=meta, mirror=mirror, keep=self.keep_checkpoints)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config, writes, task_id, task_path=""):
        thread_id = str(config["configurable"]["thread_id"])
        ns = str(config["configurable"].get("checkpoint_ns", ""))
        cid = str(config["configurable"]["checkpoint_id"])
        name = object_name(thread_id)
        self._refuse_late(name, thread_id, cid)
        rows = [(task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
                for idx, (channel, value) in enumerate(writes)]
        replace = all(w[0] in WRITES_IDX_MAP for w in writes)
        with self.store.open(name, create=True) as session:
            session.put_checkpoint_writes(external_id=thread_id, ns=ns, checkpoint_id=cid, writes=rows, replace=replace)

    def get_next_version(self, current, channel=None):
        """The next version of a channel (docs/reference/integrations.md §12): the strings SqliteSaver, InMemorySaver and PostgresSaver
        write (`<32-digit counter>.<random>`), so a thread copied from one of them resumes, and a new thread's
        versions are theirs; a thread written with integer versions (the base class's) goes on with integers,
        since LangGraph compares a checkpoint's versions with each other."""
        if isinstance(current, (int, float)) and not isinstance(current, bool):
            return current + 1
        n = 0 if current is None else int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    def delete_thread(self, thread_id):
        thread_id = str(thread_id)
        try:
            with self.store.open(object_name(thread_id)) as session:
                session.delete_thread()
        except DurableError as e:
            if e.code != "not_found":
                raise

    def get_delta_channel_history(self, *, config, channels):
        """The base class's walk up the parent chain (a channel's writes back to its nearest stored value),
        ended at a checkpoint already visited: a parent chain with a cycle (a damaged or hand-made
        thread) would otherwise never end."""
        if not channels:
            return {}
        collected = {c: [] for c in channels}
        seeds, remaining, seen = {}, set(channels), set()
        target = self.get_tuple(config)
        cursor = target.parent_config if target else None
        if target is not None:
            seen.add(_checkpoint_key(target.config))
        while cursor is not None and remaining:
            key = _checkpoint_key(cursor)
            if key in seen:
                break
            seen.add(key)
            tup = self.get_tuple(cursor)
            if tup is None:
                break
            for write in reversed(tup.pending_writes or ()):
                if write[1] in remaining:
                    collected[write[1]].append(write)
            for channel in list(remaining):
                if channel in tup.checkpoint["channel_values"]:
                    seeds[channel] = tup.checkpoint["channel_values"][channel]
                    remaining.discard(channel)
            cursor = tup.parent_config
        result = {}
        for channel in channels:
            result[channel] = {"writes": list(reversed(collected[channel]))}
            if channel in seeds:
                result[channel]["seed"] = seeds[channel]
        return result

    async def aget_delta_channel_history(self, *, config, channels):
        return await asyncio.to_thread(lambda: self.get_delta_channel_history(config=config, channels=channels))

    # -- async: the same work in a worker thread ------------------------------------------------------

    async def aget_tuple(self, config):
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config, *, filter=None, before=None, limit=None):  # noqa: A002 - LangGraph's own parameter name
        for item in await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit))):
            yield item

    async def aput(self, config, checkpoint, metadata, new_versions):
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes, task_id, task_path=""):
        return await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id):
        return await asyncio.to_thread(self.delete_thread, thread_id)

    def close(self) -> None:
        self.store.close()
