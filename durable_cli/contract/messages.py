"""The message catalog of durable_cli/contract/contract.json "messages": what both runtimes say for the same
situation, code -> template, filled by one function in each language (here `say`, in the Worker
worker/src/rules/state.ts `say`). A template's `{name}` takes the value as text and `{name!r}` quotes
it as Python's repr() does (durable_cli/contract/text.py `quote`, by the contract's Unicode table), so a
message reads the same byte for byte on both backends. Read from the contract on the first message,
not at start-up; tests/test_contract.py fails when a module spells a catalog message itself.
"""

import re

from .text import quote

FIELD = re.compile(r"\{(\w+)(!r)?\}")  # the Worker fills the same pattern
_catalog = None


def catalog() -> dict:
    """{code: template}, read once per process (with the rest of the contract: ops.contract)."""
    global _catalog
    if _catalog is None:
        from .ops import contract

        _catalog = contract()["messages"]
    return _catalog


def say(code: str, /, **values) -> str:
    """The catalog's message CODE with its {names} filled."""

    def fill(m: re.Match) -> str:
        value = values[m.group(1)]
        if m.group(2):
            return quote(value) if isinstance(value, str) else repr(value)
        return str(value)

    return FIELD.sub(fill, catalog()[code])
