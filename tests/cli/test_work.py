"""docs/reference/sessions.md §5.1 `durable work`, with real processes, on both backends: CMD's input and environment, text and
rows output, renewal during a slow CMD, release with back-off then failure, a lost lease, signals and
--grace, two workers on one queue, --all, and the bad input of issue 26."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import run_process
from tests.helpers import hold_lock
from tests.waiting import wait_until

pytestmark = pytest.mark.both_backends

PY = sys.executable


@pytest.fixture(autouse=True)
def _durable_on_path(monkeypatch):
    """CMDs here call `durable` as a user's script would: the console script beside this Python, whether or not the
    venv is activated."""
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(PY), os.environ.get("PATH", "")]))


def work(*args, timeout=60, env=None):
    return run_process("work", *args, timeout=timeout, env=env)


def spawn(*args, env=None):
    return subprocess.Popen([PY, "-m", "durable_cli", "work", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, **(env or {})))


def lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def rows_of(durable, name):
    r = durable("transcript", "show", name, "--json")
    assert r.status == 0, r.err
    return r.json()


def queue(durable, name):
    return durable("session", "queue", name, "--json").json()


def test_text_reply_input_and_environment(durable, tmp_path):
    durable("session", "prompt", "s", "hello")
    seen = tmp_path / "seen"
    cmd = (f"cat > {seen}.json; echo \"$DURABLE_SESSION $DURABLE_PROMPT_ID $DURABLE_ATTEMPT $DURABLE_USER"
           f" ${{DURABLE_HOME:+home}}${{DURABLE_REMOTE:+remote}}\" > {seen}; durable transcript show s --json | wc -c >&2;"
           " echo 'the answer'")
    r = work("s", "--command", cmd, "--wait", "0", "--json", "--context", "500")
    assert r.status == 0, r.err
    assert lines(r.out) == [{"name": "s", "prompt": 1, "outcome": "completed", "attempts": 1, "rows": 1, "steps": {"ran": [], "replayed": []}, "error": None}]
    assert r.out == '{"name":"s","prompt":1,"outcome":"completed","attempts":1,"rows":1,"steps":{"ran":[],"replayed":[]},"error":null}\n'  # compact (docs/reference/output.md §4)
    expected = "remote" if os.environ.get("DURABLE_REMOTE") else "home"
    assert seen.read_text().split() == ["s", "1", "1", "alice", expected]
    doc = json.loads((tmp_path / "seen.json").read_text())
    assert doc["id"] == 1 and doc["content"] == "hello" and doc["window"][-1] == {"role": "user", "content": "hello"}
    assert [(x["role"], x["content"]) for x in rows_of(durable, "s")] == [("user", "hello"), ("assistant", "the answer")]
    # nothing more came within --wait: 9 when nothing was handled
    r = work("s", "--command", "true", "--wait", "1s")
    assert r.status == 9 and r.err == ""  # stderr not a terminal: no waiting line


@pytest.mark.local_only("the terminal runs the CLI on the data directory")
def test_work_says_on_a_terminal_that_it_waits_and_wipes_the_line_when_a_prompt_comes(durable, tmp_path):
    """docs/reference/output.md §4 / issue 33 item 17: one status line on stderr while `work` waits, when stderr is a TTY."""
    from tests.cli.test_screens import Terminal, finished
    from tests.cli.tools import require

    require("tmux")
    durable("session", "create", "s")
    term = Terminal(tmp_path, 80, "durable work s --command 'cat >/dev/null; echo hi' --once",
                    fake_time=False)
    try:
        term.wait_for(r"durable: work: waiting for a prompt on s \(Ctrl-C stops\)")
        durable("session", "prompt", "s", "hello")
        screen, status = finished(term.wait_for(r"\[exit \d+\]"))
    finally:
        term.close()
    assert status == 0 and screen == "durable: work: s prompt 1: completed (attempt 1, 1 row)\n", screen


ROWS_SCRIPT = r"""
import json, sys
doc = json.load(sys.stdin)
call = {"id": "c1", "name": "word_count", "arguments": json.dumps({"text": doc["content"]})}
print(json.dumps({"role": "assistant", "content": "", "tool_calls": [call]}))
print()
print(json.dumps({"role": "tool", "call_id": "c1", "name": "word_count", "content": str(len(doc["content"].split()))}))
print(json.dumps({"role": "assistant", "content": "done", "meta": {"model": "m", "usage": {"input_tokens": 3, "output_tokens": 2}}}))
"""


def test_rows_output_and_forced_text(durable, tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(ROWS_SCRIPT)
    durable("session", "prompt", "s", "count these words")
    r = work("s", "--command", f"{PY} {script}", "--once", "--json")
    assert r.status == 0, r.err
    assert lines(r.out)[0]["rows"] == 3
    got = rows_of(durable, "s")
    assert [x["role"] for x in got] == ["user", "assistant", "tool", "assistant"]
    assert got[-1]["meta"]["model"] == "m" and got[2]["content"] == "3"
    # --output text: the same stdout is one reply
    durable("session", "prompt", "s", "again")
    r = work("s", "--command", f"{PY} {script}", "--once", "--json", "--output", "text")
    assert lines(r.out)[0]["rows"] == 1 and rows_of(durable, "s")[-1]["content"].startswith('{"role": "assistant"')
    # rows that break a rule of §6 (the last one calls a tool): a failure with the reason
    durable("session", "prompt", "s", "bad rows")
    bad = json.dumps({"role": "assistant", "content": "", "tool_calls": [{"id": "x", "name": "f", "arguments": "{}"}]})
    r = work("s", "--command", f"echo '{bad}'", "--once", "--json", "--attempts", "1")
    line = lines(r.out)[0]
    assert line["outcome"] == "failed" and "final assistant row" in line["error"]


def test_renewal_keeps_the_lease_during_a_slow_command(durable):
    durable("session", "prompt", "s", "slow")
    r = work("s", "--command", "sleep 2.5; echo finally", "--lease", "1s", "--once", "--json")
    assert lines(r.out)[0]["outcome"] == "completed", r.err
    assert queue(durable, "s")[0]["status"] == "completed"


def test_failures_back_off_then_fail_with_the_last_stderr_line(durable, tmp_path):
    durable("session", "prompt", "s", "doomed")
    starts = tmp_path / "starts"
    cmd = f"date +%s.%N >> {starts}; echo first line >&2; echo 'the real reason' >&2; exit 3"
    r = work("s", "--command", cmd, "--attempts", "3", "--wait", "3s", "--json")
    assert r.status == 0, r.err
    out = lines(r.out)
    assert [(x["outcome"], x["attempts"]) for x in out] == [("released", 1), ("released", 2), ("failed", 3)]
    assert out[-1]["error"] == "the real reason"
    t = [float(x) for x in starts.read_text().split()]
    assert t[1] - t[0] >= 1.0 and t[2] - t[1] >= 2.0  # 1s, then 2s
    p = queue(durable, "s")[0]
    assert (p["status"], p["error"], p["attempts"]) == ("failed", "the real reason", 3)
    assert [x["role"] for x in rows_of(durable, "s")] == ["user"]  # the user turn once, nothing else
    events = [e["data"] for e in durable("session", "events", "s", "--json").json() if e["type"] == "prompt.released"]
    assert [(e["attempts"], e["delay"]) for e in events] == [(1, 1), (2, 2)]


REFUSED = [  # (CMD for one prompt, what its failure says)
    ("no-such-command-here", "not found"),
    ("printf '\\377\\376'", "not valid UTF-8"),
    ("true", "wrote nothing"),
    ("exit 5", "command exited 5"),
    ("head -c 3000 /dev/zero | tr '\\0' x", "over the limit"),
]


def test_refused_output_and_commands_that_cannot_start(durable, tmp_path):
    (tmp_path / "config.toml").write_text("[transcript]\nmax_turn_bytes = 2000\n")
    cases = tmp_path / "cases.sh"
    cases.write_text("case $DURABLE_PROMPT_ID in\n" + "".join(f"{i}) {cmd} ;;\n" for i, (cmd, _) in enumerate(REFUSED, 1)) + "esac\n")
    for i in range(len(REFUSED)):
        durable("session", "prompt", "s", f"x{i}")
    r = work("s", "--command", f". {cases}", "--wait", "0", "--json", "--attempts", "1")
    assert r.status == 0, r.err
    got = lines(r.out)
    assert [x["outcome"] for x in got] == ["failed"] * len(REFUSED)
    for line, (_, reason) in zip(got, REFUSED):
        assert reason in line["error"], line
    assert "exit 127" in r.err  # said clearly on stderr
    assert [x["role"] for x in rows_of(durable, "s")] == ["user"] * len(REFUSED)


def test_a_lost_lease_records_nothing_and_the_loop_goes_on(durable, tmp_path):
    durable("session", "prompt", "s", "one")
    durable("session", "prompt", "s", "two")
    flag = tmp_path / "started"
    cmd = f"if [ \"$DURABLE_PROMPT_ID\" = 1 ]; then touch {flag}; sleep 30; fi; echo reply $DURABLE_PROMPT_ID"
    proc = spawn("s", "--command", cmd, "--lease", "1s", "--grace", "1s", "--wait", "1s", "--json")
    wait_until(flag.exists, "the command to start", timeout=20)
    assert durable("session", "stop", "s").status == 0  # from another process: the start is gone
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    got = lines(out.decode())
    assert [(x["prompt"], x["outcome"]) for x in got] == [(1, "lost"), (2, "completed")]
    assert "lost" in err.decode()
    p = queue(durable, "s")
    assert (p[0]["status"], p[0]["error"]) == ("failed", "stopped")
    assert [x["content"] for x in rows_of(durable, "s")] == ["one", "two", "reply 2"]


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_goes_to_the_command_and_hands_the_prompt_back(durable, tmp_path, signum, status):
    durable("session", "prompt", "s", "long job")
    started, got = tmp_path / "started", tmp_path / "got"
    # the trap runs in the child shell: sh -c may not exec CMD, so the whole group gets the signal
    cmd = f"trap 'echo caught > {got}; exit 1' TERM INT; touch {started}; sleep 30 & wait"
    # --grace 1s: the background `sleep` ignores SIGINT (sh's background jobs do) and keeps the group's grace
    proc = spawn("s", "--command", cmd, "--json", "--grace", "1s")
    wait_until(started.exists, "the command to start", timeout=20)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == status, err
    assert got.exists(), (out, err)
    assert lines(out.decode())[0]["outcome"] == "released"
    p = queue(durable, "s")[0]
    assert (p["status"], p["attempts"], p["position"]) == ("pending", 0, 1)  # not an attempt, no delay


def test_grace_then_kill_and_a_signal_with_nothing_in_hand(durable, tmp_path):
    durable("session", "prompt", "s", "stubborn")
    started = tmp_path / "started"
    proc = spawn("s", "--command", f"trap '' TERM; touch {started}; sleep 30", "--grace", "1s")
    wait_until(started.exists, "the command to start", timeout=20)
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 143 and 0.9 <= time.time() - t0 < 10
    assert queue(durable, "s")[0]["status"] == "pending"
    # idle (nothing startable): a signal ends it at once
    durable("session", "dequeue", "s", "1")
    proc = spawn("s", "--command", "true")
    time.sleep(1.5)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=10)
    assert proc.returncode == 130 and time.time() - t0 < 2


def test_the_grace_is_the_whole_groups_when_sh_dies_first(durable, tmp_path):
    # `sh -c 'a; b'` does not exec: the shell dies at once on SIGTERM while the command it runs cleans up; the
    # command keeps its grace (it was SIGKILLed at once), and nothing of the group outlives it.
    durable("session", "prompt", "s", "job")
    started, cleaned = tmp_path / "started", tmp_path / "cleaned"
    script = tmp_path / "agent.py"
    script.write_text(
        "import signal, sys, time\n"
        f"def h(*a):\n    time.sleep(0.4); open({str(cleaned)!r}, 'w').write('ok'); sys.exit(1)\n"
        "signal.signal(signal.SIGTERM, h)\n"
        f"open({str(started)!r}, 'w').close()\n"
        "time.sleep(30)\n")
    proc = spawn("s", "--command", f"cat > /dev/null; {PY} {script}; echo never", "--grace", "5s", "--json")
    wait_until(started.exists, "the command to start", timeout=20)
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert cleaned.exists(), "the command was killed before its grace was over"
    assert time.time() - t0 < 4  # and `work` did not wait the whole grace once the group was gone
    assert lines(out.decode())[0]["outcome"] == "released"
    assert queue(durable, "s")[0]["status"] == "pending"


def test_a_daemon_holding_stdout_does_not_hold_the_turn(durable, tmp_path):
    # CMD leaves a daemon in a session of its own (out of reach of the group kill) that keeps stdout and
    # stderr open: the turn is what CMD wrote, recorded at once, not when the daemon ends
    for text in ("one", "two"):
        durable("session", "prompt", "s", text)
    pids = tmp_path / "pids"
    cmd = f"setsid sh -c 'echo $$ >> {pids}; sleep 30; echo late' & sleep 0.2; echo reply"
    try:
        t0 = time.time()
        r = work("s", "--command", cmd, "--wait", "0", "--json", timeout=20)
        assert r.status == 0, r.err
        assert time.time() - t0 < 8
        assert [x["outcome"] for x in lines(r.out)] == ["completed", "completed"]
        assert [x["content"] for x in rows_of(durable, "s")] == ["one", "reply", "two", "reply"]
    finally:
        for pid in pids.read_text().split() if pids.exists() else ():
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except OSError:
                pass


@pytest.mark.local_only("holds an object's lock file")
def test_a_signal_while_the_session_is_busy_ends_work_at_once(durable):
    # no prompt in hand: SIGTERM ends `work` at once, not after the lock timeout another process's lock costs
    durable("session", "create", "s")
    holder = hold_lock("s", 4)
    try:
        proc = spawn("s", "--command", "true")
        time.sleep(1)
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        assert proc.returncode == 143 and time.time() - t0 < 1.5
    finally:
        holder.kill()
        holder.wait()


def test_a_signal_the_cli_took_before_work_handled_signals_is_not_lost():
    # a SIGTERM during work's start-up, deferred by the CLI's handler while a commit was under way (or raised and
    # swallowed), is work's own once it takes signals: without it work would wait for prompts forever
    from durable_cli import guard
    from durable_cli.cli import signals
    from durable_cli.stop import Stop

    saved = guard.signal_before
    guard.signal_before = signals.taken_before
    signals.D.pending = 143
    stop = Stop()
    try:
        stop.install()
        assert stop.status == 143 and signals.D.pending is None
    finally:
        stop.restore()
        signals.D.pending = None
        guard.signal_before = saved


@pytest.mark.local_only("holds an object's lock file")
def test_a_renewal_waiting_on_a_busy_session_does_not_delay_the_grace(durable, tmp_path):
    durable("session", "create", "s")
    durable("session", "prompt", "s", "stubborn")
    pid = tmp_path / "pid"
    proc = spawn("s", "--command", f"trap '' TERM; echo $$ > {pid}; sleep 30", "--grace", "1s", "--lease", "6s")
    wait_until(lambda: pid.exists() and pid.read_text().strip(), "the command to start", timeout=20)
    cmd = int(pid.read_text())
    holder = hold_lock("s", 4.5)
    try:
        time.sleep(2.2)  # a renewal (every 2s) is due while the lock is held
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        while time.time() - t0 < 10:
            try:
                os.kill(cmd, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        assert time.time() - t0 < 1.8  # killed after its grace, not when the other process let go
    finally:
        holder.wait(timeout=10)
        proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert queue(durable, "s")[0]["status"] == "pending"


def test_a_reply_over_the_row_limit_is_refused_in_work_s_own_words(durable):
    durable("session", "prompt", "s", "say a lot")
    r = work("s", "--command", f"{PY} -c \"print('a' * 3_000_000)\"", "--once", "--json", "--attempts", "1")
    assert r.status == 0, r.err
    line = lines(r.out)[0]
    assert line["outcome"] == "failed" and "over the limit" in line["error"] and "--reply" not in line["error"]
    assert [x["role"] for x in rows_of(durable, "s")] == ["user"]


def test_two_workers_never_work_a_prompt_twice(durable, tmp_path):
    for i in range(6):
        assert durable("session", "prompt", "s", f"p{i}").status == 0
    log = tmp_path / "log"
    cmd = f"echo $DURABLE_PROMPT_ID >> {log}; sleep 0.2; echo done $DURABLE_PROMPT_ID"
    procs = [spawn("s", "--command", cmd, "--wait", "2s", "--json") for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert sorted(p.returncode for p in procs) in ([0, 0], [0, 9]), [(p.returncode, o[1]) for p, o in zip(procs, outs)]
    handled = [x for out, _ in outs for x in lines(out.decode())]
    assert sorted(x["prompt"] for x in handled) == list(range(1, 7))
    assert all(x["outcome"] == "completed" for x in handled)
    assert sorted(int(x) for x in log.read_text().split()) == list(range(1, 7))
    replies = [x["content"] for x in rows_of(durable, "s") if x["role"] == "assistant"]
    assert sorted(replies) == sorted(f"done {i}" for i in range(1, 7))


def test_all_takes_the_oldest_pending_prompt_across_sessions(durable):
    durable("session", "create", "idle")
    durable("session", "prompt", "b", "first")
    durable("session", "prompt", "a", "second")
    durable("session", "prompt", "c", "third")
    durable("session", "prompt", "archived-one", "x")
    durable("session", "dequeue", "archived-one", "1")
    durable("session", "archive", "archived-one")
    durable("--as", "bob", "session", "prompt", "bobs", "not mine")
    r = work("--all", "--command", "cat >/dev/null; echo \"$DURABLE_SESSION\"", "--wait", "0", "--json")
    assert r.status == 0, r.err
    assert [(x["name"], x["prompt"]) for x in lines(r.out)] == [("b", 1), ("a", 1), ("c", 1)]
    assert durable("--as", "bob", "session", "queue", "bobs", "--json").json()[0]["status"] == "pending"


@pytest.mark.local_only("the Worker's own alarm retries the lease remotely; locally --all fires it through index.db")
@pytest.mark.local_only("corrupts an object file and holds an object's lock file")
def test_all_goes_on_past_a_corrupt_session_and_a_busy_one(durable, tmp_path):
    for name in ("bad", "held", "fine"):
        durable("session", "create", name)
        durable("session", "prompt", name, f"for {name}")  # bad's is the oldest
        time.sleep(0.02)
    bad = durable("path", "bad").out.strip()
    with open(bad, "r+b") as f:
        f.write(b"not a database" * 100)
    holder = hold_lock("held", 1.5)
    try:
        t0 = time.time()
        r = work("--all", "--command", "echo done", "--wait", "2s", "--json", timeout=30)
    finally:
        holder.wait(timeout=10)
    assert r.status == 0, r.err
    assert sorted((x["name"], x["outcome"]) for x in lines(r.out)) == [("fine", "completed"), ("held", "completed")]
    assert r.err.count('"bad" is corrupt') == 1  # said once, not at every poll
    assert time.time() - t0 < 10  # the busy one did not cost a lock timeout per poll


def test_all_fires_due_alarms_so_an_expired_lease_is_retried(durable, tmp_path):
    (tmp_path / "config.toml").write_text('[queue]\non_lease_expiry = "retry"\n')
    durable("session", "prompt", "s", "x")
    assert durable("session", "next", "s", "--lease", "1s").status == 0  # a worker that crashed
    time.sleep(1.1)
    r = work("--all", "--command", "echo ok", "--once", "--json", "--wait", "5s")
    assert lines(r.out)[0]["attempts"] == 2 and lines(r.out)[0]["outcome"] == "completed"


@pytest.mark.parametrize("args", [
    ["s", "--command", "true", "--format", "xml"],
    ["s", "--command", "true", "--output", "json"],
    ["s", "--command", "true", "--attempts", "0"],
    ["s", "--command", "true", "--attempts", "-3"],
    ["s", "--command", "true", "--attempts", "99999999999"],
    ["s", "--command", "true", "--grace", "0"],
    ["s", "--command", "true", "--grace", "-1s"],
    ["s", "--command", "true", "--grace", "400d"],
    ["s", "--command", "true", "--lease", "0"],
    ["s", "--command", "true", "--lease", "99999999d"],
    ["s", "--command", "true", "--context", "-1"],
    ["s"],
    ["--command", "true"],
    ["s", "--all", "--command", "true"],
])
def test_bad_input_is_exit_2(durable, args):
    durable("session", "prompt", "s", "x")
    r = durable("work", *args)
    assert r.status == 2, (args, r.err)
    assert queue(durable, "s")[0]["status"] == "pending"


def test_missing_archived_and_cancelled(durable):
    assert durable("work", "nope", "--command", "true").status == 3
    durable("session", "create", "a")
    durable("session", "archive", "a")
    assert durable("work", "a", "--command", "true").status == 4
    durable("session", "create", "c")
    durable("session", "cancel", "c")
    assert durable("work", "c", "--command", "true").status == 4


@pytest.mark.soak
def test_soak_workers_on_all_sessions_never_overlap_or_record_twice(durable, tmp_path):
    """Three `work --all` processes over 4 sessions x 8 prompts; CMD fails a third of the time and is
    sometimes slower than the lease (renewed): no prompt runs twice at once, none is recorded twice."""
    for s in range(4):
        for i in range(8):
            assert durable("session", "prompt", f"s{s}", f"p{s}-{i}").status == 0
    log = tmp_path / "log"
    cmd = (f"echo \"start $DURABLE_SESSION $DURABLE_PROMPT_ID $(date +%s%N)\" >> {log};"
           " r=$(od -An -N1 -tu1 /dev/urandom | tr -d ' '); [ $((r % 5)) = 0 ] && sleep 1.3;"
           f" echo \"end $DURABLE_SESSION $DURABLE_PROMPT_ID $(date +%s%N)\" >> {log};"
           " [ $((r % 3)) = 0 ] && { echo flaky >&2; exit 1; }; echo \"reply $DURABLE_SESSION $DURABLE_PROMPT_ID\"")
    procs = [spawn("--all", "--command", cmd, "--lease", "1s", "--attempts", "6", "--wait", "4s", "--json") for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode in (0, 9) for p in procs), [o[1][-500:] for o in outs]
    spans = {}
    for line in log.read_text().splitlines():
        kind, session, prompt, t = line.split()
        spans.setdefault((session, prompt), []).append((kind, int(t)))
    for key, marks in spans.items():
        marks.sort(key=lambda m: m[1])
        depth = 0
        for kind, _ in marks:
            depth += 1 if kind == "start" else -1
            assert depth in (0, 1), (key, marks)  # never two runs of one prompt at once
    for s in range(4):
        replies = [r["content"] for r in rows_of(durable, f"s{s}") if r["role"] == "assistant"]
        assert len(replies) == len(set(replies))
        done = [p for p in queue(durable, f"s{s}") if p["status"] == "completed"]
        assert len(replies) == len(done)
        assert all(p["status"] in ("completed", "failed") for p in queue(durable, f"s{s}"))


def test_a_tenants_session_gets_durable_tenant_and_all_with_tenant(durable, tmp_path):
    assert durable("--tenant", "acme", "session", "prompt", "incident", "page the on-call").status == 0
    durable("session", "prompt", "mine", "not the tenant's")
    cmd = "cat >/dev/null; durable session show \"$DURABLE_SESSION\" --json >/dev/null && echo \"tenant=$DURABLE_TENANT\""
    r = work("--all", "--command", cmd, "--wait", "0", "--json", env={"DURABLE_TENANT": "acme"})
    assert r.status == 0, r.err
    assert [(x["name"], x["outcome"]) for x in lines(r.out)] == [("incident", "completed")]
    assert queue(durable, "mine")[0]["status"] == "pending"  # not among the tenant's sessions: left alone
    got = durable("--tenant", "acme", "transcript", "show", "incident", "--json").json()
    assert got[-1]["content"] == "tenant=acme"


def _work_under_strace(inject, *args):
    return subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"inject={inject}", PY, "-m", "durable_cli", "work", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.local_only("SIGTERM injected by strace at the object's own fdatasyncs, which happen in the Worker remotely")
def test_a_signal_during_the_finish_commit_waits_for_it_and_exits_0(durable, tmp_path):
    """docs/reference/output.md §4, §5.1 (issue 33 item 3): SIGTERM at each sync of `work --once` — the take's commit, the finish's,
    what follows. Exit 143 means nothing of the prompt was recorded (handed back, not an attempt); a finish
    that was recorded is exit 0, its line says `completed`. The loop, too, exits 0 after a recorded finish
    and takes no further prompt."""
    from tests.cli.tools import require

    require("strace")
    durable("session", "prompt", "counted", "hello")
    trace = tmp_path / "trace"
    r = subprocess.run(["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=fdatasync,fsync", PY, "-m", "durable_cli", "work",
                        "counted", "--once", "--command", "echo reply"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    calls = trace.read_text().splitlines()
    counts = {c: sum(f"{c}(" in line for line in calls) for c in ("fdatasync", "fsync")}
    assert sum(counts.values()) >= 4, counts
    outcomes, first_finish = {}, None
    for call, n in counts.items():
        for when in range(1, n + 1):
            name = f"{call}-{when}"
            durable("session", "prompt", name, "hello")
            r = _work_under_strace(f"{call}:signal=TERM:when={when}", name, "--once", "--json", "--command", f"echo reply-{name}")
            assert "Traceback" not in r.stderr, r.stderr
            p = queue(durable, name)[0]
            stored = f"reply-{name}" in [x["content"] for x in rows_of(durable, name)]
            outcomes[name] = r.returncode
            if r.returncode == 0:
                assert lines(r.stdout)[-1]["outcome"] == "completed", (name, r.stdout)
                assert p["status"] == "completed" and stored, (name, p)
                first_finish = first_finish or (call, when)
            else:
                assert r.returncode == 143, (name, r.returncode, r.stdout, r.stderr)
                assert not stored and (p["status"], p["attempts"]) == ("pending", 0), (name, p)
                assert all(x["outcome"] == "released" for x in lines(r.stdout)), (name, r.stdout)
    assert first_finish is not None, outcomes  # some sync belongs to the finish's commit
    # the loop: a signal during the first prompt's finish commit; the finish stands, the second prompt is not taken
    durable("session", "prompt", "loop", "one")
    durable("session", "prompt", "loop", "two")
    call, when = first_finish
    r = _work_under_strace(f"{call}:signal=TERM:when={when}", "loop", "--json", "--command", "echo done")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert [x["outcome"] for x in lines(r.stdout)] == ["completed"]
    assert [p["status"] for p in queue(durable, "loop")] == ["completed", "pending"]
