"""`durable search` against `llm logs -q` on the same conversations, side by side in one run.

    python bench/search_vs_llm.py CORPUS_DIR N [N ...]   (CORPUS_DIR from bench/llm_corpus.py)

For each N: LLM_USER_PATH holds logs-N.db as logs.db; a fresh DURABLE_HOME imports it with
`durable import --from llm`; then, for a common word (in half the conversations) and a rare one (1 in 40),
alternating pairs of fresh processes: `llm logs -q WORD -n 20 --json` and `durable search WORD --limit 20
--json`; prints the medians and durable's share of llm's time. The first search after the import (which
brings the search side file up to date) is timed on its own.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, env):
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True)
    took = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed: {p.stderr.decode()[-500:]}")
    return took, p.stdout


def main(corpus, sizes, pairs=9):
    for n in sizes:
        work = tempfile.mkdtemp(prefix=f"search-vs-llm-{n}-")
        llm_home = os.path.join(work, "llm")
        os.makedirs(llm_home)
        shutil.copyfile(os.path.join(corpus, f"logs-{n}.db"), os.path.join(llm_home, "logs.db"))
        env = dict(os.environ, LLM_USER_PATH=llm_home, DURABLE_HOME=os.path.join(work, "durable"),
                   DURABLE_CONFIG=os.path.join(work, "config.toml"), DURABLE_USER="alice")
        took, _ = timed([sys.executable, "-m", "durable_cli", "import", "--from", "llm", "--json"], env)
        print(f"{n} conversations: imported in {took:.1f} s")
        first, out = timed([sys.executable, "-m", "durable_cli", "search", "refund", "--limit", "20", "--json"], env)
        print(f"  first search after the import: {first * 1000:.0f} ms")
        for word in ("refund", "zanzibar"):
            llm_t, dur_t = [], []
            for i in range(pairs):
                order = [("llm", ["llm", "logs", "-q", word, "-n", "20", "--json"]),
                         ("durable", [sys.executable, "-m", "durable_cli", "search", word, "--limit", "20", "--json"])]
                if i % 2:
                    order.reverse()
                for who, cmd in order:
                    (llm_t if who == "llm" else dur_t).append(timed(cmd, env)[0])
            a, b = statistics.median(llm_t), statistics.median(dur_t)
            print(f"  {word:9s} llm {a * 1000:6.0f} ms   durable {b * 1000:6.0f} ms   durable/llm {b / a:.2f}")
        shutil.rmtree(work)


if __name__ == "__main__":
    main(sys.argv[1], [int(n) for n in sys.argv[2:]])
