"""`durable work` (issue 26): how soon CMD starts after a prompt arrives, and `--all` over many idle sessions.

    python bench/work.py [--prompts N] [--sessions N] [--home DIR]

1. Arrival to CMD's start: one `durable work NAME` process (file backend) idles on an empty queue; a
   producer (this process, through the library) queues a prompt at a random moment (0.3-1.2 s after the
   previous one finished, so the worker's polling has backed off to its longest interval) and takes the
   time its commit returned; CMD writes the time it started (`date +%s%N` as its first command). Goal:
   at most `next --wait`'s longest polling interval (250 ms) + 20 ms.
2. `--all` over N idle sessions (default 10,000, made through the library: ~140 KB each on disk) and one
   pending prompt in one of them: the time `Store.startable()` takes to find it through index.db (no
   object opened), then to take it (open + next); and a whole `durable work --all --once` process against
   the same `durable work --all --wait 0` with nothing to do. Goal: found in under 50 ms.
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from durable_cli import Store


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def arrival_to_start(home, prompts, remote=None):
    """REMOTE: (url, token) of a `durable remote dev` Worker to run against instead of HOME's files."""
    env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="bench")
    marks = os.path.join(home, "marks")
    os.makedirs(marks, exist_ok=True)
    if remote:
        env.update(DURABLE_REMOTE=remote[0], DURABLE_TOKEN=remote[1])
        store = Store(remote=remote[0], token=remote[1], user="bench")
    else:
        store = Store(home=home, user="bench")
    store.create_session("latency")
    cmd = f"date +%s%N > {marks}/$DURABLE_PROMPT_ID; cat >/dev/null; echo ok"
    worker = subprocess.Popen([sys.executable, "-m", "durable_cli", "work", "latency", "--command", cmd, "--json"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    latencies = []
    try:
        time.sleep(1.0)
        for _ in range(prompts):
            time.sleep(random.uniform(0.3, 1.2))
            with store.open("latency") as session:
                p = session.prompt("go")
            arrived = time.time_ns()
            path = os.path.join(marks, str(p["id"]))
            deadline = time.time() + 10
            while time.time() < deadline:
                try:
                    with open(path) as f:
                        text = f.read().strip()
                    if text:
                        break
                except FileNotFoundError:
                    pass
                time.sleep(0.002)
            latencies.append((int(text) - arrived) / 1e6)
            while True:  # finished before the next one comes
                with store.open("latency") as session:
                    if session.get_prompt(p["id"])["status"] == "completed":
                        break
                time.sleep(0.01)
    finally:
        worker.terminate()
        worker.wait()
        store.close()
    return latencies


def build_idle(home, n):
    made, t0 = 0, time.time()
    while made < n:
        store = Store(home=home, user="bench", keep_open=True)
        for _ in range(min(500, n - made)):
            store.create_session(f"idle-{made:06d}")
            made += 1
        store.close()
    return time.time() - t0


def find_one(home, n, rounds=15):
    target = f"idle-{n // 2:06d}"
    found, taken = [], []
    for _ in range(rounds):
        store = Store(home=home, user="bench")
        with store.open(target) as session:
            session.prompt("the one")
        t0 = time.perf_counter()
        rows = store.startable()
        t1 = time.perf_counter()
        assert rows and rows[0]["name"] == target, rows
        with store.open(rows[0]["name"]) as session:
            doc = session.next_prompt(lease_seconds=60, waiting=True)
        t2 = time.perf_counter()
        assert doc is not None
        with store.open(target) as session:
            session.finish(doc["id"], reply="done")
        found.append((t1 - t0) * 1000)
        taken.append((t2 - t0) * 1000)
        store.close()
    env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="bench")
    whole, idle = [], []
    for _ in range(7):
        with Store(home=home, user="bench").open(target) as session:
            session.prompt("again")
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "durable_cli", "work", "--all", "--once", "--command", "cat >/dev/null; echo ok"],
                           env=env, capture_output=True)
        whole.append((time.perf_counter() - t0) * 1000)
        assert r.returncode == 0, r.stderr
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "durable_cli", "work", "--all", "--wait", "0", "--command", "true"],
                           env=env, capture_output=True)
        idle.append((time.perf_counter() - t0) * 1000)
        assert r.returncode == 9, r.stderr
    return found, taken, whole, idle


def fmt(values):
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {percentile(values, 95):.1f} / {max(values):.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--sessions", type=int, default=10000)
    parser.add_argument("--home", default=None)
    parser.add_argument("--remote", action="store_true", help="only the latency, against a `durable remote dev` Worker")
    a = parser.parse_args()
    os.environ.setdefault("DURABLE_CONFIG", os.path.join(tempfile.mkdtemp(), "config.toml"))
    root = a.home or tempfile.mkdtemp(prefix="durable-bench-work-")
    if a.remote:
        import json

        dev = subprocess.Popen([sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", os.path.join(root, "dev")],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            doc = json.loads(dev.stdout.readline())
            lat = arrival_to_start(os.path.join(root, "latency"), a.prompts, remote=(doc["url"], doc["admin_token"]))
            print(f"remote: arrival -> CMD start, {len(lat)} prompts, ms min/median/p95/max: {fmt(lat)} (goal <= 270)")
        finally:
            dev.terminate()
            dev.wait()
            if a.home is None:
                shutil.rmtree(root, ignore_errors=True)
        return
    try:
        lat = arrival_to_start(os.path.join(root, "latency"), a.prompts)
        print(f"arrival -> CMD start, {len(lat)} prompts, ms min/median/p95/max: {fmt(lat)} (goal <= 270)")
        if a.sessions <= 0:
            return
        home = os.path.join(root, "idle")
        took = build_idle(home, a.sessions)
        size = sum(os.path.getsize(os.path.join(b, f)) for b, _, fs in os.walk(home) for f in fs)
        print(f"built {a.sessions} idle sessions in {took:.0f} s ({size / 2**30:.2f} GiB on disk)")
        found, taken, whole, idle = find_one(home, a.sessions)
        print(f"--all finds the one pending prompt (Store.startable, index.db), ms min/median/p95/max: {fmt(found)} (goal < 50)")
        print(f"... and takes it (+ open + next), ms: {fmt(taken)}")
        print(f"whole `durable work --all --once` process, ms: {fmt(whole)}; with nothing to do (`--wait 0`, exit 9): {fmt(idle)}")
    finally:
        if a.home is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
