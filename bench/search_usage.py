"""Build N sessions of T turns, then time `durable search` and `durable usage` in fresh processes.

    python bench/search_usage.py HOME N T
Rows: varied words from a small vocabulary plus one rare word in 1% of rows; meta with model and usage.
"""

import os
import random
import subprocess
import sys
import time

from durable_cli import Store

WORDS = ("refund order invoice shipping delay customer account password reset billing card charge plan upgrade"
         " cancel support ticket status update email phone address delivery package return label").split()


def build(home, n, t):
    store = Store(home, user="alice")
    rnd = random.Random(1)
    for i in range(n):
        rows = []
        for j in range(t):
            text = " ".join(rnd.choice(WORDS) for _ in range(20))
            if rnd.random() < 0.01:
                text += " zanzibar"
            rows.append({"role": "user" if j % 2 == 0 else "assistant", "content": text,
                         "meta": {"model": rnd.choice(["gpt-x", "claude-y"]), "usage": {"input_tokens": 10, "output_tokens": 5},
                                  "cost_usd": 0.001}})
        with store.open(f"s{i:05d}", create=True) as s:
            s.append_many(rows, seqs_only=True)
    store.close()


def timed(home, *args, runs=3):
    env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="alice")
    best = None
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "durable_cli", *args], capture_output=True, env=env)
        took = time.perf_counter() - start
        assert p.returncode == 0, p.stderr
        best = took if best is None else min(best, took)
    return best


if __name__ == "__main__":
    home, n, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if not os.path.exists(os.path.join(home, "index.db")):
        start = time.perf_counter()
        build(home, n, t)
        print(f"built {n} x {t} in {time.perf_counter() - start:.1f}s")
    for args in (["search", "refund"], ["search", "zanzibar"], ["search", "zanzibar", "--newer-than", "1h"],
                 ["usage"], ["usage", "--by", "day"], ["usage", "--by", "model"], ["ls", "--limit", "1"]):
        print(f"{' '.join(args):40s} {timed(home, *args) * 1000:7.0f} ms")
