#!/usr/bin/env python3
"""The adapters' write lines, before and after a change, side by side in one run (issue 27).

    python bench/adapters_ab.py BEFORE_DIR [ROUNDS]

BEFORE_DIR holds another checkout's `durable_cli` (e.g. `git archive <commit> durable_cli | tar -x -C DIR`).
Two worker processes, one importing BEFORE_DIR's durable_cli and one this checkout's, each with its own
framework reference (LangGraph's SqliteSaver, the Agents SDK's SQLiteSession) on the same disk; the driver
gives them the same round in turn, so both see the same moment's load. A round times one measure on both
of the worker's sides in alternating order; a figure is the median over rounds of durable / reference.
"""

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURES = ("put", "put_long", "add_batch", "add_singles")


def worker():
    import asyncio
    import shutil
    import sqlite3
    import tempfile

    from agents import SQLiteSession
    from langgraph.checkpoint.sqlite import SqliteSaver

    from durable_cli.integrations.langgraph import DurableSaver
    from durable_cli.integrations.openai_agents import DurableSession

    base = tempfile.mkdtemp(prefix="bench-ab-", dir=ROOT)
    home = os.path.join(base, "home")
    ours = DurableSaver(home=home)
    theirs = SqliteSaver(sqlite3.connect(os.path.join(base, "reference.db"), check_same_thread=False))
    theirs.setup()
    from graph_steps import GraphSteps

    step = GraphSteps().step

    for saver in (ours, theirs):
        for k in range(200):
            step(saver, "longer", k)
    long_k = [200]

    def items(n, tag=""):
        return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {tag}{i} " + "x" * 80} for i in range(n)]

    counter = iter(range(10**9))
    loop = asyncio.new_event_loop()  # one loop, as an application has: its executor threads (and SQLiteSession's
    # thread-local connections) live on from call to call, as they do for a user (issue 33)

    def sessions():
        k = next(counter)
        return (DurableSession(f"s{k}", home=home), SQLiteSession(f"s{k}", db_path=os.path.join(base, "reference-agents.db")))

    def timed(fn):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    def measure(name, r):
        if name == "put":
            def act(saver):
                return lambda: [step(saver, f"put-{r}", i) for i in range(20)]
            pair = [("ours", act(ours)), ("theirs", act(theirs))]
        elif name == "put_long":
            k = long_k[0]
            long_k[0] += 20

            def act(saver):
                return lambda: [step(saver, "longer", k + i) for i in range(20)]
            pair = [("ours", act(ours)), ("theirs", act(theirs))]
        else:
            a, b = sessions()
            for s in (a, b):  # a user's session exists (its first turn) and lives in one running loop
                loop.run_until_complete(s.add_items(items(2, "first turn ")))
            batch_items, single_items = items(1000), items(1000, "single ")

            async def batch(s):
                await s.add_items(batch_items)

            async def singles(s):
                for item in single_items:
                    await s.add_items([item])

            go = batch if name == "add_batch" else singles
            pair = [("ours", lambda: loop.run_until_complete(go(a))), ("theirs", lambda: loop.run_until_complete(go(b)))]
        if r % 2:
            pair.reverse()
        times = {side: timed(fn) for side, fn in pair}
        if name.startswith("add"):
            a.close()
            b.close()
        return times

    try:
        for line in sys.stdin:
            name, r = line.split()
            print(json.dumps(measure(name, int(r))), flush=True)
    finally:
        ours.close()
        theirs.conn.close()
        shutil.rmtree(base, ignore_errors=True)


def main():
    before = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    env_before = dict(os.environ, PYTHONPATH=before)
    env_after = dict(os.environ, PYTHONPATH=ROOT)
    procs = {}
    for label, env in (("before", env_before), ("after", env_after)):
        procs[label] = subprocess.Popen([sys.executable, __file__, "--worker"], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    ratios = {(label, m): [] for label in procs for m in MEASURES}
    times = {(label, m): [] for label in procs for m in MEASURES}
    for m in MEASURES:
        for r in range(rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for label in order:
                p = procs[label]
                p.stdin.write(f"{m} {r}\n")
                p.stdin.flush()
                t = json.loads(p.stdout.readline())
                ratios[(label, m)].append(t["ours"] / t["theirs"])
                times[(label, m)].append((t["ours"], t["theirs"]))
        line = f"{m:12s}"
        for label in procs:
            ours = statistics.median(x for x, _ in times[(label, m)])
            theirs = statistics.median(y for _, y in times[(label, m)])
            line += f"  {label}: {statistics.median(ratios[(label, m)]):.2f}x ({ours*1000:.1f} ms vs {theirs*1000:.1f} ms)"
        print(line, flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)
    for p in procs.values():
        p.stdin.close()
        p.wait()


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        main()
