"""`durable purge --older-than` per object at several home sizes, side by side in one run.

    python bench/purge_scale.py N [N ...]     e.g. 500 5000 10000

For each N: a fresh home with N sessions of 4 short rows written 100 days ago (through the library,
the clock frozen), a search run once (so the search side file exists and purge must evict from it),
then `durable purge --older-than 30d --yes` in a fresh process, timed; prints ms per deleted object
and the ratio to the first N's.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

from freezegun import freeze_time

from durable_cli import Store


def build(home, n):
    with freeze_time("2026-01-01T00:00:00Z"):
        store = Store(home, user="alice")
        for i in range(n):
            with store.open(f"s{i:05d}", create=True) as s:
                s.append_many([{"role": "user", "content": f"hello {i} refund"}, {"role": "assistant", "content": "ok"},
                               {"role": "user", "content": "more words here"}, {"role": "assistant", "content": "done"}],
                              seqs_only=True)
        store.close()


def main(sizes):
    base = None
    for n in sizes:
        home = tempfile.mkdtemp(prefix=f"purge-{n}-")
        env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="alice", DURABLE_CONFIG=os.path.join(home, "c.toml"))
        build(home, n)
        subprocess.run([sys.executable, "-m", "durable_cli", "search", "refund", "--limit", "1"], env=env, check=True,
                       capture_output=True)
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "durable_cli", "purge", "--older-than", "30d", "--yes", "--json"],
                           env=env, capture_output=True, text=True)
        took = time.perf_counter() - start
        assert p.returncode == 0, p.stderr
        per = took * 1000 / n
        base = base or per
        print(f"{n:6d} objects: {took:6.2f} s, {per:5.2f} ms per object, x{per / base:.2f} of the first", flush=True)
        shutil.rmtree(home)


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]])
