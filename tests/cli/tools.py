"""Programs some tests drive (shells, tmux): CI installs them and never skips; elsewhere a missing
one skips those tests with the reason, so the README's test line passes on a fresh machine."""

import os
import shutil

import pytest


def require(program: str, *, path=None) -> str:
    """PROGRAM's path (searched first in the PATH argument when given, then in $PATH). Under CI (DURABLE_CI=1 or
    CI=true, as .ci/run sets) a missing program fails the test instead of skipping it."""
    found = (path and shutil.which(program, path=path)) or shutil.which(program)
    if found:
        return found
    if os.environ.get("DURABLE_CI") == "1" or os.environ.get("CI") == "true":
        pytest.fail(f"{program} must be installed (.ci/run installs it)")
    pytest.skip(f"{program} is not installed (.ci/run installs it; apt-get install {program})")
