"""The library's face: `Store` resolves names, wakes objects and runs the operations of docs/reference/sessions.md §5-8.

    from durable_cli import Store
    store = Store(home="/tmp/h", user="alice")
    with store.open("fix-login", create=True) as session:
        session.append("hello", role="user")

The CLI is a thin shell over this API (and so will be a remote backend serving the same operations).
"""

import os
import sys
from contextlib import contextmanager

from . import clock
from .backends import FOLLOW_ENDS, GIVE_UP, follow_rows, plan_create, poll_loop  # also the library's API
from .config import Config, valid_name
from .core import alarms, sessions, state, transcript
from .errors import DurableError, conflict, not_found, storage
from .seam import Ops, StoreOps, install


class Session(state.Opened, Ops):
    """An opened object with its operations as methods; valid inside `with store.open(...)`.

    Each op of the contract's op table that names a rule ("rule": module.function of core/) is the method of
    its name, made by `_rule_methods` below from core/rules.py (generated from the contract): a plain op's is
    the seam's dispatcher (durable_cli/seam.py: its arguments checked against the contract, then `run`), the
    others' the rule itself; the methods here are the ones the table does not hold (a composition of ops, or a
    row given as arguments)."""

    def run(self, op: str, args: dict):
        """The file backend of the seam: OP's rule of core/ on this object (its lock is held)."""
        from .core.rules import RULES

        module, function = RULES[op]
        return getattr(_import_rules(module), function)(self, **args)

    append = transcript.append
    rows = transcript.rows
    window = transcript.window

    # docs/reference/integrations.md §12: a LangGraph thread's checkpoints (durable_cli.integrations.langgraph)
    def checkpoint_latest(self, *, ns, checkpoint_id=None):
        from .core import checkpoints

        return checkpoints.latest(self, ns=ns, checkpoint_id=checkpoint_id)


class _Rule:
    """Session's method for an op of the table: the rule's module is imported when the method is first
    looked up (a command pays only for the rules it runs). The rule is looked up in its module at every
    call, never cached in Session: a function replaced in core/ (a test's monkeypatch, a debugging wrap) is
    the one that runs, and stops running once it is put back (caching it leaked a test's broken rule into
    every later command of that process)."""

    def __init__(self, name: str, module: str, function: str):
        self.name, self.module, self.function = name, module, function
        self._module = None

    def __get__(self, obj, owner=None):
        module = self._module
        if module is None:
            from importlib import import_module

            module = self._module = import_module(f"durable_cli.core.{self.module}")
        rule = getattr(module, self.function)
        return rule if obj is None else rule.__get__(obj, owner)


def _import_rules(module: str):
    from importlib import import_module

    return import_module(f"durable_cli.core.{module}")


def _rule_methods() -> None:
    from .core.rules import PLAIN, RULES

    for name, (module, function) in RULES.items():
        if name not in PLAIN:
            setattr(Session, name, _Rule(name, module, function))
    install(Session, PLAIN)


_rule_methods()


def checkpoint_metadata(metadata) -> str:
    """A LangGraph checkpoint's metadata as RFC 8259 JSON text, else exit 2 (core/checkpoints.metadata_json)."""
    from .core.checkpoints import metadata_json

    return metadata_json(metadata)


def __getattr__(name):
    if name == "KEPT_MISS":  # what Store.read_kept answers when the object must be read through open()
        from .store.objects import KEPT_MISS

        return KEPT_MISS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def conclude_search(receipt) -> None:
    """After a search's hits are printed: exit 7 (corrupt) or 6 (busy) naming the objects it skipped
    (RECEIPT: the second item `Store.search` returns); nothing when none was skipped."""
    from .across.search import conclude

    conclude(receipt)


def default_user() -> str:
    import getpass

    return getpass.getuser()


class Store(StoreOps):
    """One data directory. Options given here take precedence over environment, config file and defaults."""

    def __new__(cls, home=None, *, user=None, tenant=None, lock_timeout=None, config=None, remote=None, token=None,
                keep_open=False):
        """The file backend, or (docs/reference/remote.md §13) the remote one when a URL is chosen: REMOTE, DURABLE_REMOTE or
        config remote.url. Both answer the same interface; the CLI does not know which it holds."""
        if cls is Store:
            config = config or Config()
            url = remote or config.get("remote.url")
            if url:
                from .remote.backend import RemoteStore

                if user is not None:
                    config.overrides["defaults.user"] = user
                return RemoteStore(url, tenant=tenant, config=config, token=token)
            store = object.__new__(cls)
            store._config_made = config
            return store
        return object.__new__(cls)

    def __init__(self, home=None, *, user=None, tenant=None, lock_timeout=None, config=None, remote=None, token=None,
                 keep_open=False):
        """KEEP_OPEN: for a long-lived process that wakes the same objects again and again (an adapter);
        see ObjectStore. Behaviour is the same either way, only faster, but for one thing: an object that
        `open(create=True)` makes is written to disk when the `with` block ends without an exception (in
        one go), so a block that raises leaves no object, even after a transaction inside it committed."""
        config = config or getattr(self, "_config_made", None)
        overrides = {"defaults.home": home, "defaults.user": user, "defaults.lock_timeout": lock_timeout}
        self.config = config or Config()
        self.config.overrides.update({k: v for k, v in overrides.items() if v is not None})
        self.user = valid_name(self.config.get("defaults.user") or default_user(), "user")  # never os.getlogin()
        if tenant is None:
            tenant = os.environ.get("DURABLE_TENANT") or None
        self.tenant = valid_name(tenant, "tenant") if tenant is not None else None
        self._objects = None
        self._keep_open = keep_open
        self._addresses = {}  # (NAME, user, tenant, scope, acting user, tenant) -> its Address, made once
        self._kept_ids = {}  # NAME -> (object id, what) for read_kept (the secret is loaded once per store)
        # who sends the deliveries a block's commits wrote (docs/reference/sessions.md §5.3): "block" (the library: at the
        # end of the block), "process" (a CLI command: after its output, deliver.after_commit) or "thread" (`ui`,
        # `mcp`: off the request, in a thread)
        self.delivering = "block"

    @property
    def home(self) -> str:
        from .config import user_dir

        return self.config.get("defaults.home") or user_dir("data")

    @property
    def objects(self) -> "ObjectStore":  # noqa: F821 - imported when first used (never by the remote backend)
        if self._objects is None:
            from .store.objects import ObjectStore

            self._objects = ObjectStore(self.home, self.config.seconds("defaults.lock_timeout"), keep_open=self._keep_open)
        return self._objects

    def warm(self) -> None:
        """Open now what the first call would: the installation secret and index.db, when they exist (nothing is
        created, and a failure is left for that call to report). For an adapter, made once and called often,
        as the frameworks' own SQLite sessions open their database when made."""
        try:
            if self.objects.secret(create=False) is not None:
                self.objects.index(create=False).connect(create=False)
        except DurableError:
            pass

    def address(self, name: str, *, user=None, tenant=None, scope=None) -> state.Address:
        key = (name, user, tenant, scope, self.user, self.tenant)
        try:
            found = self._addresses.get(key)
        except TypeError:  # a NAME of the wrong type: _address says so
            return self._address(name, user=user, tenant=tenant, scope=scope)
        if found is None:
            found = self._address(name, user=user, tenant=tenant, scope=scope)
            if len(self._addresses) >= 4096:
                self._addresses.clear()
            self._addresses[key] = found  # only a valid NAME gets here (else _address raised)
        return found

    def _address(self, name: str, *, user=None, tenant=None, scope=None) -> state.Address:
        valid_name(name)
        tenant = tenant if tenant is not None else self.tenant
        if tenant is not None:
            return state.Address("tenant", valid_name(tenant, "tenant"), name, "tenant")
        owner = valid_name(user, "user") if user is not None else self.user
        return state.Address("user", owner, name, scope or "user")

    def create_session(self, name=None, *, title=None, ttl_seconds=None, ephemeral=False, tags=None) -> dict:
        """`session create`: NAME, or (ephemeral) a fresh random NAME with retention.ephemeral_ttl; TAGS
        (KEY -> VALUE) set in the same transaction."""
        address, title, ttl_seconds, tags = plan_create(self, name, title, ttl_seconds, ephemeral, tags)
        with self.open(address=address, create=True) as session:
            return session.create(title=title, ttl_seconds=ttl_seconds, tags=tags or None)

    def reserved_address(self, user=None) -> state.Address:
        return state.Address("reserved", valid_name(user, "user") if user else self.user, "", "reserved")

    def visible(self, address: state.Address, user=None) -> bool:
        """Whether USER (default: the acting user) may see the object at ADDRESS, decided from index.db alone.

        User and reserved objects belong to their owner; a tenant object is visible to the participants
        index.db records for it. No lock is taken and the object is not opened, so a busy or corrupt
        object stays hidden too; an index that lags errs toward "not found".
        """
        if address.id_scope != "tenant":
            return True
        object_id = self.objects.object_id(address.id_scope, address.owner, address.name)
        return object_id is not None and self.tenant_visible(object_id, user or self.user)

    def tenant_visible(self, object_id: str, user: str) -> bool:
        """USER is a participant of tenant object OBJECT_ID according to index.db."""
        return bool(self.objects.index(create=False).rows(
            "SELECT 1 FROM members WHERE object_id = ? AND user = ?", (object_id, user)))

    def tenant_taken(self, object_id: str) -> bool:
        """A tenant NAME is taken when index.db lists its object and the object's file exists."""
        return bool(self.objects.index(create=False).rows("SELECT 1 FROM objects WHERE id = ?", (object_id,))) \
            and os.path.lexists(self.objects.paths.object_file(object_id))

    @contextmanager
    def open(self, name=None, *, user=None, tenant=None, create=False, address=None, actor=None, lock_timeout=None,
             deliver=True):
        """Wake the object NAME for one run, holding its lock: alarms fire first, then access is checked.

        Leaving the block sends the deliveries its commits wrote (docs/reference/library.md §9, reference/sessions.md §5.3),
        after the lock is released, within 2 s; DELIVER=False leaves them to a later wake or `sweep`. (A CLI
        command sends them after its output instead, `ui` and `mcp` off the request: `deliveries` below.)

        Exit 3 when it does not exist (or is not visible to the acting user) and CREATE is false; with
        CREATE, a tenant NAME another user's object holds is exit 4 ("name is taken") and nothing more.
        Visibility comes from index.db before the lock is waited for (docs/reference/concepts.md §2), so an invisible object
        answers exactly as a missing one, busy or corrupt as it may be.
        """
        address = address or self.address(name, user=user, tenant=tenant)
        actor = actor or self.user
        for _attempt in range(3):
            object_id = self.objects.object_id(address.id_scope, address.owner, address.name, create=create)
            if object_id is None:
                raise not_found(address.missing)
            if address.id_scope == "tenant" and not self.tenant_visible(object_id, actor):
                if not create:
                    raise not_found(address.missing)
                if self.tenant_taken(object_id):
                    raise conflict(address.taken)
            with self.objects.open(object_id, create=create, what=address.what, missing=address.missing,
                                   lock_timeout=lock_timeout) as handle:
                handle.on_sleep = state.sync_index
                handle.on_keep = state.keep_facts
                if self.objects.keep_open:
                    handle.before_commit = state.index_row_and_meta
                session = Session(handle, address, actor, self.config)
                handle.outbox = made = []  # the deliveries this process's commits write here, the wake's included (core/hooks.outcome)
                fired = alarms.fire_due(session)
                if fired == "absent" and not handle.created and self.objects.index(create=False).rows(
                        "SELECT 1 FROM objects WHERE id = ?", (object_id,)):
                    # index.db knew this object: an empty file is not a create cut short but lost data
                    raise storage(f"{address.what} is corrupt (its file holds no session, but index.db "
                                  "knows it); run 'durable doctor' to see what can be repaired")
                if fired == "expired" or (fired == "absent" and not create):
                    if fired == "absent":
                        handle.delete()  # a file left half-made by a killed create: it never existed
                    if not create:
                        raise not_found(address.missing)
                    continue
                if fired != "absent" and address.id_scope == "tenant" and session.role() is None:
                    # the index lagged behind the object's own participants: still hidden
                    raise conflict(address.taken) if create else not_found(address.missing)
                yield session
            sending = sys.modules.get("durable_cli.deliver")  # imported by whatever noted a delivery (core/hooks, alarms)
            if sending is not None and self.delivering != "process":  # the lock is released: send what the block wrote
                sending._NOTED.pop(object_id, None)  # a library keeps no process-wide list (what a wake found is left)
                if made and deliver:
                    sending.made_by_block(self.objects, object_id, made, background=self.delivering == "thread")
            return
        raise not_found(address.missing)  # pragma: no cover - expired three times in a row

    def read_kept(self, name, read):
        """READ(db) on the kept connection of the acting user's object NAME, in one read transaction, when
        nothing needs doing before a read (ObjectStore.read_kept): else KEPT_MISS and the caller reads
        through open(). Only for a store made with keep_open; a tenant object is always read through open()
        (its visibility is checked there)."""
        from .store.objects import KEPT_MISS

        if not self._keep_open or self.tenant is not None:
            return KEPT_MISS
        known = self._kept_ids.get(name)  # (object id, what) computed once per NAME
        if known is None:
            address = self.address(name)
            object_id = self.objects.object_id(address.id_scope, address.owner, address.name)
            if object_id is None:
                return KEPT_MISS
            if len(self._kept_ids) >= 4096:
                self._kept_ids.clear()
            known = self._kept_ids[name] = (object_id, address.what)
        return self.objects.read_kept(known[0], known[1], read)

    def read_checkpoint_kept(self, name, ns, checkpoint_id=None):
        """The newest checkpoint of thread object NAME (as Session.checkpoint_latest reads it) on the kept
        connection (read_kept), or KEPT_MISS: the LangGraph adapter's read of a graph step."""
        from .core.checkpoints import latest_rows

        return self.read_kept(name, lambda db: latest_rows(db, ns, checkpoint_id))

    @contextmanager
    def open_reserved(self, user=None, *, create=False):
        with self.open(address=self.reserved_address(user), create=create) as obj:
            yield obj

    def poll(self, name, attempt, *, wait_seconds: int, **open_args):
        """Call ATTEMPT(session, more) under the lock until it returns non-None or WAIT_SECONDS pass.

        The lock is taken for each poll and released in between, so others can write while we wait.
        WAIT_SECONDS bounds the whole run, waits for the lock included: time is read from a monotonic
        clock (or the time slept, if more: a frozen clock cannot stall it), and each poll waits for
        the lock at most what is left. A poll the deadline cuts short ends the wait with None; the
        first poll that cannot get the lock at all is exit 6 (busy), as any command's would be.
        """
        lock_timeout = self.objects.lock_timeout

        def once(left, looked):
            cut = left < lock_timeout and (looked or wait_seconds > 0)
            try:
                with self.open(name, lock_timeout=left if cut else None, **open_args) as session:
                    return attempt(session, left > 0)
            except DurableError as e:
                if e.code == "busy" and cut and looked:
                    return GIVE_UP  # the deadline came while another process held the lock
                raise

        return poll_loop(once, wait_seconds)

    FOLLOW_ENDS = FOLLOW_ENDS

    def follow(self, name, *, all_rows=False, since=0, last=None, interval=0.1):
        """`transcript show --follow`: yield the rows `show` lists, then each batch of newer rows (seq
        order) as they are appended, until the session is archived, cancelled or deleted.

        The lock is taken for each poll and released in between (a follower never holds up a writer
        for longer than one read); a poll that finds the lock busy is simply tried again. Polls come
        every INTERVAL seconds (0.1: a new row shows within 0.25 s)."""
        return follow_rows(self, name, all_rows=all_rows, since=since, last=last, interval=interval)

    def summarize(self, name, *, through, text=None, command=None, input_format="text", timeout=120, **open_args) -> dict:
        """`transcript summarize`. With a COMMAND the covered rows are read under the lock, the lock is
        released while it runs (others keep appending), and the summary is committed under the lock
        again only if those rows are unchanged (else exit 4; docs/reference/storage.md §3)."""
        return self._summarize(name, transcript.plan_summary, {"through": through}, text, command, input_format, timeout, open_args)

    def compact(self, name, *, max_tokens, keep_tokens, text=None, command=None, input_format="text", timeout=120, **open_args) -> dict:
        """`transcript compact`, releasing the lock while a COMMAND runs, as `summarize`."""
        return self._summarize(name, transcript.plan_compact, {"max_tokens": max_tokens, "keep_tokens": keep_tokens},
                               text, command, input_format, timeout, open_args)

    def _summarize(self, name, plan_of, args, text, command, input_format, timeout, open_args) -> dict:
        transcript.check_summary_request(self.config, text, command, input_format)
        with self.open(name, **open_args) as session:
            plan = plan_of(session, **args)
            if plan is None:
                return {"summary": None, "superseded": 0}
            if text is not None:
                return transcript.commit_summary(session, plan, text)
        text = transcript.run_summarizer(command, plan.covered, input_format, timeout)
        with self.open(name, **open_args) as session:
            return transcript.commit_summary(session, plan, text)

    def fork(self, name, new, *, at=None, title=None) -> dict:
        """`session fork`: NEW, in the acting user's own scope, holding NAME's live rows up to SEQ AT.

        NAME is read under its lock and released before NEW is created under its own (one lock at a
        time: no deadlock between forks); NAME is not changed. Returns NEW's session object."""
        from .core import fork

        new, title = fork.check_request(new, title, at)
        with self.open(name) as source:
            copy = fork.read_source(source, at)
        with self.open(address=state.Address("user", self.user, new, "user"), create=True) as session:
            return fork.write_fork(session, copy, title=title)

    def step(self, name, key, fn, *, prompt=None, attempt=None, call_id=None, args=None, approval=None):
        """docs/reference/sessions.md §5.2: run FN() at most once per (prompt, KEY) of session NAME as long as a run reaches its
        commit, and replay its result afterwards: a StepResult(stdout, exit_status, replayed). FN runs without the
        lock and returns bytes or str (exit status 0), or raises durable_cli.StepFailed(exit_status, stdout) to
        record a failure; any other exception records nothing (the step abandoned) and propagates. The prompt
        and start come from PROMPT/ATTEMPT, else (only when PROMPT is None) DURABLE_PROMPT_ID/DURABLE_ATTEMPT as
        `durable step` reads them, else NAME's processing prompt. ARGS: the tool call's arguments (a JSON value)."""
        from .steps import step_library

        return step_library(self, name, key, fn, prompt=prompt, attempt=attempt, call_id=call_id, args=args,
                            approval=approval)

    def steps(self, name, *, prompt=None) -> list:
        """`session steps`: NAME's step journal (docs/reference/sessions.md §5.2), by prompt id then seq; PROMPT keeps one prompt's."""
        from .steps import listing

        return listing(self, name, prompt)

    def path(self, name=None) -> str:
        """The data directory, or NAME's object file (exit 3 when NAME is missing or not visible)."""
        if name is None:
            return self.objects.paths.home
        with self.open(name) as session:
            sessions.require_session(session)
            return session.handle.path

    def tombstone(self, name, **address):
        """The tombstone a deleted adapter thread left at NAME (docs/reference/integrations.md §12), or None: only a participant the thread
        had when deleted reads it; to anyone else NAME reads as a thread never made."""
        address = self.address(name, **address)
        object_id = self.objects.object_id(address.id_scope, address.owner, address.name)
        if object_id is None:
            return None
        return self.objects.index(create=False).tombstone(object_id, self.user, user_scoped=address.id_scope == "user")

    def close(self) -> None:
        if self._objects is not None:
            self._objects.close()

    # Operations over many objects (docs/reference/retention.md §7) live in across/ (retention, rights, doctor, search, usage, llm import).
    def ls(self, **filters):
        from .across import retention

        return retention.ls(self, **filters)

    def startable(self, limit=8) -> list:
        """`work --all` (docs/reference/sessions.md §5.1): index rows of the sessions `ls` lists for the acting user (or tenant)
        whose oldest pending prompt can start by now, oldest first; from index.db alone (no object opened)."""
        from .across import retention

        return retention.ls_rows(self, all_objects=True, extra=["o.pending_at IS NOT NULL", "o.pending_at <= ?"],
                                 extra_params=[clock.now()], limit=limit, order="o.pending_at, o.id")

    def fire_due_alarms(self, limit=16) -> int:
        """Wake the sessions `ls` lists whose next alarm is due (index.db's next_alarm_at, as `sweep` reads
        it), so their alarms fire (an expired lease retried or failed); returns how many were woken."""
        from .across import retention

        woken = 0
        for row in retention.ls_rows(self, all_objects=True, extra=["o.next_alarm_at IS NOT NULL", "o.next_alarm_at <= ?"],
                                     extra_params=[clock.now()], limit=limit):
            try:
                with self.open(address=retention.address_of(row), lock_timeout=0):
                    woken += 1
            except DurableError:
                continue  # busy, gone or hidden: its own next wake fires it
        return woken

    def ttl(self, name, **kw):
        from .core import retention

        with self.open(name) as obj:
            return retention.ttl(obj, **kw)

    def delete(self, name):
        from .across import retention

        return retention.delete(self, self.address(name))

    def purge(self, **kw):
        from .across import retention

        return retention.purge(self, **kw)

    def sweep(self, **kw):
        from .across import retention

        return retention.sweep(self, **kw)

    def forget(self, user, **kw):
        from .across import rights

        return rights.forget(self, user, **kw)

    def export(self, **kw):
        from .across import rights

        return rights.export(self, **kw)

    def import_records(self, records, **kw):
        from .across import rights

        return self._indexed(rights.import_records(self, records, **kw))

    def import_llm(self, path=None, **kw):
        """`import --from llm [PATH]`: llm's conversations, one session each (logs.db read-only)."""
        from .across import llm_import

        return self._indexed(llm_import.import_llm(self, path, **kw))

    def _indexed(self, receipt):
        """After an import: the acting user's search side files brought up to date, so the first search
        after it opens no object (a failure here is only a warning: the next search catches up)."""
        if receipt.get("imported") or receipt.get("changed"):
            from .across import search

            try:
                search.refresh(self)
            except DurableError as e:
                self.objects.warnings.append(f"the search index was not brought up to date ({e.message}); "
                                             "the next search does it")
        return receipt

    def backup(self, dest, **kw):
        from .across import rights

        return rights.backup(self, dest, **kw)

    def doctor(self, **kw):
        from .across import doctor

        return doctor.doctor(self, **kw)

    def search(self, query, **kw):
        """`durable search`: (hits, receipt of skipped busy/corrupt objects); see across/search.py."""
        from .across import search

        return search.search(self, query, **kw)

    def usage(self, **kw):
        from .across import usage

        return usage.usage(self, **kw)

    def usage_by_day_and_model(self, days: int) -> dict:
        """`durable ui`'s usage page (docs/reference/ui.md §16.3): `{"rows": [{day, model, ...§10 group fields}],
        "total", "prices"}` over the last DAYS UTC days, from index.db alone (across/usage.py)."""
        from .across import usage

        return usage.by_day_and_model(self, days)

    def sessions_page(self, *, statuses=(), all_objects=False, after=None, limit=100) -> dict:
        """`durable ui`'s sessions list (docs/reference/ui.md §16.3): one page of what `ls` lists, newest activity first,
        keyset-paged after AFTER ([last_active_at, id] of the previous page's last row), from index.db alone:
        `{"rows": [index rows (times in ms) with `cost_given_usd`, `cost_usd` (given + computed, as `usage --by session`)
        and `pending_requests`], "next": AFTER or None, "prices_unread": why the price table could not be read (then
        `cost_usd` is the given cost) or None}`."""
        from .across import retention
        from .errors import DurableError

        extra, params = [], []
        if after is not None:
            extra.append("(o.last_active_at < ? OR (o.last_active_at = ? AND o.id < ?))")
            params += [after[0], after[0], after[1]]
        try:
            rows = list(retention.ls_rows(self, statuses=statuses, all_objects=all_objects, extra=extra,
                                          extra_params=params, limit=limit + 1, cost=True))
        except DurableError as e:
            if e.code != "not_found":  # no index.db yet: no sessions
                raise
            rows = []
        more = len(rows) > limit
        rows = [dict(r) for r in rows[:limit]]
        from . import prices as _prices
        from .across import usage

        unread = None
        try:
            priced = usage.costs(self, [r["id"] for r in rows], _prices.load(self.config))
        except DurableError as e:  # the price table cannot be read: the recorded costs, and the reason
            priced, unread = None, e.message
        for r in rows:
            r["cost_given_usd"] = float(r["cost_given_usd"] or 0)
            r["cost_usd"] = r["cost_given_usd"] if priced is None else priced.get(r["id"], 0.0)
            r["pending_requests"] = r.get("pending_requests") or 0
        return {"rows": rows, "next": [rows[-1]["last_active_at"], rows[-1]["id"]] if more else None, "prices_unread": unread}

    def reindex(self) -> dict:
        """`remote reindex` (docs/reference/remote.md §13) has no local meaning: `doctor --repair` rebuilds index.db."""
        from .errors import invalid

        raise invalid("remote reindex needs --remote URL (or DURABLE_REMOTE); a local index.db is rebuilt by "
                      "'durable doctor --repair'")
