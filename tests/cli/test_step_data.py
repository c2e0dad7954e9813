"""docs/reference/sessions.md §5.2 "Kept with the prompt, erased with it": export → delete → import restores `session steps --json`
exactly; prune deletes a finished prompt's steps, redact erases their stdout (a later call is exit 4), delete leaves
no byte of a step's stdout under the data directory; archived sessions list their steps."""

import datetime
import json
import os

import pytest
from freezegun import freeze_time

from durable_cli import StepFailed, Store
from tests.waiting import wait_until

SECRET = "card-4242-4242-out"


def journaled(durable, name="s"):
    durable("session", "create", name)
    durable("session", "prompt", name, "charge the card")
    durable("session", "next", name)
    store = Store()
    store.step(name, "charge", lambda: SECRET + "\n", prompt=1)

    def declined():
        raise StepFailed(3, b"\xffnot-utf8")

    store.step(name, "refund", declined, prompt=1)
    return store


def steps(durable, name="s"):
    r = durable("session", "steps", name, "--json")
    assert r.status == 0, r.err
    return r.json()


def files_hold(home, needle: bytes) -> list:
    found = []
    for root, _dirs, files in os.walk(home):
        for f in files:
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                if needle in fh.read():
                    found.append(path)
    return found


@pytest.mark.both_backends
@pytest.mark.cross_object
def test_export_delete_import_restores_the_journal(durable, tmp_path):
    journaled(durable)
    before = steps(durable)
    assert [s["key"] for s in before] == ["charge", "refund"]
    assert before[1]["stdout"] is None and before[1]["stdout_base64"] == "/25vdC11dGY4" and before[1]["exit_status"] == 3
    r = durable("export", "s")
    assert r.status == 0, r.err
    record = json.loads(r.out)
    assert record["version"] >= 7 and [s["key"] for s in record["steps"]] == ["charge", "refund"]
    (tmp_path / "x.jsonl").write_text(r.out)
    assert durable("delete", "s", "--yes").status == 0
    assert durable("import", str(tmp_path / "x.jsonl")).status == 0
    assert steps(durable) == before


def test_import_refuses_a_step_of_a_missing_prompt(durable, tmp_path):
    journaled(durable)
    record = json.loads(durable("export", "s").out)
    record["steps"][0]["prompt_id"] = 9
    (tmp_path / "x.jsonl").write_text(json.dumps(record) + "\n")
    durable("delete", "s", "--yes")
    r = durable("import", str(tmp_path / "x.jsonl"))
    assert r.status == 2 and ".prompt_id names prompt 9" in r.err


@pytest.mark.both_backends
def test_redacting_the_user_turn_erases_step_output(durable, home):
    journaled(durable)
    seq = durable("session", "queue", "s", "--json").json()[0]["turn_seq"]
    assert durable("transcript", "redact", "s", str(seq)).status == 0
    charge, refund = steps(durable)
    assert charge["redacted"] and charge["stdout"] is None and charge["status"] == "done" and refund["exit_status"] == 3
    assert files_hold(home, SECRET.encode()) == []
    r = durable("step", "s", "charge", "--", "echo", "again")
    assert r.status == 4 and "was redacted" in r.err and r.out == ""


def test_prune_deletes_the_steps_of_finished_prompts_only(durable, home):
    journaled(durable)
    assert durable("session", "finish", "s", "1", "--reply", "charged").status == 0
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3)
    with freeze_time(later):
        durable("session", "prompt", "s", "second")
        durable("session", "next", "s", "--lease", "30d")  # still processing at the prune
        Store().step("s", "ship", lambda: "shipped", prompt=2)
    with freeze_time(later + datetime.timedelta(days=3)):
        durable("transcript", "prune", "s", "--older-than", "2d")
    assert [(s["prompt"], s["key"]) for s in steps(durable)] == [(2, "ship")]
    assert files_hold(home, SECRET.encode()) == []


@pytest.mark.both_backends
def test_prune_now_keeps_only_the_processing_prompts_steps(durable):
    """Without a frozen clock (the Worker's is its own): prune --older-than 1s deletes the finished prompt's steps
    with its text, and leaves the processing prompt's."""
    store = journaled(durable)
    assert durable("session", "finish", "s", "1", "--reply", "charged").status == 0
    durable("session", "prompt", "s", "second")
    durable("session", "next", "s")
    store.step("s", "ship", lambda: "shipped", prompt=2)
    wait_until(lambda: durable("transcript", "prune", "s", "--older-than", "1s", "--dry-run", "--json").json()["deleted"] >= 2,
               "the finished prompt's turns to be a second old", step=0.1)
    assert durable("transcript", "prune", "s", "--older-than", "1s").status == 0
    assert [(s["prompt"], s["key"], s["stdout"]) for s in steps(durable)] == [(2, "ship", "shipped")]


@pytest.mark.both_backends
@pytest.mark.cross_object
def test_delete_purge_and_forget_erase_the_journal(durable):
    """The steps go with their object, on either backend: a new object of the same name holds none of them."""
    journaled(durable, "t")  # first: a second idle by the time purge comes
    journaled(durable)
    assert durable("delete", "s", "--yes").status == 0
    assert durable("session", "steps", "s").status == 3
    wait_until(lambda: durable("purge", "--older-than", "1s", "--yes").status == 0
               and durable("session", "steps", "t").status == 3, "purge to take t, a second idle", step=0.2)
    durable("session", "create", "s")
    assert steps(durable) == []
    journaled(durable, "u")
    assert durable("forget", "alice", "--yes").status == 0
    assert durable("session", "steps", "u").status == 3
    durable("session", "create", "u")
    assert steps(durable, "u") == []


def test_delete_leaves_no_step_output(durable, home):
    journaled(durable)
    assert files_hold(home, SECRET.encode())  # it was there
    assert durable("delete", "s", "--yes").status == 0
    assert files_hold(home, SECRET.encode()) == []


@pytest.mark.both_backends
def test_steps_listing(durable):
    journaled(durable)
    durable("session", "prompt", "s", "two")
    assert durable("session", "steps", "s", "--prompt", "2", "--json").json() == []
    assert durable("session", "steps", "s", "--prompt", "3").status == 3
    plain = durable("session", "steps", "s").out.splitlines()
    assert plain[0].split("\t")[:5] == ["1", "charge", "1", steps(durable)[0]["step_id"], "done"]
    assert SECRET not in durable("session", "steps", "s").out  # stdout fields are read with --json
    lines = durable("session", "steps", "s", "--jsonl").lines()
    assert [x["key"] for x in lines] == ["charge", "refund"]


@pytest.mark.parametrize("key", ["", "-x", " x", "x\n", "k" * 201])
def test_library_bad_key(durable, key):
    durable("session", "create", "s")
    durable("session", "prompt", "s", "p")
    durable("session", "next", "s")
    from durable_cli import DurableError

    with pytest.raises(DurableError) as e:
        Store().step("s", key, lambda: "x", prompt=1)
    assert e.value.exit_status == 2
    assert steps(durable) == []
