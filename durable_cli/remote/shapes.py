"""The remote client's side of the ops that are neither plain nor paged, as data (docs/development.md "Adding an op").

An op whose client logic is only shaping (its call as the file backend's rule takes it, turned into the
arguments the Worker takes; the Worker's answer turned into what the rule answers) has no method written
for it in remote/: its entry in SHAPES names the transforms, and `method(op)` makes RemoteSession's method,
with the signature of the op's rule in core/ (the file backend's method is that rule, so both backends'
methods take the same arguments by construction). A call is bound to that signature, then, in this order:

- "refuse": {arg: message}: exit 2 with MESSAGE when ARG is given (what only the file backend can do);
- "before": the name of an op-level transform in BEFORE (config defaults, a check over several arguments),
  which answers the Worker's arguments whole;
- "args": {arg: transform of ARGS} (a list, base64, rows checked and sent as the Worker stores them);
- "rename": {python name: the contract's name};

then the arguments the contract's `args` name are sent through RemoteSession._call (checked against the
contract first, one request; in parts when the contract's `parts` says so: RemoteStore._send), and the
answer goes through "after" (a transform in AFTER, given the call's arguments) or, for "absent", is that value
when the Worker answers not_found. The methods still written in remote/backend.py are the ops whose client
follows pages (a request holds one page of its answer: docs/reference/remote.md §13); tests/test_ops.py holds
them to at most 8.
"""

from ..errors import DurableError, invalid

SUMMARIZER_HERE = "a summarizer command runs without the object's lock: call Store.{}(name, ..., command=CMD)"

SHAPES: dict = {
    "next_prompt": {"before": "lease_policy", "after": "window_in_format"},
    "finish": {"before": "finish"},
    "replace_tail": {"args": {"expected": "list", "rows": "rows", "origin": "list_or_none"}},
    "summarize": {"refuse": {"command": SUMMARIZER_HERE.format("summarize")}},
    "compact": {"refuse": {"command": SUMMARIZER_HERE.format("compact")}},
    "meta": {"absent": None},
    "put_checkpoint": {"args": {"blob": "b64", "mirror": "mirror"}, "rename": {"type_": "type"}},
    "put_checkpoint_writes": {"args": {"writes": "writes"}},
    "hit": {"before": "rate"},
}


def _fields(row) -> dict:
    """A prepared row (core.transcript.Prepared) as the input fields the Worker takes: its JSON fields as the
    text the file backend would store (`tool_calls_json`, `meta_json`, `data_json`), which the Worker checks and
    stores as given, so they come back verbatim (docs/reference/transcript.md §6; worker/src/rules/verbatim.ts)."""
    return {"role": row.role, "content": row.content, "tool_calls_json": row.tool_calls, "call_id": row.call_id,
            "name": row.name, "meta_json": row.meta, "data_json": row.data, "tokens": row.given_tokens}


def _b64(blob):
    import base64

    return None if blob is None else base64.b64encode(bytes(blob)).decode("ascii")


def _rows(config, rows):
    """Rows checked here first, as the file backend's rule checks them (the same messages, nothing sent when
    one is refused), and sent as the text the file backend would store."""
    from .. import checks

    return [_fields(checks.row(config, r, where=f"item {i}: ")) for i, r in enumerate(rows, 1)]


def _mirror(config, mirror):
    """put_checkpoint's mirrored messages: (id, fields or a function answering them) pairs, each row checked."""
    from .. import checks

    pairs = ((mid, fields() if callable(fields) else fields) for mid, fields in mirror)
    return [[mid, _fields(checks.row(config, fields))] for mid, fields in pairs if fields is not None]


ARGS = {
    "list": lambda config, v: list(v),
    "list_or_none": lambda config, v: None if v is None else list(v),
    "b64": lambda config, v: _b64(v),
    "rows": _rows,
    "mirror": _mirror,
    "writes": lambda config, writes: [[task, path, idx, channel, type_, _b64(blob)]
                                      for task, path, idx, channel, type_, blob in writes],
}


def _lease_policy(config, a):
    """next_prompt: --on-expiry and --max-attempts default to the config's, checked together."""
    from .. import checks

    on_expiry, max_attempts = checks.lease_policy(
        a["on_expiry"] if a["on_expiry"] is not None else config.get("queue.on_lease_expiry"),
        a["max_attempts"] if a["max_attempts"] is not None else config.get("queue.max_attempts"))
    return {"lease_seconds": a["lease_seconds"], "waiting": a["waiting"], "context": a["context"],
            "on_expiry": on_expiry, "max_attempts": max_attempts}


def _finish(config, a):
    """finish: the turn's rows (ROWS, or REPLY and META) checked here first (plan_finish) and sent as the
    Worker's append takes them; the Worker appends them and finishes in one transaction."""
    from .. import checks

    checks.attempt(a["attempt"])
    failed = a["failed"] or a["error"] is not None
    turn = checks.finish(config, reply=a["reply"], meta=a["meta"], rows=a["rows"], failed=failed)
    return {"prompt_id": a["prompt_id"], "rows": [_fields(r) for r in turn], "failed": failed, "error": a["error"],
            "attempt": a["attempt"]}


def _rate(config, a):
    """hit: KEY a valid name, RATE (N/DUR) sent parsed and as its normal form."""
    from .. import checks
    from ..config import valid_name
    from ..durations import format as shown

    valid_name(a["key"], "limit key")
    n, per = checks.rate(a["rate"])
    return {"key": a["key"], "rate": f"{n}/{shown(per)}", "n": n, "per": per, "burst": a["burst"]}


BEFORE = {"lease_policy": _lease_policy, "finish": _finish, "rate": _rate}


def _window_in_format(doc, a):
    """next_prompt --context: the window in the format asked for (the Worker answers its turns)."""
    if doc is not None and a["context"] is not None and a["format"] != "json":
        from ..core import formats

        doc["window"] = formats.render(doc["window"]["turns"], a["format"])
    return doc


AFTER = {"window_in_format": _window_in_format}


def _signature(op: str):
    """The signature of OP's rule in core/ (the file backend's method), or the contract's for an op with none."""
    import inspect

    from ..core.rules import RULES

    if op not in RULES:
        from ..seam import signature

        return signature(op)
    from importlib import import_module

    module, function = RULES[op]
    rule = inspect.signature(getattr(import_module(f"durable_cli.core.{module}"), function))
    self, *rest = rule.parameters.values()
    return rule.replace(parameters=[self.replace(name="self"), *rest], return_annotation=inspect.Signature.empty)


class _Shaped:
    """RemoteSession's method of an op in SHAPES (its signature read when first asked for)."""

    def __init__(self, op: str):
        self.op = op
        self._function = None

    def function(self):
        if self._function is None:
            op, shape, signature = self.op, SHAPES[self.op], _signature(self.op)

            def method(self, *args, **kw):
                try:
                    bound = signature.bind(self, *args, **kw)
                except TypeError as e:
                    raise TypeError(f"{op}(): {e}") from None
                bound.apply_defaults()
                return call(self, op, shape, {k: v for k, v in bound.arguments.items() if k != "self"})

            method.__name__ = method.__qualname__ = op
            method.__signature__ = signature  # type: ignore[attr-defined]  # what inspect.signature reads
            method.__doc__ = f"The operation {op!r}, shaped as durable_cli/remote/shapes.py SHAPES declares."
            self._function = method
        return self._function

    def __get__(self, obj, owner=None):
        function = self.function()
        return function if obj is None else function.__get__(obj, owner)


def call(session, op: str, shape: dict, a: dict):
    """OP called on SESSION (a RemoteSession) with A (its rule's arguments), as SHAPE declares."""
    from ..seam import spec

    config, given = session.store.config, a
    for name, message in shape.get("refuse", {}).items():
        if a.get(name) is not None:
            raise invalid(message)
    if "before" in shape:
        a = BEFORE[shape["before"]](config, a)
    sent = dict(a)
    for name, transform in shape.get("args", {}).items():
        sent[name] = ARGS[transform](config, sent[name])
    for name, wire in shape.get("rename", {}).items():
        sent[wire] = sent.pop(name)
    takes = spec(op)["args"]
    sent = {k: v for k, v in sent.items() if k in takes}
    try:
        answer = session._call(op, **sent)
    except DurableError as e:
        if "absent" in shape and e.code == "not_found":
            return shape["absent"]
        raise
    return AFTER[shape["after"]](answer, given) if "after" in shape else answer


def install(cls) -> None:
    """Give CLS (RemoteSession) the method of each op in SHAPES it does not define itself."""
    for op in SHAPES:
        if op not in vars(cls):
            setattr(cls, op, _Shaped(op))
