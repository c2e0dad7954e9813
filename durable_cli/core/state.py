"""An opened object as the rules see it: who acts, its own row, its event log, its activity clock.

Every rule module (sessions, transcript, elicit, memory, limits) works on an `Opened` and writes
through `obj.handle.transaction()`; `index_row` is what index.db learns after each commit.
"""

import json

from .. import clock
from ..contract.messages import say
from ..contract.vocabulary import PARTICIPANT_ROLES as ROLES  # noqa: F401 - the rules' names for them
from ..contract.vocabulary import STATUSES  # noqa: F401 - the rules' names for them
from ..errors import denied, not_found
from ..store import schema


class Address:
    """How a NAME resolves: the id's scope and owner, the scope the object reports, and a label for messages."""

    __slots__ = ("id_scope", "owner", "name", "scope", "_what", "_missing")

    def __init__(self, id_scope: str, owner: str, name: str, scope: str):
        self.id_scope = id_scope  # user | tenant | reserved
        self.owner = owner
        self.name = name
        self.scope = scope  # user | tenant | session | reserved
        self._what: str | None = None  # made once (an adapter's Store reuses its addresses)
        self._missing: str | None = None

    @property
    def missing(self) -> str:
        """The "not found" message: what was looked for, and where to look instead."""
        if self._missing is None:
            if self.id_scope == "reserved":
                self._missing = say("memory_empty", what=self.what)
            else:  # one hint for every not-found, whatever the scope, so it tells nothing about what exists (docs/reference/concepts.md §2)
                self._missing = say("not_found", what=self.what)
        return self._missing

    @property
    def taken(self) -> str:
        """A creating command's answer for a tenant NAME held by an object the acting user cannot see."""
        return say("name_taken", what=self.what)

    @property
    def what(self) -> str:
        if self._what is None:
            if self.id_scope == "reserved":
                self._what = say("user_memory", user=self.owner)
            elif self.id_scope == "tenant":
                self._what = say("tenant_session", name=self.name, tenant=self.owner)
            else:
                self._what = say("session", name=self.name)
        return self._what


class Opened:
    """One woken object for one run: the store handle, the acting user and the settings."""

    def __init__(self, handle, address: Address, actor: str, config):
        self.handle = handle
        self.address = address
        self.actor = actor
        self.config = config
        self.name = address.name

    @property
    def db(self):
        return self.handle.db

    @property
    def id(self) -> str:
        return self.handle.id

    @property
    def what(self) -> str:
        return self.address.what

    def meta(self):
        """The object's own row as a dict, or None for a file with no object (new or half-made). On a kept
        connection nobody else committed through since this store's last run, and before this run changed
        anything, it is the row that run left (ObjectHandle.known["meta"], read just before its commit)."""
        handle = self.handle
        known = handle.known
        if known is not None and known.get("meta") is not None and handle.db.total_changes == handle.known_changes:
            return dict(known["meta"])
        row = handle.row("SELECT * FROM object")
        if row is None:
            return None
        return dict(zip(META_COLUMNS, row))

    def role(self):
        row = self.handle.row("SELECT role FROM participants WHERE user = ?", (self.actor,))
        return row[0] if row else None

    def require_visible(self) -> None:
        """Tenant objects are visible to participants only; others get "not found" (no leak of existence)."""
        if self.address.id_scope == "tenant" and self.role() is None:
            raise not_found(self.address.missing)

    def require_owner(self, doing: str) -> None:
        if self.role() != "owner":
            raise denied(say("owner_only", what=self.what, doing=doing))


META_COLUMNS = (
    "one", "id", "scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
    "ttl_seconds", "expires_at", "live_turns", "live_tokens", "external_id", "adapter",
)



def object_id(obj: Opened) -> dict:
    """The object's id (as `session show` prints it), to a participant only: an import receipt names a tenant
    object by it."""
    obj.require_visible()
    return {"id": obj.id}

def meta_for_write(obj: Opened, *, created: bool, status: str) -> dict:
    """The object's meta inside the caller's write transaction: a missing object is created with STATUS when
    CREATED allows it (else not found); an existing one must be visible to the actor."""
    meta = obj.meta()
    if meta is None:
        if not created:
            raise not_found(obj.address.missing)
        create_object(obj, status)
        return obj.meta()
    obj.require_visible()
    return meta


def create_object(obj: Opened, status: str, *, title=None, ttl_seconds=None, origin=None) -> None:
    """Insert the object's row and its creator as owner (inside the caller's transaction).

    ORIGIN, for an object an adapter makes (docs/reference/integrations.md §12), is (external_id, adapter): the framework's own id
    and the adapter's name."""
    now = clock.now()
    expires = now + ttl_seconds * 1000 if ttl_seconds else None
    a = obj.address
    obj.db.execute(
        "INSERT INTO object (one, id, scope, owner, name, title, status, created_at, updated_at, last_active_at,"
        " ttl_seconds, expires_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (obj.id, a.scope, a.owner, a.name, title, status, now, now, now, ttl_seconds, expires),
    )
    if origin is not None:
        obj.db.execute("UPDATE object SET external_id = ?, adapter = ?", origin)
    if a.id_scope != "reserved":
        obj.db.execute("INSERT INTO participants (user, role, joined_at) VALUES (?, 'owner', ?)", (obj.actor, now))
        event(obj, "session.created", {"scope": a.scope, "status": status})
        if ttl_seconds:
            event(obj, "ttl.set", {"ttl_seconds": ttl_seconds})


def event(obj: Opened, type_: str, data=None, *, actor="__actor__") -> int:
    now = clock.now()
    cur = obj.db.execute(
        "INSERT INTO events (type, actor, data, at) VALUES (?, ?, ?, ?)",
        (type_, obj.actor if actor == "__actor__" else actor, json.dumps(data or {}, separators=(",", ":")), now),
    )
    return cur.lastrowid


def touch(obj: Opened, *, active: bool = True) -> None:
    """Record a write: updated_at always; last_active_at (and the TTL deadline) for activity."""
    now = clock.now()
    if active:
        obj.db.execute(
            "UPDATE object SET updated_at = ?, last_active_at = ?,"
            " expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END",
            (now, now, now),
        )
    else:
        obj.db.execute("UPDATE object SET updated_at = ?", (now,))


def set_status(obj: Opened, new: str, old: str) -> None:
    """Transition with its event; a transition to the current status writes nothing."""
    if new == old:
        return
    obj.db.execute("UPDATE object SET status = ?", (new,))
    event(obj, "session.status", {"from": old, "to": new})


NEXT_ALARM_AT = (
    "SELECT min(t) FROM (SELECT expires_at AS t FROM object"
    " UNION ALL SELECT min(lease_expires_at) FROM prompts WHERE status = 'processing'"
    " UNION ALL SELECT min(expires_at) FROM requests WHERE status = 'pending'"
    " UNION ALL SELECT min(next_at) FROM schedules"
    " UNION ALL SELECT min(next_attempt_at) FROM deliveries WHERE status = 'pending')"
)


def next_alarm_at(db):
    return db.execute(NEXT_ALARM_AT).fetchone()[0]


# docs/reference/sessions.md §5.1 `work --all`: when the object's oldest startable pending prompt could start (a release's delay
# counted), or null when none is pending or one is processing (one start at a time per object)
PENDING_AT = (
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM prompts WHERE status = 'processing') THEN NULL"
    " ELSE (SELECT min(max(created_at, coalesce(not_before, 0))) FROM prompts WHERE status = 'pending') END"
)


def pending_at(db):
    return db.execute(PENDING_AT).fetchone()[0]


# The object's row with what index.db derives from the rest (next alarm, newest seq, oldest startable prompt),
# in one statement: index_row runs after every write
_INDEX_ROW = (
    "SELECT " + ", ".join(META_COLUMNS) + ", (" + NEXT_ALARM_AT + "), (SELECT coalesce(max(seq), 0) FROM turns), (" + PENDING_AT + "),"
    " (SELECT count(*) FROM requests WHERE status = 'pending') FROM object"
)


_USAGE_TOTALS = f"SELECT day, model, {', '.join(schema.TOTAL_COLUMNS)} FROM usage_totals ORDER BY key"


def index_row(db):
    """(row, members) for index.db, read from the object's own connection."""
    found = index_row_and_meta(db)
    return None if found is None else found[:2]


def index_row_and_meta(db):
    """index_row's (row, members) and the object's own row (as meta() gives it), or None."""
    found = db.execute(_INDEX_ROW).fetchone()
    if found is None:
        return None
    m = dict(zip(META_COLUMNS, found))
    alarm, seq_max, pending, questions = found[len(META_COLUMNS):]
    row = {
        "id": m["id"], "scope": m["scope"], "owner": m["owner"], "name": m["name"], "title": m["title"],
        "status": m["status"], "created_at": m["created_at"], "updated_at": m["updated_at"],
        "last_active_at": m["last_active_at"], "turns": m["live_turns"], "tokens": m["live_tokens"],
        "expires_at": m["expires_at"], "next_alarm_at": alarm, "external_id": m["external_id"],
        "seq_max": seq_max, "pending_at": pending, "pending_requests": questions,
    }
    if m["scope"] != "reserved":  # docs/reference/retention.md §7 usage: the object's totals per UTC day and model
        row["usage"] = db.execute(
            _USAGE_TOTALS).fetchall()
        row["tags"] = db.execute("SELECT key, value FROM tags ORDER BY key").fetchall()  # docs/reference/storage.md §3
    members = db.execute("SELECT user, role FROM participants").fetchall()
    return row, members, m


def keep_facts(handle) -> dict:
    """What a kept connection carries to the store's next run on the object (ObjectHandle.known, trusted
    only while no other connection commits): whether the object's row exists, and its next alarm."""
    if handle.facts is not None:
        return handle.facts  # as sync_index read them after the run's last commit
    db = handle.db
    present = db.execute("SELECT 1 FROM object").fetchone() is not None
    return {"present": present, "due": next_alarm_at(db) if present else None}


def sync_index(handle) -> None:
    """After a commit, under the object's lock: bring the object's index.db row in step (the object read in
    one read transaction: one WAL read lock for its several queries, not one each; or, for a kept-open
    store, read just before the commit: ObjectHandle.before_commit). What it read of the object's own row
    is a fact a kept connection carries to the store's next run (Opened.meta)."""
    db = handle.db
    ahead, handle.ahead = handle.ahead, None
    if ahead is not None and ahead[1] == db.total_changes:
        found = ahead[0]
    elif db.in_transaction:
        found = index_row_and_meta(db)
    else:
        db.execute("BEGIN")
        try:
            found = index_row_and_meta(db)
        finally:
            db.execute("COMMIT")
    handle.facts = {"present": found is not None, "due": found[0]["next_alarm_at"] if found is not None else None,
                    "meta": found[2] if found is not None else None}
    if found is not None:
        handle.store.index().upsert(found[0], found[1])


def session_json(obj: Opened) -> dict:
    """The session object of docs/reference/sessions.md §5."""
    m = obj.meta()
    participants = [
        {"user": u, "role": r, "joined_at": clock.iso(j)}
        for u, r, j in obj.db.execute("SELECT user, role, joined_at FROM participants ORDER BY joined_at, user")
    ]
    counts = dict(obj.db.execute("SELECT status, count(*) FROM prompts WHERE status IN ('pending','processing') GROUP BY status").fetchall())
    return {
        "name": m["name"], "id": m["id"], "scope": m["scope"], "owner": m["owner"], "title": m["title"],
        "status": m["status"], "created_at": clock.iso(m["created_at"]), "updated_at": clock.iso(m["updated_at"]),
        "last_active_at": clock.iso(m["last_active_at"]), "participants": participants,
        "queue": {"pending": counts.get("pending", 0), "processing": counts.get("processing", 0)},
        "turns": m["live_turns"], "tokens": m["live_tokens"], "expires_at": clock.iso(m["expires_at"]),
        "ttl_seconds": m["ttl_seconds"], "external_id": m["external_id"],
        "tags": dict(obj.db.execute("SELECT key, value FROM tags ORDER BY key").fetchall()),
        "schedules": obj.db.execute("SELECT count(*) FROM schedules").fetchone()[0],
        "hooks": obj.db.execute("SELECT count(*) FROM hooks").fetchone()[0],
    }
