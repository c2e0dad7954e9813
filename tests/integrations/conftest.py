"""The adapters' tests need their framework (an optional extra): skipped with the reason when it is
absent, but a failure under CI=true, where .ci/run installs every extra."""

import importlib
import os

import pytest


def need(module: str, extra: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        reason = f"{module} is not installed (pip install -e '.[{extra}]'): {e}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
