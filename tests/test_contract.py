"""contract.json is where Python and the Worker meet: both sides must read the same tables (docs/reference/remote.md §13)."""

import json
import os
import re

from durable_cli.core import sessions
from durable_cli.errors import EXIT_CODES
from tests.conftest import ROOT, run_inprocess

CONTRACT = json.load(open(os.path.join(ROOT, "durable_cli", "contract", "contract.json"), encoding="utf-8"))
WORKER_SRC = os.path.join(ROOT, "worker", "src")


def test_exit_table_is_the_contracts():
    assert EXIT_CODES == {code: e["exit"] for code, e in CONTRACT["errors"].items()}


def test_transition_table_is_the_contracts():
    table = {c: (frozenset(t["from"]), t["to"], t["role"]) for c, t in CONTRACT["transitions"].items()}
    assert sessions.TRANSITIONS == table


def test_worker_reads_its_tables_from_the_contract():
    """The Worker imports contract.json at build; no TypeScript file carries its own copy of the tables."""
    for name in ("lifecycle.ts", "state.ts"):  # the transition table, the exit table
        with open(os.path.join(WORKER_SRC, "rules", name), encoding="utf-8") as f:
            assert 'from "../../../durable_cli/contract/contract.json"' in f.read()
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


def test_constants_are_the_contracts():
    from durable_cli import config
    from durable_cli.contract import vocabulary
    from durable_cli.core import state

    c = CONTRACT["constants"]
    assert list(vocabulary.STATUSES) == CONTRACT["statuses"] == list(state.STATUSES)
    assert list(vocabulary.ROW_ROLES) == c["row_roles"] and list(vocabulary.PINNED_ROLES) == c["pinned_roles"]
    assert list(vocabulary.PARTICIPANT_ROLES) == c["participant_roles"] == list(state.ROLES)
    assert list(vocabulary.USAGE_KEYS) == c["usage_keys"]
    assert list(vocabulary.ROW_INPUT_KEYS) == c["row_input_keys"] and list(vocabulary.ROW_OUTPUT_KEYS) == c["row_output_keys"]
    assert vocabulary.LIMITS == c["limits"]
    assert vocabulary.WEBHOOKS == c["webhooks"]
    for key, value in c["config_defaults"].items():
        assert config.KEYS[key][1] == value, key


# Literal copies of the contract's lists, as either language would spell them (quotes and spacing aside).
_COPIES = {
    "row roles": r"""["']system["'],\s*["']developer["'],\s*["']user["'],\s*["']assistant["'],\s*["']tool["']""",
    "statuses": r"""["']created["'],\s*["']active["'],\s*["']completed["'],\s*["']failed["'],\s*["']cancelled["'],\s*["']archived["']""",
    "usage keys": r"""["']input_tokens["'],\s*["']output_tokens["'],\s*["']cache_read_tokens["']""",
    "the turn ceiling": r"\b2097152\b",
    "the webhook delays": r"\b5,\s*300,\s*1800\b",
}
# where the lists are stated: the contract's Python twins (vocabulary.py; optable.py, the op table generated from it)
_HOMES = {os.path.join("durable_cli", "contract", "vocabulary.py"), os.path.join("durable_cli", "contract", "optable.py")}  # optable: generated


def test_no_literal_copy_of_the_contracts_lists():
    """A rule changes in one place: the Python tree takes these lists from durable_cli/contract/vocabulary.py, the
    Worker from contract.json (worker/src/generated/ holds only generated text)."""
    found = []
    for top in (os.path.join(ROOT, "durable_cli"), WORKER_SRC):
        for folder, _dirs, files in os.walk(top):
            if "generated" in folder or "__pycache__" in folder:
                continue
            for name in files:
                if not name.endswith((".py", ".ts")):
                    continue
                path = os.path.join(folder, name)
                if os.path.relpath(path, ROOT) in _HOMES:
                    continue
                text = open(path, encoding="utf-8").read()
                for what, pattern in _COPIES.items():
                    for m in re.finditer(pattern, text):
                        line = text.count("\n", 0, m.start()) + 1
                        found.append(f"{os.path.relpath(path, ROOT)}:{line}: a copy of {what}")
    assert found == [], "\n".join(found)


def _sources():
    """(path relative to the repo, text) of every module of both runtimes but the generated ones."""
    for top, ext in ((os.path.join(ROOT, "durable_cli"), ".py"), (WORKER_SRC, ".ts")):
        for folder, _dirs, files in os.walk(top):
            if "generated" in folder or "__pycache__" in folder:
                continue
            for name in sorted(files):
                if name.endswith(ext):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT), open(path, encoding="utf-8").read()


_FIELD = re.compile(r"\{(\w+)(!r)?\}")
_SAID = re.compile(r"""\bsay\(\s*(f?)["'`]([\w]+)(\{|\$\{)?""")  # say("key" / say(f"family_{x}" / say(`family_${x}`


def _copy_pattern(template):
    """A regex finding a copy of TEMPLATE in source text: its fixed parts in order, each field standing for
    whatever a line may put there (an interpolation, a literal); None for a template too short to tell
    from a common phrase."""
    fixed = [p for p in _FIELD.split(template)[::3]]
    size = len("".join(fixed).strip())
    if size < 11 or (size < 20 and not fixed[0].strip() and not fixed[-1].strip()):
        return None  # "empty VALUE" is checked; " is not one of " between two fields is any sentence's
    # a template's own start and end are where a string or an interpolation starts or ends, so a longer
    # message merely using the same words ("... must be a positive integer of at most N") is not a copy
    start = r"""(?<=["'`}])""" if fixed[0].strip() else ""
    end = r"""(?=["'`{$])""" if fixed[-1].strip() else ""
    while fixed and not fixed[0].strip():
        fixed.pop(0)
    while fixed and not fixed[-1].strip():
        fixed.pop()
    return re.compile(start + r"[^\n]{0,80}?".join(map(re.escape, fixed)) + end)


def _joined(text):
    """Source text with string literals continued on the next line joined ("...", "\n  f"..." and `...` +\n `...`)."""
    return re.sub(r"""(["'`])\s*\+?\s*\n\s*[rf]?\1""", "", text)


def test_the_message_catalog_is_the_contracts():
    """Both runtimes fill the contract's templates: every key either says is in the catalog, every
    catalog message is said by both (a family of keys by its prefix), and neither spells one itself."""
    from durable_cli.contract.messages import catalog

    assert catalog() == CONTRACT["messages"]
    with open(os.path.join(WORKER_SRC, "rules", "state.ts"), encoding="utf-8") as f:
        assert "contract.messages[code]" in f.read()  # the Worker fills the contract's own templates
    said = {".py": set(), ".ts": set()}
    found = []
    patterns = {key: _copy_pattern(t) for key, t in CONTRACT["messages"].items()}
    for path, text in _sources():
        for m in _SAID.finditer(text):
            key, family = m.group(2), m.group(3)
            keys = [k for k in CONTRACT["messages"] if k.startswith(key)] if family else [key]
            assert keys and set(keys) <= set(CONTRACT["messages"]), f"{path}: say({key!r}...) is not in the catalog"
            said[os.path.splitext(path)[1]].update(keys)
        joined = _joined(text)
        for key, pattern in patterns.items():
            m = pattern and pattern.search(joined)
            if m:
                found.append(f"{path}: spells the catalog's {key!r} itself: {m.group(0)!r}")
    assert found == [], "\n".join(found)
    for ext, keys in said.items():
        assert set(CONTRACT["messages"]) - keys == set(), f"catalog messages no {ext} module says"
