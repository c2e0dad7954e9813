#!/usr/bin/env python3
"""Subrequests per page of the installation-wide commands at N users (`durable remote dev`, its dev hooks
"seed" and "subrequests"; docs/remote.md "Index and commands across objects").

    python bench/remote_scale.py --users 1000 10000 [--participants 150]

For each N: a fresh Worker (subrequest limit 1,000 per request, the dev default), N users seeded (each
user's shard name and the home row of their memory object), 20 real sessions of 4 users; then `ls`,
`usage --all`, `sweep`, `purge --dry-run`, `forget`, `purge` and the pages of `export --all`'s rows, each
with the most subrequests one of its requests made and its time (the objects' own subrequests counted too:
each request a Durable Object serves has a count of its own); then a tenant session of P participants
against a private one: the most subrequests of an append (Worker and object), the median append time,
and the member rows the index holds (docs/reference/remote.md §13: the list kept once). Prints one JSON document.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def tenant_commit(doc: dict, ask, participants: int) -> dict:
    """Appends to a private session and to a tenant session of PARTICIPANTS: subrequests, time, member rows."""
    import statistics

    from durable_cli import Store
    from durable_cli.remote.client import RemoteClient

    client = RemoteClient(doc["url"], doc["admin_token"], 60)
    store = Store(remote=doc["url"], token=doc["admin_token"], user="owner", tenant="bench")
    mine = Store(remote=doc["url"], token=doc["admin_token"], user="owner")
    try:
        with store.open("team", create=True) as s:
            s.append("hello", role="user")
        for i in range(participants - 1):
            client.call({"op": "invite", "args": {"user": f"p{i:05d}", "role": "member"}, "scope": "tenant", "label": "tenant",
                         "name": "team", "tenant": "bench", "actor": "owner", "create": False, "config": {}}, write=True)
        with mine.open("mine", create=True) as s:
            s.append("hello", role="user")
        out = {"participants": participants}
        for label, st, name in (("private append", mine, "mine"), ("tenant append", store, "team")):
            ask("subrequests")
            times = []
            for i in range(20):
                t = time.perf_counter()
                with st.open(name) as s:
                    s.append(f"turn {i}", role="user")
                times.append(time.perf_counter() - t)
            out[label] = {"max_subrequests": ask("subrequests"), "median_ms": round(statistics.median(times) * 1000, 1)}
        shards = ["tenant:bench", "user:owner", *(f"root:{x}" for x in "0123456789abcdef"),
                  *(f"user:p{i:05d}" for i in range(participants - 1))]
        census = [c for i in range(0, len(shards), 200) for c in ask("census", shards=shards[i:i + 200])]
        out["member rows"] = sum(c["members"] for c in census)
        out["membership rows"] = sum(c["joined"] for c in census)
        return out
    finally:
        store.close()
        mine.close()
        client.close()


def usage_pages(ask) -> dict:
    """The pages of `usage --all` (500 objects a page) and the most subrequests of one."""
    pages, most, cursor = 0, 0, None
    while True:
        page = ask("usage", everyone=True, by="session", cursor=cursor)
        most = max(most, ask("subrequests"))
        pages += 1
        cursor = page["next"]
        if cursor is None:
            return {"pages": pages, "max_subrequests": most}


def one(users: int, participants: int = 0) -> dict:
    from durable_cli.remote.client import RemoteClient

    storage = tempfile.mkdtemp(prefix="durable-scale-bench-")
    dev = subprocess.Popen([sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", storage],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, DURABLE_DEV_FAULTS="1"))
    doc = json.loads(dev.stdout.readline())
    env = dict(os.environ, DURABLE_REMOTE=doc["url"], DURABLE_TOKEN=doc["admin_token"], DURABLE_USER="u0")
    client = RemoteClient(doc["url"], doc["admin_token"], 60)
    ask = lambda op, **a: client.call({"op": op, "args": a, "scope": "index", "actor": None}, write=False)
    out = {"users": users}
    try:
        t = time.perf_counter()
        ask("seed", users=users)
        out["seed_s"] = round(time.perf_counter() - t, 2)
        from durable_cli import Store

        for u in range(4):
            store = Store(remote=doc["url"], token=doc["admin_token"], user=f"u{u}")
            for i in range(5):
                with store.open(f"s{i}", create=True) as s:
                    s.append("hello", role="user")
            store.close()
        time.sleep(1.1)
        ask("subrequests")

        def cli(*args):
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "durable_cli", *args], capture_output=True, text=True, env=env)
            assert r.returncode == 0, (args, r.stderr)
            return {"max_subrequests": ask("subrequests"), "s": round(time.perf_counter() - t, 2)}

        out["ls"] = cli("ls", "--json")
        out["usage --all"] = cli("usage", "--all", "--json")
        out["usage --all pages"] = usage_pages(ask)
        out["sweep"] = cli("sweep", "--json")
        out["purge --dry-run"] = cli("purge", "--older-than", "1s", "--dry-run", "--json")
        out["forget u1"] = cli("forget", "u1", "--yes", "--json")
        out["purge"] = cli("purge", "--older-than", "1s", "--yes", "--json")
        pages, most, before = 0, 0, None
        t = time.perf_counter()
        while True:
            page = ask("rows", all=True, reserved=True, before=before)
            most = max(most, ask("subrequests"))
            pages += 1
            before = page["next"]
            if before is None:
                break
        out["export --all rows"] = {"pages": pages, "max_subrequests": most, "s": round(time.perf_counter() - t, 2)}
        if participants:
            out["tenant commit"] = tenant_commit(doc, ask, participants)
    finally:
        client.close()
        dev.terminate()
        dev.wait()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--participants", type=int, default=150, help="participants of the tenant session measured (0: none)")
    a = parser.parse_args()
    print(json.dumps([one(n, a.participants) for n in a.users], indent=1))


if __name__ == "__main__":
    main()
