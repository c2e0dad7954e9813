"""docs/reference/sessions.md §5.2 `durable step`, with real processes: a step runs once per (prompt, KEY) and is replayed byte for
byte with its exit status; a concurrent caller waits and replays; kill -9 inside the step runs it again with the
same DURABLE_STEP_ID, after the commit it replays; a lost or stale start records nothing (exit 4); 75 and signals
record nothing; more than 1 MiB is committed and refused; bad input changes nothing; `work` reports the steps.
The key behaviours run on both backends (docs/reference/sessions.md §5.2 "Remote": the journal in the session's Durable Object
on a real workerd, CMD on this machine)."""

import hashlib
import json
import os
import signal
import subprocess
import sys

import pytest

from durable_cli import StepFailed, StepResult, Store
from tests.conftest import run_inprocess, run_process
from tests.waiting import wait_until

PY = sys.executable


def started(durable, name="s", text="go"):
    durable("session", "create", name)
    durable("session", "prompt", name, text)
    doc = durable("session", "next", name, "--json").json()
    return doc["id"]


def step(*args):
    """`durable step ARGS` in this process (CMD is still a real process): fast, for text output."""
    return run_inprocess("step", *args)


def steps(durable, name="s"):
    r = durable("session", "steps", name, "--json")
    assert r.status == 0, r.err
    return r.json()


def spawn(*args, env=None):
    return subprocess.Popen([PY, "-m", "durable_cli", "step", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, **(env or {})))


@pytest.mark.both_backends
def test_runs_once_then_replays_bytes_and_status(durable, tmp_path):
    started(durable)
    count = tmp_path / "count"
    cmd = ["sh", "-c", f"echo ran >> {count}; printf 'a\\0b\\377\\n'; echo to-stderr >&2; exit 3"]
    first = subprocess.run([PY, "-m", "durable_cli", "step", "s", "pay", "--", *cmd], capture_output=True)
    assert first.returncode == 3 and first.stdout == b"a\0b\xff\n" and b"to-stderr" in first.stderr
    again = subprocess.run([PY, "-m", "durable_cli", "step", "s", "pay", "--", *cmd], capture_output=True)
    assert again.returncode == 3 and again.stdout == b"a\0b\xff\n" and again.stderr == b""  # stderr is not replayed
    assert count.read_text() == "ran\n"
    r = step("s", "pay", "--json", "--", *cmd)
    assert r.status == 0, r.err  # with --json: 0 whenever the step has a result
    doc = json.loads(r.out)
    assert doc["replayed"] is True and doc["exit_status"] == 3 and doc["stdout"] is None  # not UTF-8
    assert doc["stdout_base64"] == "YQBi/wo=" and doc["stdout_bytes"] == 5 and doc["runs"] == 1 and doc["replays"] == 2
    [listed] = steps(durable)
    assert listed["key"] == "pay" and listed["status"] == "done" and listed["last_replay_attempt"] == 1
    assert listed["step_id"] == doc["step_id"] and len(doc["step_id"]) == 32


@pytest.mark.both_backends
def test_step_id_and_environment(durable):
    started(durable)
    r = step("s", "k", "--", "sh", "-c", "echo $DURABLE_SESSION $DURABLE_PROMPT_ID $DURABLE_ATTEMPT $DURABLE_STEP_KEY $DURABLE_STEP_ID")
    assert r.status == 0, r.err
    name, prompt, attempt, key, step_id = r.out.split()
    assert (name, prompt, attempt, key) == ("s", "1", "1", "k")
    object_id = durable("session", "show", "s", "--json").json()["id"]
    assert step_id == hashlib.sha256(f"{object_id}\n1\nk".encode()).hexdigest()[:32]


@pytest.mark.both_backends
def test_concurrent_caller_waits_then_replays(durable, tmp_path):
    started(durable)
    go, count = tmp_path / "go", tmp_path / "count"
    cmd = ["sh", "-c", f"echo ran >> {count}; while [ ! -e {go} ]; do sleep 0.01; done; echo result"]
    a = spawn("s", "k", "--", *cmd)
    wait_until(lambda: count.exists(), "the first caller's CMD to start")
    b = spawn("s", "k", "--", *cmd)
    wait_until(lambda: steps(durable)[0]["runs"] == 1 and b.poll() is None, "the second caller to be waiting")
    go.touch()
    out_a, _ = a.communicate(timeout=60)
    out_b, _ = b.communicate(timeout=60)
    assert (a.returncode, out_a, b.returncode, out_b) == (0, b"result\n", 0, b"result\n")
    assert count.read_text() == "ran\n"
    assert steps(durable)[0]["replays"] == 1


@pytest.mark.both_backends
def test_kill_9_inside_the_step_runs_again_with_the_same_id(durable, tmp_path):
    started(durable)
    seen, go = tmp_path / "seen", tmp_path / "go"
    pid = tmp_path / "pid"
    cmd = ["sh", "-c", f"echo $$ > {pid}; echo $DURABLE_STEP_ID >> {seen}; while [ ! -e {go} ]; do sleep 0.01; done; echo paid"]
    victim = spawn("s", "charge", "--", *cmd)
    wait_until(lambda: seen.exists(), "CMD to start")
    victim.kill()  # kill -9 of `durable step` between the reservation and the commit
    victim.wait()
    wait_until(lambda: not os.path.exists(f"/proc/{pid.read_text().strip()}"), "CMD to die with its parent (PR_SET_PDEATHSIG)")
    assert durable("session", "release", "s", "1").status == 0  # the worker's start is handed back ...
    assert durable("session", "next", "s", "--json").json()["start"] == 2  # ... and the prompt started again
    [before] = steps(durable)
    assert before["status"] == "abandoned" and before["exit_status"] is None
    go.touch()
    r = step("s", "charge", "--", *cmd)
    assert (r.status, r.out) == (0, "paid\n"), r.err
    first, second = seen.read_text().split()
    assert first == second  # the same DURABLE_STEP_ID: an API can deduplicate the at-least-once window
    [after] = steps(durable)
    assert (after["status"], after["runs"], after["attempt"]) == ("done", 2, 2)


@pytest.mark.both_backends
def test_after_the_commit_a_new_start_replays(durable, tmp_path):
    started(durable)
    count, committed = tmp_path / "count", tmp_path / "committed"
    cmd = ["sh", "-c", f"echo x >> {count}; echo charged 42; exit 7"]
    # the caller (a worker's CMD) is killed with -9 after its step committed, before it did anything with the result
    caller = subprocess.Popen(["sh", "-c", f"{PY} -m durable_cli step s charge -- \"$@\" >/dev/null; touch {committed}; sleep 60",
                               "sh", *cmd], start_new_session=True)
    wait_until(committed.exists, "the step to commit")
    os.killpg(caller.pid, signal.SIGKILL)
    caller.wait()
    durable("session", "release", "s", "1")  # the prompt is retried
    durable("session", "next", "s")
    r = step("s", "charge", "--", *cmd)
    assert (r.status, r.out) == (7, "charged 42\n")
    assert count.read_text() == "x\n"  # one side effect
    assert step("s", "charge", "--attempt", "1", "--", *cmd).status == 4  # a stale start gets nothing, replay or not


def test_start_lost_while_cmd_runs_records_nothing(durable, tmp_path):
    started(durable)
    r = run_process("step", "s", "k", "--", "sh", "-c",
                    f"{PY} -m durable_cli session release s 1 >/dev/null; echo done")
    assert r.status == 4 and r.out == "" and "the start was lost while step 'k' ran" in r.err
    [s] = steps(durable)
    assert s["status"] == "abandoned" and s["exit_status"] is None


@pytest.mark.both_backends
def test_tempfail_and_signals_record_nothing(durable, tmp_path):
    started(durable)
    r = step("s", "k", "--json", "--", "sh", "-c", "exit 75")
    assert r.status == 75 and json.loads(r.out)["status"] == "abandoned" and json.loads(r.out)["replayed"] is False
    assert step("s", "k", "--", "sh", "-c", "kill -TERM $$").status == 128 + signal.SIGTERM
    r = step("s", "k", "--", "echo", "third")
    assert (r.status, r.out) == (0, "third\n")
    assert steps(durable)[0]["runs"] == 3


def test_sigterm_to_step_is_passed_on_and_records_nothing(durable, tmp_path):
    started(durable)
    mark = tmp_path / "mark"
    p = spawn("s", "k", "--", "sh", "-c", f"trap 'echo got-term > {mark}; exit 1' TERM; touch {mark}.up; while :; do sleep 0.01; done")
    wait_until(lambda: (tmp_path / "mark.up").exists(), "CMD to start")
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 143
    assert mark.read_text() == "got-term\n"
    assert steps(durable)[0]["status"] == "abandoned"


@pytest.mark.both_backends
def test_output_over_one_mib_is_committed_and_refused(durable, tmp_path):
    started(durable)
    count = tmp_path / "count"
    cmd = ["sh", "-c", f"echo x >> {count}; head -c 1048577 /dev/zero"]
    r = step("s", "big", "--", *cmd)
    assert r.status == 2 and r.out == "" and "wrote 1048577 bytes" in r.err
    r = step("s", "big", "--json", "--", *cmd)
    assert r.status == 2 and r.out == "" and json.loads(r.err)["error"]["code"] == "invalid_input"
    assert count.read_text() == "x\n"
    [s] = steps(durable)
    assert s["output_too_large"] is True and s["stdout_bytes"] == 1048577 and s["stdout_base64"] is None


@pytest.mark.parametrize("args, status", [
    (["s", "k", "echo"], 2),  # no --
    (["s", "k", "--"], 2),  # empty CMD
    (["s", " k", "--", "echo"], 2),
    (["s", "k", "--call-id", "c", "--", "echo"], 2),
    (["s", "k", "--call-id", "c", "--args", "{bad", "--", "echo"], 2),
    (["s", "k", "--approval", "1", "--", "echo"], 2),
    (["s", "k", "--", "no-such-command-here"], 2),
    (["s", "k", "--attempt", "0", "--", "echo"], 2),
    (["nope", "k", "--", "echo"], 3),
    (["s", "k", "--prompt", "9", "--", "echo"], 3),
])
def test_bad_input_changes_nothing(durable, args, status):
    started(durable)
    r = durable("step", *args)
    assert r.status == status and r.out == "" and r.err.startswith("durable: error: "), r.err
    assert steps(durable) == []


@pytest.mark.both_backends
def test_only_the_current_start(durable):
    durable("session", "create", "s")
    r = durable("step", "s", "k", "--", "echo")
    assert r.status == 4 and "no prompt of" in r.err
    durable("session", "prompt", "s", "p")
    assert durable("step", "s", "k", "--prompt", "1", "--", "echo").status == 4  # pending, not started
    durable("session", "next", "s")
    assert durable("step", "s", "k", "--attempt", "2", "--", "echo").status == 4
    assert steps(durable) == []


def test_binding_and_self_call(durable):
    started(durable)
    assert step("s", "k", "--call-id", "c1", "--args", '{"to": "a", "amount": 42}', "--", "echo", "sent").status == 0
    r = step("s", "k", "--call-id", "c1", "--args", '{"amount":42,"to":"a"}', "--", "echo", "sent")
    assert (r.status, r.out) == (0, "sent\n")  # RFC 8785: the same arguments
    r = step("s", "k", "--call-id", "c1", "--args", '{"amount":43,"to":"a"}', "--", "echo", "sent")
    assert r.status == 4 and "recorded for another call" in r.err and r.out == ""
    assert step("s", "k", "--", "echo", "sent").status == 4
    [s] = steps(durable)
    assert s["args_sha256"] == hashlib.sha256(b'{"amount":42,"to":"a"}').hexdigest()
    r = run_process("step", "s", "inner", "--", PY, "-m", "durable_cli", "step", "s", "inner", "--", "echo")
    assert r.status == 4 and "already running in this process tree" in r.err


@pytest.mark.both_backends
def test_work_hands_the_prompt_and_reports_steps(durable, tmp_path):
    durable("session", "create", "s")
    durable("session", "prompt", "s", "hello")
    count, fail = tmp_path / "count", tmp_path / "fail-once"
    fail.touch()
    cmd = (f"{PY} -m durable_cli step \"$DURABLE_SESSION\" model -- sh -c 'echo x >> {count}; echo the answer' >{tmp_path}/out;"
           f" if [ -e {fail} ]; then rm {fail}; exit 1; fi; cat {tmp_path}/out")
    r = run_process("work", "s", "--command", cmd, "--wait", "0", "--json")
    assert r.status == 0, r.err
    [first] = [json.loads(x) for x in r.out.splitlines()]
    assert first["outcome"] == "released" and first["steps"] == {"ran": ["model"], "replayed": []}
    r = run_process("work", "s", "--command", cmd, "--wait", "30s", "--once", "--json")
    [second] = [json.loads(x) for x in r.out.splitlines()]
    assert second["outcome"] == "completed" and second["steps"] == {"ran": [], "replayed": ["model"]}, r.err
    r = run_process("work", "s", "--command", cmd, "--wait", "0")
    [s] = steps(durable)
    assert count.read_text() == "x\n" and s["replays"] == 1 and s["last_replay_attempt"] == 2
    assert [(x["role"], x["content"]) for x in durable("transcript", "show", "s", "--json").json()][-1] == ("assistant", "the answer")


@pytest.mark.both_backends
def test_library_step(durable, tmp_path):
    started(durable)
    calls = []

    def charge():
        calls.append(1)
        return "ok"

    store = Store()
    assert store.step("s", "charge", charge, prompt=1) == StepResult(b"ok", 0, False)
    assert store.step("s", "charge", charge, prompt=1) == StepResult(b"ok", 0, True)
    assert calls == [1]

    def declined():
        raise StepFailed(2, b"card declined")

    assert store.step("s", "card", declined, prompt=1) == StepResult(b"card declined", 2, False)
    assert store.step("s", "card", charge, prompt=1).replayed

    def crash():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.step("s", "flaky", crash, prompt=1)
    assert store.step("s", "flaky", charge, prompt=1) == StepResult(b"ok", 0, False)
    assert [(s["key"], s["status"], s["runs"]) for s in steps(durable)] == [("charge", "done", 1), ("card", "done", 1), ("flaky", "done", 2)]


@pytest.mark.soak  # ~15 s; its short form in the suite: test_work_hands_the_prompt_and_reports_steps
def test_two_workers_on_one_queue_each_effect_once(durable, tmp_path):
    durable("session", "create", "q")
    for i in range(4):
        durable("session", "prompt", "q", f"job {i}")
    effects = tmp_path / "effects"
    # each prompt's first run dies after its step committed; the retry (by either worker) replays the step
    cmd = (f"out=$({PY} -m durable_cli step \"$DURABLE_SESSION\" effect -- sh -c 'echo $DURABLE_PROMPT_ID >> {effects}; echo ok')"
           f" && if [ ! -e {tmp_path}/died-$DURABLE_PROMPT_ID ]; then touch {tmp_path}/died-$DURABLE_PROMPT_ID; exit 1; fi;"
           " echo \"$out\"")
    workers = [subprocess.Popen([PY, "-m", "durable_cli", "work", "q", "--command", cmd, "--wait", "4s", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [w.communicate(timeout=120)[0] for w in workers]
    lines = [json.loads(x) for out in outs for x in out.splitlines()]
    done = [x for x in lines if x["outcome"] == "completed"]
    assert sorted(x["prompt"] for x in done) == [1, 2, 3, 4]
    assert all(x["steps"] == {"ran": [], "replayed": ["effect"]} for x in done)
    assert sorted(effects.read_text().split()) == ["1", "2", "3", "4"]  # one effect per prompt


def test_durable_grace_shortens_the_kill(durable, tmp_path):
    started(durable)
    up = tmp_path / "up"
    # CMD ignores SIGTERM: only the kill after the grace ends it; DURABLE_GRACE=1 (work's --grace 1s) leaves it none
    p = spawn("s", "k", "--", "sh", "-c", f"trap '' TERM; touch {up}; sleep 60", env={"DURABLE_GRACE": "1"})
    wait_until(lambda: up.exists(), "CMD to start")
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=8) == 143  # without DURABLE_GRACE the group would keep its 10 s
    assert steps(durable)[0]["status"] == "abandoned"


def test_renewals_keep_a_long_step_live(durable, monkeypatch):
    """A step renewed while it runs stays live: a second caller waits and replays instead of running it again
    (renewals every 50 ms here, a step not renewed for 1 s read as abandoned; the product's are 10 s and 30 s)."""
    import threading
    import time

    from durable_cli import steps as runner
    from durable_cli.core import steps as journal

    monkeypatch.setattr(runner, "RENEW_EVERY", 0.05)
    monkeypatch.setattr(journal, "LIVE_MS", 1000)
    started(durable)
    calls, inside, results = [], threading.Event(), []

    def slow():
        calls.append("first")
        inside.set()
        time.sleep(3)  # three times as long as an unrenewed step stays live
        return "done"

    first = threading.Thread(target=lambda: results.append(Store().step("s", "k", slow, prompt=1)))
    first.start()
    assert inside.wait(60)
    second = Store().step("s", "k", lambda: calls.append("second") or "again", prompt=1)
    first.join(60)
    assert calls == ["first"] and second == StepResult(b"done", 0, True) and results == [StepResult(b"done", 0, False)]


@pytest.mark.both_backends
def test_a_renewal_that_finds_the_start_gone_stops_cmd(durable, monkeypatch, tmp_path):
    """Renewals reach the object while CMD runs (one request each, remotely): the first one after the start was
    released sends CMD's group SIGTERM, and nothing is recorded (renewals every 50 ms here; the product's: 10 s)."""
    from durable_cli import steps as runner

    monkeypatch.setattr(runner, "RENEW_EVERY", 0.05)
    started(durable)
    mark = tmp_path / "mark"
    r = step("s", "k", "--", "sh", "-c", f"trap 'echo got-term > {mark}; exit 1' TERM; {PY} -m durable_cli session release s 1"
             " >/dev/null; echo late; i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done")
    assert r.status == 4 and r.out == "" and "the start was lost while step 'k' ran" in r.err
    assert mark.read_text() == "got-term\n"
    [s] = steps(durable)
    assert s["status"] == "abandoned" and s["exit_status"] is None


@pytest.mark.both_backends
def test_a_replay_moves_updated_at_not_last_active_at(durable):
    """docs/reference/storage.md §3: updated_at is the object's latest commit of any kind, and a replay commits its
    count (`replays`); last_active_at stays (a replay is not activity)."""
    started(durable)
    assert durable("step", "s", "k", "--", "true").status == 0
    ran = durable("session", "show", "s", "--json").json()
    wait_until(lambda: durable("step", "s", "k", "--json", "--", "true").json()["replayed"] and
               durable("session", "show", "s", "--json").json()["updated_at"] != ran["updated_at"],
               "a replay's commit to move updated_at", timeout=10, step=0.05)
    after = durable("session", "show", "s", "--json").json()
    assert after["last_active_at"] == ran["last_active_at"]
    [listed] = [r for r in durable("ls", "--json").json() if r["name"] == "s"]
    assert listed["updated_at"] == after["updated_at"]
