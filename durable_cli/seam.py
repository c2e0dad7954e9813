"""The one seam between the library and its backends: the op table (durable_cli/contract/contract.json "ops").

A call of an op is bound and checked here once, against the contract's `args` (types, ranges, required,
defaults, as the Worker's generated checks do: worker/src/rules/args.ts; and the client check an argument
names, durable_cli/checks.py), then handed to the backend as `run(op, args)`:

- the file backend (library.Session, valid under the object's lock) calls the op's rule of core/;
- the remote one (remote.backend.RemoteSession) posts it, one request.

The contract's plain ops are methods of both Session classes made here (`Ops`), so a new op with no client
logic of its own costs the contract, its rule in each runtime and its CLI wiring. Only an op that truly needs
client logic (parts, pages) keeps a method of its own in remote/. `StoreOps.run` is the same call from the
store, checked before NAME is opened: input first (docs/reference/output.md §4), a bad input is exit 2 whether NAME exists or not.

The table is durable_cli/contract/optable.py (generated), imported on the first call, never at start-up.
"""

from .errors import invalid

_SIGNATURES: dict = {}
_SPECS: dict = {}


def spec(op: str, scope: str = "object") -> dict:
    """OP's spec in the op table of SCOPE (parsed when first asked for)."""
    found = _SPECS.get((scope, op))
    if found is None:
        import json

        from .contract.optable import OPS

        try:
            found = _SPECS[scope, op] = json.loads(OPS[scope][op])
        except KeyError:
            raise invalid(f"unknown operation {op!r}") from None
    return found


def spec_or_none(op: str, scope: str = "object"):
    """OP's spec, or None when the table has no such op."""
    from .errors import DurableError

    try:
        return spec(op, scope)
    except DurableError:
        return None


def signature(op: str):
    """The Python signature of a plain op: its `positional` arguments first, the others keyword-only, with
    the contract's defaults (an argument with none is required)."""
    found = _SIGNATURES.get(op)
    if found is None:
        import inspect

        P, s = inspect.Parameter, spec(op)
        positional = s.get("positional", [])
        params = [P("self", P.POSITIONAL_OR_KEYWORD)]
        params += [P(a, P.POSITIONAL_OR_KEYWORD, default=s["args"][a].get("default", P.empty)) for a in positional]
        params += [P(a, P.KEYWORD_ONLY, default=v.get("default", P.empty)) for a, v in s["args"].items()
                   if a not in positional]
        found = _SIGNATURES[op] = inspect.Signature(params)
    return found


def _shown(v) -> str:
    import json

    if isinstance(v, str):
        from .contract.text import quote

        return quote(v if len(v) <= 40 else v[:37] + "...")
    try:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))[:40]  # as JSON.stringify writes it
    except (TypeError, ValueError):
        return repr(v)[:40]


def wrong(v, a: dict):
    """Why V does not meet the argument spec A, or None when it does (args.ts `wrong`, the same words)."""
    t = a["type"]
    if t == "integer":
        lo, hi = a.get("min"), a.get("max")
        if isinstance(v, bool) or not isinstance(v, int) or (lo is not None and v < lo) or (hi is not None and v > hi):
            return f"is not an integer from {lo} to {hi}"
    elif t == "string":
        return None if isinstance(v, str) else "is not a string"
    elif t == "boolean":
        return None if isinstance(v, bool) else "is not true or false"
    elif t == "enum":
        return None if isinstance(v, str) and v in a["values"] else f"is not one of {', '.join(a['values'])}"
    elif t == "object":
        return None if isinstance(v, dict) else "is not a JSON object"
    elif t == "array":
        if not isinstance(v, (list, tuple)):
            return "is not a JSON array"
        if a.get("max_items") is not None and len(v) > a["max_items"]:
            return f"has {len(v)} items, more than {a['max_items']}"
        if a.get("items"):
            for i, item in enumerate(v, 1):
                why = "is null" if item is None else wrong(item, a["items"])
                if why:
                    return f"item {i} ({_shown(item)}) {why}"
    return None


def check(op: str, args: dict, s: dict | None = None) -> dict:
    """ARGS of OP checked against the contract, in its order: each argument's named client check first (its
    own message), then its JSON type and range (the Worker's message); absent or None is the default unless
    required. Returns the arguments as the op takes them (a check may normalize, e.g. choices as a list)."""
    from . import checks

    s = s or spec(op)
    if s.get("check") is not None:  # the op's own check, over its arguments together (its messages first)
        getattr(checks, s["check"])(args)
    for name, a in s["args"].items():
        v = args.get(name)
        if a.get("check") is not None and (v is not None or a.get("required")):
            v = args[name] = getattr(checks, a["check"])(v)
        if v is None:
            if a.get("required"):
                raise invalid(f"argument {name} of {op} is missing")
            continue
        why = wrong(v, a)
        if why:
            raise invalid(f"invalid argument {name} of {op}: {why if a['type'] == 'array' else f'{_shown(v)} {why}'}")
    return args


def bind(op: str, *args, **kw) -> dict:
    """A call of plain op OP (Python arguments as its method takes them) as its checked arguments."""
    try:
        bound = signature(op).bind(None, *args, **kw)
    except TypeError as e:
        raise TypeError(f"{op}(): {e}") from None
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    del arguments["self"]
    return check(op, arguments)


def json_schema(op: str, arg: str, scope: str = "object", **extra) -> dict:
    """The JSON Schema of argument ARG of OP, from the contract: its type and range, and what its named check
    refuses (checks.SCHEMAS); EXTRA (a description) added."""
    a = spec(op, scope)["args"][arg]
    out = schema_of(a)
    if a.get("check") is not None:
        from .checks import SCHEMAS

        for key, value in SCHEMAS.get(a["check"], {}).items():
            out[key] = dict(out.get(key, {}), **value) if isinstance(value, dict) and key == "items" else value
    out.update(extra)
    return out


def schema_of(a: dict) -> dict:
    """An argument spec of the contract as JSON Schema."""
    t = a["type"]
    if t == "integer":
        return {"type": "integer", **{k: a[m] for k, m in (("minimum", "min"), ("maximum", "max")) if a.get(m) is not None}}
    if t == "enum":
        return {"type": "string", "enum": list(a["values"])}
    if t == "array":
        out: dict = {"type": "array"}
        if a.get("items"):
            out["items"] = schema_of(a["items"])
        if a.get("max_items") is not None:
            out["maxItems"] = a["max_items"]
        return out
    return {} if t == "json" else {"type": t}


class _Dispatch:
    """A plain op's method on a Session class: bind and check the call, then `self.run(op, args)`."""

    def __init__(self, op: str):
        self.op = op
        self._function = None

    def __set_name__(self, owner, name):
        self.op = name

    def function(self):
        if self._function is None:
            op = self.op

            def method(self, *args, **kw):
                return self.run(op, bind(op, *args, **kw))

            method.__name__ = method.__qualname__ = op
            method.__signature__ = signature(op)  # type: ignore[attr-defined]  # what inspect.signature reads
            method.__doc__ = f"The operation {op!r} of durable_cli/contract/contract.json (durable_cli/seam.py)."
            self._function = method
        return self._function

    def __get__(self, obj, owner=None):
        function = self.function()
        return function if obj is None else function.__get__(obj, owner)


class Ops:
    """What both Session classes share: the plain ops' methods, each `run(op, args)` on the backend."""

    def run(self, op: str, args: dict):  # pragma: no cover - each backend answers it
        raise NotImplementedError


def install(cls, names) -> None:
    """Give CLS (a Session class) the dispatcher method of each plain op in NAMES it does not define itself."""
    for name in names:
        if name not in vars(cls):
            setattr(cls, name, _Dispatch(name))


class StoreOps:
    """What both Store classes share: one op on object NAME, its input checked before NAME is opened."""

    def run(self, name, op: str, *args, create=False, open_args=None, **kw):
        checked = bind(op, *args, **kw)
        with self.open(name, create=create, **(open_args or {})) as session:  # type: ignore[attr-defined]
            return session.run(op, checked)

    def run_reserved(self, op: str, *args, create=False, **kw):
        """As `run`, on the acting user's memory object (facts, rate limits)."""
        checked = bind(op, *args, **kw)
        with self.open_reserved(create=create) as session:  # type: ignore[attr-defined]
            return session.run(op, checked)
