"""docs/reference/sessions.md §5: `session release`, `--attempt N`, attempts, queue order, lease-expiry retry, and `finish --rows/--meta`,
on both backends."""

import json
import time

import pytest

pytestmark = pytest.mark.both_backends


def j(result):
    assert result.status == 0, result.err
    return json.loads(result.out)


def take(durable, name, *extra):
    return j(durable("session", "next", name, "--json", *extra))


def test_release_puts_the_prompt_first_and_keeps_attempts(durable):
    for text in ("one", "two", "three"):
        durable("session", "prompt", "s", text)
    p = take(durable, "s")
    assert (p["id"], p["attempts"]) == (1, 1)
    r = j(durable("session", "release", "s", "1", "--attempt", "1", "--json"))
    assert (r["status"], r["position"], r["attempts"], r["lease_expires_at"]) == ("pending", 1, 1, None)
    queue = j(durable("session", "queue", "s", "--pending", "--json"))
    assert [(q["id"], q["position"]) for q in queue] == [(1, 1), (2, 2), (3, 3)]
    ev = j(durable("session", "events", "s", "--json"))[-1]
    assert ev["type"] == "prompt.released" and ev["data"] == {"prompt_id": 1, "attempts": 1, "delay": 0}
    # taken again: attempts 2, and the user turn (still the newest row) is not appended twice
    again = take(durable, "s")
    assert (again["id"], again["attempts"], again["turn_seq"]) == (1, 2, p["turn_seq"])
    assert len(j(durable("transcript", "show", "s", "--json"))) == 1
    # --not-an-attempt hands the start back too
    r = j(durable("session", "release", "s", "1", "--not-an-attempt", "--json"))
    assert r["attempts"] == 1
    # a second released prompt stands behind the first one handed back, ahead of the rest
    take(durable, "s")
    durable("session", "finish", "s", "1", "--reply", "done")
    take(durable, "s")  # prompt 2; then "three" is still pending
    j(durable("session", "release", "s", "2", "--json"))
    assert [q["id"] for q in j(durable("session", "queue", "s", "--pending", "--json"))] == [2, 3]


def test_a_released_prompt_whose_turn_is_no_longer_newest_gets_a_new_user_turn(durable):
    durable("session", "prompt", "s", "question")
    p = take(durable, "s")
    durable("transcript", "append", "s", "--role", "assistant", "half an answer")
    durable("session", "release", "s", "1")
    again = take(durable, "s")
    assert again["turn_seq"] == 3 and again["turn_seq"] != p["turn_seq"]
    rows = j(durable("transcript", "show", "s", "--json"))
    assert [(r["role"], r["content"]) for r in rows] == [("user", "question"), ("assistant", "half an answer"), ("user", "question")]


def test_release_delay_holds_the_prompt_back_and_later_ones_start(durable):
    durable("session", "prompt", "s", "first")
    durable("session", "prompt", "s", "second")
    take(durable, "s")
    r = j(durable("session", "release", "s", "1", "--delay", "1s", "--json"))
    assert r["position"] == 1  # held back, still counted
    assert take(durable, "s")["id"] == 2
    durable("session", "finish", "s", "2", "--reply", "ok")
    assert durable("session", "next", "s").status == 9  # only a held-back prompt: nothing startable
    time.sleep(1.05)
    assert take(durable, "s")["id"] == 1


def test_attempt_names_the_start_and_refuses_another(durable):
    durable("session", "prompt", "s", "x")
    take(durable, "s")
    for cmd in (["renew", "s", "1", "--attempt", "2"], ["finish", "s", "1", "--reply", "late", "--attempt", "2"],
                ["release", "s", "1", "--attempt", "2"]):
        result = durable("session", *cmd)
        assert result.status == 4, (cmd, result.err)
        assert "start 1, not 2" in result.err
    for bad in ("0", "-1"):
        assert durable("session", "renew", "s", "1", "--attempt", bad).status == 2
    assert durable("session", "release", "s", "1", "--delay", "5").status == 2
    assert j(durable("session", "show", "s", "--json"))["queue"] == {"pending": 0, "processing": 1}
    assert len(j(durable("transcript", "show", "s", "--json"))) == 1  # nothing of the late finish
    assert j(durable("session", "renew", "s", "1", "--attempt", "1", "--json"))["status"] == "processing"
    assert durable("session", "release", "s", "9").status == 3


def test_start_numbers_never_go_down_so_a_handed_back_start_cannot_record(durable):
    """docs/reference/sessions.md §5 (issue 33 item 4): `release --not-an-attempt` lowers attempts, never the start number; the hung
    worker's start 1, handed back by an operator, cannot finish over the live worker's start 2."""
    durable("session", "prompt", "s", "question")
    p = take(durable, "s")
    assert (p["attempts"], p["start"]) == (1, 1)
    r = j(durable("session", "release", "s", "1", "--not-an-attempt", "--json"))  # the operator hands it back
    assert (r["status"], r["attempts"], r["start"]) == ("pending", 0, 1)
    again = take(durable, "s")
    assert (again["attempts"], again["start"]) == (1, 2)
    # the hung worker wakes up with its start 1: refused, nothing recorded
    late = durable("session", "finish", "s", "1", "--reply", "stale", "--attempt", "1")
    assert late.status == 4 and "start 2, not 1" in late.err, late.err
    assert durable("session", "renew", "s", "1", "--attempt", "1").status == 4
    assert durable("session", "release", "s", "1", "--attempt", "1").status == 4
    done = j(durable("session", "finish", "s", "1", "--reply", "fresh", "--attempt", "2", "--json"))
    assert (done["status"], done["attempts"], done["start"]) == ("completed", 1, 2)
    assert [x["content"] for x in j(durable("transcript", "show", "s", "--json"))] == ["question", "fresh"]
    # a retry on lease expiry and a plain release move it on too; a prompt never started is start 0
    durable("session", "prompt", "s", "next one")
    assert j(durable("session", "queue", "s", "--pending", "--json"))[0]["start"] == 0
    take(durable, "s")
    j(durable("session", "release", "s", "2", "--json"))
    assert (take(durable, "s")["start"], j(durable("session", "queue", "s", "--json"))[1]["attempts"]) == (2, 2)


@pytest.mark.local_only("rewinds the object file's schema with sqlite3")
def test_a_prompt_started_before_start_numbers_keeps_its_attempts_as_its_start(durable):
    import sqlite3

    from durable_cli.store import schema

    durable("session", "prompt", "s", "x")
    take(durable, "s")
    path = durable("path", "s").out.strip()
    from tests.helpers import downgrade_to

    db = sqlite3.connect(path)
    before = [name for name, _ in schema.MIGRATIONS].index("prompt start numbers")  # what later steps add goes too
    downgrade_to(db, "".join(sql for _, sql in schema.MIGRATIONS[:before]), before)
    db.close()
    p = j(durable("session", "queue", "s", "--json"))[0]
    assert (p["attempts"], p["start"]) == (1, 1)  # its holder was told 1
    assert durable("session", "finish", "s", "1", "--reply", "ok", "--attempt", "1").status == 0


def test_work_names_its_start_by_the_start_number(durable, tmp_path):
    """`work` passes the start number as --attempt and DURABLE_ATTEMPT, after a start was handed back."""
    import subprocess
    import sys

    durable("session", "prompt", "s", "question")
    take(durable, "s")
    j(durable("session", "release", "s", "1", "--not-an-attempt", "--json"))
    seen = tmp_path / "seen"
    r = subprocess.run([sys.executable, "-m", "durable_cli", "work", "s", "--once", "--json", "--command",
                        f'echo "$DURABLE_ATTEMPT" > {seen}; echo answer'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outcome"] == "completed"
    assert seen.read_text().strip() == "2"
    p = j(durable("session", "queue", "s", "--json"))[0]
    assert (p["status"], p["attempts"], p["start"]) == ("completed", 1, 2)


def test_lease_expiry_retry_goes_back_to_the_head_until_max_attempts(durable, tmp_path, monkeypatch):
    (tmp_path / "config.toml").write_text('[queue]\non_lease_expiry = "retry"\nmax_attempts = 2\n')
    durable("session", "prompt", "s", "a")
    durable("session", "prompt", "s", "b")
    take(durable, "s", "--lease", "1s")
    time.sleep(1.1)
    p = j(durable("session", "queue", "s", "--json"))[0]
    assert (p["status"], p["attempts"], p["position"]) == ("pending", 1, 1)
    ev = [e for e in j(durable("session", "events", "s", "--json")) if e["type"] == "prompt.lease_expired"]
    assert ev[-1]["data"] == {"prompt_id": 1, "retry": True, "attempts": 1}
    assert take(durable, "s", "--lease", "1s")["attempts"] == 2
    time.sleep(1.1)
    p = j(durable("session", "queue", "s", "--json"))[0]
    assert (p["status"], p["error"], p["attempts"]) == ("failed", "timed out", 2)
    # a finish after the lease was lost is exit 4 and records nothing
    assert durable("session", "finish", "s", "1", "--reply", "late", "--attempt", "2").status == 4


def test_the_policy_is_the_one_of_the_start(durable, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[queue]\non_lease_expiry = "retry"\n')
    durable("session", "prompt", "s", "a")
    take(durable, "s", "--lease", "1s")
    config.write_text('[queue]\non_lease_expiry = "fail"\n')  # later: the start's policy holds
    time.sleep(1.1)
    assert j(durable("session", "queue", "s", "--json"))[0]["status"] == "pending"


@pytest.mark.parametrize("text", ['[queue]\non_lease_expiry = "sometimes"\n', "[queue]\nmax_attempts = 0\n"])
def test_bad_policy_is_exit_2(durable, tmp_path, text):
    (tmp_path / "config.toml").write_text(text)
    durable("session", "prompt", "s", "a")
    assert durable("session", "next", "s").status == 2


ROWS = "\n".join(json.dumps(r) for r in [
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ls", "arguments": "{}"}]},
    {"role": "tool", "content": "a.txt", "call_id": "c1", "name": "ls"},
    {"role": "assistant", "content": "there is a.txt"},
]) + "\n"


def test_finish_rows_and_meta_in_one_transaction(durable, tmp_path):
    durable("session", "prompt", "s", "list files")
    take(durable, "s")
    meta = '{"model": "m1", "usage": {"input_tokens": 5, "output_tokens": 7}}'
    done = j(durable("session", "finish", "s", "1", "--rows", "-", "--meta", meta, "--attempt", "1", "--json", input=ROWS))
    assert done["status"] == "completed"
    rows = j(durable("transcript", "show", "s", "--json"))
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[-1]["meta"]["model"] == "m1" and rows[1]["tool_calls"][0]["name"] == "ls"
    # rows then the reply; --meta on the reply
    durable("session", "prompt", "s", "again")
    take(durable, "s")
    f = tmp_path / "rows.jsonl"
    f.write_text(ROWS.splitlines()[0] + "\n" + ROWS.splitlines()[1] + "\n")
    done = j(durable("session", "finish", "s", "2", "--rows", str(f), "--reply", "final", "--meta", '{"model": "m2"}', "--json"))
    rows = j(durable("transcript", "show", "s", "--json"))
    assert [r["role"] for r in rows[-3:]] == ["assistant", "tool", "assistant"] and rows[-1]["meta"] == {"model": "m2"}


@pytest.mark.parametrize("args, stdin", [
    (["--rows", "-", "--reply", "-"], ROWS),
    (["--meta", '{"model": "m"}'], None),
    (["--meta", "[1]", "--reply", "x"], None),
    (["--meta", '{"usage": {"input_tokens": -1}}', "--reply", "x"], None),
    (["--rows", "-"], json.dumps({"role": "user", "content": "no"}) + "\n"),
    (["--rows", "-"], ROWS.splitlines()[0] + "\n"),  # ends with tool calls, no reply
    (["--rows", "-"], "not json\n"),
    (["--rows", "-", "--meta", '{"model": "m"}'], json.dumps({"role": "assistant", "content": "x", "meta": {"a": 1}}) + "\n"),
])
def test_bad_finish_is_exit_2_and_changes_nothing(durable, args, stdin):
    durable("session", "prompt", "s", "q")
    take(durable, "s")
    result = durable("session", "finish", "s", "1", *args, input=stdin)
    assert result.status == 2, result.err
    assert j(durable("session", "queue", "s", "--json"))[0]["status"] == "processing"
    assert len(j(durable("transcript", "show", "s", "--json"))) == 1


def test_failed_finish_records_the_partial_turn(durable):
    durable("session", "prompt", "s", "q")
    take(durable, "s")
    partial = ROWS.splitlines()[0] + "\n"
    done = j(durable("session", "finish", "s", "1", "--rows", "-", "--error", "tool crashed", "--json", input=partial))
    assert (done["status"], done["error"]) == ("failed", "tool crashed")
    assert len(j(durable("transcript", "show", "s", "--json"))) == 2
