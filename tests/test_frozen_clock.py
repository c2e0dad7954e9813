"""The test suite's own hygiene: a freeze that could not start leaves no frozen clock behind (conftest)."""

import sys
import time
import types

import pytest
from freezegun import api as freezegun_api
from freezegun import freeze_time


def test_a_freeze_whose_start_fails_leaves_the_clock_running():
    class Touchy(types.ModuleType):
        def __getattr__(self, name):
            if name == "boom":
                raise RuntimeError("a lazy attribute that cannot be loaded")
            raise AttributeError(name)

        def __dir__(self):
            return ["boom"]

    sys.modules["touchy_module_for_freezegun"] = Touchy("touchy_module_for_freezegun")
    freezegun_api._GLOBAL_MODULES_CACHE.pop("touchy_module_for_freezegun", None)
    try:
        with pytest.raises(RuntimeError):
            with freeze_time("2001-01-01T00:00:00Z"):
                pass  # pragma: no cover - the freeze never starts
    finally:
        del sys.modules["touchy_module_for_freezegun"]
    assert freezegun_api.freeze_factories == []
    assert time.time() > 1_700_000_000  # the real clock, not 2001


def test_a_freeze_after_langchain_core_was_imported_starts():
    """langchain_core.runnables loads its attributes on access; freezegun's walk over sys.modules used to
    load them under the frozen clock, and pydantic then failed on FakeDatetime (the start raised, the freeze
    leaked, and a later test of that worker waited for ever). conftest keeps such packages out of the walk."""
    pytest.importorskip("langchain_core")
    import langchain_core.runnables  # noqa: F401

    with freeze_time("2026-01-01T00:00:00Z"):
        assert time.time() == 1767225600
    assert time.time() > 1767225600
