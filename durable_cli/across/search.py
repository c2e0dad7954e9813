"""Full-text search over the acting user's sessions (docs/reference/retention.md §7 `durable search`).

A local search reads one side file per owner (store/side_index.py): it takes from index.db the
sessions `ls --all` lists that can hold a hit (rows, activity since `--newer-than`), brings each owner's
side file up to date with those written since (read under their lock), ranks that file's rows with bm25,
and merges the owners' tops by (rank, newer last_active_at, NAME, seq). An object keeps no index of its
own (the step "search index in the side files only" dropped it; the Worker's objects keep theirs, which
remote search reads). SQLite 3.40 has no FTS5 secure-delete: every removal (pop, clear, prune, redact,
and the removal of whole objects) first takes the object out of its side file, which is then merged into
one segment with secure_delete on, so no token of what was removed stays in any file.
"""

import heapq
import re
import sqlite3

from .. import clock
from ..contract.messages import say
from ..contract.text import strip
from ..contract.vocabulary import ROW_ROLES as ROLES
from ..errors import DurableError, invalid
from . import retention

HIT_KEYS = ("name", "id", "seq", "role", "created_at", "snippet")


def check_query(query, fts=False) -> str:
    """The FTS5 expression QUERY asks for: plain text (docs/reference/retention.md §7) translated by plain_query, or with FTS
    QUERY itself, exit 2 for one FTS5 rejects (decided once on an empty in-memory table, so the answer
    does not depend on which objects exist)."""
    if not isinstance(query, str) or not strip(query):
        raise invalid(say("empty_search"))
    if not fts:
        return plain_query(query)
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE q USING fts5(content, arguments, tokenize='unicode61 remove_diacritics 2')")
        db.execute("SELECT rowid FROM q WHERE q MATCH ?", (query,)).fetchall()
    except sqlite3.Error as e:
        raise invalid(say("invalid_search_query", query=query, why=e)) from e
    finally:
        db.close()
    return query


_TERMS = None


def plain_query(query: str) -> str:
    """docs/reference/retention.md §7's plain-text QUERY as an FTS5 expression (worker/src/rules/text.ts plainQuery is the same
    rule; durable_cli/contract/vectors.json "search_query" holds both to it). Terms are split at white
    space; `"…"` (with a closing quote) is one term, the phrase of the words inside; a term ending in `*`
    is a prefix; every other character is matched as written: each term becomes an FTS5 string (the
    phrase of its own tokens) and all must match. A term with no word (letter or digit) is left out;
    a query left with none is exit 2."""
    global _TERMS
    if _TERMS is None:
        from ..contract.text import white_space

        ws = re.escape(white_space())
        _TERMS = re.compile(f'"([^"]*)"(\\**)|([^{ws}]+)')
    if not strip(query):
        raise invalid(say("empty_search"))
    out = []
    for m in _TERMS.finditer(query):
        if m.group(3) is not None:
            term = m.group(3)
            stem = term.rstrip("*")
            prefix = stem != term
        else:
            stem, prefix = m.group(1), bool(m.group(2))
        if not _has_word(stem):
            continue
        out.append('"' + stem.replace('"', '""') + '"' + (" *" if prefix else ""))
    if not out:
        raise invalid(say("search_no_word", query=query))
    return " ".join(out)


def _has_word(term: str) -> bool:
    """A letter, digit or private-use character: what FTS5's unicode61 tokenizer keeps as a token."""
    import unicodedata

    for ch in term:
        cat = unicodedata.category(ch)
        if cat[0] in "LN" or cat == "Co":
            return True
    return False


def search(store, query, *, user=None, session=None, role=None, newer_than=None, superseded=False, limit=20, fts=False):
    """Hits (dicts of HIT_KEYS), best first, and a receipt whose `skipped` lists busy or corrupt objects.

    The caller prints the hits, reports the skipped objects on stderr and exits 6/7 (`retention.conclude`).
    """
    query = check_query(query, fts)
    if role is not None and role not in ROLES:
        raise invalid(say("invalid_search_role", role=role, roles=", ".join(ROLES)))
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise invalid(say("limit_negative"))
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

        raise not_found(say("search_session_not_found", session=session))
    if limit == 0:
        return [], out
    rows = retention.ls_rows(store, all_objects=True, user=user, extra=extra, extra_params=params)
    viewer = user or store.user
    best = []  # the LIMIT best keys so far (a max-heap by negation): only hits that may stay get a snippet
    found = []
    secret = store.objects.secret(create=False)
    for (id_scope, owner), members in _by_owner(rows).items():
        found += _search_side_file(store, secret, id_scope, owner, members, viewer, query, role, cutoff, superseded,
                                   limit, best, out)
    merged = heapq.nsmallest(limit, found)
    return [{"name": name, "id": object_id, "seq": seq, "role": r, "created_at": clock.iso(created), "snippet": snippet}
            for _rank, _active, name, seq, object_id, r, created, snippet in merged], out


def refresh(store, *, user=None) -> dict:
    """Bring the search side files of the sessions USER (default: the acting user) can see up to date, so
    the next search opens no object (run after an import). Returns the receipt of what was skipped."""
    out = retention.receipt()
    rows = retention.ls_rows(store, all_objects=True, user=user, extra=["o.turns > 0"])
    secret = store.objects.secret(create=False)
    if secret is None:
        return out
    for (id_scope, owner), members in _by_owner(rows).items():
        db = _open_side(store, secret, id_scope, owner)
        try:
            _catch_up(store, db, members, user or store.user, out)
        finally:
            db.close()
    return out


def _by_owner(rows) -> dict:
    """Index rows grouped by the side file that indexes them: (id scope, owner) -> rows."""
    groups: dict = {}
    for row in rows:
        groups.setdefault((retention.address_of(row).id_scope, row["owner"]), []).append(row)
    return groups


def _side_error(e: sqlite3.Error) -> DurableError:
    """A side file's SQLite error as the user meets it: busy (exit 6) or broken (exit 7; it is a cache)."""
    if isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e)):
        return DurableError("the search index is busy (another search is bringing it up to date); try again", "busy", 6)
    return DurableError(f"the search index failed ({e}); run 'durable doctor --repair'", "storage", 7)


def _open_side(store, secret, id_scope, owner):
    from ..store import side_index

    path = side_index.side_path(store.objects.paths, side_index.side_id(secret, id_scope, owner))
    try:
        db = side_index.connect(path, create=True, timeout=store.objects.lock_timeout, synchronous="OFF")
    except sqlite3.OperationalError as e:
        raise _side_error(e) from e
    if db is None:
        raise DurableError("the search index could not be made; run 'durable doctor'", "storage", 7)
    return db


def _catch_up(store, db, members, viewer, out):
    """Index the rows of MEMBERS (index rows of one owner) that the side file DB has not seen, each read
    under its object's lock. Returns (hidden, failed): objects whose rows the viewer must not get (a tenant
    object index.db still lists them in, though the object no longer does), and objects that could not be read."""
    from ..store import side_index

    try:
        synced = dict(db.execute("SELECT object_id, mark FROM synced").fetchall())
    except sqlite3.Error as e:
        raise _side_error(e) from e
    stale = [row for row in members if row.get("seq_max") is None or synced.get(row["id"]) != row["seq_max"]]
    hidden = set()

    def sync(row):
        address = retention.address_of(row)
        with store.objects.open(row["id"], create=False, what=address.what, read_only=True) as handle:
            odb = handle.db
            try:
                if row["scope"] == "tenant" and odb.execute(
                        "SELECT 1 FROM participants WHERE user = ?", (viewer,)).fetchone() is None:
                    hidden.add(row["id"])  # index.db lagged behind the object's own participants: still hidden
                mark = synced.get(row["id"])
                new = odb.execute(side_index.ROWS_ABOVE, (-1 if mark is None else mark,)).fetchall()
                top = odb.execute("SELECT coalesce(max(seq), 0) FROM turns").fetchone()[0]
            except sqlite3.Error as e:
                from ..store.objects import sqlite_error

                raise sqlite_error(e, address.what) from e
            # written while the object's lock is held: no removal can slip in between (it evicts first)
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    if mark is None:
                        side_index.drop_object(db, row["id"])
                    for seq, r, created, sup, content, arguments in new:
                        cur = db.execute("INSERT INTO docs (object_id, seq, role, created_at, superseded) VALUES (?, ?, ?, ?, ?)",
                                         (row["id"], seq, r, created, sup))
                        db.execute("INSERT INTO fts (rowid, content, arguments) VALUES (?, ?, ?)",
                                   (cur.lastrowid, content, arguments))
                    db.execute("INSERT OR REPLACE INTO synced (object_id, mark) VALUES (?, ?)", (row["id"], top))
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as e:
                raise _side_error(e) from e
            return row["id"], top

    done = list(retention.each_object(store, stale, sync, out))
    failed = {row["id"] for row in stale} - {object_id for object_id, _top in done}
    by_id = {row["id"]: row for row in stale}
    unknown = [(top, object_id) for object_id, top in done if by_id[object_id].get("seq_max") is None]
    if unknown:  # index.db rows written before it kept seq_max: learn it once, so the next search opens nothing
        store.objects.index().execute_many("UPDATE objects SET seq_max = ? WHERE id = ? AND seq_max IS NULL", unknown)
    return hidden, failed


def _search_side_file(store, secret, id_scope, owner, members, viewer, query, role, cutoff, superseded, limit, best, out):
    """The hits of one owner's side file (docs/reference/retention.md §7), after bringing it up to date with the objects in MEMBERS
    (index rows); rank is the side file's bm25."""
    db = _open_side(store, secret, id_scope, owner)
    try:
        hidden, failed = _catch_up(store, db, members, viewer, out)
        allowed = {row["id"]: row for row in members}
        hits = []
        for rowid, rank in db.execute(_SIDE_QUERY, (query,)):
            if len(best) == limit and (rank,) > best[0].key[:1]:
                break  # by rank: no later row can make it
            doc = db.execute("SELECT object_id, seq, role, created_at, superseded FROM docs WHERE rowid = ?", (rowid,)).fetchone()
            if doc is None:
                continue
            object_id, seq, r, created, sup = doc
            row = allowed.get(object_id)
            if row is None or object_id in hidden or object_id in failed:
                continue
            if (sup and not superseded) or (role is not None and r != role) or (cutoff is not None and created < cutoff):
                continue
            key = (rank, -row["last_active_at"], row["name"], seq, object_id)
            if len(best) == limit and key >= _worst(best):
                continue
            _keep(best, key, limit)
            hits.append((key, rowid, r, created))
        kept = {d.key for d in best}
        return [(*key, r, created, db.execute(_SIDE_SNIPPET, (query, rowid)).fetchone()[0])
                for key, rowid, r, created in hits if key in kept]
    except sqlite3.Error as e:
        raise _side_error(e) from e
    finally:
        db.close()


_SIDE_QUERY = "SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank"
_SIDE_SNIPPET = "SELECT snippet(fts, -1, '[', ']', '…', 16) FROM fts WHERE fts MATCH ? AND rowid = ?"


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


def conclude(out) -> None:
    """Exit 7 (corrupt) or 6 (busy) after the hits were printed, naming what was skipped; no document."""
    try:
        retention.conclude(out, "search")
    except DurableError as e:
        e.document = None
        raise
