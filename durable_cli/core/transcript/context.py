"""The context window (docs/reference/transcript.md §6 `transcript window`): pinned turns, then the longest suffix of the other
live rows within the budget, tool calls and their results kept together."""

import json

from ...contract.messages import say
from ...contract.vocabulary import PINNED_ROLES
from ...errors import invalid
from .row import CALL_ID, CALLS, KIND, POS, ROLE, ROW_COLUMNS, SEQ, TOKENS, _require, row_json


def pinned_prefix(rows) -> list:
    """The leading system and developer turns of ROWS (live rows in logical order, read until the first other row)."""
    pinned = []
    for r in rows:
        if r[ROLE] in PINNED_ROLES and r[KIND] == "turn":
            pinned.append(r)
        else:
            break
    return pinned


def _pinned(obj) -> list:
    return pinned_prefix(obj.db.execute(f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL ORDER BY pos"))


def _check_bounds(budget, limit) -> None:
    if isinstance(budget, bool) or budget < 0 or (limit is not None and limit < 0):
        raise invalid(say("window_negative"))


def _call_ids(r):
    return [c["id"] for c in json.loads(r[CALLS])] if r[CALLS] else []


def choose(pinned, newer_first, *, budget, limit=None, keep=None):
    """The window's rule over rows: PINNED, then the longest suffix of the other live rows (NEWER_FIRST,
    read only as far as needed) within BUDGET tokens and LIMIT rows; (rows in logical order, tokens).

    A tool call and its results come as one group: a `tool` row is taken only with the assistant
    row that called it (orphans are left out wherever they stand, costing nothing), and an assistant
    row is taken only with its results. KEEP (a seq, `session next --context`) forces the pinned rows
    and that row in even over the budget. When the pinned rows alone exceed the budget (and nothing
    is kept), the window is empty. contract/vectors.json "window" holds cases both runtimes answer alike.
    """
    _check_bounds(budget, limit)
    total = sum(r[TOKENS] for r in pinned)
    if total > budget and keep is None:
        return [], 0
    tail, count, waiting = [], 0, {}
    for r in newer_first:
        if r[ROLE] == "tool" and r[KIND] == "turn":
            waiting.setdefault(r[CALL_ID], []).append(r)
            continue
        group = [r]
        for call_id in _call_ids(r):
            group += waiting.pop(call_id, [])
        cost = sum(g[TOKENS] for g in group)
        if r[SEQ] != keep and (total + cost > budget or (limit is not None and count + len(group) > limit)):
            break
        tail += group
        total += cost
        count += len(group)
    tail.sort(key=lambda g: g[POS])
    return list(pinned) + tail, total


def context_window(obj, *, budget=None, limit=None, keep=None) -> dict:
    """The window of OBJ's live rows (`choose`), as {"turns", "tokens", "budget"}."""
    if budget is None:
        budget = obj.config.get("transcript.token_budget")
    _check_bounds(budget, limit)
    _require(obj)
    pinned = _pinned(obj)
    boundary = pinned[-1][POS] if pinned else 0
    newer_first = obj.db.execute(
        f"SELECT {ROW_COLUMNS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC", (boundary,))
    rows, total = choose(pinned, newer_first, budget=budget, limit=limit, keep=keep)
    return {"turns": [row_json(r) for r in rows], "tokens": total, "budget": budget}


def window(obj, *, tokens=None, limit=None, format="json", keep=None):  # noqa: A002 - docs/reference/library.md §9's name
    """The context window as a document: `json` ({"turns", "tokens", "budget"}) or a provider's input."""
    if format not in ("json", "messages", "responses", "anthropic", "gemini"):
        raise invalid(f"invalid format {format!r}: use json, messages, responses, anthropic or gemini")
    doc = context_window(obj, budget=tokens, limit=limit, keep=keep)
    if format == "json":
        return doc
    from .. import formats

    return formats.render(doc["turns"], format)
