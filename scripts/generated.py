"""Keep a directory of generated files in step: write them, or (--check) report the stale ones."""

import os
import sys


def sync(directory: str, wanted: dict, *, what: str, script: str, suffix=None) -> int:
    """Write WANTED {name: text} into DIRECTORY (and remove other *SUFFIX files, when SUFFIX is given);
    with --check, change nothing and return 1 if anything is stale."""
    check = "--check" in sys.argv
    os.makedirs(directory, exist_ok=True)
    stale = []
    for name, text in wanted.items():
        path = os.path.join(directory, name)
        current = open(path).read() if os.path.exists(path) else None
        if current != text:
            stale.append(name)
            if not check:
                with open(path, "w") as f:
                    f.write(text)
    extra = sorted(n for n in os.listdir(directory) if suffix and n.endswith(suffix) and n not in wanted)
    if check and (stale or extra):
        print(f"stale {what}: {', '.join(stale + extra)}; run python scripts/{script}", file=sys.stderr)
        return 1
    for name in extra:
        os.unlink(os.path.join(directory, name))
    return 0
