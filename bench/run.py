#!/usr/bin/env python3
"""durable's benchmark harness: every figure of docs/benchmarks.md, as ratios measured side by side.

    python bench/run.py            full run; rewrites docs/benchmarks.md and docs/bench-scale.png
    python bench/run.py --quick    smaller scales and fewer rounds (a smoke run; writes bench/out/ only)
    python bench/run.py --integrations   DurableSession vs the Agents SDK's SQLiteSession and DurableSaver vs
                                         LangGraph's SqliteSaver only (bench/out/)
    python bench/run.py --langgraph      only DurableSaver vs SqliteSaver (bench/out/)
    python bench/run.py --remote   only the remote lines: library append and CLI append against a `durable remote dev`
                                   (workerd on loopback) vs local files (prints them; writes bench/out/results-remote.json)
    python bench/run.py --otlp     only issue 36's line: export --format otlp vs export --all of 1,000 sessions
                                   (rewrites its section of docs/benchmarks.md)
    python bench/run.py --rows     only issue 14's lines (rewrites their section of docs/benchmarks.md);
                                   with --callgrind, also instruction counts under valgrind

Run it with the interpreter of the environment being measured (a non-editable install:
`pip install '.[bench]'`). Pairs alternate A and B; a figure is the median of per-pair ratios.
Floors come from ../shared/bench (or $DURABLE_BENCH_FLOORS).
"""

import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOORS = os.environ.get("DURABLE_BENCH_FLOORS", os.path.join(os.path.dirname(ROOT), "shared", "bench"))
PY = sys.executable
DURABLE = shutil.which("durable", path=os.path.dirname(PY)) or "durable"
QUICK = "--quick" in sys.argv
ROUNDS = 7 if QUICK else 21
OUT = os.path.join(ROOT, "bench", "out")
results = {}


def timed(cmd, env=None, stdin=None):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, input=stdin)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 9):
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()[-500:]}")
    return elapsed


def summary(values):
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def pair(name, a, b, rounds=ROUNDS, env=None, before=None):
    """Alternate A and B; record min/median/max of each and the median per-pair ratio A/B."""
    ta, tb, ratios = [], [], []
    timed(a, env), timed(b, env)  # warm the page cache
    for _ in range(rounds):
        if before:
            before()
        x = timed(a, env)
        y = timed(b, env)
        ta.append(x)
        tb.append(y)
        ratios.append(x / y)
    results[name] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios), "a_cmd": a, "b_cmd": b}
    print(f"{name:48s} {statistics.median(ta)*1000:8.1f} ms vs {statistics.median(tb)*1000:8.1f} ms  ratio {results[name]['ratio']:.3f}", flush=True)


def env_for(home, **extra):
    env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="bench", **extra)
    env.pop("DURABLE_CONFIG", None)  # the real config lookup (platformdirs) is part of the cost
    return env


def cold_start():
    home, floor_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
    env = env_for(home)
    for i in range(30):
        subprocess.run([DURABLE, "transcript", "append", "bench", "--role", "user", f"hello {i}"], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([PY, f"{FLOORS}/floor_typer_sqlite.py", "append", floor_dir, f"hello {i}"], check=True)
    fts = lambda *args: [PY, f"{FLOORS}/floor_typer_sqlite.py", *args]
    fs = lambda *args: [PY, f"{FLOORS}/floor_sqlite.py", *args]
    append = [DURABLE, "transcript", "append", "bench", "--role", "user", "hello"]
    recent = [DURABLE, "transcript", "recent", "bench", "--limit", "20", "--json"]
    prompt = [DURABLE, "session", "prompt", "queue", "hello"]
    ls = [DURABLE, "ls", "--json"]
    reset = lambda: subprocess.run([DURABLE, "session", "cancel", "queue"], env=env, capture_output=True)
    pair("transcript append / floor_typer_sqlite", append, fts("append", floor_dir, "hello"), env=env)
    pair("transcript recent --json / floor_typer_sqlite", recent, fts("recent", floor_dir, "--limit", "20", "--json"), env=env)
    pair("session prompt / floor_typer_sqlite", prompt, fts("append", floor_dir, "hello"), env=env, before=reset)
    pair("ls --json / floor_typer_sqlite", ls, fts("recent", floor_dir, "--limit", "20", "--json"), env=env)
    pair("transcript append / floor_sqlite", append, fs(floor_dir, "append", "hello"), env=env)
    pair("transcript recent --json / floor_sqlite", recent, fs(floor_dir, "recent", "20"), env=env)
    # TAB completion of a NAME: the completion entry point against the bare typer floor
    complete = dict(env, COMP_WORDS="durable session show b", COMP_CWORD="3", _DURABLE_COMPLETE="complete_bash")
    pair("TAB completion of NAME / floor_typer", [DURABLE], [PY, f"{FLOORS}/floor_typer.py", "append", "conv", "hello"], env=complete)


def bulk_transcript(store, name, n):
    """Build an N-turn transcript in bulk transactions through the library's own handle."""
    from durable_cli.core.tokens import approx

    with store.open(name, create=True) as s:
        s.create()
        now = int(time.time() * 1000)
        batch = 50_000
        for start in range(0, n, batch):
            rows = [("user" if i % 2 else "assistant", f"turn {i} " + "lorem ipsum dolor " * 3, 0, "bench", now)
                    for i in range(start, min(n, start + batch))]
            rows = [(r, c, approx(c), a, t) for r, c, _, a, t in rows]
            with s.handle.transaction() as db:
                db.executemany("INSERT INTO turns (role, content, tokens, author, created_at) VALUES (?, ?, ?, ?, ?)", rows)
                db.execute("UPDATE object SET live_turns = live_turns + ?, live_tokens = live_tokens + ?",
                           (len(rows), sum(r[2] for r in rows)))


def scale_recent():
    from durable_cli import Store

    home = tempfile.mkdtemp()
    store = Store(home=home, user="bench")
    sizes = [1_000, 10_000, 100_000] if QUICK else [1_000, 100_000, 1_000_000]
    for n in sizes:
        bulk_transcript(store, f"t{n}", n)
    timings = {n: [] for n in sizes}
    for _ in range(ROUNDS * 3):
        for n in sizes:
            start = time.perf_counter()
            with store.open(f"t{n}") as s:
                window = s.context_window(budget=4000)
            timings[n].append(time.perf_counter() - start)
            assert window["tokens"] <= 4000 and window["turns"]
    results["recent --tokens 4000 by transcript length"] = {str(n): summary(v) for n, v in timings.items()}
    ratio = statistics.median(timings[sizes[-1]]) / statistics.median(timings[sizes[0]])
    results["recent flatness"] = {"ratio": ratio, "from": sizes[0], "to": sizes[-1]}
    print(f"recent --tokens 4000: {sizes[-1]:,} turns / {sizes[0]:,} turns ratio {ratio:.3f}")
    shutil.rmtree(home)


# The raw baseline: a bare Python process doing what `append --batch FILE` must do at the least: read
# the JSONL, parse each line, insert the rows with one executemany in one transaction, fsync'd (WAL,
# synchronous=FULL), into a table with the same columns as durable's `turns` (the same values for
# role, content, author and created_at; tokens 0: the raw side estimates nothing). argv[3] is
# "plain" (no index but the primary key) or "indexed" (durable's own indexes on that table).
RAW_SCHEMA = """CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT NOT NULL, content TEXT NOT NULL,
    tokens INTEGER NOT NULL, author TEXT, created_at INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT 'turn', superseded_by INTEGER,
    covers_first INTEGER, covers_last INTEGER, call_id TEXT, request_id TEXT %s,
    pos INTEGER AS (CASE WHEN kind = 'summary' THEN covers_first ELSE seq END) VIRTUAL,
    tool_calls TEXT, name TEXT, meta TEXT, data TEXT, forked_from TEXT, request_hash TEXT, request_last INTEGER)"""
RAW_INDEXES = """CREATE INDEX IF NOT EXISTS turns_live_by_pos ON turns (pos) WHERE superseded_by IS NULL;
CREATE INDEX IF NOT EXISTS turns_by_created ON turns (created_at);
CREATE INDEX IF NOT EXISTS turns_by_call ON turns (call_id) WHERE call_id IS NOT NULL;"""
RAW_INSERT = "INSERT INTO turns (role, content, tokens, author, created_at) VALUES (?, ?, 0, 'bench', ?)"
RAW_BATCH = f"""
import json, sqlite3, sys, time
with open(sys.argv[2], "rb") as f:
    rows = [json.loads(line) for line in f.read().splitlines() if line.strip()]
indexed = sys.argv[3] == "indexed"
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=FULL")
db.execute({RAW_SCHEMA!r} % ("UNIQUE" if indexed else ""))
if indexed:
    db.executescript({RAW_INDEXES!r})
now = int(time.time() * 1000)
db.execute("BEGIN IMMEDIATE")
db.executemany({RAW_INSERT!r}, [(r["role"], r["content"], now) for r in rows])
db.execute("COMMIT")
db.close()
"""


def alternate(named, rounds, before=None):
    """Run the timed callables of NAMED in turn, ROUNDS times (order rotated each round); their times."""
    times = {k: [] for k in named}
    keys = list(named)
    for i in range(rounds):
        if before:
            before()
        for k in keys[i % len(keys):] + keys[:i % len(keys)]:
            times[k].append(named[k]())
    return times


def ratio_of(times, a, b):
    """Median of per-round ratios A/B (rounds pair up by index)."""
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


def batch_lines(n, start=0):
    return [json.dumps({"role": "user" if i % 2 else "assistant", "content": f"turn {i} " + "lorem ipsum dolor " * 3})
            for i in range(start, start + n)]


def rows_speed():
    """Issue 14's lines: `append --batch` of 10,000 rows and library `append_many` of 1,000 against raw
    sqlite3 executemany of the same rows in one fsync'd transaction (processes, resp. in-process, side
    by side in one run); `show --last 10` and `rows(last=10)` on 1k and 1M rows."""
    import durable_cli
    from durable_cli import Store

    results["rows run"] = {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg(),
                           "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                           "editable": not os.path.dirname(durable_cli.__file__).startswith(sys.prefix),
                           "command": " ".join(["python bench/run.py", *sys.argv[1:]])}
    home = tempfile.mkdtemp()
    env = env_for(home)
    src = os.path.join(home, "batch.jsonl")
    with open(src, "w") as f:
        f.write("\n".join(batch_lines(10_000)) + "\n")
    plain, indexed = os.path.join(home, "raw-plain.sqlite3"), os.path.join(home, "raw-indexed.sqlite3")
    # every side appends to a file that already exists and grows by 10,000 rows a round
    cmds = {
        "durable": [DURABLE, "transcript", "append", "b", "--batch", src],
        "raw": [PY, "-c", RAW_BATCH, plain, src, "plain"],
        "raw indexed": [PY, "-c", RAW_BATCH, indexed, src, "indexed"],
    }
    for cmd in cmds.values():
        timed(cmd, env)
    rounds = 11 if QUICK else 31
    cpu = {k: [] for k in cmds}

    def run(k):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        elapsed = timed(cmds[k], env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[k].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        return elapsed

    t = alternate({k: (lambda k=k: run(k)) for k in cmds}, rounds)
    name = "append --batch 10,000 rows (processes)"
    results[name] = {"rounds": rounds, **{k: summary(v) for k, v in t.items()},
                     "cpu": {k: summary(v) for k, v in cpu.items()},
                     "rate_ratio": 1 / ratio_of(t, "durable", "raw"),
                     "rate_ratio_indexed": 1 / ratio_of(t, "durable", "raw indexed"),
                     "cpu_rate_ratio": 1 / ratio_of(cpu, "durable", "raw")}
    print(f"{name}: durable {statistics.median(t['durable'])*1000:.0f} ms, raw {statistics.median(t['raw'])*1000:.0f} ms, "
          f"raw indexed {statistics.median(t['raw indexed'])*1000:.0f} ms; rate ratio {results[name]['rate_ratio']:.3f} "
          f"(vs indexed {results[name]['rate_ratio_indexed']:.3f}); CPU time ratio {results[name]['cpu_rate_ratio']:.3f}", flush=True)

    if "--callgrind" in sys.argv and shutil.which("valgrind"):
        # instructions executed (valgrind's callgrind), one run of each: deterministic, unlike times on a
        # shared machine; it counts CPU work only, not waiting for the disk
        def instructions(cmd):
            out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True).stderr
            return int(out.split("Collected :")[1].split()[0])

        floor = [PY, f"{FLOORS}/floor_typer_sqlite.py", "append", os.path.join(home, "floor"), "hello"]
        counts = {k: instructions(c) for k, c in cmds.items()}
        counts["durable, one row"] = instructions([DURABLE, "transcript", "append", "one", "--role", "user", "hello"])
        if os.path.exists(floor[1]):
            os.makedirs(floor[-2], exist_ok=True)
            counts["floor_typer_sqlite, one row"] = instructions(floor)
        counts["python -c pass"] = instructions([PY, "-c", "pass"])
        results[name]["instructions"] = counts
        print("instructions: " + ", ".join(f"{k} {v / 1e6:.0f}M" for k, v in counts.items())
              + f"; rate ratio {counts['raw'] / counts['durable']:.3f}", flush=True)

    # library append_many of 1,000 rows: open + append_many + close, against the raw connection's
    # connect + executemany + commit + close; both files exist already and grow each round
    store = Store(home=home, user="bench")
    rows = [json.loads(x) for x in batch_lines(1000)]
    with store.open("lib", create=True) as s:
        s.create()

    lib_cpu = {"library": [], "raw": [], "raw indexed": []}

    def lib():
        start, cpu = time.perf_counter(), time.process_time()
        with store.open("lib") as s:
            s.append_many(rows)
        lib_cpu["library"].append(time.process_time() - cpu)
        return time.perf_counter() - start

    def raw(path, kind):
        start, cpu = time.perf_counter(), time.process_time()
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(RAW_SCHEMA % ("UNIQUE" if kind == "indexed" else ""))
        if kind == "indexed":
            db.executescript(RAW_INDEXES)
        now = int(time.time() * 1000)
        db.execute("BEGIN IMMEDIATE")
        db.executemany(RAW_INSERT, [(r["role"], r["content"], now) for r in rows])
        db.execute("COMMIT")
        db.close()
        lib_cpu["raw" if kind == "plain" else "raw indexed"].append(time.process_time() - cpu)
        return time.perf_counter() - start

    lib(), raw(plain, "plain"), raw(indexed, "indexed")
    for v in lib_cpu.values():
        v.clear()
    rounds = 21 if QUICK else 61
    t = alternate({"library": lib, "raw": lambda: raw(plain, "plain"), "raw indexed": lambda: raw(indexed, "indexed")}, rounds)
    name = "append_many 1,000 rows (library)"
    results[name] = {"rounds": rounds, **{k: summary(v) for k, v in t.items()},
                     "ratio": ratio_of(t, "library", "raw"), "ratio_indexed": ratio_of(t, "library", "raw indexed"),
                     "cpu": {k: summary(v) for k, v in lib_cpu.items()}, "cpu_ratio": ratio_of(lib_cpu, "library", "raw")}
    print(f"{name}: library {statistics.median(t['library'])*1000:.1f} ms, raw {statistics.median(t['raw'])*1000:.1f} ms, "
          f"raw indexed {statistics.median(t['raw indexed'])*1000:.1f} ms; time ratio {results[name]['ratio']:.3f} "
          f"(vs indexed {results[name]['ratio_indexed']:.3f}); CPU time ratio {results[name]['cpu_ratio']:.3f}", flush=True)

    # show --last 10 and rows(last=10): 1k and 1M rows (built in bulk through the library's handle: setup)
    sizes = [1_000, 100_000] if QUICK else [1_000, 1_000_000]
    for n in sizes:
        bulk_transcript(store, f"t{n}", n)

    def lib_last(n):
        start = time.perf_counter()
        with store.open(f"t{n}") as s:
            got = s.rows(last=10)
        assert len(got) == 10 and got[-1]["content"].startswith(f"turn {n - 1} ")
        return time.perf_counter() - start

    def cli_last(n):
        return timed([DURABLE, "transcript", "show", f"t{n}", "--last", "10", "--jsonl"], env)

    for label, fn, rounds in (("rows(last=10)", lib_last, 61 if not QUICK else 21), ("show --last 10", cli_last, ROUNDS)):
        fn(sizes[0]), fn(sizes[-1])
        t = alternate({n: (lambda n=n: fn(n)) for n in sizes}, rounds)
        ratio = ratio_of(t, sizes[-1], sizes[0])
        results[f"{label} flatness"] = {"ratio": ratio, "from": sizes[0], "to": sizes[-1], "rounds": rounds,
                                        **{str(n): summary(v) for n, v in t.items()}}
        print(f"{label}: {sizes[-1]:,} rows {statistics.median(t[sizes[-1]])*1000:.2f} ms / {sizes[0]:,} rows "
              f"{statistics.median(t[sizes[0]])*1000:.2f} ms, ratio {ratio:.3f}", flush=True)
    shutil.rmtree(home)


def synthetic_index(home, n, owner="bench"):
    """N index rows (ls reads only index.db, so the objects need not exist)."""
    from durable_cli.store.objects import ObjectStore

    store = ObjectStore(home)
    store.secret(create=True)
    index = store.index()
    now = int(time.time() * 1000)
    rows = [({"id": f"{i:064x}", "scope": "user", "owner": owner, "name": f"s{i}", "title": None, "status": "active",
              "created_at": now - i, "updated_at": now - i, "last_active_at": now - i * 1000, "turns": 3, "tokens": 40,
              "expires_at": None, "next_alarm_at": None}, [(owner, "owner")]) for i in range(n)]
    index.replace_all(rows)
    store.close()


def scale_ls():
    sizes = [1_000, 100_000]
    homes = {}
    for n in sizes:
        homes[n] = tempfile.mkdtemp()
        synthetic_index(homes[n], n)
    cmd = [DURABLE, "ls", "--limit", "50", "--json"]
    t = {n: [] for n in sizes}
    for _ in range(ROUNDS):
        for n in sizes:
            t[n].append(timed(cmd, env_for(homes[n])))
    results["ls --limit 50 by index rows"] = {str(n): summary(v) for n, v in t.items()}
    ratio = statistics.median(t[sizes[-1]]) / statistics.median(t[sizes[0]])
    results["ls scaling"] = {"ratio": ratio}
    full = {n: timed([DURABLE, "ls", "--json"], env_for(homes[n])) for n in sizes}
    results["ls --json (every row)"] = {str(n): full[n] for n in sizes}
    print(f"ls --limit 50: 100,000 rows / 1,000 rows ratio {ratio:.3f}; full listing of 100k rows {full[sizes[-1]]:.2f}s")
    for h in homes.values():
        shutil.rmtree(h)


def make_objects(home, count, turns, *, old_fraction=0.5):
    """COUNT real objects of TURNS turns: one template built through the library, copied under each id."""
    from durable_cli import Store
    from durable_cli.core.state import index_row
    from durable_cli.store.objects import connect

    store = Store(home=home, user="bench")
    bulk_transcript(store, "template", turns)
    objects = store.objects
    with store.open("template") as s:
        template = s.handle.path
        s.handle.checkpoint()
    old = int((time.time() - 200 * 86400) * 1000)
    rows = [index_row(connect(template, "template"))]
    for i in range(count - 1):  # the template is the first session
        name = f"o{i}"
        object_id = objects.object_id("user", "bench", name)
        objects.paths.make_shard(object_id)
        path = objects.paths.object_file(object_id)
        shutil.copyfile(template, path)
        os.chmod(path, 0o600)
        db = connect(path, name)
        stamp = old if i < count * old_fraction else int(time.time() * 1000)
        db.execute("UPDATE object SET id = ?, name = ?, last_active_at = ?, updated_at = ?", (object_id, name, stamp, stamp))
        rows.append(index_row(db))
        db.close()
    with store.open("template") as s:
        from durable_cli.across.retention import erase

        erase(store, s.handle, s.meta())
    objects.index().replace_all(rows)
    store.close()


def scale_purge():
    count = 1000 if QUICK else 10_000
    home = tempfile.mkdtemp()
    make_objects(home, count, 10)
    start = time.perf_counter()
    out = subprocess.run([DURABLE, "purge", "--older-than", "90d", "--yes", "--json"], env=env_for(home), capture_output=True, check=True)
    elapsed = time.perf_counter() - start
    deleted = len(json.loads(out.stdout)["deleted"])
    results["purge"] = {"objects": count, "deleted": deleted, "seconds": elapsed, "per_deleted_ms": elapsed / deleted * 1000}
    print(f"purge of {count:,} objects ({deleted:,} deleted): {elapsed:.1f}s, {elapsed / deleted * 1000:.2f} ms per deleted object")
    shutil.rmtree(home)
    per = {}
    for turns in (10, 10_000):
        times = []
        for _ in range(3):
            home = tempfile.mkdtemp()
            make_objects(home, 60, turns, old_fraction=1.0)
            times.append(timed([DURABLE, "purge", "--older-than", "90d", "--yes"], env_for(home)) / 60)
            shutil.rmtree(home)
        per[turns] = statistics.median(times)
    results["purge cost by object size"] = {"10 turns ms": per[10] * 1000, "10000 turns ms": per[10_000] * 1000,
                                            "ratio": per[10_000] / per[10]}
    print(f"purge per object: 10,000 turns / 10 turns ratio {per[10_000] / per[10]:.3f}")


def crowded_home_append():
    count = 2_000 if QUICK else 20_000
    empty, crowded = tempfile.mkdtemp(), tempfile.mkdtemp()
    make_objects(crowded, count, 3, old_fraction=0)
    a = [DURABLE, "transcript", "append", "x", "--role", "user", "hello"]
    ta, tb, ratios = [], [], []
    for _ in range(ROUNDS):
        x, y = timed(a, env_for(crowded)), timed(a, env_for(empty))
        ta.append(x), tb.append(y), ratios.append(x / y)
    results[f"append in a home of {count:,} objects / empty home"] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios)}
    print(f"append with {count:,} objects / empty: ratio {statistics.median(ratios):.3f}")
    shutil.rmtree(empty), shutil.rmtree(crowded)


def throughput():
    from durable_cli import Store

    n = 300 if QUICK else 1000
    home = tempfile.mkdtemp()
    store = Store(home=home, user="bench")
    raw_path = os.path.join(home, "raw.sqlite3")
    raw = sqlite3.connect(raw_path, isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=FULL")
    raw.execute("CREATE TABLE turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT, content TEXT, tokens INTEGER, created_at INTEGER)")
    lib, rawt = [], []
    with store.open("tp", create=True) as s:
        s.create()
        for _ in range(5):
            start = time.perf_counter()
            for i in range(n // 5):
                s.append(f"message {i}", role="user")
            lib.append((n // 5) / (time.perf_counter() - start))
            start = time.perf_counter()
            for i in range(n // 5):
                raw.execute("BEGIN IMMEDIATE")
                raw.execute("INSERT INTO turns (role, content, tokens, created_at) VALUES (?, ?, ?, ?)", ("user", f"message {i}", 5, 0))
                raw.execute("COMMIT")
            rawt.append((n // 5) / (time.perf_counter() - start))
    results["library appends per second / raw sqlite3"] = {"library": statistics.median(lib), "raw": statistics.median(rawt),
                                                          "ratio": statistics.median(lib) / statistics.median(rawt)}
    print(f"library {statistics.median(lib):.0f}/s vs raw sqlite3 {statistics.median(rawt):.0f}/s ratio {statistics.median(lib) / statistics.median(rawt):.3f}")
    shutil.rmtree(home)
    # 8 concurrent CLI writers vs the same appends one after another
    per = 5 if QUICK else 10
    cmd = lambda w, i: [DURABLE, "transcript", "append", "shared", "--role", "user", f"w{w}-{i}"]
    home = tempfile.mkdtemp()
    env = env_for(home)
    start = time.perf_counter()
    for w in range(8):
        for i in range(per):
            subprocess.run(cmd(w, i), env=env, check=True, stdout=subprocess.DEVNULL)
    sequential = time.perf_counter() - start
    shutil.rmtree(home)
    home = tempfile.mkdtemp()
    env = env_for(home)
    script = "; ".join(" ".join(f"'{x}'" for x in cmd("$W", i)).replace("'w$W", "\"w$W").replace(f"-{i}'", f"-{i}\"") for i in range(per))
    start = time.perf_counter()
    procs = [subprocess.Popen(["bash", "-c", script], env=dict(env, W=str(w))) for w in range(8)]
    codes = [p.wait() for p in procs]
    concurrent = time.perf_counter() - start
    rows = json.loads(subprocess.run([DURABLE, "transcript", "show", "shared", "--json"], env=env, capture_output=True).stdout)
    results["8 concurrent CLI writers / sequential"] = {"sequential_s": sequential, "concurrent_s": concurrent,
                                                        "ratio": concurrent / sequential, "rows": len(rows), "expected": 8 * per,
                                                        "exit_codes": codes}
    print(f"8 writers x {per}: concurrent {concurrent:.2f}s vs sequential {sequential:.2f}s ratio {concurrent / sequential:.3f}, rows {len(rows)}/{8 * per}")
    shutil.rmtree(home)


def peer_llm():
    llm_bin = shutil.which("llm", path=os.path.dirname(PY))
    if not llm_bin:
        print("llm not installed (pip install '.[bench]'): peer figures skipped")
        results["peer"] = "skipped: llm not installed"
        return
    llm_home = tempfile.mkdtemp()
    home = tempfile.mkdtemp()
    fill = """
import llm, sqlite_utils, sys
from llm.migrations import migrate
db = sqlite_utils.Database(sys.argv[1])
migrate(db)
model = llm.get_model("echo")
conversation = model.conversation()
for i in range(1000):
    r = conversation.prompt(f"turn {i} lorem ipsum dolor")
    r.text()
    r.log_to_db(db)
"""
    env = dict(os.environ, LLM_USER_PATH=llm_home)
    subprocess.run([PY, "-c", fill, os.path.join(llm_home, "logs.db")], env=env, check=True)
    from durable_cli import Store

    bulk_transcript(Store(home=home, user="bench"), "conv", 2000)
    denv = dict(env_for(home), LLM_USER_PATH=llm_home)
    pair("peer: durable recent --limit 20 --json / llm logs list -n 20 --json",
         [DURABLE, "transcript", "recent", "conv", "--limit", "20", "--json"], [llm_bin, "logs", "list", "-n", "20", "--json"], env=denv)
    pair("peer: durable transcript append / llm -m echo",
         [DURABLE, "transcript", "append", "conv", "--role", "user", "hello"], [llm_bin, "-m", "echo", "hello"], env=denv)
    shutil.rmtree(llm_home), shutil.rmtree(home)


def plot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return None
    data = results["recent --tokens 4000 by transcript length"]
    ls = results["ls --limit 50 by index rows"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    xs = [int(k) for k in data]
    axes[0].plot(xs, [data[k]["median"] * 1000 for k in data], marker="o")
    axes[0].set_xscale("log")
    axes[0].set_ylim(bottom=0)
    axes[0].set_xlabel("turns in the transcript")
    axes[0].set_ylabel("ms (median, in-process)")
    axes[0].set_title("transcript recent --tokens 4000")
    xs = [int(k) for k in ls]
    axes[1].plot(xs, [ls[k]["median"] * 1000 for k in ls], marker="o", color="tab:orange")
    axes[1].set_xscale("log")
    axes[1].set_ylim(bottom=0)
    axes[1].set_xlabel("rows in index.db")
    axes[1].set_ylabel("ms (median, whole process)")
    axes[1].set_title("ls --limit 50 --json")
    fig.tight_layout()
    path = os.path.join(ROOT, "docs", "bench-scale.png") if not QUICK else os.path.join(OUT, "bench-scale.png")
    fig.savefig(path, dpi=100)
    return path


def fmt(s):
    return f"{s['min']*1000:.1f} / {s['median']*1000:.1f} / {s['max']*1000:.1f}"


def report(png):
    import importlib.metadata as md

    lines = ["# Benchmarks", "", "Made by `python bench/run.py` (a non-editable install in a fresh virtual environment:",
             "`pip install '.[bench]'`), which rewrites this file. Ratios are medians of per-pair ratios, A and B",
             "alternated in one run; absolute times on this shared machine drift from run to run.", "",
             f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"SQLite {sqlite3.sqlite_version}, typer {md.version('typer')}. Run at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
             "", "## Cold start of hot commands (goal: <= 1.15x floor_typer_sqlite; completion <= 1.2x floor_typer)", "",
             "| A / B | A ms min/median/max | B ms min/median/max | ratio |", "|---|---|---|---|"]
    for name, r in results.items():
        if isinstance(r, dict) and "a" in r and "b" in r and not name.startswith("peer") and "home of" not in name:
            lines.append(f"| {name} | {fmt(r['a'])} | {fmt(r['b'])} | {r['ratio']:.3f} |")
    lines += ["", "## Scale", ""]
    rec = results["recent --tokens 4000 by transcript length"]
    lines += ["`transcript recent --tokens 4000`, in-process library timing (open + window), goal <= 1.2x from 1k to 1M turns:", "",
              "| turns | ms min/median/max |", "|---|---|"]
    lines += [f"| {int(k):,} | {fmt(v)} |" for k, v in rec.items()]
    lines += ["", f"Ratio largest / smallest: **{results['recent flatness']['ratio']:.3f}**.", ""]
    ls = results["ls --limit 50 by index rows"]
    lines += ["`ls --limit 50 --json` (whole process, index.db only):", "", "| index rows | ms min/median/max |", "|---|---|"]
    lines += [f"| {int(k):,} | {fmt(v)} |" for k, v in ls.items()]
    lines += ["", f"Ratio 100k / 1k: **{results['ls scaling']['ratio']:.3f}**. A full `ls --json` of every row: "
              + ", ".join(f"{int(k):,} rows {v:.2f} s" for k, v in results["ls --json (every row)"].items()) + ".", ""]
    p = results["purge"]
    lines += [f"`purge --older-than 90d` over {p['objects']:,} objects, {p['deleted']:,} of them idle: {p['seconds']:.1f} s, "
              f"{p['per_deleted_ms']:.2f} ms per deleted object.", ""]
    pc = results["purge cost by object size"]
    lines += [f"Purge cost per object, 10,000 turns vs 10 turns (goal <= 1.2x): {pc['10000 turns ms']:.2f} ms vs "
              f"{pc['10 turns ms']:.2f} ms, ratio **{pc['ratio']:.3f}**.", ""]
    for name, r in results.items():
        if "home of" in name:
            lines += [f"`transcript append` {name} (goal: no slower): {fmt(r['a'])} vs {fmt(r['b'])} ms, ratio **{r['ratio']:.3f}**.", ""]
    lines += rows_report() + [""] + (otlp_report() + [""] if OTLP_JSON in results else [])
    lines += ["## Throughput", ""]
    t = results["library appends per second / raw sqlite3"]
    lines += [f"Library appends through one opened object: {t['library']:.0f}/s vs one-row fsync'd transactions on raw sqlite3 "
              f"(WAL, synchronous=FULL): {t['raw']:.0f}/s, ratio **{t['ratio']:.3f}** (goal >= 0.8).", ""]
    c = results["8 concurrent CLI writers / sequential"]
    lines += [f"8 concurrent CLI writers: {c['concurrent_s']:.2f} s vs the same {c['expected']} appends one after another "
              f"{c['sequential_s']:.2f} s, ratio **{c['ratio']:.3f}** (goal <= 1); rows stored {c['rows']} of {c['expected']}.", ""]
    lines += ["## Peer: the llm CLI (offline echo model)", ""]
    if isinstance(results.get("peer"), str):
        lines.append(results["peer"])
    else:
        lines += ["| A / B | A ms | B ms | B/A (times faster) |", "|---|---|---|---|"]
        for name, r in results.items():
            if name.startswith("peer"):
                lines.append(f"| {name[6:]} | {fmt(r['a'])} | {fmt(r['b'])} | **{1 / r['ratio']:.1f}x** |")
    if png:
        lines += ["", "![scale curves](bench-scale.png)"]
    lines += ["", "## Goals not met", "", "See the notes section of this file (kept by hand below the generated part).", ""]
    return "\n".join(lines)


def integrations_speed():
    """docs/reference/integrations.md §12: DurableSession side by side with the Agents SDK's SQLiteSession, in one process, on the
    same disk (a temporary directory beside this checkout, not tmpfs). Ratios are durable / SQLiteSession.

    What is timed is what a user's call costs in an application: the `await` of the call alone, inside ONE
    running event loop (an application has one), on a session that already exists (a user's session has
    had its first turn), the two sessions in alternating order each round. (It used to run each call under
    a new `asyncio.run`: a new loop, a new executor thread and, for SQLiteSession, a new thread-local
    connection with its WAL pragma, all timed with the call; and each add_items measure timed the creation
    of the session. That gave 1.72x where a user's call was 2.8x: issue 33.)"""
    import asyncio

    from agents import SQLiteSession

    from durable_cli.integrations.openai_agents import DurableSession

    rounds = 5 if QUICK else 11
    base = tempfile.mkdtemp(prefix="bench-integrations-", dir=ROOT)
    counter = iter(range(10**9))
    loop = asyncio.new_event_loop()

    def items(n, tag=""):
        return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {tag}{i} " + "x" * 80} for i in range(n)]

    def sessions():
        k = next(counter)
        return (DurableSession(f"s{k}", home=os.path.join(base, "home")),
                SQLiteSession(f"s{k}", db_path=os.path.join(base, "reference.db")))

    async def clock(act, session):
        start = time.perf_counter()
        await act(session)
        return time.perf_counter() - start

    def side_by_side(name, prepare, act):
        ta, tb, ratios = [], [], []
        for r in range(rounds):
            ours, theirs = sessions()
            for session in (ours, theirs):
                loop.run_until_complete(session.add_items(items(2, "first turn ")))  # the session exists
                loop.run_until_complete(prepare(session))
            if r % 2:
                y, x = loop.run_until_complete(clock(act, theirs)), loop.run_until_complete(clock(act, ours))
            else:
                x, y = loop.run_until_complete(clock(act, ours)), loop.run_until_complete(clock(act, theirs))
            ta.append(x)
            tb.append(y)
            ratios.append(x / y)
            ours.close()
            theirs.close()
        results[name] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios),
                         "a_cmd": "DurableSession", "b_cmd": "SQLiteSession"}
        print(f"{name:48s} {statistics.median(ta)*1000:8.1f} ms vs {statistics.median(tb)*1000:8.1f} ms  ratio {results[name]['ratio']:.3f}", flush=True)

    async def nothing(session):
        pass

    def fill(n):
        async def go(session):
            await session.add_items(items(n))
        return go

    batch = items(1000)

    async def one_batch(session):
        await session.add_items(batch)

    singles_items = items(1000, "single ")

    async def singles(session):
        for item in singles_items:
            await session.add_items([item])

    async def read_all(session):
        for _ in range(10):
            await session.get_items()

    async def read_last(session):
        for _ in range(100):
            await session.get_items(limit=10)

    try:
        side_by_side("agents: add_items of 1,000 items (<= 2x)", nothing, one_batch)
        side_by_side("agents: 1,000 single add_items (<= 1.5x)", nothing, singles)
        side_by_side("agents: get_items() of 1,000 items, x10 (<= 1.5x)", fill(1000), read_all)
        side_by_side("agents: get_items(limit=10) at 1k, x100 (<= 2x)", fill(1000), read_last)
        side_by_side("agents: get_items(limit=10) at 10k, x100 (<= 2x)", fill(10000), read_last)
    finally:
        loop.close()
        shutil.rmtree(base, ignore_errors=True)


def langgraph_speed():
    """docs/reference/integrations.md §12: DurableSaver side by side with langgraph-checkpoint-sqlite's SqliteSaver, in one process, on the
    same disk; a thread whose checkpoints hold a growing conversation (as a chat graph's do). Each round times a
    batch of calls on each saver, in alternating order; a figure is the median of the per-round ratios
    (durable / SqliteSaver)."""
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    from durable_cli.integrations.langgraph import DurableSaver

    rounds, batch, steps = (7, 10, 20) if QUICK else (25, 20, 50)
    base = tempfile.mkdtemp(prefix="bench-langgraph-", dir=ROOT)
    ours = DurableSaver(home=os.path.join(base, "home"))
    theirs = SqliteSaver(sqlite3.connect(os.path.join(base, "reference.db"), check_same_thread=False))
    theirs.setup()
    from graph_steps import GraphSteps

    step = GraphSteps().step  # one graph step's put: the checkpoint holds every message so far, one of them new

    def side_by_side(name, act):
        ratios, ta, tb = [], [], []
        for r in range(rounds):
            pair = [(ours, ta), (theirs, tb)]
            if r % 2:
                pair.reverse()
            times = {}
            for saver, acc in pair:
                start = time.perf_counter()
                for i in range(batch):
                    act(saver, r, i)
                times[id(saver)] = (time.perf_counter() - start) / batch
                acc.append(times[id(saver)])
            ratios.append(times[id(ours)] / times[id(theirs)])
        results[name] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios),
                         "a_cmd": "DurableSaver", "b_cmd": "SqliteSaver"}
        print(f"{name:48s} {statistics.median(ta)*1e6:8.1f} us vs {statistics.median(tb)*1e6:8.1f} us  "
              f"ratio {results[name]['ratio']:.3f}", flush=True)

    latest = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    try:
        for saver in (ours, theirs):
            for k in range(steps):
                step(saver, "long", k)
        small = {"configurable": {"thread_id": "small", "checkpoint_ns": ""}}
        for saver in (ours, theirs):
            config, checkpoint = small, empty_checkpoint()
            for k in range(steps):
                checkpoint = create_checkpoint(checkpoint, None, k)
                checkpoint["channel_values"] = {"count": k, "note": "x" * 200}
                config = saver.put(config, checkpoint, {"source": "loop", "step": k}, {})
        side_by_side(f"langgraph: get_tuple (latest of {steps}, small state) (<= 2x)",
                     lambda saver, r, i: saver.get_tuple(small))
        side_by_side(f"langgraph: get_tuple (latest of {steps}, {steps} messages) (<= 2x)",
                     lambda saver, r, i: saver.get_tuple(latest))
        side_by_side("langgraph: put (one step) (<= 1.5x)", lambda saver, r, i: step(saver, f"put-{r}", i))
        side_by_side(f"langgraph: list (a thread of {steps}) (<= 1.5x)", lambda saver, r, i: list(saver.list(latest)))
        long = 4 * steps
        for saver in (ours, theirs):
            for k in range(long):
                step(saver, "longer", k)
        side_by_side(f"langgraph: put (one step, {long}+ messages) (<= 1.5x)",
                     lambda saver, r, i: step(saver, "longer", long + r * batch + i))
    finally:
        ours.close()
        theirs.conn.close()
        shutil.rmtree(base, ignore_errors=True)


OTLP_BEGIN, OTLP_END = "<!-- otlp:begin -->", "<!-- otlp:end -->"
OTLP_JSON = "OTLP export, 1,000 sessions to a file (otlp / durable)"


def otlp_export_speed():
    """Issue 36 (docs/reference/traces.md §15.3): 1,000 sessions of 10 prompt turns (the prompt, a model call with
    usage and one tool call, the reply: 30 rows, more than the goal's 20) exported to a file as OTLP/JSON and as `export --all`, whole processes side by side:
    wall and CPU time (the children's user+sys), goal under 10 s and at most 2x."""
    count = 100 if QUICK else 1000
    home = tempfile.mkdtemp()
    out = tempfile.mkdtemp()
    env = env_for(home)
    from durable_cli.cli.app import run

    os.environ["DURABLE_HOME"], os.environ["DURABLE_USER"] = home, "bench"
    os.environ.pop("DURABLE_CONFIG", None)
    devnull = open(os.devnull, "w")
    saved = sys.stdout
    sys.stdout = devnull
    try:
        for i in range(10):
            assert run(["session", "prompt", "template", f"question {i}"]) == 0
            assert run(["session", "next", "template"]) == 0
            call = {"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "name": "search", "arguments": "{}"}],
                    "meta": {"model": "gpt-bench", "usage": {"input_tokens": 1200, "output_tokens": 80, "cache_read_tokens": 900}}}
            stdin = sys.stdin
            import io

            sys.stdin = io.TextIOWrapper(io.BytesIO((json.dumps(call) + "\n").encode()), encoding="utf-8")
            try:
                assert run(["session", "finish", "template", str(i + 1), "--rows", "-", "--reply", f"answer {i}"]) == 0
            finally:
                sys.stdin = stdin
    finally:
        sys.stdout = saved
        devnull.close()
    from durable_cli import Store
    from durable_cli.core.state import index_row
    from durable_cli.store.objects import connect

    store = Store(home=home, user="bench")
    objects = store.objects
    with store.open("template") as s:
        template = s.handle.path
        s.handle.checkpoint()
    rows = []
    for i in range(count):
        name = f"o{i}"
        object_id = objects.object_id("user", "bench", name)
        objects.paths.make_shard(object_id)
        path = objects.paths.object_file(object_id)
        shutil.copyfile(template, path)
        os.chmod(path, 0o600)
        db = connect(path, name)
        db.execute("UPDATE object SET id = ?, name = ?", (object_id, name))
        rows.append(index_row(db))
        db.close()
    objects.index().replace_all(rows)
    store.close()
    a = [DURABLE, "export", "--all", "--format", "otlp", "--output", os.path.join(out, "a.jsonl")]
    b = [DURABLE, "export", "--all", "--output", os.path.join(out, "b.jsonl")]
    rounds = 3 if QUICK else 5
    ta, tb, ca, cb, ratios = [], [], [], [], []
    for _ in range(rounds):
        for cmd, wall, cpu in ((a, ta, ca), (b, tb, cb)):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall.append(timed(cmd, env))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        ratios.append(ta[-1] / tb[-1])
    with open(os.path.join(out, "a.jsonl")) as f:
        spans = sum(len(ss["spans"]) for line in f for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"])
    results[OTLP_JSON] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios),
                          "cpu_a": summary(ca), "cpu_b": summary(cb),
                          "cpu_ratio": statistics.median([x / y for x, y in zip(ca, cb)]),
                          "sessions": count, "spans": spans, "rounds": rounds,
                          "at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg(),
                          "command": " ".join(["python bench/run.py", *sys.argv[1:]])}
    r = results[OTLP_JSON]
    print(f"{OTLP_JSON}: {r['a']['median']:.2f} s vs {r['b']['median']:.2f} s ratio {r['ratio']:.3f}; CPU "
          f"{r['cpu_a']['median']:.2f} s vs {r['cpu_b']['median']:.2f} s ratio {r['cpu_ratio']:.3f}; {spans} spans", flush=True)
    shutil.rmtree(home, ignore_errors=True), shutil.rmtree(out, ignore_errors=True)


def otlp_report():
    r = results[OTLP_JSON]
    s = lambda x: f"{x['min']:.2f} / {x['median']:.2f} / {x['max']:.2f}"
    verdict = "met" if r["a"]["median"] < 10 and r["ratio"] <= 2 else "**not met**"
    return [OTLP_BEGIN, "## Traces export (issue 36)", "",
            f"`{r['command']}` (`--otlp` runs only this section; the full run includes it): {r['sessions']:,} sessions "
            "of 30 rows (10 prompt turns: the prompt, a model call with usage and one tool call, the reply; the goal "
            "names 20 rows; "
            f"{r['spans']:,} spans), `durable export --all --format otlp --output FILE` beside `durable export --all "
            f"--output FILE` over the same objects, whole processes alternating, {r['rounds']} rounds; run at {r['at']}, "
            f"load average {r['load'][0]:.1f} / {r['load'][1]:.1f} / {r['load'][2]:.1f} on {os.cpu_count()} cores.", "",
            "| line | otlp s min/median/max | durable s min/median/max | ratio | goal | |", "|---|---|---|---|---|---|",
            f"| wall time | {s(r['a'])} | {s(r['b'])} | **{r['ratio']:.3f}** | < 10 s and <= 2 | {verdict} |",
            f"| CPU time (user+sys) | {s(r['cpu_a'])} | {s(r['cpu_b'])} | {r['cpu_ratio']:.3f} | | |", "", OTLP_END]


def write_section(lines, begin, end, quick_name):
    """Replace the section between BEGIN and END of docs/benchmarks.md (bench/out/QUICK_NAME with --quick)."""
    text = "\n".join(lines)
    target = os.path.join(ROOT, "docs", "benchmarks.md")
    if QUICK or not os.path.exists(target):
        target = os.path.join(OUT, quick_name)
        with open(target, "w") as f:
            f.write(text + "\n")
    else:
        old = open(target).read()
        if begin in old:
            new = old[:old.index(begin)] + text + old[old.index(end) + len(end):]
        else:  # before the hand-kept notes
            cut = old.index("## Goals not met") if "## Goals not met" in old else len(old)
            new = old[:cut] + text + "\n\n" + old[cut:]
        with open(target, "w") as f:
            f.write(new)
    print(f"wrote {target}")


ROWS_BEGIN, ROWS_END = "<!-- rows:begin -->", "<!-- rows:end -->"


def rows_report():
    """Issue 14's lines as markdown, between markers that `--rows` rewrites in place."""
    b = results["append --batch 10,000 rows (processes)"]
    m = results["append_many 1,000 rows (library)"]
    run = results["rows run"]
    ms = lambda x: f"{x['median'] * 1000:.1f}"
    verdict = lambda ok: "met" if ok else "**not met**"
    lines = [ROWS_BEGIN, "## Rows (issue 14)", "",
             f"`{run['command']}` (`--rows` runs only this section; the full run includes it). The raw side is a bare sqlite3 connection "
             "inserting the same rows (same role, content, author, created_at; tokens 0) with one `executemany` in one "
             "fsync'd transaction (WAL, synchronous=FULL) into a table with the same columns as durable's `turns`: "
             "*raw* has no index but the primary key, *raw indexed* has durable's four (UNIQUE request_id, live "
             "positions, created_at, call_id). Every side appends to a file that exists and grows by the batch each "
             f"round; the sides run in turn (order rotated), {b['rounds']} rounds for the processes, {m['rounds']} "
             "in-process; ratios are medians of per-round ratios.", "",
             f"Run at {run['at']}, Python {run['python']}, SQLite {run['sqlite']}, "
             f"{'an editable' if run['editable'] else 'a non-editable'} install, load average "
             f"{run['load'][0]:.1f} / {run['load'][1]:.1f} / {run['load'][2]:.1f} on {os.cpu_count()} cores when it started.", "",
             "| line | durable ms | raw ms | raw indexed ms | ratio (vs raw indexed) | goal | |", "|---|---|---|---|---|---|---|",
             f"| `append --batch` 10,000 rows, whole processes: rate durable / raw | {ms(b['durable'])} | {ms(b['raw'])} | "
             f"{ms(b['raw indexed'])} | **{b['rate_ratio']:.3f}** ({b['rate_ratio_indexed']:.3f}) | >= 0.5 | "
             f"{verdict(b['rate_ratio'] >= 0.5)} |",
             f"| same, CPU time (user+sys) of the processes: rate durable / raw | {ms(b['cpu']['durable'])} | "
             f"{ms(b['cpu']['raw'])} | {ms(b['cpu']['raw indexed'])} | {b['cpu_rate_ratio']:.3f} | | |",
             *([f"| same, instructions executed (callgrind, one run each): rate durable / raw | "
                f"{b['instructions']['durable'] / 1e6:.0f}M | {b['instructions']['raw'] / 1e6:.0f}M | "
                f"{b['instructions']['raw indexed'] / 1e6:.0f}M | {b['instructions']['raw'] / b['instructions']['durable']:.3f} "
                f"({b['instructions']['raw indexed'] / b['instructions']['durable']:.3f}) | | |"] if "instructions" in b else []),
             f"| library `append_many` 1,000 rows (open, append, close): time durable / raw | {ms(m['library'])} | "
             f"{ms(m['raw'])} | {ms(m['raw indexed'])} | **{m['ratio']:.3f}** ({m['ratio_indexed']:.3f}) | <= 2 | "
             f"{verdict(m['ratio'] <= 2)} |",
             f"| same, CPU time of the calls (time.process_time): time durable / raw | {ms(m['cpu']['library'])} | "
             f"{ms(m['cpu']['raw'])} | {ms(m['cpu']['raw indexed'])} | {m['cpu_ratio']:.3f} | | |", ""]
    if "instructions" in b:
        i = b["instructions"]
        lines += [f"Instructions of the fixed cost, for comparison: one-row `durable transcript append` "
                  f"{i['durable, one row'] / 1e6:.0f}M, "
                  + (f"`floor_typer_sqlite.py append` {i['floor_typer_sqlite, one row'] / 1e6:.0f}M, " if "floor_typer_sqlite, one row" in i else "")
                  + f"`python -c pass` {i['python -c pass'] / 1e6:.0f}M.", ""]
    lines += ["| flatness | rows | ms min/median/max | ratio | goal | |", "|---|---|---|---|---|---|"]
    for label in ("rows(last=10)", "show --last 10"):
        r = results[f"{label} flatness"]
        how = " (in-process, open included)" if label.startswith("rows") else " (whole process)"
        lines.append(f"| `{label}`{how} | {r['from']:,} | {fmt(r[str(r['from'])])} | | | |")
        lines.append(f"| `{label}`{how} | {r['to']:,} | {fmt(r[str(r['to'])])} | **{r['ratio']:.3f}** | <= 1.2 | "
                     f"{verdict(r['ratio'] <= 1.2)} |")
    lines += ["", ROWS_END]
    return lines


def write_rows_section():
    """`--rows`: replace the rows section of docs/benchmarks.md (or bench/out/benchmarks-rows.md with --quick)."""
    write_section(rows_report(), ROWS_BEGIN, ROWS_END, "benchmarks-rows.md")


def remote_speed():
    """`--remote`: a library append (open + append of one row to an existing object) against workerd on
    loopback, median and p95 of N, beside the same against local files; then the CLI `transcript append`
    remote/local ratio (pairs alternate)."""
    import select
    import signal

    from durable_cli import Store

    n = 100 if QUICK else 300
    storage, home = tempfile.mkdtemp(), tempfile.mkdtemp()
    proc = subprocess.Popen([DURABLE, "remote", "dev", "--storage", storage],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        doc = json.loads(proc.stdout.readline()) if ready else None
        if not doc:
            raise SystemExit(f"durable remote dev did not start: {proc.stderr.read().decode()[-500:]}")
        url = doc["url"]
        bench_token = subprocess.run([DURABLE, "remote", "token", "bench", "--key-file", doc["token_key_file"]],
                                     capture_output=True, text=True, check=True).stdout.strip()

        def lib(store):
            with store.open("bench", create=True) as s:
                s.append("warm", role="user")
            times = []
            for i in range(n):
                t = time.perf_counter()
                with store.open("bench", create=True) as s:
                    s.append(f"hello {i}", role="user")
                times.append(time.perf_counter() - t)
            store.close()
            return times

        remote = lib(Store(remote=url, token=bench_token))
        local = lib(Store(home=home, user="bench"))
        for label, t in (("remote", remote), ("local", local)):
            p95 = sorted(t)[int(len(t) * 0.95)]
            results[f"library append, {label}"] = {**summary(t), "p95": p95, "n": len(t)}
            print(f"library append {label:7s} median {statistics.median(t)*1000:6.2f} ms  p95 {p95*1000:6.2f} ms  (n={len(t)})", flush=True)
        renv = dict(env_for(tempfile.mkdtemp()), DURABLE_REMOTE=url, DURABLE_TOKEN=bench_token)
        renv.pop("DURABLE_USER")
        lenv = env_for(home)
        append = [DURABLE, "transcript", "append", "bench", "--role", "user", "hello"]
        ta, tb, ratios = [], [], []
        timed(append, renv), timed(append, lenv)
        for _ in range(ROUNDS):
            x, y = timed(append, renv), timed(append, lenv)
            ta.append(x), tb.append(y), ratios.append(x / y)
        results["CLI transcript append, remote / local"] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios)}
        print(f"CLI transcript append remote {statistics.median(ta)*1000:6.1f} ms vs local {statistics.median(tb)*1000:6.1f} ms"
              f"  ratio {statistics.median(ratios):.3f}", flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(storage, ignore_errors=True), shutil.rmtree(home, ignore_errors=True)


def bytecode():
    """Compile the measured package's bytecode, as `pip install` does: from an editable install under
    PYTHONDONTWRITEBYTECODE=1 every run would otherwise compile durable's modules from source again
    (~30 ms a process that an installed durable never pays; the stdlib the raw side uses has its .pyc)."""
    import compileall

    import durable_cli

    compileall.compile_dir(os.path.dirname(durable_cli.__file__), quiet=1)


def remote_cli_speed():
    """`--remote`, after remote_speed: more CLI commands (a write, reads) against workerd vs the same local
    command (docs/reference/remote.md §13 goal <= 1.3x), pairs alternating, the remote one first."""
    dev = subprocess.Popen([PY, "-m", "durable_cli", "remote", "dev"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        doc = json.loads(dev.stdout.readline())
        home = tempfile.mkdtemp()
        local = env_for(home)
        remote = env_for(tempfile.mkdtemp(), DURABLE_REMOTE=doc["url"], DURABLE_TOKEN=doc["admin_token"])
        for env in (local, remote):
            subprocess.run([DURABLE, "session", "prompt", "b", "first"], env=env, check=True, capture_output=True)
        commands = {
            "transcript append": ["transcript", "append", "b", "--role", "user", "hello"],
            "transcript show --last 5": ["transcript", "show", "b", "--last", "5", "--json"],
            "session show": ["session", "show", "b", "--json"],
            "session title": ["session", "title", "b", "Bench"],
        }
        for label, args in commands.items():
            ta, tb, ratios = [], [], []
            for _ in range(ROUNDS):
                x = timed([DURABLE, *args], remote)
                y = timed([DURABLE, *args], local)
                ta.append(x)
                tb.append(y)
                ratios.append(x / y)
            name = f"remote CLI {label} (remote / local)"
            results[name] = {"a": summary(ta), "b": summary(tb), "ratio": statistics.median(ratios)}
            print(f"{name:48s} {statistics.median(ta)*1000:8.1f} ms vs {statistics.median(tb)*1000:8.1f} ms  "
                  f"ratio {results[name]['ratio']:.3f}", flush=True)
    finally:
        dev.terminate()
        dev.wait()


def main():
    os.makedirs(OUT, exist_ok=True)
    bytecode()
    if "--integrations" in sys.argv or "--langgraph" in sys.argv:  # only the adapters' lines (bench/out/results.json)
        if "--langgraph" not in sys.argv:
            integrations_speed()
        langgraph_speed()
        with open(os.path.join(OUT, "results.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        return
    if "--remote" in sys.argv:  # only the remote lines (prints them; writes bench/out/results-remote.json)
        remote_speed()
        remote_cli_speed()
        with open(os.path.join(OUT, "results-remote.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        return
    if "--otlp" in sys.argv:  # only issue 36's line (prints it; writes bench/out/results-otlp.json)
        otlp_export_speed()
        with open(os.path.join(OUT, "results-otlp.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        write_section(otlp_report(), OTLP_BEGIN, OTLP_END, "benchmarks-otlp.md")
        return
    if "--rows" in sys.argv:  # only issue 14's lines (prints them; writes bench/out/results.json)
        rows_speed()
        with open(os.path.join(OUT, "results-rows.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        write_rows_section()
        return
    cold_start()
    scale_recent()
    scale_ls()
    scale_purge()
    crowded_home_append()
    throughput()
    rows_speed()
    otlp_export_speed()
    peer_llm()
    png = plot()
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    text = report(png)
    target = os.path.join(OUT, "benchmarks.md") if QUICK else os.path.join(ROOT, "docs", "benchmarks.md")
    notes = ""
    if os.path.exists(target):
        old = open(target).read()
        if "<!-- notes -->" in old:
            notes = old[old.index("<!-- notes -->"):]
    with open(target, "w") as f:
        f.write(text + ("\n" + notes if notes else "\n<!-- notes -->\n"))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
