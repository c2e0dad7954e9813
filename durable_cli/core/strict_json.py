"""RFC 8259 JSON in, strict JSON out (docs/reference/transcript.md §6): the one parser of JSON that comes into durable.

Refused wherever JSON comes in (options, batches, imports, adapters, the remote client's requests):
`NaN`, `Infinity`, `-Infinity`, a number that overflows a double (`1e400`), a duplicate key in one
object, and nesting deeper than MAX_DEPTH levels counted from each field's own value (a row is judged
alike in `--data`, a batch line, an import record or a request). Lone surrogates are the transcript's
rule (they have no UTF-8 to store). Python's json takes all of these (or ends in RecursionError).
"""

import json
import math

from ..contract.messages import say

MAX_DEPTH = 200


class NotJSON(ValueError):
    """JSON text outside RFC 8259 (or nested deeper than MAX_DEPTH): the caller says which field, exit 2.
    SYNTAX: not JSON at all (what json.loads refuses too), rather than JSON durable refuses."""

    syntax = False


def _constant(name):
    raise NotJSON(f"{name} is not a JSON number")


def _float(text):
    value = float(text)
    if not math.isfinite(value):
        raise NotJSON(say("json_overflow", number=text[:40]))
    return value


def _int(text):
    value = int(text)
    if len(text) > 308 and not math.isfinite(float(text)):  # float(str) gives inf rather than raising
        raise NotJSON(say("json_overflow", number=text[:40]))
    return value


def _pairs(pairs):
    value = dict(pairs)
    if len(value) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise NotJSON(say("json_duplicate_key", key=key))
            seen.add(key)
    return value


DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float, parse_int=_int, object_pairs_hook=_pairs)


def too_deep(value, limit: int = MAX_DEPTH) -> bool:
    """True when VALUE nests arrays/objects more than LIMIT levels (a scalar is level 0). Iterative."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return False


def may_be_too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """False when TEXT (JSON) cannot nest deeper than LIMIT: it holds no more than LIMIT opening brackets
    (a text of LIMIT characters or fewer cannot hold more, so it is not scanned)."""
    return len(text) > limit and text.count("[") + text.count("{") > limit


def check_depth(value, text=None) -> None:
    """NotJSON when VALUE (whose JSON is TEXT, when known) nests deeper than MAX_DEPTH."""
    if (text is None or may_be_too_deep(text)) and too_deep(value):
        raise NotJSON(say("json_nested", max=MAX_DEPTH))


def loads(text, *, depth: bool = True):
    """TEXT (str) parsed as RFC 8259 JSON; NotJSON saying why not. DEPTH: refuse nesting over MAX_DEPTH
    (a container of fields, such as a batch line or an import record, checks each field itself)."""
    try:
        value = DECODER.decode(text)
    except RecursionError:
        raise NotJSON(say("json_nested", max=MAX_DEPTH)) from None
    except NotJSON:
        raise
    except ValueError as e:
        error = NotJSON(str(e))
        error.syntax = True
        raise error from None
    if depth:
        check_depth(value, text)
    return value

