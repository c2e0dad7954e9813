"""The op table of durable_cli/contract/contract.json (docs/reference/remote.md §13): every operation of the remote protocol by scope,
with read/write, creates, erases and each argument's JSON type, range and default.

The Worker is generated from it (scripts/gen_worker_ops.py -> worker/src/generated/ops.ts: its op
table, and the checks every call meets before it runs; generated/handlers.ts: each op's rule); the
library's Session runs each op's rule (core/rules.py, written by the same script); both backends' plain
ops are one dispatcher that checks a call against it (durable_cli/seam.py, reading optable.py, also
written by the script, so the contract is not parsed at start-up); tests/test_ops.py holds both
backends' Session methods to it.
"""

import json
import os

_contract = None


def contract() -> dict:
    """durable_cli/contract/contract.json, read once per process (the op table here, the message catalog in messages.py)."""
    global _contract
    if _contract is None:
        with open(os.path.join(os.path.dirname(__file__), "contract.json"), encoding="utf-8") as f:
            _contract = json.load(f)
    return _contract


def ops() -> dict:
    """{"object": {op: spec}, "index": {...}, "objects": {...}}."""
    return contract()["ops"]
