"""A tool call's binding (docs/reference/sessions.md §5.2, hitl.md §8): `--call-id ID --args JSON`, and the SHA-256 of the arguments'
RFC 8785 (JCS) canonical form that a step and an elicit request record. Both core/steps.py and core/elicit.py read it."""

import json

from ..contract.messages import say
from ..contract.text import printable
from ..errors import invalid

_SAFE_INTEGER = 2**53 - 1


def _ecmascript_numbers(value):
    """Integers beyond 2^53 as the doubles ECMAScript reads them (the Worker computes the same hash)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > _SAFE_INTEGER:
        return float(value)
    if isinstance(value, list):
        return [_ecmascript_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: _ecmascript_numbers(v) for k, v in value.items()}
    return value


def as_ecmascript_writes(value):
    """VALUE with each integral float within 2^53 as an int, so its JSON text is the Worker's `JSON.stringify`
    (`--args 1e2` or `100.0` is shown as `100` on both backends, docs/reference/hitl.md §8)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= _SAFE_INTEGER:
        return int(value)
    if isinstance(value, list):
        return [as_ecmascript_writes(v) for v in value]
    if isinstance(value, dict):
        return {k: as_ecmascript_writes(v) for k, v in value.items()}
    return value


def args_sha256(value) -> str:
    """The lowercase hex SHA-256 of the UTF-8 of VALUE's RFC 8785 (JCS) canonical form."""
    import rfc8785

    try:
        canonical = rfc8785.dumps(_ecmascript_numbers(value))
    except (rfc8785.CanonicalizationError, ValueError) as e:
        raise invalid(f"--args cannot be put in RFC 8785 form ({e})") from None
    import hashlib  # here, not at import: `work` loads this module for every prompt (start-up)
    return hashlib.sha256(canonical).hexdigest()


def parse_args(text):
    """--args: RFC 8259 JSON (any value), as the transcript's rules read JSON; exit 2 when it is not."""
    from .strict_json import NotJSON, loads

    if not isinstance(text, str):
        return text  # a value the library was handed
    try:
        return loads(text)
    except NotJSON as e:
        raise invalid(say("not_json", what="--args", why=e)) from None


def check_binding(call_id, args, *, approval=None, args_given=None, parsed=False):
    """(call_id, args value, args_sha256), or (None, None, None) for a step bound to no call; exit 2 for one
    without the other, a bad call id, malformed JSON, or --approval without the binding."""
    has_args = args is not None if args_given is None else args_given
    if (call_id is None) != (not has_args):
        raise invalid("--call-id and --args go together: give both, or neither")
    if approval is not None and call_id is None:
        raise invalid("--approval needs --call-id and --args: an approval is bound to one tool call")
    if call_id is None:
        return None, None, None
    if not isinstance(call_id, str) or not 1 <= len(call_id) <= 128 or not printable(call_id):
        raise invalid("invalid --call-id: use 1-128 printable characters")
    value = args if parsed else parse_args(args)
    if parsed:
        from .strict_json import NotJSON, check_depth

        try:
            json.dumps(value, allow_nan=False)
            check_depth(value)
        except (TypeError, ValueError, NotJSON) as e:
            raise invalid(f"args is not a JSON value ({e})") from None
    return call_id, value, args_sha256(value)
