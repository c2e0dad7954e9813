#!/usr/bin/env python3
"""Follow latency against workerd (`durable remote dev`; docs/reference/remote.md §13 "Live follow"): one `durable transcript
show --follow --jsonl` process holds its WebSocket; this process appends rows through the library
(one kept-alive connection) and times each row from the start of its append to the follower's line.

    python bench/remote_follow.py [--rows 100] [--gap 0.05]

Prints one JSON document: the median and p90/max of append-start -> printed and of append-answered ->
printed (negative when the push arrives before the append's own answer: the object pushes after the
commit, before it answers), in milliseconds, and the Worker requests an idle follower made in 2 s.
"""

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.05)
    a = parser.parse_args()
    from durable_cli import Store
    from durable_cli.remote.client import RemoteClient

    storage = tempfile.mkdtemp(prefix="durable-follow-bench-")
    env = dict(os.environ, DURABLE_DEV_FAULTS="1")
    dev = subprocess.Popen([sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", storage],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    doc = json.loads(dev.stdout.readline())
    env = dict(os.environ, DURABLE_REMOTE=doc["url"], DURABLE_TOKEN=doc["admin_token"], DURABLE_USER="bench")
    store = Store(remote=doc["url"], token=doc["admin_token"], user="bench")
    follower = None
    try:
        with store.open("live", create=True) as s:
            s.append("first", role="user")
        alone = []
        for i in range(30):
            t0 = time.perf_counter()
            with store.open("alone", create=True) as s:
                s.append(f"row {i}", role="user")
            alone.append((time.perf_counter() - t0) * 1000)
        follower = subprocess.Popen([sys.executable, "-m", "durable_cli", "transcript", "show", "live", "--follow", "--jsonl"],
                                    stdout=subprocess.PIPE, env=env)
        buffer = b""

        def line():
            nonlocal buffer
            while b"\n" not in buffer:
                ready, _, _ = select.select([follower.stdout], [], [], 30)
                assert ready, "no line from the follower"
                buffer += os.read(follower.stdout.fileno(), 65536)
            first, _, buffer = buffer.partition(b"\n")
            return json.loads(first)

        line()
        time.sleep(1.0)  # the socket is open
        admin = RemoteClient(doc["url"], doc["admin_token"], 10)
        ask = lambda op: admin.call({"op": op, "args": {}, "scope": "index", "actor": None}, write=False)
        ask("served")
        time.sleep(2.0)
        idle = ask("served") - 1
        start_to_line, answer_to_line = [], []
        for i in range(a.rows):
            t0 = time.perf_counter()
            with store.open("live") as s:
                seq = s.append(f"row {i}", role="assistant")["seq"]
            t1 = time.perf_counter()
            row = line()
            t2 = time.perf_counter()
            assert row["seq"] == seq
            start_to_line.append((t2 - t0) * 1000)
            answer_to_line.append((t2 - t1) * 1000)
            time.sleep(a.gap)

        def summary(xs):
            xs = sorted(xs)
            return {"median": round(statistics.median(xs), 1), "p90": round(xs[int(len(xs) * 0.9) - 1], 1), "max": round(xs[-1], 1)}

        print(json.dumps({"rows": a.rows, "append_start_to_printed_ms": summary(start_to_line),
                          "append_answered_to_printed_ms": summary(answer_to_line), "idle_follower_requests_in_2s": idle,
                          "append_without_follower_ms": round(statistics.median(alone), 1)}))
    finally:
        if follower is not None:
            follower.kill()
            follower.wait()
        store.close()
        dev.terminate()
        dev.wait()


if __name__ == "__main__":
    main()
