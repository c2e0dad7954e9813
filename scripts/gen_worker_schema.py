"""Write worker/src/generated/schema.json from durable_cli/store/schema.py MIGRATIONS.

The Worker's Durable Object runs the same ordered steps as the file store (docs/reference/remote.md §13: the same
schema). Run after adding a migration step: `python scripts/gen_worker_schema.py`; a drift test
(tests/test_contract.py) fails when the committed copy is stale.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from durable_cli.store import schema

TARGET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker", "src", "generated", "schema.json")


def render() -> str:
    steps = [{"name": name, "statements": [" ".join(s.split()) for s in schema.statements(sql)]} for name, sql in schema.MIGRATIONS
             if name not in schema.LOCAL_ONLY]  # the Worker keeps what those steps drop (schema.LOCAL_ONLY)
    catch_up = [" ".join(s.split()) for s in schema.CATCH_UP_STATEMENTS]
    return json.dumps({"migrations": steps, "catch_up": catch_up}, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(render())
    print(TARGET)
