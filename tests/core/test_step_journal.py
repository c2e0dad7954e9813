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


def shown_session(store):
    with store.open("s") as s:
        return s.show()


def test_a_renewal_and_an_abandonment_move_updated_at_not_last_active_at():
    """docs/reference/storage.md §3: a step's reservation, renewal or commit moves updated_at; last_active_at moves only on
    a commit of its result."""
    from freezegun import freeze_time

    store = Store()
    with freeze_time("2026-12-05T10:00:00Z") as clock:
        started(store)
        with store.open("s") as s:
            assert s.step_begin(key="k", token=TOKEN)["action"] == "run"
        active = shown_session(store)["last_active_at"]
        for what in ("renew", "abandon"):
            clock.tick(10)
            with store.open("s") as s:
                if what == "renew":
                    s.step_renew(prompt_id=1, key="k", token=TOKEN, start=1)
                else:
                    s.step_abandon(prompt_id=1, key="k", token=TOKEN)
            shown = shown_session(store)
            assert shown["updated_at"] == {"renew": "2026-12-05T10:00:10.000Z", "abandon": "2026-12-05T10:00:20.000Z"}[what]
            assert shown["last_active_at"] == active, what
