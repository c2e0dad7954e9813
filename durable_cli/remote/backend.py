"""The Store's remote backend: the same interface as the file backend (durable_cli/library.py), each
operation one HTTP call to the object's Durable Object, which runs it in one storage transaction.

`RemoteStore.open(...)` yields a `RemoteSession` whose methods have the names and arguments of the
library's `Session`; nothing is locked client-side (the DO's input gate is the lock), and nothing is
sent until a method is called. Input is validated here first, as locally, so a rejected command
sends nothing.
"""

import threading
from contextlib import contextmanager

from .. import clock
from ..config import Config, valid_name
from ..contract.messages import say
from ..errors import DurableError, invalid
from ..seam import Ops, StoreOps, check, install, spec, spec_or_none
from .shapes import _fields

NO_REMOTE_MEANING = "'{}' is about the local data directory and is not available with --remote"


def not_available(command: str) -> DurableError:
    return invalid(NO_REMOTE_MEANING.format(command))


class RemoteAddress:
    __slots__ = ("id_scope", "owner", "name", "scope")

    def __init__(self, id_scope, owner, name, scope):
        self.id_scope, self.owner, self.name, self.scope = id_scope, owner, name, scope


PART_MARGIN = 4096  # a part's request around its items: op, address, config, request id, the part itself
ASK_LIMIT_FROM = 256 * 1024  # a body this big makes the client ask the Worker's limit first (once per store)


def _size(value) -> int:
    """Bytes of VALUE's JSON as the client sends it (client.py)."""
    import json

    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _lists(args: dict, patterns) -> list:
    """The lists of ARGS an op may send in parts (the contract's `parts`: "rows", or "record.*" for every list of
    args["record"]), as (path, list) pairs in that order."""
    out = []
    for p in patterns:
        if p.endswith(".*"):
            holder = args.get(p[:-2])
            if isinstance(holder, dict):
                out += [(f"{p[:-1]}{k}", v) for k, v in holder.items() if isinstance(v, list) and v]
        elif isinstance(args.get(p), list) and args[p]:
            out.append((p, args[p]))
    return out


def _with_lists(args: dict, share: dict) -> dict:
    """ARGS with each list named in SHARE (path -> items) replaced by those items."""
    out = dict(args)
    for path, items in share.items():
        head, _, key = path.partition(".")
        if key:
            out[head] = dict(out[head], **{key: items})
        else:
            out[head] = items
    return out


def _shares(args: dict, patterns, limit: int, stated: int) -> list:
    """The parts of a body whose lists (PATTERNS) are split so that each part's JSON stays under LIMIT bytes:
    a list of {path: items}, in order (one part when nothing can be split). An item too big for a part of its
    own, among others, is exit 2 before anything is sent (STATED: the Worker's limit, for the message)."""
    lists = _lists(args, patterns)
    several = sum(len(items) for _, items in lists) > 1
    base = _size(_with_lists(args, {path: [] for path, _ in lists}))
    budget = limit - base - PART_MARGIN
    shares, share, size = [], {}, 0
    for path, items in lists:
        for number, item in enumerate(items, 1):
            n = _size(item) + 1
            if n > budget and several:  # a part of its own would be refused: send nothing
                raise invalid(f"item {number} of {path} is {n} bytes of JSON, more than a part may hold under this Worker's "
                              f"DURABLE_MAX_BODY_BYTES ({stated}); nothing was sent (raise the variable: at least 6 x the "
                              "turn ceiling + 64 KiB lets any one row through)")
            if share and size + n > budget:
                shares.append(share)
                share, size = {}, 0
            share.setdefault(path, []).append(item)
            size += n
    shares.append(share)
    return shares


def _unb64(text):
    import base64

    return None if text is None else base64.b64decode(text)


def _joined(page_of) -> dict:
    """An export record from its pages (worker/src/rules/rights.ts exportObject: a request holds one page):
    the head, each table's rows in order (a table's key where it first comes, as the file backend's record
    orders them), the sequences last."""
    page = page_of(None)
    record = dict(page["head"])
    while True:
        for table, rows in page["tables"].items():
            record.setdefault(table, []).extend(rows)
        if page["next"] is None:
            record["sequences"] = page["sequences"]
            return record
        page = page_of(page["next"])


class RemoteSession(Ops):
    """An object served by the Worker; the methods of library.Session, each one request. The ops the
    contract marks `plain` are the seam's dispatcher (durable_cli/seam.py: arguments checked against the
    contract, then `run`, one request); an op whose client logic is only shaping its arguments or its answer
    is declared in remote/shapes.py SHAPES (parts are RemoteStore._send's, from the contract's `parts`); the
    methods written here are the ops whose client follows pages."""

    def __init__(self, store, address: RemoteAddress, create: bool):
        self.store = store
        self.address = address
        self.name = address.name
        self._create = create

    def run(self, op: str, args: dict):
        """The remote backend of the seam: OP with ARGS (checked by the dispatcher), one request to the object's
        Durable Object."""
        return self._send_op(op, args, None)

    def _call(self, op: str, *, write=None, **args):
        """A method's request (an op with client logic of its own): ARGS as the Worker takes them, checked
        against the contract first as the dispatcher checks a plain op's (seam.check: the Worker's own words,
        and the checks the contract names), so a refused call sends nothing; WRITE: whether it is a write, for
        an op whose arguments say (else the contract's flag)."""
        found = spec_or_none(op)
        if found is not None:  # (a dev hook of `remote dev` is no op of the contract)
            check(op, args, found)
        return self._send_op(op, args, write)

    def _send_op(self, op: str, args: dict, write):
        """OP, one request (or the parts of one: RemoteStore._send); a write when the contract says so, but for
        a dry run."""
        if write is None:
            write = spec(op)["write"] and not args.get("dry_run")
        return self.store._call(self.address, op, args, create=self._create, write=write)

    # transcript (docs/reference/transcript.md §6)
    def append(self, content="", *, role, tool_calls=None, call_id=None, name=None, meta=None, data=None, tokens=None,
               request_id=None, create=True):
        row = {"role": role, "content": content, "tool_calls": tool_calls, "call_id": call_id, "name": name,
               "meta": meta, "data": data, "tokens": tokens}
        return self.append_many([row], request_id=request_id, create=create, one=True)

    def append_many(self, rows, *, request_id=None, create=True, one=False, seqs_only=False, origin=None):
        """As core/transcript.append_many: dict rows are validated here first (the same messages, nothing sent
        when one is refused); ORIGIN (an adapter's (external_id, adapter)) is recorded on the object as locally."""
        from .. import checks

        fields = []
        for i, r in enumerate(rows, 1):
            if isinstance(r, dict):
                r = checks.row(self.store.config, r, where="" if one else f"row {i}: ")
            fields.append(_fields(r))
        extra = {"request_id": request_id, "create": create, "one": one, "seqs_only": seqs_only,
                 "origin": list(origin) if origin is not None else None}
        if one or seqs_only or _size(fields) < ASK_LIMIT_FROM:
            made = self._call("append_many", rows=fields, **extra)
            if one or seqs_only or not made or isinstance(made[0], dict):
                return made
            seqs = made  # more than one page of rows: the Worker answers their seqs (docs/reference/remote.md §13), read below in pages
        else:
            seqs = None
        # a big batch's rows are no one answer (docs/reference/remote.md §13: a request holds one page of its answer): its seqs, then
        # the rows they name read in pages, as they are now (as a replayed batch's are: worker/src/recall.ts)
        if seqs is None:
            seqs = self._call("append_many", rows=fields, **dict(extra, seqs_only=True))
        rows = self._pages_of_show([], None, all_rows=True, since=seqs[0] - 1, last=None)
        return [r for r in rows if r["seq"] <= seqs[-1]]

    def stored_rows(self, *, last=None):
        """As core/transcript.stored_rows: the live rows (LAST: the newest N) as (data, role, kind, content,
        call_id, tool_calls) tuples, `data` and `tool_calls` the JSON text stored."""
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
            raise invalid(say("stored_last_negative"))
        rows, cursor = [], None
        while True:  # in pages the Worker bounds (docs/reference/remote.md §13)
            page = self._call("stored_rows", last=last, cursor=cursor)
            rows += [tuple(r) for r in page["rows"]]
            cursor = page["next"]
            if cursor is None:
                return rows

    def show_transcript(self, *, all_rows=False, since=0, last=None):
        """What `show` lists, in pages the Worker bounds (docs/reference/remote.md §13: a request holds one page of its answer)."""
        return self._pages_of_show([], None, all_rows=all_rows, since=since, last=last)

    def _pages_of_show(self, rows, cursor, *, all_rows, since, last):
        while True:
            page = self._call("show_transcript", all_rows=all_rows, since=since or 0, last=last, cursor=cursor)
            rows += page["rows"]
            cursor = page["next"]
            if cursor is None:
                return rows

    def follow_start(self, *, all_rows=False, since=0, last=None):
        rows, high, status, cursor = self._call("follow_start", all_rows=all_rows, since=since or 0, last=last)
        if cursor is not None:  # the rest of what `show` lists (no row newer than the first page's: the cursor says)
            rows = self._pages_of_show(rows, cursor, all_rows=all_rows, since=since, last=last)
        return rows, high, status

    def rows_after(self, seq):
        """Every row after SEQ and the status, read a page a request (the Worker answers one page: docs/reference/remote.md §13)."""
        rows, status, more = self._call("rows_after", seq=seq)
        while more and rows:
            page, status, more = self._call("rows_after", seq=rows[-1]["seq"])
            rows += page
        return rows, status

    def rows(self, *, last=None, since=0, all=False):  # noqa: A002 - the name docs/reference/library.md §9 gives
        return self.show_transcript(all_rows=all, since=since, last=last)

    def window(self, *, tokens=None, limit=None, format="json", keep=None):  # noqa: A002
        if format not in ("json", "messages", "responses", "anthropic", "gemini"):
            raise invalid(f"invalid format {format!r}: use json, messages, responses, anthropic or gemini")
        doc = self.context_window(budget=tokens, limit=limit, keep=keep)
        if format == "json":
            return doc
        from ..core import formats

        return formats.render(doc["turns"], format)

    # docs/reference/integrations.md §12: a LangGraph thread's checkpoints (worker/src/rules/checkpoints.ts); serialized values go base64
    def checkpoint_rows(self, *, ns=None, checkpoint_id=None, before=None, limit=None):
        """As core/checkpoints.checkpoint_rows; each checkpoint's pending writes come in the same request and
        `checkpoint_writes` answers from them (one request for what the adapter reads). The Worker answers in pages
        (docs/reference/remote.md §13: a request holds one page; a thread keeps every checkpoint, each its whole state) and reads
        LIMIT in SQL (a step's `get_tuple` costs one checkpoint, not the thread's)."""
        rows, writes, page = [], [], []
        while page is not None and (limit is None or len(rows) < limit):
            answer = self._call("checkpoint_rows", ns=ns, checkpoint_id=checkpoint_id, before=before,
                                with_writes=True, limit=None if limit is None else limit - len(rows), page=page)
            if isinstance(answer, list):  # a Worker older than pages: every matching checkpoint in one answer
                rows, writes, page = answer[0], answer[1], None
            else:
                rows, writes, page = rows + answer["rows"], writes + answer["writes"], answer["next"]
        if limit is not None:
            rows, writes = rows[:limit], writes[:limit]
        rows = [(r[0], r[1], r[2], r[3], _unb64(r[4]), r[5]) for r in rows]
        self._writes = {(r[0], r[1]): w for r, w in zip(rows, writes)}
        return rows

    def checkpoint_latest(self, *, ns, checkpoint_id=None):
        """As core/checkpoints.latest: one request."""
        rows = self.checkpoint_rows(ns=ns, checkpoint_id=checkpoint_id, limit=1)
        return (rows[0], self.checkpoint_writes(ns, rows[0][1])) if rows else None

    def checkpoint_writes(self, ns, checkpoint_id):
        known = getattr(self, "_writes", {}).get((ns, checkpoint_id))
        if known is None:
            known = self._call("checkpoint_writes", ns=ns, checkpoint_id=checkpoint_id)
        return [(w[0], w[1], w[2], _unb64(w[3]), w[4], w[5]) for w in known]

def _install() -> None:
    from ..core.rules import PLAIN
    from . import shapes

    shapes.install(RemoteSession)
    install(RemoteSession, PLAIN)


_install()


class RemoteStore(StoreOps):
    """The Store of docs/reference/library.md §9 over a durable Worker (docs/reference/remote.md §13)."""

    remote = True
    _objects = None  # no local data directory

    def __init__(self, url, *, user=None, tenant=None, config=None, token=None):
        import os

        self.config = config or Config()
        self.url = url
        # an acting user named by any means (--as, DURABLE_USER, defaults.user) is sent; else the token's user acts
        explicit = self.config.get("defaults.user")
        self.user = valid_name(user or explicit, "user") if (user or explicit) else None
        if tenant is None:
            tenant = os.environ.get("DURABLE_TENANT") or None
        self.tenant = valid_name(tenant, "tenant") if tenant is not None else None
        self.token = token or self.config.get("remote.token")
        # one client (one kept-alive connection) per thread: an adapter's calls run in worker threads at once
        # (asyncio.to_thread), and two requests on one connection would each read the other's answer
        self._local = threading.local()
        self._clients = []

    @property
    def client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            from .client import RemoteClient

            client = self._local.client = RemoteClient(self.url, self.token, self.config.seconds("remote.timeout"))
            self._clients.append(client)
        return client

    # docs/reference/remote.md §13: the Worker's default DURABLE_MAX_BODY_BYTES; a Worker with a lower one says so in its 413
    max_body_bytes = 16 * 1024 * 1024
    _limits = None

    def warm(self) -> None:
        """Store.warm: nothing to open ahead here (the HTTP client connects on the first call)."""

    def _send(self, body: dict, *, write: bool):
        """BODY to the Worker. A write of an op the contract sends in parts (its `parts`: docs/reference/remote.md §13, a body over
        the Worker's DURABLE_MAX_BODY_BYTES is refused before it is read) goes in parts when it is over that
        limit: each part the op's arguments with its lists cut to their share, all under one batch id; the object
        stages the earlier parts and the last one commits the whole in one transaction (worker/src/parts.ts)."""
        from ..contract.ops import ops

        spec = ops()["object"].get(body["op"]) if write and body.get("scope") not in ("index", "auth", "none", "objects") else None
        patterns = spec.get("parts") if spec else None
        if not patterns:
            return self._post(body, write=write)
        size = _size(body)
        if self._limits is None and size >= ASK_LIMIT_FROM:  # asked once per store, and only before a big body
            self._limits = self._none("limits")
            self.max_body_bytes = self._limits["max_body_bytes"]
        if size <= self.max_body_bytes:
            try:
                return self._post(body, write=write)
            except DurableError as e:  # a Worker with a lower DURABLE_MAX_BODY_BYTES: 413, which says its limit
                limit = getattr(e, "max_body_bytes", None)
                if not (isinstance(limit, int) and 0 < limit < self.max_body_bytes and size > limit):
                    raise
                self.max_body_bytes = limit
        shares = _shares(body["args"], patterns, self.max_body_bytes - (size - _size(body["args"])), self.max_body_bytes)
        if len(shares) == 1:
            return self._post(body, write=write)  # nothing to split: the Worker says why it is refused
        import os

        batch = os.urandom(16).hex()
        first = {}
        for index, share in enumerate(shares):
            last = index == len(shares) - 1
            part = {"batch": batch, "index": index, "count": len(shares), "first": dict(first)}
            args = dict(_with_lists(body["args"], {path: share.get(path, []) for path, _ in _lists(body["args"], patterns)}), part=part)
            answer = self._post(dict(body, args=args, request_id=batch if last else f"{batch}{index:08x}"), write=True)
            for path, items in share.items():
                first[path] = first.get(path, 0) + len(items)
        return answer

    def _none(self, op: str):
        """An op of the table's scope "none" (whoami, limits): what the Worker answers of itself, no object asked."""
        return self.client.call({"op": op, "scope": "none", "actor": self.user}, write=spec(op, "none")["write"])

    def _post(self, body: dict, *, write: bool):
        """client.call; a 413's document (the Worker's limit, `{"max_body_bytes": N}`) is for the client to
        read (as the error's `max_body_bytes`), not output for the user."""
        try:
            return self.client.call(body, write=write)
        except DurableError as e:
            if isinstance(e.document, dict) and set(e.document) == {"max_body_bytes"}:
                setattr(e, "max_body_bytes", e.document["max_body_bytes"])  # noqa: B010 - not a field of every error
                e.document = None
            raise

    def _config_doc(self) -> dict:
        return {"max_unfinished": self.config.get("queue.max_unfinished"),
                "max_turn_bytes": self.config.get("transcript.max_turn_bytes"),
                "token_budget": self.config.get("transcript.token_budget"), "tags_max": self.config.get("tags.max")}

    def _call(self, address: RemoteAddress, op: str, args: dict, *, create: bool, write: bool):
        body = {
            "op": op, "args": args, "scope": address.id_scope, "label": address.scope, "name": address.name,
            "tenant": address.owner if address.id_scope == "tenant" else None, "actor": self.user, "create": create,
            "config": self._config_doc(),
        }
        return self._send(body, write=write)

    def address(self, name, *, user=None, tenant=None, scope=None) -> RemoteAddress:
        valid_name(name)
        tenant = tenant if tenant is not None else self.tenant
        if tenant is not None:
            return RemoteAddress("tenant", valid_name(tenant, "tenant"), name, "tenant")
        return RemoteAddress("user", user, name, scope or "user")

    @contextmanager
    def open(self, name=None, *, user=None, tenant=None, create=False, address=None, actor=None, lock_timeout=None,
             deliver=True):
        # DELIVER: the object's own alarm sends its deliveries (docs/reference/remote.md §13), whatever a block asks
        yield RemoteSession(self, address or self.address(name, user=user, tenant=tenant), create)

    @contextmanager
    def open_reserved(self, user=None, *, create=False):
        yield RemoteSession(self, RemoteAddress("reserved", user, "", "reserved"), create)

    def create_session(self, name=None, *, title=None, ttl_seconds=None, ephemeral=False, tags=None) -> dict:
        from ..backends import plan_create

        address, title, ttl_seconds, tags = plan_create(self, name, title, ttl_seconds, ephemeral, tags)
        return RemoteSession(self, address, True).create(title=title, ttl_seconds=ttl_seconds, tags=tags or None)  # type: ignore[attr-defined]

    def poll(self, name, attempt, *, wait_seconds: int, **open_args):
        """As the file backend's poll (the same loop, library.poll_loop): ATTEMPT(session, more) until
        non-None or WAIT_SECONDS pass; one request per poll, nothing held in between."""
        from .. import guard
        from ..backends import poll_loop

        def once(left, looked):
            with self.open(name, **open_args) as session:
                result = attempt(session, left > 0)
            if guard.poll_settled is not None:
                guard.poll_settled(result)  # nothing taken or stored: a signal meanwhile ends the wait 130/143
            return result

        return poll_loop(once, wait_seconds)

    def follow(self, name, *, all_rows=False, since=0, last=None, interval=0.1):
        """`transcript show --follow`: one WebSocket to the object's Durable Object, which pushes each new
        row after its commit (remote/follow.py; docs/reference/remote.md §13 "Live follow"), not a request per poll."""
        from .follow import follow_rows

        return follow_rows(self, name, all_rows=all_rows, since=since, last=last)

    def ttl(self, name, *, seconds=None, clear=False):
        with self.open(name) as session:
            return session._call("ttl", write=seconds is not None or clear, seconds=seconds, clear=clear)

    def summarize(self, name, *, through, text=None, command=None, input_format="text", timeout=120, **open_args) -> dict:
        """As the file backend's: with TEXT one request; with a COMMAND the plan is read (one request), the
        command runs here holding nothing, and the summary is committed (a second request) only if the
        covered rows are unchanged (else exit 4)."""
        return self._summarize(name, "summary", {"through": through}, text, command, input_format, timeout, open_args)

    def compact(self, name, *, max_tokens, keep_tokens, text=None, command=None, input_format="text", timeout=120, **open_args) -> dict:
        return self._summarize(name, "compact", {"max_tokens": max_tokens, "keep_tokens": keep_tokens},
                               text, command, input_format, timeout, open_args)

    def _summarize(self, name, kind, args, text, command, input_format, timeout, open_args) -> dict:
        from .. import checks
        from ..core import transcript

        checks.summary_request(self.config, text, command, input_format)
        if text is not None:
            with self.open(name, **open_args) as session:
                return session._call("summarize" if kind == "summary" else "compact", text=text, **args)
        with self.open(name, **open_args) as session:
            plan = session._call("plan_" + kind, **args)
        if plan is None:
            return {"summary": None, "superseded": 0}
        text = transcript.run_summarizer(command, self._plan_rows(name, plan["covered"], open_args), input_format, timeout)
        with self.open(name, **open_args) as session:
            return session._call("commit_summary", covered=plan["covered"], high=plan["high"], text=text)

    def _plan_rows(self, name, covered, open_args):
        """The stored rows a plan covers, read a page a request (a plan holds no content: docs/reference/remote.md §13)."""
        seqs, rows = [r[0] for r in covered], []
        while len(rows) < len(seqs):
            with self.open(name, **open_args) as session:
                page = session._call("plan_rows", seqs=seqs[len(rows):len(rows) + 1000])
            rows += [tuple(r) for r in page]
        return [r for r in rows if len(r) > 1]  # a row gone since the plan is left out: the commit refuses it (exit 4)

    def tombstone(self, name, **address):
        """The tombstone a deleted adapter thread left at NAME (docs/reference/integrations.md §12; kept in the owner's index shard), or None."""
        with self.open(name, **address) as session:
            return session._call("tombstone")

    def close(self) -> None:
        for client in self._clients:
            client.close()

    def path(self, name=None):
        raise not_available("path")

    def step(self, name, key, fn, *, prompt=None, attempt=None, call_id=None, args=None, approval=None):
        """docs/reference/sessions.md §5.2 "Remote": as the file backend's (durable_cli/steps.py runs FN here, without
        holding anything); the reservation, each renewal and the commit are each one request to the object."""
        from ..steps import step_library

        return step_library(self, name, key, fn, prompt=prompt, attempt=attempt, call_id=call_id, args=args,
                            approval=approval)

    def steps(self, name, *, prompt=None) -> list:
        """`session steps`: the journal in the object's storage, read a page a request (docs/reference/remote.md §13)."""
        from ..steps import listing

        return listing(self, name, prompt)

    def backup(self, dest, **_kw):
        raise not_available("backup")

    def doctor(self, **_kw):
        raise not_available("doctor")

    FORK_TRIES = 5  # plans of one fork made again when the source's copied rows were rewritten meanwhile

    def fork(self, name, new, *, at=None, title=None) -> dict:
        """`session fork`: the source's Durable Object gives the rows to copy in pages (docs/reference/remote.md §13: a request
        holds one row plus one page; the first page checks AT and fixes the seq copied up to), then NEW's, in
        the acting user's own scope, creates NEW holding them in one transaction (exit 4 if it exists): one
        request, or parts of one batch when the rows are over the Worker's body limit (_send), committed by
        the last part. A rewrite of the copied rows meanwhile (pop, redact, a summary) makes the source refuse
        its next page: the plan is then read again from the first page, before anything was sent to NEW."""
        from .. import checks

        new, title = checks.fork_request(new, title, at)
        with self.open(name) as source:
            for attempt in range(self.FORK_TRIES):
                try:
                    page = source._call("fork_plan", at=at, cursor=None)
                    plan, rows = {k: page[k] for k in ("id", "name", "title", "seq")}, page["rows"]
                    while page["next"] is not None:
                        page = source._call("fork_plan", at=at, cursor=page["next"])
                        rows += page["rows"]
                    break
                except DurableError as e:
                    if not (isinstance(e.document, dict) and e.document.get("restart")) or attempt == self.FORK_TRIES - 1:
                        raise
        session = RemoteSession(self, RemoteAddress("user", self.user, new, "user"), True)
        return session._call("fork_create", source=plan, rows=rows, title=title)

    # -- across objects: the index Durable Objects (worker/src/indexes.ts, across.ts; docs/remote.md) --------

    def _index(self, op: str, *, write=False, **args):
        body = {"op": op, "args": args, "scope": "index", "tenant": self.tenant, "actor": self.user}
        return self.client.call(body, write=write)

    def _index_rows(self, *, user=None, all_users=False, reserved=False, expired=False) -> list:
        """The index rows the acting user sees as `ls --all` does (archived included; past-TTL and memory
        objects only with EXPIRED / RESERVED), newest activity first, or every object's row (ALL_USERS: admin
        token only) in id order. Each a dict: id, scope, owner, name, title, status, created_at, updated_at,
        last_active_at (ms since the epoch, as index.db keeps them), turns, tokens, expires_at,
        next_alarm_at, external_id, members ([user, role] pairs)."""
        if user is not None:
            valid_name(user, "user")
        return self._pages("rows", user=user, all=all_users, reserved=reserved, expired=expired)

    def _pages(self, op: str, *, limit=None, **args) -> list:
        """Every page of a listing (newest activity first): the Worker answers one page per request
        ({"rows", "next"}: docs/reference/remote.md §13, a request holds one page of its answer); the client follows `next`."""
        rows, before = [], None
        while True:
            page = self._index(op, before=before, limit=None if limit is None else limit - len(rows), **args)
            rows += page["rows"]
            before = page["next"]
            if before is None or (limit is not None and len(rows) >= limit):
                return rows

    def ls(self, *, statuses=(), all_objects=False, user=None, older_than=None, limit=None, tags=()):
        from ..across.retention import ls_json

        rows = self._pages("ls", statuses=list(dict.fromkeys(statuses)), all_objects=all_objects, user=user, older_than=older_than, limit=limit,
                           **({"tags": [list(t) for t in tags]} if tags else {}))
        return [ls_json(r) for r in rows]

    def usage(self, *, user=None, everyone=False, session=None, newer_than=None, by="session", tags=(), prices=None) -> dict:
        """docs/reference/remote.md §13: the index answers the same sums as index.db, in pages, the sums of the rows
        without a given cost per group and model among them; the client prices those with its own table
        (across/usage.py finish), as the file backend does."""
        from ..across.usage import COUNTS as summed
        from ..across.usage import GROUPINGS, finish

        if by not in GROUPINGS and by != "day_model":  # day_model: usage_by_day_and_model's groups
            raise invalid(f"invalid --by {by!r}: use one of {', '.join(GROUPINGS)}")
        if everyone and user is not None:
            raise invalid("give either --user U or --all, not both")
        if prices is None:
            from .. import prices as _prices

            prices = _prices.load(self.config)
        newer_day = clock.iso(clock.now() - newer_than * 1000)[:10] if newer_than is not None else None

        def fields(group):
            out = {k: group[k] for k in ("key", "name", "owner", "last_active_at") if k in group}
            out.update({k: int(group.get(k) or 0) for k in summed})
            out["cost_given_usd"] = float(group.get("cost_usd") or 0)
            return out

        def add(into, group):
            for k in (*summed, "cost_given_usd"):
                into[k] += group[k]
                if k != "cost_given_usd" and into[k] > 2**63 - 1:  # as the Worker and SQLite: never a float
                    raise DurableError("a usage total is past 2^63-1 and cannot be counted exactly; narrow it with"
                                       " --user, --session or --newer-than", "storage")

        # the Worker answers one page of groups a request (docs/reference/remote.md §13); the pages' groups are disjoint by
        # session, and summed by day or model
        groups: dict = {}
        priced: list = []
        cursor = None
        total: dict = {**dict.fromkeys(summed, 0), "cost_given_usd": 0.0}
        while True:
            doc = self._index("usage", user=user, everyone=everyone, session=session, newer_day=newer_day, by=by, cursor=cursor,
                              **({"tags": [list(t) for t in tags]} if tags else {}))
            add(total, fields(doc["total"]))
            for g in doc["groups"]:
                entries = g.get("priced") or []
                g = fields(g)
                if g["key"] in groups and by != "session":
                    add(groups[g["key"]], g)
                else:
                    groups[g["key"]] = g
                priced.extend((g["key"], e[0], tuple(int(v or 0) for v in e[1:6])) for e in entries)
            cursor = doc["next"]
            if cursor is None:
                break
        if by == "session":  # newest activity first, as locally
            ordered = sorted(groups.values(), key=lambda g: (-g["last_active_at"], g["key"]))
        else:
            ordered = sorted(groups.values(), key=lambda g: (g["key"] is None, g["key"] or ""))
        for g in ordered:
            g.pop("last_active_at", None)
        # one entry per group and model, as locally (a model's pages summed): the price is applied to whole sums
        merged: dict = {}
        for key, model, sums in priced:
            before = merged.get((key, model), (0,) * 5)
            merged[(key, model)] = tuple(a + b for a, b in zip(before, sums))
        return finish(ordered, total, [(groups[k], m, sums) for (k, m), sums in merged.items()], prices, by)

    def sessions_page(self, *, statuses=(), all_objects=False, after=None, limit=100) -> dict:
        """As library.Store.sessions_page: one page of `ls` from the index Durable Objects (one request), each row
        with its given cost and its pending questions as the index shard keeps them (docs/reference/ui.md §16.8)."""
        page = self._index("ls", statuses=list(dict.fromkeys(statuses)), all_objects=all_objects,
                           before=list(after) if after is not None else None, limit=limit)
        rows = []
        for r in page["rows"]:
            r = dict(r)
            r["cost_given_usd"] = float(r.get("cost_given_usd") or 0)
            r["cost_usd"] = r["cost_given_usd"]  # the index shards keep no priced sums per session: the given cost
            r["pending_requests"] = r.get("pending_requests") or 0
            rows.append(r)
        return {"rows": rows, "next": page["next"], "prices_unread": None}

    def usage_by_day_and_model(self, days: int) -> dict:
        """As library.Store.usage_by_day_and_model, from the index Durable Objects' usage pages grouped by day and
        model (docs/reference/ui.md §16.8), priced here with the table in force as `usage` prices them."""
        doc = self.usage(newer_than=days * 86400, by="day_model")
        rows = []
        for g in doc["groups"]:
            import json

            day, model = json.loads(g.pop("key"))
            rows.append({"day": day, "model": model, **g})
        rows.sort(key=lambda r: (r["day"], r["model"] is None, r["model"] or ""))
        return {"rows": rows, "total": doc["total"], "prices": doc["prices"]}

    def startable(self, limit=8) -> list:
        """`work --all`: the index rows (the acting user's shard) of sessions `ls` lists whose oldest pending
        prompt can start by now, oldest first (the shard's pending_at; no object is asked)."""
        return self._index("pending", limit=limit)

    def fire_due_alarms(self, limit=16) -> int:
        """Nothing to do remotely: each object's own Durable Object alarm fires its due alarms."""
        return 0

    def reindex(self) -> dict:
        """Admin (`durable remote reindex`, docs/reference/remote.md §13): rebuild the index shards from the objects (each
        registered object re-sends its row; rows of absent objects, or in shards an object no longer
        belongs to, are dropped), one page per request. The §10 receipt, with the counts beside it:
        `{"deleted": [], "skipped": [{"id", "owner", "name", "reason"}], "changed": [], "dry_run": false,
        "reindexed": N, "removed": N}`; exit 7 (or 6) after the others when an object could not be read."""
        from ..across.retention import conclude

        total = {"deleted": [], "skipped": [], "changed": [], "dry_run": False, "reindexed": 0, "removed": 0}
        cursor = {}
        while cursor is not None:  # one page of objects per request (docs/remote.md)
            page = self._index("reindex", write=True, **cursor)
            for key in ("reindexed", "removed"):
                total[key] += page[key]
            total["skipped"] += page["skipped"]
            cursor = page["next"]
        total["skipped"].sort(key=lambda s: s["id"])
        return conclude(total, "reindex")

    def _paged(self, op: str, *, write: bool, in_id_order=True, **args) -> dict:
        """A command across objects, one page of objects per request (the Worker bounds each; the client
        follows the cursor). Each page is a write request of its own: a retried page (a dropped connection)
        is answered with its first answer. The pages' receipts joined, each list in id order as locally
        (sweep: due alarms first, then drafts, as its pages come)."""
        out = {"deleted": [], "skipped": [], "changed": [], "dry_run": bool(args.get("dry_run", False))}
        cursor = None
        while True:
            page = self._index(op, write=write, cursor=cursor, **args)
            for key in ("deleted", "skipped", "changed"):
                out[key] += page[key]
            cursor = page.get("next")
            if cursor is None:
                break
        if in_id_order:
            for key in ("deleted", "skipped", "changed"):
                out[key].sort(key=lambda e: str(e.get("id")))
        return out

    def delete(self, name):
        """`delete NAME`: the object's Durable Object erases its whole storage (deleteAll); the receipt as locally."""
        with self.open(name) as session:
            return session._call("delete")

    def purge(self, *, older_than: int, user=None, statuses=(), dry_run=False, progress=None) -> dict:
        """As across/retention.purge: candidates from the index, each object re-checking its own
        last_active_at before it deletes itself (deleteAll); busy ones skipped (exit 0)."""
        from ..across.retention import conclude

        if user is not None:
            valid_name(user, "user")
        out = self._paged("purge", write=not dry_run, older_than=older_than, user=user, statuses=list(dict.fromkeys(statuses)), dry_run=dry_run)
        return conclude(out, "purge", busy_ok=True)

    def sweep(self, progress=None) -> dict:
        """Admin: due alarms the DOs' own alarms have not fired yet, then the draft expiry."""
        from ..across.retention import conclude

        out = self._paged("sweep", write=True, in_id_order=False, draft_expiry=self.config.seconds("retention.draft_expiry"))
        return conclude(out, "sweep", busy_ok=True)

    def forget(self, user, progress=None, dry_run=False) -> dict:
        """As across/rights.forget: USER's objects and memory object erased (deleteAll), their participation
        in tenant objects removed, their index shard wiped."""
        from ..across.retention import conclude

        valid_name(user, "user")
        out = self._paged("forget", write=not dry_run, user=user, dry_run=dry_run)
        return conclude(out, f"forget of {user!r}")

    # -- export, import, search (docs/reference/retention.md §7): per-object operations of the object's DO (worker/src/rules/rights.ts) --

    _whoami = None

    def revoke(self, *, jti=None, user=None, issued_before=None) -> dict:
        """`durable remote revoke` (admin): a token by its jti, or USER's tokens whose iat (whole seconds) is
        before ISSUED_BEFORE. `{"revoked": jti or None, "user", "issued_before"}` (RFC 3339)."""
        doc = self.client.call({"op": "revoke", "scope": "auth", "actor": self.user,
                                "args": {"jti": jti, "user": user, "issued_before": issued_before}}, write=True)
        return {"revoked": doc["revoked"], "user": doc["user"],
                "issued_before": None if doc["issued_before"] is None else clock.iso(doc["issued_before"] * 1000)}

    def whoami(self) -> dict:
        """`{"user", "admin"}`: the acting user (the token's, or the one named) and whether the token is an admin's."""
        if self._whoami is None:
            self._whoami = self._none("whoami")
        return self._whoami

    def _object_call(self, row, op: str, args: dict, *, write: bool, create=False, all_users=False):
        """OP on the object an index row (or a record's address: scope, owner, name) stands for; ALL_USERS
        (admin tokens only, the Worker checks): another user's object, or a tenant's without taking part."""
        scope = row["scope"]
        id_scope = "user" if scope in ("user", "session") else scope
        body = {
            "op": op, "args": args, "scope": id_scope, "label": scope, "name": row["name"],
            "tenant": row["owner"] if id_scope == "tenant" else None, "owner": None if id_scope == "tenant" else row["owner"],
            "actor": self.user, "create": create, "all_users": all_users,
            "config": {"max_unfinished": self.config.get("queue.max_unfinished"),
                       "max_turn_bytes": self.config.get("transcript.max_turn_bytes"),
                       "token_budget": self.config.get("transcript.token_budget"), "tags_max": self.config.get("tags.max")},
        }
        return self._send(body, write=write)

    def export(self, *, name=None, user=None, all_objects=False, progress=None, updated_since=None):
        """As across/rights.export: one record per object (a generator), each the object's DO's own dump, exactly
        the local export's form. NAME: one object; USER: the objects USER owns, their memory included (another
        user's: admin token); ALL_OBJECTS: every object the index knows (admin token). A busy or unreadable
        object is reported (warnings, on stderr) and in the exit status after the others are yielded."""
        from ..across.retention import receipt
        from ..across.rights import conclude_export
        from ..errors import denied

        if name is not None:
            with self.open(name) as session:
                record = _joined(lambda cursor: session._call("export", cursor=cursor))
            yield _floats(record)
            return
        me = self.whoami()
        if all_objects and not me["admin"]:
            raise denied(f"export --all covers every user's objects and needs an admin token; this token acts as user \"{me['user']}\" only")
        if user is not None:
            valid_name(user, "user")
            if user != me["user"] and not me["admin"]:
                raise denied(f"this token acts as user \"{me['user']}\", not \"{user}\"; use an admin token to export another user's objects")
        rows = self._index_rows(user=None if all_objects else user, all_users=all_objects, reserved=True)
        if not all_objects:
            rows = [r for r in rows if r["owner"] == user and r["scope"] in ("user", "session", "reserved")]
        if updated_since is not None:  # export --format otlp --since (docs/reference/traces.md §15.3)
            rows = [r for r in rows if not isinstance(r.get("updated_at"), int) or r["updated_at"] >= updated_since]
        out = receipt()
        memory = None
        if not all_objects and not any(r["scope"] == "reserved" for r in rows):
            # the memory object, even where the index does not list it (as forget finds it)
            memory = self._export_one({"id": None, "scope": "reserved", "owner": user, "name": ""}, me, out)
        if progress:
            progress.start(len(rows))
        for row in sorted(rows, key=lambda r: r["id"]):
            if progress:
                progress.advance()
            if memory is not None and memory["id"] < row["id"]:
                yield memory
                memory = None
            record = self._export_one(row, me, out)
            if record is not None:
                yield record
        if memory is not None:
            yield memory
        conclude_export(out, self.warnings)

    def _export_one(self, row, me, out):
        """ROW's record, or None (gone since the index listed it; or skipped into OUT: busy, unreadable)."""
        from ..across.retention import entry

        try:
            return _floats(_joined(lambda cursor: self._object_call(row, "export", {"cursor": cursor}, write=False, all_users=me["admin"])))
        except DurableError as e:
            if e.code != "not_found":
                out["skipped"].append(entry(row, reason="busy" if e.code == "busy" else e.message))
            return None

    @property
    def warnings(self) -> list:
        if self._objects is None:
            self._objects = _Notes()  # the CLI prints a store's warnings on stderr at exit
        return self._objects.warnings

    def import_records(self, records, *, replace=False, all_users=False, keep_existing=False) -> dict:
        """As across/rights.import_records: each record checked here (records.py, exit 2 naming the field), then
        sent to its object's DO, which checks it again, decides existence, identity and ownership and writes it
        in one transaction (all or nothing). A failing record is listed in `skipped` and the others go on."""
        from ..across.retention import address_of, receipt
        from ..core import records as _records
        from ..errors import denied

        me = self.whoami()
        if all_users and not me["admin"]:
            raise denied(f"import --all-users restores every user's records and needs an admin token; this token acts as "
                         f"user \"{me['user']}\" only; nothing was imported")
        columns = _records.current_columns()
        out, failures = receipt(), []
        for number, item in enumerate(records, 1):
            line, record = item if isinstance(item, tuple) else (number, item)
            try:
                if getattr(record, "error", None) is not None:
                    raise record.error
                checked = _records.check_record(record, line=line, max_turn_bytes=self.config.get("transcript.max_turn_bytes"),
                                                columns=columns)
                address = address_of(record)  # another user's record: the Worker refuses it (exit 5), naming its id
                content = _records.as_json({k: v for k, v in checked.content.items() if k != "live"})
                done = self._object_call({"scope": address.scope, "owner": address.owner, "name": address.name}, "import",
                                         {"record": content, "replace": replace, "keep_existing": keep_existing},
                                         write=True, create=True, all_users=all_users)
            except DurableError as e:
                message = e.message if e.message.startswith("line ") else f"line {line}: {e.message}"
                failures.append(DurableError(message, e.code))
                owner, name = (record.get(k) if isinstance(record, dict) else None for k in ("owner", "name"))
                object_id = e.document.get("id") if isinstance(e.document, dict) else self._id_of(record)
                out["skipped"].append({"id": object_id,
                                       "owner": owner if isinstance(owner, str) else None,
                                       "name": name if isinstance(name, str) else None, "reason": message})
                continue
            if "already" in done:
                out["skipped"].append({"id": done["id"], "owner": done["owner"], "name": done["name"], "reason": done["already"]})
            else:
                out["changed"].append(done)
        from ..across.retention import conclude_import

        return conclude_import(out, failures)

    def _id_of(self, record):
        """The id this installation gives RECORD's object (the Worker's secret), or None when it cannot be addressed."""
        from ..across.retention import address_of

        try:
            address = address_of(record)
            valid_name(address.owner, "user")
            if address.id_scope != "reserved":
                valid_name(address.name)
            return self._object_call({"scope": address.scope, "owner": address.owner, "name": address.name},
                                     "object_id", {}, write=False)["id"]
        except Exception:  # noqa: BLE001 - a record too broken to address, or a Worker that cannot say
            return None

    def import_llm(self, path=None, **kw):
        """`import --from llm [PATH]`: llm's local logs.db (read-only) into remote objects, as locally."""
        from ..across import llm_import

        return llm_import.import_llm(self, path, **kw)

    def search(self, query, *, user=None, session=None, role=None, newer_than=None, superseded=False, limit=20, fts=False):
        """As across/search.search: (hits, receipt of skipped objects). One request: the Worker lists the
        sessions `ls --all` lists (the index), asks each object's DO for its best hits (bm25 per object) and
        merges them (worker/src/search.ts)."""
        from .. import checks
        from ..across import search as _search
        from ..across.retention import receipt

        checks.search_query(query, fts)
        if role is not None and role not in _search.ROLES:
            raise invalid(say("invalid_search_role", role=role, roles=", ".join(_search.ROLES)))
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise invalid(say("limit_negative"))
        if user is not None:
            valid_name(user, "user")
        cutoff = None if newer_than is None else clock.now() - newer_than * 1000
        doc = self.client.call({"op": "search", "scope": "objects", "actor": self.user, "args": {
            "query": query, "fts": bool(fts), "user": user, "session": session, "role": role, "cutoff": cutoff,
            "superseded": superseded, "limit": limit, "tenant": self.tenant}}, write=False)
        out = receipt()
        out["skipped"] = doc["skipped"]
        return doc["hits"], out


class _Notes:
    """What the CLI reads of a store's local object store at exit: its warnings (remote: export's skips)."""

    def __init__(self):
        self.warnings = []

    def close(self):
        pass


_REAL = None


def _floats(record: dict) -> dict:
    """A REAL column reads `1.0` locally and `1` from the Worker's JSON: the record as the local export writes it."""
    global _REAL
    if _REAL is None:
        from ..core import records

        _REAL = {t: c for t, c in records.real_columns().items() if c}
    for table, columns in _REAL.items():
        for row in ([record.get(table)] if table == "object" else record.get(table) or []):
            for c in columns:
                if isinstance(row.get(c), int):
                    row[c] = float(row[c])
    return record
