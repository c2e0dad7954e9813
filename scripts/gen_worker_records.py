"""Write worker/src/generated/records.json from durable_cli/core/records.py (the export format's rules).

The Worker checks an imported record again (it cannot trust clients) with the same table of columns
and checks as the Python side. Run after changing records.FIELDS: `python scripts/gen_worker_records.py`;
a drift test (tests/remote/test_remote_rights.py) fails when the committed copy is stale.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from durable_cli.core import records, rights

TARGET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker", "src", "generated", "records.json")


def render() -> str:
    doc = records.describe()
    doc["tables_exported"] = list(rights.TABLES)
    assert doc["version"] == rights.VERSION
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(render())
    print(TARGET)
