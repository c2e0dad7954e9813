"""Full-text search over the acting user's sessions (SPEC §7 `durable search`).

Each object carries its own FTS5 index (`turns_fts`: content and tool call arguments, brought up to date
before each write's COMMIT, `schema.catch_up`), so it commits with the rows and goes with the file. SQLite 3.40 has no FTS5 secure-delete:
a deleted row leaves its tokens in the index's older segments until they are merged, so every removal
(pop, clear, prune, redact) ends with `drop_removed_tokens`, which merges the whole index into one
segment (the old ones' pages are zeroed by `secure_delete`) before the commit and the WAL checkpoint.

A search reads index.db for the sessions `ls --all` lists, skips those that cannot hold a hit (no rows,
no activity since `--newer-than`), and opens each of the others under its lock, read-only, ranking its
rows with bm25; the per-object tops are merged by (rank, newer last_active_at, NAME, seq).
"""

import heapq
import sqlite3

from .. import clock
from ..errors import DurableError, invalid
from ..text import strip
from . import retention

ROLES = ("system", "developer", "user", "assistant", "tool")
HIT_KEYS = ("name", "id", "seq", "role", "created_at", "snippet")


def drop_removed_tokens(db) -> None:
    """After rows were deleted or rewritten (inside the caller's transaction): merge the FTS index so
    no segment keeps a token of what was removed (FTS5 'optimize'; secure_delete zeroes the freed pages)."""
    db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")


def check_query(query) -> None:
    """Exit 2 for a query FTS5 rejects, decided once on an empty in-memory table (so the answer does not
    depend on which objects exist)."""
    if not isinstance(query, str) or not strip(query):
        raise invalid("empty search query: give words, \"a phrase\" or prefix*")
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE q USING fts5(content, arguments, tokenize='unicode61 remove_diacritics 2')")
        db.execute("SELECT rowid FROM q WHERE q MATCH ?", (query,)).fetchall()
    except sqlite3.Error as e:
        raise invalid(f"invalid search query {query!r} ({e}); see SQLite FTS5 query syntax: words, \"phrases\", prefix*, AND, OR, NOT")
    finally:
        db.close()


def search(store, query, *, user=None, session=None, role=None, newer_than=None, superseded=False, limit=20):
    """Hits (dicts of HIT_KEYS), best first, and a receipt whose `skipped` lists busy or corrupt objects.

    The caller prints the hits, reports the skipped objects on stderr and exits 6/7 (`retention.conclude`).
    """
    check_query(query)
    if role is not None and role not in ROLES:
        raise invalid(f"invalid --role {role!r}: use one of {', '.join(ROLES)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise invalid("--limit must be a non-negative integer")
    cutoff = None if newer_than is None else clock.now() - newer_than * 1000
    extra, params = ["o.turns > 0"], []  # an object with no live row has no row at all (summaries keep what they cover)
    if session is not None:
        extra.append("o.name = ?")
        params.append(session)
    if cutoff is not None:
        extra.append("o.last_active_at >= ?")  # a row created since then moved last_active_at (fork: set to now)
        params.append(cutoff)
    out = retention.receipt()
    if session is not None and not retention.ls_rows(store, all_objects=True, user=user, extra=["o.name = ?"],
                                                    extra_params=[session]):
        from ..errors import not_found

        raise not_found(f"session \"{session}\" not found; 'durable ls --all' lists your sessions")
    if limit == 0:
        return [], out
    rows = retention.ls_rows(store, all_objects=True, user=user, extra=extra, extra_params=params)
    sql = _object_query(role, cutoff, superseded)
    args = [query] + ([role] if role is not None else []) + ([cutoff] if cutoff is not None else []) + [limit]
    viewer = user or store.user
    best = []  # the LIMIT best keys so far (a max-heap by negation): only hits that may stay get a snippet

    def job(row):
        address = retention.address_of(row)
        with store.objects.open(row["id"], create=False, what=address.what, read_only=True) as handle:
            db = handle.db
            db.execute("PRAGMA query_only = 1")
            try:
                if row["scope"] == "tenant" and db.execute(
                        "SELECT 1 FROM participants WHERE user = ?", (viewer,)).fetchone() is None:
                    return None  # index.db lagged behind the object's own participants: still hidden
                hits = []
                for seq, r, created, rank in db.execute(sql, args).fetchall():
                    key = (rank, -row["last_active_at"], row["name"], seq, row["id"])
                    if len(best) == limit and key >= _worst(best):
                        break  # sorted by rank then seq: no later row of this object can make it either
                    snippet = db.execute(_SNIPPET, (query, seq)).fetchone()[0]
                    hits.append((*key, r, created, snippet))
                    _keep(best, key, limit)
                return hits
            except sqlite3.Error as e:
                from ..store.objects import sqlite_error

                raise sqlite_error(e, address.what)

    merged = heapq.nsmallest(limit, (hit for hits in retention.each_object(store, rows, job, out) for hit in hits))
    return [{"name": name, "id": object_id, "seq": seq, "role": r, "created_at": clock.iso(created), "snippet": snippet}
            for _rank, _active, name, seq, object_id, r, created, snippet in merged], out


class _Desc:
    """A key ordered backwards, so heapq's min-heap keeps the worst of the best on top."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        return self.key > other.key


def _worst(best):
    return best[0].key


def _keep(best, key, limit) -> None:
    if len(best) < limit:
        heapq.heappush(best, _Desc(key))
    elif key < best[0].key:
        heapq.heapreplace(best, _Desc(key))


_SNIPPET = "SELECT snippet(turns_fts, -1, '[', ']', '…', 16) FROM turns_fts WHERE turns_fts MATCH ? AND rowid = ?"


def _object_query(role, cutoff, superseded) -> str:
    where = ["turns_fts MATCH ?"]
    if not superseded:
        where.append("t.superseded_by IS NULL")
    if role is not None:
        where.append("t.role = ?")
    if cutoff is not None:
        where.append("t.created_at >= ?")
    return (
        "SELECT t.seq, t.role, t.created_at, turns_fts.rank"
        f" FROM turns_fts JOIN turns t ON t.seq = turns_fts.rowid WHERE {' AND '.join(where)}"
        " ORDER BY turns_fts.rank, t.seq LIMIT ?"
    )


def conclude(out) -> None:
    """Exit 7 (corrupt) or 6 (busy) after the hits were printed, naming what was skipped; no document."""
    try:
        retention.conclude(out, "search")
    except DurableError as e:
        e.document = None
        raise
