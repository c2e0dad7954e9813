"""How search, usage, ls, sweep and purge grow with the number of sessions: 1k, 5k, 10k (issue 27).

    python bench/scale_curves.py [OUT_PNG] [--sizes 1000,5000,10000]   (matplotlib: the bench extra)

One home grows to each size (sessions of 20 short turns, written through the library, half of them
idle for 100 days); at each size every command runs as a fresh process, median of 5 (`search` once
first, to bring the side file up to date with the sessions just written). `purge` is timed on a copy
of the home (`--older-than 30d`: the idle half), so the home keeps growing. Prints a table with each
command's cost per 1,000 sessions between sizes (where a curve bends, that number changes) and
draws docs/scale-curves.png.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from freezegun import freeze_time

from durable_cli import Store

WORDS = ("order invoice shipping delay customer account password reset billing card charge plan upgrade"
         " cancel support ticket status update email phone address delivery package return label").split()
COMMANDS = {
    "search (common)": ["search", "refund", "--limit", "20", "--json"],
    "search (rare)": ["search", "zanzibar", "--limit", "20", "--json"],
    "usage": ["usage", "--json"],
    "ls --all": ["ls", "--all", "--json"],
    "sweep": ["sweep", "--json"],
    "purge --dry-run": ["purge", "--older-than", "30d", "--dry-run", "--json"],
}


def grow(home, start, stop):
    import random

    rnd = random.Random(start)
    store = Store(home, user="alice")
    for i in range(start, stop):
        rows = []
        for j in range(20):
            text = " ".join(rnd.choice(WORDS) for _ in range(12))
            if j == 4 and i % 2 == 0:
                text += " refund"
            if j == 7 and i % 40 == 3:
                text += " zanzibar"
            rows.append({"role": "user" if j % 2 == 0 else "assistant", "content": text})
        stamp = "2026-08-01T00:00:00Z" if i % 2 else None  # half of them idle (purge candidates)
        if stamp:
            with freeze_time(stamp):
                with store.open(f"s{i:05d}", create=True) as s:
                    s.append_many(rows, seqs_only=True)
        else:
            with store.open(f"s{i:05d}", create=True) as s:
                s.append_many(rows, seqs_only=True)
    store.close()


def timed(home, args, runs=5):
    env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="alice", DURABLE_CONFIG=os.path.join(home, "c.toml"))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "durable_cli", *args], env=env, capture_output=True)
        times.append(time.perf_counter() - start)
        if p.returncode not in (0, 9):
            raise SystemExit(f"{args}: exit {p.returncode}: {p.stderr.decode()[-300:]}")
    return statistics.median(times)


def main(png, sizes):
    home = tempfile.mkdtemp(prefix="scale-curves-")
    results = {name: [] for name in COMMANDS}
    results["purge (per object)"] = []
    done = 0
    for size in sizes:
        start = time.perf_counter()
        grow(home, done, size)
        done = size
        print(f"{size} sessions built ({time.perf_counter() - start:.0f} s)", flush=True)
        timed(home, COMMANDS["search (common)"], runs=1)  # the side file catches up with what was written
        for name, args in COMMANDS.items():
            results[name].append(timed(home, args))
        copy = home + "-purge"
        shutil.copytree(home, copy)
        took = timed(copy, ["purge", "--older-than", "30d", "--yes", "--json"], runs=1)
        results["purge (per object)"].append(took / (size // 2))
        shutil.rmtree(copy)
        print("  " + "  ".join(f"{n} {v[-1] * 1000:.0f} ms" for n, v in results.items()), flush=True)
    print("\n| command | " + " | ".join(f"{s:,}" for s in sizes) + " | ms per 1,000 sessions, between sizes |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name, values in results.items():
        slopes = [f"{(b - a) * 1000 / ((s2 - s1) / 1000):.1f}" for (a, b, s1, s2) in
                  zip(values, values[1:], sizes, sizes[1:])]
        unit = 1000
        print(f"| {name} | " + " | ".join(f"{v * unit:.1f} ms" for v in values) + f" | {' → '.join(slopes)} |")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, values in results.items():
        ax.plot(sizes, [v * 1000 for v in values], marker="o", label=name)
    ax.set_xlabel("sessions (20 turns each)")
    ax.set_ylabel("ms (fresh process; purge: per deleted object)")
    ax.set_title("durable at scale, 2-core machine")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    print(f"plot: {png}")
    shutil.rmtree(home)


if __name__ == "__main__":
    args = sys.argv[1:]
    sizes = [1000, 5000, 10000]
    if "--sizes" in args:
        i = args.index("--sizes")
        sizes = [int(n) for n in args[i + 1].split(",")]
        del args[i:i + 2]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    main(args[0] if args else os.path.join(here, "docs", "scale-curves.png"), sizes)
