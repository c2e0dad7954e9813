"""Programs some tests drive (shells, tmux): CI installs them and never skips; elsewhere a missing
one skips those tests with the reason, so the README's test line passes on a fresh machine."""

import os
import shutil

import pytest


def require(program: str) -> str:
    path = shutil.which(program)
    if path:
        return path
    if os.environ.get("DURABLE_CI") == "1":
        pytest.fail(f"{program} must be installed (.ci/run installs it)")
    pytest.skip(f"{program} is not installed (.ci/run installs it; apt-get install {program})")
