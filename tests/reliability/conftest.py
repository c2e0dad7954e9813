import json
import os

import pytest

from tests.reliability.stats import COUNTS


@pytest.fixture(scope="session", autouse=True)
def reliability_report():
    yield
    path = os.environ.get("DURABLE_RELIABILITY_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(dict(sorted(COUNTS.items())), f, indent=1)
