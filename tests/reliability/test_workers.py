"""Real processes: 3 producers and 2 workers on one session."""

import json
import subprocess
import sys

PRODUCER = """
import sys, time
from durable_cli.cli.app import run
tag, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    while True:
        status = run(["session", "prompt", "jobs", f"{tag}:{i}"])
        if status == 0:
            break
        assert status in (4, 6), status  # queue full or busy: retry
        time.sleep(0.02)
"""

# A worker stops once told that every prompt is queued (the marker file SYS.ARGV[1]) and then finds
# the queue empty: the marker is checked before the poll, so its "nothing" is conclusive.
WORKER = """
import contextlib, io, json, os, sys
from durable_cli.cli.app import run
done = []
while True:
    all_queued = os.path.exists(sys.argv[1])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = run(["session", "next", "jobs", "--wait", "1s", "--json"])
    if status == 9 and all_queued:
        break
    if status != 0:
        continue  # another worker holds the processing prompt (4) or the lock (6)
    prompt = json.loads(out.getvalue())
    done.append(prompt["content"])
    with contextlib.redirect_stdout(io.StringIO()):
        assert run(["session", "finish", "jobs", str(prompt["id"]), "--reply", "did " + prompt["content"]]) == 0
print(json.dumps(done))
"""


def test_producers_and_workers(durable, tmp_path):
    durable("config", "set", "queue.max_unfinished", "5")
    durable("session", "create", "jobs")
    all_queued = tmp_path / "all-queued"
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(all_queued)], stdout=subprocess.PIPE, text=True)
               for _ in range(2)]
    producers = [subprocess.Popen([sys.executable, "-c", PRODUCER, tag, "12"]) for tag in "abc"]
    assert [p.wait(timeout=120) for p in producers] == [0, 0, 0]
    all_queued.touch()
    done = []
    for w in workers:
        out, _ = w.communicate(timeout=120)
        assert w.returncode == 0
        done += json.loads(out)
    expected = {f"{t}:{i}" for t in "abc" for i in range(12)}
    assert sorted(done) == sorted(expected), "every prompt processed exactly once"
    queue = durable("session", "queue", "jobs", "--json").json()
    assert all(p["status"] == "completed" for p in queue) and len(queue) == 36
    for tag in "abc":  # FIFO per producer: ids (queue order) follow the producer's order
        mine = [p for p in queue if p["content"].startswith(tag + ":")]
        assert [int(p["content"].split(":")[1]) for p in sorted(mine, key=lambda p: p["started_at"])] == list(range(12))
    rows = durable("transcript", "show", "jobs", "--json").json()
    assert len(rows) == 72
    for user, assistant in zip(rows[::2], rows[1::2]):  # u, a, u, a: never two processing at once
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        assert assistant["content"] == "did " + user["content"]
