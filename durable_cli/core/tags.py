"""Tags (docs/reference/sessions.md §5): labels KEY -> VALUE a caller puts on a session to find it again.

The object's `tags` table is the source of truth; index.db keeps a copy (docs/reference/storage.md §3) that `ls --tag`
and `usage --tag` read without opening objects. The checks here are the client's (durable_cli/checks.py runs
them before NAME is opened) and the rule's; the Worker's twin is worker/src/rules/tags.ts.
"""

import re

from ..contract.messages import say
from ..contract.text import printable, strip
from ..contract.vocabulary import LIMITS
from ..errors import conflict, invalid
from . import state
from .lifecycle import require_session

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")


def valid_key(key):
    """A KEY: 1-64 characters from A-Z a-z 0-9 . _ - : /, beginning with a letter or a digit."""
    if not isinstance(key, str) or not 1 <= len(key) <= LIMITS["tag_key"] or not _KEY.fullmatch(key):
        raise invalid(say("invalid_tag_key", key=key if isinstance(key, str) else str(key)))
    return key


def valid_value(key: str, value):
    """A VALUE: 1-256 code points, printable, equal to its own strip()."""
    if (not isinstance(value, str) or not 1 <= len(value) <= LIMITS["tag_value"] or not printable(value)
            or value != strip(value)):
        raise invalid(say("invalid_tag_value", key=key))
    return value


def valid_set(tags) -> dict:
    """A mapping KEY -> VALUE as an op takes it (each KEY and VALUE checked), keys sorted."""
    if tags is None:
        return {}
    if not isinstance(tags, dict):
        raise invalid("tags must be a JSON object of KEY -> VALUE")
    return {valid_key(k): valid_value(k, tags[k]) for k in sorted(tags)}


def valid_change(set_, untag) -> tuple:
    """(set, untag) of one tag change, checked: every KEY and VALUE, and no KEY named twice (set and removed,
    or removed twice: a JSON object cannot set one twice)."""
    changes = valid_set(set_)
    if untag is None:
        untag = []
    if not isinstance(untag, (list, tuple)):
        raise invalid("untag must be a JSON array of KEYs")
    removed: list = []
    for key in untag:
        valid_key(key)
        if key in changes or key in removed:
            raise invalid(say("tag_twice", key=key))
        removed.append(key)
    return changes, sorted(removed)


def parse_pairs(args, *, values_required: bool = True) -> list:
    """`KEY=VALUE` arguments of the command line as [(KEY, VALUE)], split at the first `=` and checked; without
    VALUES_REQUIRED (a filter of `ls --tag`, `usage --tag`) a bare KEY is (KEY, None). A KEY named twice when
    VALUES_REQUIRED is exit 2."""
    out: list = []
    seen: set = set()
    for arg in args or ():
        key, eq, value = arg.partition("=")
        if not eq:
            if values_required:
                raise invalid(f"{arg!r} is not KEY=VALUE (remove a tag with --untag KEY)")
            out.append((valid_key(key), None))
            continue
        valid_key(key)
        out.append((key, valid_value(key, value)))
        if values_required:
            if key in seen:
                raise invalid(say("tag_twice", key=key))
            seen.add(key)
    return out


def current(obj) -> dict:
    return dict(obj.db.execute("SELECT key, value FROM tags ORDER BY key").fetchall())


def _limit(obj) -> int:
    return obj.config.get("tags.max")


def put(obj, tags: dict) -> None:
    """A new object's tags (inside create's transaction): more than tags.max is exit 2."""
    if len(tags) > _limit(obj):
        raise invalid(say("too_many_tags", what=obj.what, count=len(tags), limit=_limit(obj)))
    if tags:
        obj.db.executemany("INSERT INTO tags (key, value) VALUES (?, ?)", sorted(tags.items()))
        state.event(obj, "session.tagged", {"set": dict(sorted(tags.items())), "unset": []})


def tag(obj, *, set=None, untag=None) -> dict:  # noqa: A002 - the library's argument name (docs/reference/library.md §9)
    """Set each KEY of SET to its VALUE and remove each KEY of UNTAG; only what changes is written (an event
    `session.tagged` and updated_at, never last_active_at). Any participant, whatever the status."""
    changes, removed = valid_change(set, untag)
    require_session(obj)
    obj.require_visible()
    had = current(obj)
    changed = {k: v for k, v in changes.items() if had.get(k) != v}
    unset = [k for k in removed if k in had]
    if changed or unset:
        count = len(had) + sum(1 for k in changed if k not in had) - len(unset)
        if count > len(had) and count > _limit(obj):
            raise conflict(say("too_many_tags", what=obj.what, count=count, limit=_limit(obj)))
        with obj.handle.transaction():
            if changed:
                obj.db.executemany("INSERT OR REPLACE INTO tags (key, value) VALUES (?, ?)", list(changed.items()))
            if unset:
                obj.db.executemany("DELETE FROM tags WHERE key = ?", [(k,) for k in unset])
            state.event(obj, "session.tagged", {"set": changed, "unset": unset})
            state.touch(obj, active=False)  # a tag is not activity (docs/reference/storage.md §3)
    return state.session_json(obj)


def tags(obj) -> dict:
    """The session's tags, KEY -> VALUE, keys sorted."""
    require_session(obj)
    obj.require_visible()
    return current(obj)
