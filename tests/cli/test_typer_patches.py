"""Issue 24: the two typer patches of cli/__init__.py are kept while typer needs them and still works the
way they assume (docs/benchmarks.md, "Private-API shims"; python bench/shims.py --only typer).

- `_bounded_numbers` wraps every int/float parameter's type (typer._click.types) so numbers beyond
  64 bits and non-finite floats are exit 2 (docs/reference/output.md §4); plain typer accepts both, and the public
  `typer.Option(max=...)` would print `<int range>` and `x<=9223372036854775807` in every help line.
- `_usage_as_in_man_pages` strips the braces typer.core.TyperArgument.make_metavar puts around a
  required argument in usage lines (`{NAME} {TEXT|-}`), so they read as the man pages do.

Each check runs in a fresh interpreter (the metavar patch is process-wide) and fails when typer changes
what a patch relies on, or starts doing by itself what the patch does: then the patch can go.
"""

import json
import subprocess
import sys

CHILD = r"""
import inspect, json, sys
import typer, typer.main
from typer._click import types
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # cli.run catches these
from typer.core import TyperArgument

app = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)


@app.command()
def recent(name: str, text: str = typer.Argument(..., metavar="TEXT|-"), limit: int = typer.Option(20, "--limit"),
           ratio: float = typer.Option(1.0, "--ratio")):
    return [limit, ratio]


def run(command, *args):
    try:
        return command.main(args=list(args), prog_name="prog", standalone_mode=False)
    except UsageError as e:
        return ["exit", e.exit_code, e.format_message()]


def usage(command):
    return command.get_usage(typer.Context(command, info_name="prog"))


out = {}
command = typer.main.get_command(app)
limit, ratio = [p for p in command.params if p.name in ("limit", "ratio")]
out["types"] = [isinstance(limit.type, types.IntParamType), isinstance(ratio.type, types.FloatParamType)]
out["convert"] = [list(inspect.signature(t.convert).parameters) for t in (types.IntParamType, types.FloatParamType)]
out["fail"] = callable(getattr(types.ParamType, "fail", None))
out["errors"] = [issubclass(UsageError, ClickException), issubclass(NoArgsIsHelpError, UsageError)]
signature = inspect.signature(TyperArgument.make_metavar)
out["make_metavar"] = [list(signature.parameters), signature.parameters["usage"].kind.name, signature.parameters["usage"].default]
out["usage_plain"] = usage(command)
out["big_plain"] = run(command, "n", "t", "--limit", str(2**63))
out["nan_plain"] = run(command, "n", "t", "--ratio", "nan")

from durable_cli.cli import typer_patches

typer_patches.usage_as_in_man_pages()
command = typer.main.get_command(app)
typer_patches.bounded_numbers(command)
out["usage_patched"] = usage(command)
out["big_patched"] = run(command, "n", "t", "--limit", str(2**63))
out["small_patched"] = run(command, "n", "t", "--limit", str(-2**63 - 1))
out["nan_patched"] = run(command, "n", "t", "--ratio", "nan")
out["fine_patched"] = run(command, "n", "t", "--limit", str(2**63 - 1), "--ratio", "0.5")
print(json.dumps(out))
"""


def test_typer_still_needs_the_patches_and_still_works_as_they_assume():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # what the patches rely on
    assert out["types"] == [True, True]
    assert out["convert"] == [["self", "value", "param", "ctx"]] * 2 and out["fail"] and out["errors"] == [True, True]
    assert out["make_metavar"] == [["self", "ctx", "usage"], "KEYWORD_ONLY", False]
    # plain typer still does not do what they do (if it starts to, remove the patch)
    assert out["usage_plain"] == "Usage: prog [OPTIONS] {name} {TEXT|-}"
    assert out["big_plain"] == [2**63, 1.0]
    assert out["nan_plain"][0] == 20 and out["nan_plain"][1] != out["nan_plain"][1]  # NaN accepted
    # and patched, they do it
    assert out["usage_patched"] == "Usage: prog [OPTIONS] name TEXT|-"
    assert out["big_patched"] == ["exit", 2, f"Invalid value for '--limit': '{2**63}' is out of range (at most {2**63 - 1})."]
    assert out["small_patched"][:2] == ["exit", 2]
    assert out["nan_patched"] == ["exit", 2, "Invalid value for '--ratio': 'nan' is not a finite number."]
    assert out["fine_patched"] == [2**63 - 1, 0.5]


def test_every_number_option_of_durable_is_bounded():
    """The walk reaches every command of the full tree: no int or float parameter is left unbounded."""
    import typer.main
    from typer._click import types

    from durable_cli.cli import app, typer_patches

    command = typer.main.get_command(app.build_app(full=True))
    typer_patches.bounded_numbers(command)
    numbers = []

    def walk(cmd):
        for param in cmd.params:
            if isinstance(param.type, (types.IntParamType, types.FloatParamType)):
                numbers.append((cmd.name, param.name, getattr(type(param.type), "bounded", False)))
        for sub in (getattr(cmd, "commands", None) or {}).values():
            walk(sub)

    walk(command)
    assert len(numbers) >= 20 and all(bounded for _, _, bounded in numbers), numbers
