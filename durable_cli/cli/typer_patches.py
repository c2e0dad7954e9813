"""What typer does not do by itself, patched where it must be (each patch says why, what it costs and which
test fails when typer changes under it): usage lines as the man pages write them, numbers bounded to 64
bits, and the global options taken after the command too."""

from .options import G, seconds


# Typer patch (private: typer.core.TyperArgument.make_metavar, replaced on the class), kept for what it
# shows, at no measurable cost: plain typer writes usage lines as `{NAME} {TEXT|-}`, unlike the man pages,
# and offers no public option to change that (an argument's metavar= is braced too). Cost measured with
# `python bench/shims.py --only typer`: ~0.01 ms; whole `durable transcript append` processes with and
# without both typer patches differ within noise (docs/benchmarks.md, "Private-API shims").
# tests/cli/test_typer_patches.py fails when typer changes the method or stops bracing (then remove this).
def usage_as_in_man_pages() -> None:
    """Usage lines name arguments as the man pages do (`NAME TEXT|-`), not typer's `{NAME} {TEXT|-}`."""
    from typer.core import TyperArgument

    if getattr(TyperArgument.make_metavar, "plain", False):
        return
    braced = TyperArgument.make_metavar

    def make_metavar(self, ctx, *, usage=False):
        var = braced(self, ctx, usage=usage)
        return var[1:-1] if usage and var.startswith("{") and var.endswith("}") else var

    make_metavar.plain = True  # type: ignore[attr-defined]
    TyperArgument.make_metavar = make_metavar  # type: ignore[method-assign]


def _late_global(param, attr):
    def callback(ctx, _param, value):
        if value is not None:  # after the command: later than the same option before it, so it wins
            if attr == "lock_timeout":
                seconds(value, allow_zero=True, what="--lock-timeout")
            elif attr == "remote":
                from ..config import check_value

                check_value("remote.url", value, origin="--remote")
            setattr(G, attr, value)
        return value

    return callback


_GLOBAL_ATTRS = {"home": "home", "as_user": "user", "tenant": "tenant", "lock_timeout": "lock_timeout", "remote": "remote"}


def global_options_anywhere(root) -> None:
    """docs/reference/output.md §4: the global options are taken after the command too (`durable ls --as bob`), the last one on
    the command line winning. Each command and group gets a hidden copy of each, parsed by click where an
    option may stand (never as an option's value, a positional, or after `--`), which sets the same
    global as the one before the command."""
    import copy

    late = []
    for param in root.params:
        if param.name in _GLOBAL_ATTRS:
            twin = copy.copy(param)
            twin.hidden, twin.expose_value = True, False
            twin.callback = _late_global(twin, _GLOBAL_ATTRS[param.name])
            late.append(twin)

    def walk(cmd):
        for sub in (getattr(cmd, "commands", None) or {}).values():
            sub.params.extend(late)
            walk(sub)

    walk(root)

INT64 = (-(2 ** 63), 2 ** 63 - 1)


# Typer patch (private: typer._click.types, each number parameter's type given a bounded subclass), kept
# for docs/reference/output.md §4 in one place: plain typer takes `--limit 9223372036854775808` (exit 0) and `nan`; the public
# typer.Option(max=...) on each of the ~33 options would print `<int range>` and `x<=9223372036854775807`
# in every help line and man page, and FloatRange lets NaN through. Cost: ~0.2 ms to walk every command
# tree, less for the one group a hot command builds; whole processes differ within noise
# (`python bench/shims.py --only typer`; docs/benchmarks.md, "Private-API shims"). typer is pinned <0.29
# for start-up (pyproject.toml); tests/cli/test_typer_patches.py fails when typer changes these types or
# starts bounding numbers itself.
def bounded_numbers(command, _made={}) -> None:
    """Every integer parameter of every command refuses values beyond 64 bits, and every float a value
    that is not finite (docs/reference/output.md §4: exit 2), so no command meets a number SQLite cannot hold."""
    import copy

    from typer._click import types

    for param in command.params:
        base = type(param.type)
        if issubclass(base, (types.IntParamType, types.FloatParamType)) and not getattr(base, "bounded", False):
            if base not in _made:
                _made[base] = type(base.__name__, (base,), {"bounded": True, "convert": _convert_bounded})
            bounded = copy.copy(param.type)
            bounded.__class__ = _made[base]
            param.type = bounded
    for sub in (getattr(command, "commands", None) or {}).values():
        bounded_numbers(sub)


def _convert_bounded(self, value, param, ctx):
    import math

    rv = super(type(self), self).convert(value, param, ctx)
    if isinstance(rv, float) and not math.isfinite(rv):
        self.fail(f"{value!r} is not a finite number.", param, ctx)
    if isinstance(rv, int) and not INT64[0] <= rv <= INT64[1]:
        self.fail(f"{value!r} is out of range (at most {INT64[1]}).", param, ctx)
    return rv
