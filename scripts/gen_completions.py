#!/usr/bin/env python3
"""Generate completions/ (bash, zsh, fish) from typer's own completion machinery.

    python scripts/gen_completions.py            write completions/
    python scripts/gen_completions.py --check    exit 1 when completions/ is stale

The scripts call back into `durable` on every TAB; NAME arguments are completed from index.db.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = {"bash": "durable.bash", "zsh": "_durable", "fish": "durable.fish"}


def script(shell: str) -> str:
    env = dict(os.environ, _DURABLE_COMPLETE=f"source_{shell}", PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "durable_cli"], env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def main() -> int:
    from generated import sync

    wanted = {}
    for shell, name in FILES.items():
        wanted[name] = script(shell)
        if not wanted[name].strip():
            raise SystemExit(f"typer printed no {shell} completion script")
    return sync(os.path.join(ROOT, "completions"), wanted, what="completions", script="gen_completions.py")


if __name__ == "__main__":
    sys.exit(main())
