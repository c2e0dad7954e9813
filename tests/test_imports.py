"""No import cycle in durable_cli nor in worker/src (STYLE.md): a cycle hidden behind a function-level import
is still a cycle.

The graph is read from the AST of every module, imports inside functions included; an edge goes from a
module to each durable_cli module it imports (`from . import x` names the submodule x when there is one).
The Worker's graph is read from every import and re-export of worker/src/**/*.ts (`import type` and
`import()` included): an edge goes to each module of worker/src a relative specifier names.
"""

import ast
import os
import re

from tests.conftest import ROOT

PACKAGE = os.path.join(ROOT, "durable_cli")
WORKER_SRC = os.path.join(ROOT, "worker", "src")


def modules() -> dict:
    """{dotted name: path} of every module of durable_cli."""
    out = {}
    for folder, _dirs, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def graph() -> dict:
    known = modules()
    edges = {m: set() for m in known}
    for module, path in known.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [source] + [f"{source}.{a.name}" for a in node.names]
            for target in targets:
                while target and target not in known:  # durable_cli.core.state.X -> durable_cli.core.state
                    target = target.rpartition(".")[0]
                if target and target != module and target.startswith("durable_cli"):
                    edges[module].add(target)
    return edges


def cycles(edges: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_in_durable_cli():
    """Package __init__ modules re-exporting their children are not cycles of ideas: an edge from a
    package's __init__ to its own submodule is left out."""
    edges = graph()
    for module in edges:
        edges[module] = {t for t in edges[module] if not t.startswith(module + ".")}
    found = cycles(edges)
    assert found == [], "import cycles (function-level imports included):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_cli_reaches_the_rules_only_through_the_library():
    """cli/ parses and renders: it checks input through durable_cli.checks and runs operations through the
    library's Store, never importing a rule (core/, across/) or the storage (store/) itself."""
    edges = graph()
    reached = sorted(f"{m} -> {t}" for m, targets in edges.items() if m == "durable_cli.cli" or m.startswith("durable_cli.cli.")
                     for t in targets if t.split(".")[1:2] in (["core"], ["across"], ["store"]))
    assert reached == [], "cli/ imports rules or storage directly:\n" + "\n".join(reached)


def test_each_input_check_names_a_rule_and_loads_only_its_own_module():
    """durable_cli.checks resolves each check when it is used (a command loads only the rules it checks):
    every entry names a function that exists, and importing checks loads no rule module."""
    import subprocess
    import sys

    from durable_cli import checks

    for name in checks._CHECKS:
        assert callable(getattr(checks, name)), name
    probe = ("import sys, durable_cli.checks as c; before = sorted(m for m in sys.modules if m.startswith('durable_cli.core.'));"
             " c.rate; print(before, 'durable_cli.core.limits' in sys.modules, 'durable_cli.core.memory' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] True False", out


def test_the_adapters_reach_rules_only_through_the_library():
    """The seam (STYLE.md): an adapter (integrations/openai_agents.py, langgraph.py) calls the library's Store and
    Session, never a rule of core/, the files of store/ or a command of across/ directly, so a backend the library
    gains (remote, another one day) serves the adapters too."""
    edges = graph()
    for adapter in ("durable_cli.integrations.openai_agents", "durable_cli.integrations.langgraph"):
        inside = sorted(t for t in edges[adapter] if t.split(".")[1:2] in (["core"], ["store"], ["across"], ["remote"]))
        assert inside == [], f"{adapter} imports {inside}: go through durable_cli.library"


# import ... from "x", import type ... from "x", export ... from "x", import "x", import("x")
TS_IMPORT = re.compile(r"""(?:^|[\n;])\s*(?:import|export)\b[^;"']*?\bfrom\s*["']([^"']+)["']"""
                       r"""|(?:^|[\n;])\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)""")


def ts_graph() -> dict:
    """{module: modules it imports} over worker/src, modules named by their path without .ts ("rules/sessions");
    a specifier naming a folder means its index.ts."""
    known = {}
    for folder, _dirs, files in os.walk(WORKER_SRC):
        for name in files:
            if name.endswith(".ts") and not name.endswith(".d.ts"):
                path = os.path.join(folder, name)
                known[os.path.relpath(path, WORKER_SRC)[:-3].replace(os.sep, "/")] = path
    edges = {m: set() for m in known}
    for module, path in known.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for match in TS_IMPORT.finditer(text):
            spec = next(g for g in match.groups() if g)
            if not spec.startswith("."):
                continue
            base = os.path.normpath(os.path.join(os.path.dirname(module), spec)).replace(os.sep, "/")
            target = next((t for t in (base, base + "/index") if t in known), None)
            if target and target != module:
                edges[module].add(target)
    return edges


def test_the_ts_import_graph_is_read():
    """The reader sees the imports it must (a cycle test over an empty graph would pass whatever the code)."""
    edges = ts_graph()
    assert "rules/state" in edges["rules/sessions"] and "rules/transcript/index" in edges["rules/sessions"]
    assert "generated/ops" in edges["generated/handlers"]  # import type
    assert {"object", "indexes"} <= edges["index"]  # export { X } from
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_worker_src():
    found = cycles(ts_graph())
    assert found == [], "import cycles in worker/src (type-only imports included):\n" + "\n".join(" <-> ".join(c) for c in found)
