"""The step journal's rules on the file backend, as the Worker's (worker/src/rules/steps.test.ts): a commit over 1 MiB not
marked output_too_large is exit 2 and changes nothing (docs/reference/sessions.md §5.2 "Limits"); `steps` answers in pages."""

import base64

import pytest

from durable_cli import DurableError, Store
from durable_cli.core import steps as journal

TOKEN = "a" * 32


def started(store):
    store.create_session("s")
    with store.open("s") as s:
        s.prompt("charge the card")
        s.next_prompt(lease_seconds=3600)


def test_a_commit_over_one_mib_not_marked_is_exit_2_and_changes_nothing():
    store = Store()
    started(store)
    over = journal.MAX_STDOUT + 1
    with store.open("s") as s:
        assert s.step_begin(key="big", token=TOKEN)["action"] == "run"
        with pytest.raises(DurableError) as e:
            s.step_commit(prompt_id=1, key="big", token=TOKEN, start=1, exit_status=0, stdout_bytes=over,
                          stdout=base64.b64encode(b"x" * over).decode())
        assert e.value.exit_status == 2 and "1048577 bytes, more than the 1 MiB a step keeps" in e.value.message
        assert s.steps()["rows"][0]["status"] == "running"


def test_steps_answer_in_pages(monkeypatch):
    monkeypatch.setattr(journal, "PAGE_ROWS", 2)
    store = Store()
    started(store)
    for key in "abcde":
        store.step("s", key, lambda key=key: key, prompt=1)
    with store.open("s") as s:
        first = s.steps()
        assert [r["key"] for r in first["rows"]] == ["a", "b"] and first["next"] == [1, 2]
    assert [r["key"] for r in store.steps("s")] == list("abcde")
