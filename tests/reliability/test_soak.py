"""Concurrency soak: 8 processes issue a random mix of commands against 3 objects and the index.

Invariants afterwards: contiguous seqs, no lost or doubled prompt, at most one processing prompt,
index consistent with the objects. CI runs a short form; `pytest -m soak` runs the long one.
"""

import json
import subprocess
import sys

import pytest

MIXER = """
import contextlib, io, json, random, sys
from durable_cli.cli.app import run
rng = random.Random(int(sys.argv[1]))
ops, log = int(sys.argv[2]), []
def call(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = run(list(args))
    return status, out.getvalue()
for i in range(ops):
    name = rng.choice(["a", "b", "c"])
    op = rng.choice(["append", "prompt", "next", "finish", "recent", "ls", "show", "summarize"])
    if op == "append":
        s, _ = call("transcript", "append", name, "--role", "user", f"{sys.argv[1]}-{i}")
        if s == 0: log.append(["turn", name, f"{sys.argv[1]}-{i}"])
    elif op == "prompt":
        s, _ = call("session", "prompt", name, f"P{sys.argv[1]}-{i}")
        if s == 0: log.append(["prompt", name, f"P{sys.argv[1]}-{i}"])
    elif op == "next":
        s, out = call("session", "next", name, "--json")
        if s == 0:
            p = json.loads(out)
            s, _ = call("session", "finish", name, str(p["id"]), "--reply", "R" + p["content"])
            if s == 0: log.append(["done", name, p["content"]])
    elif op == "summarize":
        s, out = call("transcript", "show", name, "--json")
        if s == 0 and json.loads(out):
            call("transcript", "summarize", name, "--through", str(json.loads(out)[-1]["seq"]), "--text", "sum")
    elif op == "recent":
        call("transcript", "recent", name, "--json")
    elif op == "ls":
        call("ls", "--json")
    else:
        call("session", "show", name, "--json")
print(json.dumps(log))
"""


def soak(durable, processes, ops):
    durable("config", "set", "queue.max_unfinished", "1000")
    procs = [subprocess.Popen([sys.executable, "-c", MIXER, str(n), str(ops)], stdout=subprocess.PIPE, text=True) for n in range(processes)]
    log = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0
        log += json.loads(out)
    assert durable("doctor").status == 0
    listing = {r["name"]: r for r in durable("ls", "--all", "--json").json()}
    for name in "abc":
        if name not in listing:
            assert not [e for e in log if e[1] == name]
            continue
        rows = durable("transcript", "show", name, "--all", "--json").json()
        assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1)), "seqs are not contiguous"
        turns = [r["content"] for r in rows if r["kind"] == "turn"]
        assert len(turns) == len(set(turns)), "a turn was doubled"
        assert {e[2] for e in log if e[0] == "turn" and e[1] == name} <= set(turns), "an acknowledged turn was lost"
        queue = durable("session", "queue", name, "--json").json()
        contents = [p["content"] for p in queue]
        assert sorted(contents) == sorted(e[2] for e in log if e[0] == "prompt" and e[1] == name), "a prompt was lost or doubled"
        assert sum(p["status"] == "processing" for p in queue) <= 1
        assert {e[2] for e in log if e[0] == "done" and e[1] == name} <= {p["content"] for p in queue if p["status"] == "completed"}
        show = durable("session", "show", name, "--json").json()
        live = durable("transcript", "show", name, "--json").json()
        assert (show["turns"], show["tokens"]) == (len(live), sum(r["tokens"] for r in live))
        assert (listing[name]["turns"], listing[name]["tokens"], listing[name]["status"]) == (show["turns"], show["tokens"], show["status"])
    return len(log)


def test_concurrency_short(durable):
    assert soak(durable, 8, 15) > 0


@pytest.mark.soak
def test_concurrency_soak(durable):
    assert soak(durable, 8, 400) > 0
