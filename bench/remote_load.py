#!/usr/bin/env python3
"""Load and faults against ONE workerd (`durable remote dev`): CLI and library clients at once.

    python bench/remote_load.py                       50 CLI + 200 library clients, no restart
    python bench/remote_load.py --restarts 2          the same, the Worker killed and restarted mid-load
                                                      (first SIGKILL of workerd, then SIGTERM of `remote dev`)
    python bench/remote_load.py --throughput 5        per-object append rate for 5 s (one object vs many)
    python bench/remote_load.py --cli 4 --lib 16 --ops 2 --restarts 1   a smoke run (the test's)

Every client is real: a CLI client is a thread running `durable` processes one after another (so
--cli N means N `durable` processes at once); library clients are threads holding their own
`durable_cli.Store(remote=URL)`, spread over --lib-procs processes. Each client does --ops writes,
alternating `transcript append` and `session prompt`, alternating a shared object (a few objects
every client writes to) and the client's own object; after a prompt to its own object the client
takes it (`session next`) and finishes it. Dedicated workers drain the shared prompt objects.

Every write carries a unique tag as its content and as its `--request-id`, so a write that ended in
exit 7 is retried safely (the object applies a request id once) and the final check can count each
write: acknowledged writes exactly once, unknown-outcome writes at most once, no prompt taken by two
workers, no prompt's turn or reply twice. Prints one JSON document (counts, requests/s, latency
percentiles per op, exit statuses) and exits 1 when a check failed.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PY = sys.executable
DURABLE = shutil.which("durable", path=os.path.dirname(PY))
CLI = [DURABLE] if DURABLE else [PY, "-m", "durable_cli"]
SHARED_USER = "load"
N_SHARED_APPEND = 4
N_SHARED_PROMPT = 2
RETRIES = 12  # a client retries exit 7 with the same request id (the outage of a restart is a few seconds)


def own_user(client: str) -> str:
    return f"u{sum(map(ord, client)) % 8}"


BENCH_KEY = "durable-bench-token-key-" + "0123456789abcdef" * 2  # written into the dev storage: remote dev signs with it
_TOKENS = {}


def token(user: str) -> str:
    if user not in _TOKENS:
        from durable_cli.remote import tokens

        _TOKENS[user] = tokens.issue(BENCH_KEY.encode(), user, expires=86400)
    return _TOKENS[user]


def shared_objects():
    return [f"shared-a{k}" for k in range(N_SHARED_APPEND)], [f"shared-p{k}" for k in range(N_SHARED_PROMPT)]


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


# ---------------------------------------------------------------- the clients' operations


class CliOps:
    """One CLI client: every call is one `durable` process (status, stdout, seconds)."""

    def __init__(self, url, config):
        self.env = dict(os.environ, DURABLE_REMOTE=url, DURABLE_CONFIG=config)
        self.env.pop("DURABLE_USER", None)

    def _run(self, user, *args):
        start = time.perf_counter()
        proc = subprocess.run([*CLI, *args], env=dict(self.env, DURABLE_TOKEN=token(user)), capture_output=True,
                              text=True, cwd=ROOT)
        seconds = time.perf_counter() - start
        if "Traceback" in proc.stderr:
            raise SystemExit(f"a traceback from {args}: {proc.stderr}")
        return proc.returncode, proc.stdout, proc.stderr, seconds

    def append(self, user, name, tag):
        status, out, err, s = self._run(user, "transcript", "append", name, "--role", "user", tag, "--request-id", tag)
        return status, (int(out) if status == 0 else err.strip()), s

    def prompt(self, user, name, tag):
        status, out, err, s = self._run(user, "session", "prompt", name, tag, "--request-id", tag, "--json")
        return status, (json.loads(out)["id"] if status == 0 else err.strip()), s

    def next(self, user, name, lease):
        status, out, err, s = self._run(user, "session", "next", name, "--lease", lease, "--json")
        return status, (json.loads(out) if status == 0 else err.strip()), s

    def finish(self, user, name, prompt_id, reply):
        status, out, err, s = self._run(user, "session", "finish", name, str(prompt_id), "--reply", reply)
        return status, (None if status == 0 else err.strip()), s

    def pending(self, user, name):
        status, out, _err, _s = self._run(user, "session", "queue", name, "--pending", "--json")
        return len(json.loads(out)) if status == 0 else None


class LibOps:
    """One library client: a Store(remote=URL) per user, each with its own kept-alive connection."""

    def __init__(self, url, config):
        os.environ["DURABLE_CONFIG"] = config
        self.url = url
        self.stores = {}

    def store(self, user):
        if user not in self.stores:
            from durable_cli import Store

            self.stores[user] = Store(remote=self.url, token=token(user))
        return self.stores[user]

    def _call(self, user, name, method, *args, create=False, **kw):
        from durable_cli.errors import DurableError

        start = time.perf_counter()
        try:
            with self.store(user).open(name, create=create) as session:
                value = getattr(session, method)(*args, **kw)
            return 0, value, time.perf_counter() - start
        except DurableError as e:
            return e.exit_status, f"{e.code}: {e.message}", time.perf_counter() - start

    def append(self, user, name, tag):
        status, value, s = self._call(user, name, "append", tag, role="user", request_id=tag, create=True)
        return status, (value["seq"] if status == 0 else value), s

    def prompt(self, user, name, tag):
        status, value, s = self._call(user, name, "prompt", tag, request_id=tag, created=True, create=True)
        return status, (value["id"] if status == 0 else value), s

    def next(self, user, name, lease):
        from durable_cli import durations

        status, value, s = self._call(user, name, "next_prompt", lease_seconds=durations.parse(lease))
        if status == 0 and value is None:
            return 9, "none pending", s
        return status, value, s

    def finish(self, user, name, prompt_id, reply):
        status, value, s = self._call(user, name, "finish", prompt_id, reply=reply)
        return status, (None if status == 0 else value), s

    def pending(self, user, name):
        status, value, _s = self._call(user, name, "queue", pending_only=True)
        return len(value) if status == 0 else None


def writer(ops, client, n_ops, lease, log):
    """Alternate appends and prompts, shared and own objects; take and finish own-object prompts."""
    shared_a, shared_p = shared_objects()
    rnd = random.Random(client)
    mine = own_user(client)
    for j in range(n_ops):
        kind = "append" if j % 2 == 0 else "prompt"
        shared = (j // 2) % 2 == 0
        if kind == "append":
            user, name = (SHARED_USER, rnd.choice(shared_a)) if shared else (mine, f"own-{client}")
        else:
            user, name = (SHARED_USER, rnd.choice(shared_p)) if shared else (mine, f"own-{client}")
        tag = f"{kind[0]}:{client}:{j}"
        record = {"client": client, "kind": kind, "user": user, "name": name, "tag": tag, "attempts": []}
        log.append(record)
        for attempt in range(RETRIES + 1):
            t0 = time.time()
            status, value, seconds = getattr(ops, kind)(user, name, tag)
            record["attempts"].append({"status": status, "seconds": seconds, "t0": t0,
                                       "detail": value if status else None})
            if status == 0:
                record["result"] = value
            if status != 7:
                break
            time.sleep(0.25 + 0.25 * attempt)
        record["status"] = record["attempts"][-1]["status"]
        if kind == "prompt" and not shared and record["status"] == 0:
            work_one(ops, client, user, name, lease, log)
    # leave nothing pending in the own object: a prompt held by a `next` whose answer was lost blocks
    # it (4) until that lease expires
    deadline = time.time() + 3 * lease_seconds(lease) + 30
    while n_ops > 3 and time.time() < deadline:
        status = work_one(ops, client, mine, f"own-{client}", lease, log)
        if status in (3, 9):
            break
        if status != 0:
            time.sleep(0.5)


def lease_seconds(lease):
    from durable_cli import durations

    return durations.parse(lease)


def work_one(ops, client, user, name, lease, log):
    """Take the oldest pending prompt of NAME and finish it. Returns the `next` status."""
    t0 = time.time()
    status, value, seconds = ops.next(user, name, lease)
    taken = {"client": client, "kind": "next", "user": user, "name": name, "status": status, "t0": t0,
             "attempts": [{"status": status, "seconds": seconds, "t0": t0, "detail": None if status == 0 else value}]}
    log.append(taken)
    if status != 0:
        return status
    taken["prompt_id"], taken["content"] = value["id"], value["content"]
    reply = "r:" + value["content"]
    done = {"client": client, "kind": "finish", "user": user, "name": name, "prompt_id": value["id"], "attempts": []}
    log.append(done)
    for attempt in range(RETRIES + 1):
        t0 = time.time()
        st, detail, seconds = ops.finish(user, name, value["id"], reply)
        done["attempts"].append({"status": st, "seconds": seconds, "t0": t0, "detail": detail})
        if st != 7:
            break
        time.sleep(0.25 + 0.25 * attempt)
    done["status"] = done["attempts"][-1]["status"]
    return status


def drainer(ops, client, lease, log, stop_file, deadline):
    """Drain the shared prompt objects until the writers are done and nothing is pending."""
    _, shared_p = shared_objects()
    drained = set()
    while time.time() < deadline:
        writers_done = os.path.exists(stop_file)
        busy = False
        for name in shared_p:
            if writers_done and name in drained:
                continue
            status = work_one(ops, client, SHARED_USER, name, lease, log)
            if status == 0:
                busy = True
            elif writers_done and (status not in (4, 7) or ops.pending(SHARED_USER, name) == 0):
                drained.add(name)  # 9: none pending; 3: no prompt ever came to it; 4: another worker holds the last
        if writers_done and len(drained) == len(shared_p):
            return
        if not busy:
            time.sleep(0.05 + random.random() * 0.1)


def run_clients(kind, url, config, clients, n_ops, workers, lease, go_file, stop_file, deadline):
    """Run CLIENTS writer threads and WORKERS drainer threads of KIND; returns their log."""
    log = []
    threads = []
    for c in clients:
        ops = CliOps(url, config) if kind == "cli" else LibOps(url, config)
        threads.append(threading.Thread(target=_wait_then, args=(go_file, writer, ops, c, n_ops, lease, log), daemon=True))
    for w in workers:
        ops = CliOps(url, config) if kind == "cli" else LibOps(url, config)
        threads.append(threading.Thread(target=_wait_then,
                                         args=(go_file, drainer, ops, w, lease, log, stop_file, deadline), daemon=True))
    for t in threads:
        t.start()
    return threads, log


def _wait_then(go_file, fn, *args):
    while not os.path.exists(go_file):
        time.sleep(0.01)
    fn(*args)


def lib_child(spec):
    """A library process: its share of the library clients; its log as JSON on stdout."""
    threads, log = run_clients("lib", spec["url"], spec["config"], spec["clients"], spec["ops"], spec["workers"],
                               spec["lease"], spec["go"], spec["stop"], spec["deadline"])
    writers = threads[:len(spec["clients"])]
    for t in writers:
        t.join()
    with open(spec["done"], "w"):
        pass
    for t in threads:
        t.join()
    json.dump(log, sys.stdout)


# ---------------------------------------------------------------- the Worker


class Dev:
    """`durable remote dev` on a fixed port and storage (so a restart serves the same URL and objects)."""

    def __init__(self, storage, port, users):
        args = [*CLI, "remote", "dev", "--storage", storage, "--port", str(port)]
        os.makedirs(storage, exist_ok=True)
        with open(os.path.join(storage, "durable-token-key"), "w") as f:  # users' tokens are signed with BENCH_KEY
            f.write(BENCH_KEY)
        for attempt in range(5):  # the port of a Worker just killed may take a moment to be free again
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
            line = self.proc.stdout.readline()
            if line:
                doc = json.loads(line)
                self.url, self.admin_token = doc["url"], doc["admin_token"]
                return
            self.proc.wait()
            why = self.proc.stderr.read().decode()
            print(f"durable remote dev did not start (attempt {attempt + 1}): {why.strip()}", file=sys.stderr)
            time.sleep(0.5)
        raise SystemExit(f"durable remote dev did not start: {why}")

    def workerd_pid(self):
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return int(f.read().split()[0])

    def kill_workerd(self):
        os.kill(self.workerd_pid(), signal.SIGKILL)
        return self.proc.wait(timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the check


def check(url, config, records):
    """Read every object written and account for every write; the failures found (empty: all good)."""
    os.environ["DURABLE_CONFIG"] = config
    ops = LibOps(url, config)
    objects = sorted({(r["user"], r["name"]) for r in records})
    rows, queues = {}, {}
    for user, name in objects:
        status, value, _ = ops._call(user, name, "show_transcript", all_rows=True)
        rows[(user, name)] = value if status == 0 else []
        status, value, _ = ops._call(user, name, "queue")
        queues[(user, name)] = value if status == 0 else []
    failures = []
    counts = {"appends_acknowledged": 0, "appends_unknown": 0, "appends_unknown_landed": 0,
              "prompts_acknowledged": 0, "prompts_unknown": 0, "prompts_unknown_landed": 0,
              "prompts_taken": 0, "prompts_finished": 0, "writes_retried_after_7": 0, "rows": 0, "prompts": 0}
    content_count = {}
    for key, rs in rows.items():
        counts["rows"] += len(rs)
        for r in rs:
            content_count[(key, r["content"])] = content_count.get((key, r["content"]), 0) + 1
    queue_count = {}
    by_id = {}
    for key, qs in queues.items():
        counts["prompts"] += len(qs)
        for p in qs:
            queue_count[(key, p["content"])] = queue_count.get((key, p["content"]), 0) + 1
            by_id[(key, p["id"])] = p
    for (key, content), n in content_count.items():
        if n > 1:
            failures.append(f"{key[1]}: the row {content!r} is there {n} times")
    for (key, content), n in queue_count.items():
        if n > 1:
            failures.append(f"{key[1]}: the prompt {content!r} is queued {n} times")
    taken = {}
    for r in records:
        key = (r["user"], r["name"])
        if len(r["attempts"]) > 1:
            counts["writes_retried_after_7"] += 1
        if r["kind"] == "append":
            n = content_count.get((key, r["tag"]), 0)
            if r["status"] == 0:
                counts["appends_acknowledged"] += 1
                row = next((x for x in rows[key] if x["seq"] == r["result"]), None)
                if n != 1 or row is None or row["content"] != r["tag"]:
                    failures.append(f"acknowledged append {r['tag']} (seq {r['result']}) is there {n} times")
            else:
                counts["appends_unknown"] += 1
                counts["appends_unknown_landed"] += n
        elif r["kind"] == "prompt":
            n = queue_count.get((key, r["tag"]), 0)
            if r["status"] == 0:
                counts["prompts_acknowledged"] += 1
                p = by_id.get((key, r["result"]))
                if n != 1 or p is None or p["content"] != r["tag"]:
                    failures.append(f"acknowledged prompt {r['tag']} (id {r['result']}) is queued {n} times")
            else:
                counts["prompts_unknown"] += 1
                counts["prompts_unknown_landed"] += n
        elif r["kind"] == "next" and r["status"] == 0:
            counts["prompts_taken"] += 1
            pid = (key, r["prompt_id"])
            if pid in taken:
                failures.append(f"prompt {r['prompt_id']} of {key[1]} was taken twice ({taken[pid]} and {r['client']})")
            taken[pid] = r["client"]
        elif r["kind"] == "finish" and r["status"] == 0:
            counts["prompts_finished"] += 1
    for key, qs in queues.items():
        for p in qs:
            if content_count.get((key, p["content"]), 0) > 1 or content_count.get((key, "r:" + p["content"]), 0) > 1:
                failures.append(f"prompt {p['content']} of {key[1]} was worked on twice")
    # a prompt not completed must be explained by a `next` whose answer was lost (its lease then
    # expired: nobody knew they held it) or a finish that came after the lease (a loaded machine)
    lost_next = [r for r in records if r["kind"] == "next" and r["status"] == 7]
    next_unknown = sum(1 for r in lost_next if "unknown" in str(r["attempts"][-1]["detail"]))
    counts["next_unknown"], counts["next_not_sent"] = next_unknown, len(lost_next) - next_unknown
    late = sum(1 for r in records if r["kind"] == "finish" and r["status"] == 4 and all(a["status"] != 7 for a in r["attempts"]))
    counts["finish_retried_then_4"] = 0
    for r in records:
        if r["kind"] == "finish" and r["status"] == 4 and any(a["status"] == 7 for a in r["attempts"]):
            # either the first try committed (its answer lost): completed; or the Worker was down
            # past the prompt's lease, which expired first: failed "timed out"
            counts["finish_retried_then_4"] += 1
            p = by_id.get(((r["user"], r["name"]), r["prompt_id"]))
            if p is not None and p["status"] == "failed" and p.get("error") == "timed out":
                late += 1
            elif p is None or p["status"] != "completed":
                failures.append(f"finish of prompt {r['prompt_id']} of {r['name']} ended 4 after a 7 but it is "
                                f"{p and p['status']}")
    counts["finish_after_lease"] = late
    finish_statuses = {}
    for r in records:
        if r["kind"] == "finish":
            finish_statuses[str(r["status"])] = finish_statuses.get(str(r["status"]), 0) + 1
    counts["finish_statuses"] = finish_statuses
    pending = sum(1 for qs in queues.values() for p in qs if p["status"] == "pending")
    if pending:
        failures.append(f"{pending} prompts are still pending after the workers drained every object")
    not_completed = sum(1 for qs in queues.values() for p in qs if p["status"] != "completed")
    if not_completed > next_unknown + late:
        failures.append(f"{not_completed} prompts are not completed, more than the {next_unknown} lost `next` answers "
                        f"and {late} finishes after the lease explain")
    statuses = {}
    for qs in queues.values():
        for p in qs:
            reason = p["status"] + (f" ({p['error']})" if p.get("error") else "")
            statuses[reason] = statuses.get(reason, 0) + 1
    counts["prompt_statuses"] = statuses
    counts["objects"] = len(objects)
    counts["live_rows"] = {f"{u}/{n}": sum(1 for r in rows[(u, n)] if r.get("superseded_by") is None)
                           for u, n in objects if rows[(u, n)] or queues[(u, n)]}
    return counts, failures


def index_check(url, config, admin_token, live_rows):
    """The remote index (ls per user) against the objects written: before and after an admin `reindex`.
    None when this build has no remote index (Store.reindex)."""
    os.environ["DURABLE_CONFIG"] = config
    from durable_cli import Store

    admin = Store(remote=url, token=admin_token)
    if not hasattr(admin, "reindex"):
        return None

    def compare():
        users = sorted({key.split("/", 1)[0] for key in live_rows})
        listed = {}
        for user in users:
            for row in Store(remote=url, token=token(user)).ls(all_objects=True):
                listed[f"{user}/{row['name']}"] = row["turns"]
        missing = sorted(set(live_rows) - set(listed))
        extra = sorted(set(listed) - set(live_rows))
        turns = sorted(k for k in set(listed) & set(live_rows) if listed[k] != live_rows[k])
        return {"objects": len(live_rows), "listed": len(listed), "missing": missing[:10], "extra": extra[:10],
                "turns_differ": turns[:10], "consistent": not (missing or extra or turns)}

    before = compare()
    start = time.perf_counter()
    done = admin.reindex()
    seconds = time.perf_counter() - start
    after = compare()
    return {"before_reindex": before, "after_reindex": after, "reindex_s": round(seconds, 2),
            "reindex": {"reindexed": done["reindexed"], "removed": done["removed"], "skipped": len(done["skipped"])}}


def figures(records, wall):
    """Exit statuses, requests/s and latency percentiles per client kind and op."""
    out = {}
    for side in ("cli", "lib"):
        side_records = [r for r in records if r["side"] == side]
        attempts = [a for r in side_records for a in r["attempts"]]
        ops = {}
        for r in side_records:
            for a in r["attempts"]:
                ops.setdefault(r["kind"], []).append(a)
        writes = [r for r in side_records if r["kind"] in ("append", "prompt", "finish")]
        out[side] = {
            "writes": len(writes),
            # a finish may end 4 (after its lease, on a loaded machine): the check explains each such 4
            "write_final_statuses": _histogram(r["status"] for r in writes if r["kind"] != "finish"),
            "finish_final_statuses": _histogram(r["status"] for r in writes if r["kind"] == "finish"),
            "writes_with_a_7_then_retried": sum(1 for r in writes if any(a["status"] == 7 for a in r["attempts"][:-1])),
            "requests": len(attempts),
            "requests_per_s": round(len(attempts) / wall, 1) if wall else None,
            "first_attempt_statuses": _histogram(r["attempts"][0]["status"] for r in side_records),
            "final_statuses": _histogram(r["status"] for r in side_records),
            "latency_ms": {op: {"n": len(v), "p50": _ms(percentile([a["seconds"] for a in v], 0.5)),
                                "p99": _ms(percentile([a["seconds"] for a in v], 0.99)),
                                "max": _ms(max(a["seconds"] for a in v))} for op, v in sorted(ops.items())},
            "errors": _errors(attempts),
        }
    return out


def _histogram(values):
    h = {}
    for v in values:
        h[str(v)] = h.get(str(v), 0) + 1
    return dict(sorted(h.items()))


def _errors(attempts):
    """Non-zero statuses with the first words of their message (what a user would read)."""
    h = {}
    for a in attempts:
        if a["status"]:
            detail = str(a["detail"])
            try:
                detail = json.loads(detail)["error"]["code"] + ": " + json.loads(detail)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                detail = detail.replace("durable: error: ", "")
            key = f"{a['status']}: {detail[:60]}"
            h[key] = h.get(key, 0) + 1
    return dict(sorted(h.items(), key=lambda kv: -kv[1])[:12])


def _ms(seconds):
    return None if seconds is None else round(seconds * 1000, 1)


def load(args):
    work = tempfile.mkdtemp(prefix="durable-remote-load-")
    storage = os.path.join(work, "storage")
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write(f'[queue]\nmax_unfinished = 100000\n[remote]\ntimeout = "{args.timeout}"\n')
    users = [SHARED_USER] + [f"u{k}" for k in range(8)]
    port = free_port()
    dev = Dev(storage, port, users)
    url = dev.url
    go, stop = os.path.join(work, "go"), os.path.join(work, "writers-done")
    deadline = time.time() + args.max_seconds
    cli_clients = [f"c{i}" for i in range(args.cli - args.cli_workers)]
    cli_workers = [f"cw{i}" for i in range(args.cli_workers)]
    lib_clients = [f"l{i}" for i in range(args.lib - args.lib_workers)]
    lib_workers = [f"lw{i}" for i in range(args.lib_workers)]
    children = []
    for k in range(args.lib_procs):
        spec = {"url": url, "config": config, "clients": lib_clients[k::args.lib_procs], "ops": args.ops,
                "workers": lib_workers[k::args.lib_procs], "lease": args.lease, "go": go, "stop": stop,
                "deadline": deadline, "done": os.path.join(work, f"lib-done-{k}")}
        children.append(subprocess.Popen([PY, __file__, "--lib-child", json.dumps(spec)], stdout=subprocess.PIPE,
                                         cwd=ROOT, text=True))
    threads, cli_log = run_clients("cli", url, config, cli_clients, args.ops, cli_workers, args.lease, go, stop, deadline)
    restarts = []
    try:
        start = time.time()
        open(go, "w").close()
        writers = threads[:len(cli_clients)]
        total = max(1, len(cli_clients) * args.ops)
        for k in range(args.restarts):
            # restart once the CLI writers are K+1/(N+1) of the way through
            goal = total * (k + 1) / (args.restarts + 1)
            while sum(1 for r in cli_log if r["kind"] in ("append", "prompt") and "status" in r) < goal:
                if not any(t.is_alive() for t in writers):
                    break
                time.sleep(0.02)
            how = "SIGKILL workerd" if k % 2 == 0 else "SIGTERM durable remote dev"
            t_down = time.time()
            dev.kill_workerd() if k % 2 == 0 else dev.stop()
            dev = Dev(storage, port, users)
            print(f"restarted the Worker ({how}) in {time.time() - t_down:.2f}s", file=sys.stderr)
            restarts.append({"how": how, "at_s": round(t_down - start, 2), "down_s": round(time.time() - t_down, 2)})
        for t in writers:
            t.join()
        lib_logs = []
        for k, child in enumerate(children):
            while not os.path.exists(os.path.join(work, f"lib-done-{k}")) and child.poll() is None:
                time.sleep(0.02)
        open(stop, "w").close()
        writers_wall = time.time() - start
        for child in children:
            out, _ = child.communicate()
            if child.returncode != 0:
                raise SystemExit("a library process failed")
            lib_logs += json.loads(out)
        for t in threads:
            t.join()
        wall = time.time() - start
        for r in cli_log:
            r["side"] = "cli"
        for r in lib_logs:
            r["side"] = "lib"
        records = cli_log + lib_logs
        in_flight = []
        for rs in restarts:
            t_down = start + rs["at_s"]
            rs["requests_in_flight"] = sum(1 for r in records for a in r["attempts"]
                                           if a["t0"] <= t_down <= a["t0"] + a["seconds"])
            in_flight.append(rs["requests_in_flight"])
        counts, failures = check(url, config, records)
        index = index_check(url, config, dev.admin_token, counts.pop("live_rows"))
        if index is not None and not index["after_reindex"]["consistent"]:
            failures.append(f"the index after reindex differs from the objects: {index['after_reindex']}")
        caught = None
        if args.self_check:  # the check must see a lost row: pop one acknowledged append and check again
            lost = next(r for r in records if r["kind"] == "append" and r["status"] == 0 and r["name"].startswith("shared-a"))
            LibOps(url, config)._call(lost["user"], lost["name"], "pop")
            _, after = check(url, config, records)
            caught = any("append" in f for f in after)
        summary = {
            "clients": {"cli": args.cli, "cli_workers": args.cli_workers, "lib": args.lib, "lib_workers": args.lib_workers,
                        "lib_procs": args.lib_procs, "ops_per_client": args.ops},
            "wall_s": round(wall, 2), "writers_wall_s": round(writers_wall, 2),
            "requests_per_s": round(sum(len(r["attempts"]) for r in records) / wall, 1),
            "restarts": restarts,
            "counts": counts,
            "index": index if index is not None else "no remote index in this build (Store.reindex missing)",
            "by_client": figures(records, wall),
            "failures": failures[:50],
            "check_catches_a_lost_row": caught,
            "ok": not failures,
        }
        return summary
    finally:
        open(stop, "w").close()
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        dev.stop()
        shutil.rmtree(work, ignore_errors=True)


def rate_child(spec):
    """THREADS library clients appending to one object (or one each) for SECONDS; counts and latencies as JSON."""
    os.environ["DURABLE_CONFIG"] = spec["config"]
    counter, lat, lock = [0], [], threading.Lock()
    end = time.time() + spec["seconds"]

    def go(i):
        ops = LibOps(spec["url"], spec["config"])
        name = spec["name"] if spec["shared"] else f"{spec['name']}-{spec['proc']}-{i}"
        rows = [{"role": "user", "content": f"row {k}"} for k in range(spec["batch"])]
        while time.time() < end:
            t = time.perf_counter()
            with ops.store(SHARED_USER).open(name, create=True) as s:
                s.append_many(rows) if spec["batch"] > 1 else s.append("x", role="user")
            with lock:
                counter[0] += spec["batch"]
                lat.append(time.perf_counter() - t)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(spec["threads"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    json.dump({"rows": counter[0], "lat": lat}, sys.stdout)


def workerd_cpu(dev) -> float:
    """CPU seconds (user + system) workerd has used so far."""
    with open(f"/proc/{dev.workerd_pid()}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(args):
    """Appends per second to ONE object (a DO is single-threaded) vs one object per client thread, library
    clients spread over --procs processes."""
    work = tempfile.mkdtemp(prefix="durable-remote-rate-")
    config = os.path.join(work, "config.toml")
    with open(config, "w") as f:
        f.write('[remote]\ntimeout = "30s"\n')
    dev = Dev(os.path.join(work, "storage"), free_port(), [SHARED_USER])
    try:
        out = {}
        for label, shared, batch in (("one_object", True, 1), ("one_object_batch_100", True, 100),
                                     ("one_object_per_thread", False, 1)):
            specs = [{"url": dev.url, "config": config, "seconds": args.throughput, "shared": shared, "batch": batch,
                      "threads": args.threads, "name": "rate-" + label, "proc": k} for k in range(args.procs)]
            cpu0 = workerd_cpu(dev)
            t0 = time.time()
            children = [subprocess.Popen([PY, __file__, "--rate-child", json.dumps(spec)], stdout=subprocess.PIPE,
                                         cwd=ROOT, text=True) for spec in specs]
            docs = [json.loads(c.communicate()[0]) for c in children]
            wall = time.time() - t0
            cpu = workerd_cpu(dev) - cpu0
            rows = sum(d["rows"] for d in docs)
            lat = [x for d in docs for x in d["lat"]]
            out[label] = {"rows_per_s": round(rows / wall, 1), "requests_per_s": round(len(lat) / wall, 1),
                          "p50_ms": _ms(percentile(lat, 0.5)), "p99_ms": _ms(percentile(lat, 0.99)),
                          "clients": args.threads * args.procs, "processes": args.procs, "rows_per_request": batch,
                          # workerd's CPU per request: a single-threaded object saturates near 1000 / this
                          "workerd_cpu_ms_per_request": round(cpu * 1000 / max(len(lat), 1), 3),
                          "workerd_cpu_share": round(cpu / wall, 2)}
        return out
    finally:
        dev.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cli", type=int, default=50, help="concurrent CLI clients (durable processes at once)")
    p.add_argument("--cli-workers", type=int, default=5, help="of them, workers draining the shared prompt objects")
    p.add_argument("--lib", type=int, default=200, help="concurrent library clients (threads)")
    p.add_argument("--lib-workers", type=int, default=10)
    p.add_argument("--lib-procs", type=int, default=4, help="processes the library clients are spread over")
    p.add_argument("--ops", type=int, default=8, help="writes per writer client")
    p.add_argument("--restarts", type=int, default=0, help="restart the Worker this many times mid-load")
    p.add_argument("--lease", default="20s", help="lease of a taken prompt (a prompt taken by a `next` whose answer was lost waits this long)")
    p.add_argument("--timeout", default="10s", help="remote.timeout of every client")
    p.add_argument("--max-seconds", type=int, default=900, help="workers stop draining after this long")
    p.add_argument("--throughput", type=float, default=0, help="measure per-object append rates for this many seconds instead")
    p.add_argument("--threads", type=int, default=8, help="with --throughput: client threads per process")
    p.add_argument("--self-check", action="store_true", help="after the check, pop one acknowledged row and check that the check sees it")
    p.add_argument("--procs", type=int, default=2, help="with --throughput: client processes")
    p.add_argument("--lib-child", help=argparse.SUPPRESS)
    p.add_argument("--rate-child", help=argparse.SUPPRESS)
    args = p.parse_args()
    for variable in ("DURABLE_USER", "DURABLE_TENANT", "DURABLE_REMOTE", "DURABLE_TOKEN"):
        os.environ.pop(variable, None)  # each client acts as its token's user
    if args.lib_child:
        return lib_child(json.loads(args.lib_child))
    if args.rate_child:
        return rate_child(json.loads(args.rate_child))
    if args.throughput:
        print(json.dumps(throughput(args), indent=1))
        return 0
    args.cli_workers = min(args.cli_workers, args.cli)
    args.lib_workers = min(args.lib_workers, args.lib)
    summary = load(args)
    print(json.dumps(summary, indent=1))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
