"""Issue 24 item 7: each private-API shim against the public API it stands in for, side by side in one run.

    python bench/shims.py [--rounds N] [--only tiktoken|json|typer]

Run it with the interpreter of the environment being measured. A and B alternate; a figure is the
median of the per-pair ratios A/B (absolute times on a shared machine drift, ratios much less).

1. tiktoken: `core.offline_tiktoken.offline_encoding` (a private copy of the encoding's constructor whose file
   loader reads tiktoken's cache only) against the public `tiktoken.get_encoding`, each in a fresh
   process (import + load + one encode: what the first `append` under `tiktoken:<encoding>` pays),
   on a cached 100,000-token encoding; then the same two with the encoding NOT cached, counting network
   attempts (audit hook, in the child only) and the time to an answer.
2. json: `append_many` of 1,000 adapter items (what `DurableSession.add_items` stores, each item in
   `data`; a new session each time, as the benchmarks' add_items line) with the fast path's (`_plain`,
   where the shim was) encoder swapped for: the private `json.encoder.c_make_encoder` set up once (the
   shim of 4b03417, removed), the public `json.JSONEncoder(...)` core.transcript uses (json.dumps's
   output), and the same with `check_circular=False`; in one process, the order rotating; then the
   encoding alone.
3. typer: a hot command (`transcript append`) in fresh processes with the typer patches
   (typer_patches.bounded_numbers, typer_patches.usage_as_in_man_pages, as app.py calls them) against the same run with both made no-ops.
"""

import argparse
import base64
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PY = sys.executable
URL = "https://example.invalid/encodings/durable_bench.tiktoken"
PLUGIN = f"""
from tiktoken.load import load_tiktoken_bpe

def durable_bench():
    return {{"name": "durable_bench", "pat_str": r"\\S+|\\s+",
             "mergeable_ranks": load_tiktoken_bpe({URL!r}), "special_tokens": {{}}}}

ENCODING_CONSTRUCTORS = {{"durable_bench": durable_bench}}
"""
TEXT = "The quick brown fox jumps over the lazy dog; naïve café — 東京 " * 20


def ms(seconds):
    return f"{seconds * 1000:.2f}"


def report(name, ta, tb):
    ratios = [a / b for a, b in zip(ta, tb)]
    print(f"{name:58s} {ms(statistics.median(ta)):>8s} ms vs {ms(statistics.median(tb)):>8s} ms  "
          f"ratio {statistics.median(ratios):.3f}  (min {ms(min(ta))} / {ms(min(tb))})", flush=True)


def timed(cmd, env):
    """Wall time and CPU time (user + sys) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, proc


def alternate(name, a, b, env, rounds):
    ta, tb, ca, cb = [], [], [], []
    timed(a, env), timed(b, env)  # warm the page cache
    for _ in range(rounds):
        x, pa = timed(a, env)
        y, pb = timed(b, env)
        if pa.returncode or pb.returncode:
            raise SystemExit(f"{name}: {pa.stderr[-400:]} {pb.stderr[-400:]}")
        ta.append(x)
        tb.append(y)
        ca.append(pa.cpu)
        cb.append(pb.cpu)
    report(name, ta, tb)
    report("  same, CPU time of the processes", ca, cb)
    return pa.stdout, pb.stdout


# -- 1. tiktoken -----------------------------------------------------------------------------------

SHIM = """
import sys
from durable_cli.core.offline_tiktoken import offline_encoding
from durable_cli.errors import DurableError
try:
    enc = offline_encoding("tiktoken:{name}", "{name}")
    print(len(enc.encode(sys.argv[1], disallowed_special=())))
except DurableError as e:
    print("exit", e.exit_status, "network attempts", 0)
"""
PUBLIC = """
import sys
attempts = []
sys.addaudithook(lambda event, args: attempts.append(event) if event in ("socket.connect", "socket.getaddrinfo") else None)
import tiktoken
try:
    enc = tiktoken.get_encoding("{name}")
    print(len(enc.encode(sys.argv[1], disallowed_special=())))
except Exception as e:
    print(type(e).__name__, "network attempts", len(attempts))
"""


def bench_tiktoken(rounds):
    work = tempfile.mkdtemp()
    try:
        plugins, cache = os.path.join(work, "plugins"), os.path.join(work, "cache")
        os.makedirs(os.path.join(plugins, "tiktoken_ext"))
        os.makedirs(cache)
        with open(os.path.join(plugins, "tiktoken_ext", "durable_bench.py"), "w") as f:
            f.write(PLUGIN)
        rng = random.Random(24)
        tokens = [bytes([b]) for b in range(256)]
        seen = set(tokens)
        while len(tokens) < 100_000:  # cl100k_base's size
            t = bytes(rng.randrange(97, 123) for _ in range(rng.randrange(2, 9)))
            if t not in seen:
                seen.add(t)
                tokens.append(t)
        with open(os.path.join(cache, hashlib.sha1(URL.encode()).hexdigest()), "wb") as f:
            f.write(b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for r, t in enumerate(tokens)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([plugins, ROOT]), TIKTOKEN_CACHE_DIR=cache)
        env.pop("DATA_GYM_CACHE_DIR", None)
        a, b = alternate("tiktoken cached 100k encoding: shim / get_encoding",
                         [PY, "-c", SHIM.format(name="durable_bench"), TEXT], [PY, "-c", PUBLIC.format(name="durable_bench"), TEXT],
                         env, rounds)
        print(f"  token counts: shim {a.strip()}, public {b.strip()} ({'equal' if a == b else 'DIFFERENT'})")
        empty = os.path.join(work, "empty")
        os.makedirs(empty)
        env = dict(env, TIKTOKEN_CACHE_DIR=empty)
        for name in ("durable_bench", "cl100k_base"):
            x, pa = timed([PY, "-c", SHIM.format(name=name), TEXT], env)
            y, pb = timed([PY, "-c", PUBLIC.format(name=name), TEXT], env)
            print(f"  {name} not cached: shim {ms(x)} ms -> {pa.stdout.strip() or pa.stderr[-200:]}; "
                  f"get_encoding {ms(y)} ms -> {pb.stdout.strip() or pb.stderr[-200:]}")
    finally:
        shutil.rmtree(work)


# -- 2. the C JSON encoder ---------------------------------------------------------------------------

def adapter_items(n):
    items = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            items.append({"role": "user", "content": f"question {i}: what is the weather in Paris, naïve café?"})
        elif kind == 1:
            items.append({"type": "function_call", "call_id": f"call_{i}", "name": "get_weather",
                          "arguments": json.dumps({"city": "Paris", "units": "metric"}), "id": f"fc_{i}", "status": "completed"})
        elif kind == 2:
            items.append({"type": "function_call_output", "call_id": f"call_{i - 1}", "output": "18°C, cloudy"})
        else:
            items.append({"type": "message", "role": "assistant", "id": f"msg_{i}", "status": "completed",
                          "content": [{"type": "output_text", "text": f"It is 18°C and cloudy in Paris ({i}).", "annotations": []}]})
    return items


def private_c_encoder():
    """The removed shim (4b03417): CPython's C encoder set up once, without json.dumps's per-call set-up."""
    from json.encoder import c_make_encoder, encode_basestring

    if c_make_encoder is None:
        return None

    def default(value):
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    it = c_make_encoder(None, default, encode_basestring, None, ":", ",", False, False, False)
    return lambda value: "".join(it(value, 0))


def bench_json(rounds):
    from durable_cli import Store
    from durable_cli.core.transcript import appends, row
    from durable_cli.integrations.openai_agents import item_to_row

    private = private_c_encoder()
    if private is None:
        print("json: this Python has no C encoder; nothing to compare")
        return
    kept_plain, kept_dumps = appends._plain, row._dumps

    def on_the_fast_path(encode):
        """_plain (where the shim was) encoding with ENCODE; prepare keeps json.dumps. Same wrapper for all."""
        def plain(fields, limit, count_tokens):
            row._dumps = encode
            try:
                return kept_plain(fields, limit, count_tokens)
            finally:
                row._dumps = kept_dumps
        return plain

    variants = {
        "private c_make_encoder": private,
        "JSONEncoder(check_circular=False)": json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False).encode,
        "JSONEncoder() (= json.dumps)": json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode,
    }
    home = tempfile.mkdtemp()
    try:
        store = Store(home=home, user="bench")
        rows = [item_to_row(i) for i in adapter_items(1000)]
        times = {k: [] for k in variants}
        cpu = {k: [] for k in variants}
        n = 0
        for round_ in range(rounds + 1):
            for name, encode in variants.items():  # the order rotates each round
                appends._plain = on_the_fast_path(encode)
                n += 1
                start, start_cpu = time.perf_counter(), time.process_time()
                with store.open(f"s{n}", create=True) as session:  # creates the session, as add_items does
                    session.append_many([dict(r) for r in rows], seqs_only=True)
                if round_:
                    times[name].append(time.perf_counter() - start)
                    cpu[name].append(time.process_time() - start_cpu)
            variants = dict(list(variants.items())[1:] + list(variants.items())[:1])
        for name in times:
            report(f"append_many 1,000 adapter items: {name} / private", times[name], times["private c_make_encoder"])
        for name in cpu:
            report(f"  same, CPU time: {name} / private", cpu[name], cpu["private c_make_encoder"])
        datas = [r["data"] for r in rows]
        outputs = {name: [encode(d) for d in datas] for name, encode in variants.items()}
        assert len({json.dumps(v) for v in outputs.values()}) == 1, "the encoders disagree"
        enc = {k: [] for k in variants}
        for _ in range(rounds):
            for name, encode in variants.items():
                start = time.perf_counter()
                for d in datas:
                    encode(d)
                enc[name].append(time.perf_counter() - start)
        for name in enc:
            report(f"  the encoding alone, 1,000 items: {name} / private", enc[name], enc["private c_make_encoder"])
    finally:
        appends._plain, row._dumps = kept_plain, kept_dumps
        shutil.rmtree(home)


# -- 3. the typer patches ------------------------------------------------------------------------------

RUN = """
import sys
import durable_cli.cli.app as app
if sys.argv[1] == "public":
    app.bounded_numbers = lambda command: None
    app.usage_as_in_man_pages = lambda: None
sys.argv = ["durable", *sys.argv[2:]]
app.main()
"""


def bench_typer(rounds):
    home = tempfile.mkdtemp()
    try:
        env = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="bench", PYTHONPATH=ROOT)
        env.pop("DURABLE_CONFIG", None)
        for i in range(30):
            subprocess.run([PY, "-c", RUN, "shim", "transcript", "append", "bench", "--role", "user", f"hello {i}"], env=env, check=True,
                           capture_output=True)
        for args in (["transcript", "append", "bench", "--role", "user", "hello"],
                     ["transcript", "recent", "bench", "--limit", "20", "--json"]):
            alternate(f"durable {' '.join(args[:2])}: patched / unpatched typer", [PY, "-c", RUN, "shim", *args],
                      [PY, "-c", RUN, "public", *args], env, rounds)
        # in-process: the patches alone, on every command tree (--help builds them all)
        code = ("import time, durable_cli.cli.app as c, typer.main\n"
                "t=time.perf_counter(); c.usage_as_in_man_pages(); a=time.perf_counter()-t\n"
                "cmd = typer.main.get_command(c.build_app(full=True))\n"
                "t=time.perf_counter(); c.bounded_numbers(cmd); b=time.perf_counter()-t\n"
                "print(f'{a*1000:.3f} {b*1000:.3f}')")
        for what, build in (("every command tree (--help, completion)", "c.build_app(full=True)"),
                            ("the transcript group (transcript append)", "c.build_app(['transcript', 'append'])")):
            run = code.replace("c.build_app(full=True)", build)
            runs = [subprocess.run([PY, "-c", run], env=env, capture_output=True, text=True, check=True).stdout.split() for _ in range(rounds)]
            print(f"  in-process, {what}: usage_as_in_man_pages {statistics.median(float(r[0]) for r in runs):.3f} ms, "
                  f"bounded_numbers {statistics.median(float(r[1]) for r in runs):.3f} ms")
    finally:
        shutil.rmtree(home)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--only", choices=("tiktoken", "json", "typer"))
    args = parser.parse_args()
    import platform

    import typer

    print(f"Python {platform.python_version()}, typer {typer.__version__}, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, fn in (("tiktoken", bench_tiktoken), ("json", bench_json), ("typer", bench_typer)):
        if args.only in (None, name):
            fn(args.rounds)
