"""contract.json is where Python and the Worker meet: both sides must read the same tables (SPEC §13)."""

import json
import os
import re

from durable_cli.core import sessions
from durable_cli.errors import EXIT_CODES
from tests.conftest import ROOT, run_inprocess

CONTRACT = json.load(open(os.path.join(ROOT, "durable_cli", "contract.json"), encoding="utf-8"))
WORKER_SRC = os.path.join(ROOT, "worker", "src")


def test_exit_table_is_the_contracts():
    assert EXIT_CODES == {code: e["exit"] for code, e in CONTRACT["errors"].items()}


def test_transition_table_is_the_contracts():
    table = {c: (frozenset(t["from"]), t["to"], t["role"]) for c, t in CONTRACT["transitions"].items()}
    assert sessions.TRANSITIONS == table


def test_worker_reads_its_tables_from_the_contract():
    """The Worker imports contract.json at build; no TypeScript file carries its own copy of the tables."""
    for name in ("sessions.ts", "state.ts"):
        with open(os.path.join(WORKER_SRC, "rules", name), encoding="utf-8") as f:
            assert 'from "../../../durable_cli/contract.json"' in f.read()
    for folder, _dirs, files in os.walk(WORKER_SRC):
        for name in files:
            text = open(os.path.join(folder, name), encoding="utf-8").read()
            assert not re.search(r'"invalid_input"\s*:\s*\d', text), name  # an exit table of its own
            assert not re.search(r'cancel\s*:\s*\{\s*from', text), name  # a transition table of its own


def test_worker_schema_is_generated_from_the_migrations():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_worker_schema", os.path.join(ROOT, "scripts", "gen_worker_schema.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(module.TARGET, encoding="utf-8") as f:
        assert f.read() == module.render(), "run: python scripts/gen_worker_schema.py"


def test_local_documents_have_the_contracts_shapes():
    shapes = CONTRACT["shapes"]
    session = run_inprocess("session", "create", "shape", "--json").json()
    assert set(shapes["session"]) <= set(session)
    assert set(shapes["participant"]) <= set(session["participants"][0])
    prompt = run_inprocess("session", "prompt", "shape", "hi", "--json").json()
    assert set(shapes["prompt"]) <= set(prompt)
    row = run_inprocess("transcript", "append", "shape", "--role", "user", "x", "--json").json()
    assert set(shapes["row"]) == set(row)
    assert set(shapes["window"]) <= set(run_inprocess("transcript", "recent", "shape", "--json").json())
    assert set(shapes["event"]) <= set(run_inprocess("session", "events", "shape", "--json").json()[0])
