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
    check = "--check" in sys.argv
    directory = os.path.join(ROOT, "completions")
    os.makedirs(directory, exist_ok=True)
    stale = []
    for shell, name in FILES.items():
        text = script(shell)
        if not text.strip():
            raise SystemExit(f"typer printed no {shell} completion script")
        path = os.path.join(directory, name)
        current = open(path).read() if os.path.exists(path) else None
        if current != text:
            stale.append(name)
            if not check:
                with open(path, "w") as f:
                    f.write(text)
    if check and stale:
        print("stale completions: " + ", ".join(stale) + "; run python scripts/gen_completions.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
