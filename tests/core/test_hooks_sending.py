"""docs/reference/sessions.md §5.3 and reference/library.md §9: who sends the deliveries a commit wrote. The library sends
those of its block's commits when the block ends, after the lock is released, within the 2 s bound
(`store.open(..., deliver=False)` leaves them to a later wake or `sweep`), and keeps no process-wide list (`durable
mcp` sending off the request: tests/integrations/test_mcp.py). Checked with a real local receiver and the Standard
Webhooks reference library."""

import sys

import pytest

from durable_cli import Store
from tests.conftest import run_inprocess as durable

standardwebhooks = pytest.importorskip("standardwebhooks")
from tests.core.test_hooks import verified  # noqa: E402 (after the skip)
from tests.helpers import Receiver  # noqa: E402


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _finish_in_a_block(store, name, **open_args):
    with store.open(name, **open_args) as s:
        taken = s.next_prompt(lease_seconds=60)
        s.finish(taken["id"], reply="done in a block")


def test_the_library_sends_its_blocks_deliveries_when_the_block_ends(home, receiver):
    durable("session", "create", "s")
    secret = durable("session", "hook", "s", "--url", receiver.url, "--include-reply", "--json").json()["secret"]
    store = Store()
    lock_free = []
    receiver.on_request = lambda: lock_free.append(_lock_is_free(store, "s"))
    durable("session", "prompt", "s", "one")
    _finish_in_a_block(store, "s")
    # sent before the block's `with` returned, and with the object's lock released
    [body] = verified(receiver, secret)
    assert (body["type"], body["data"]["reply"]) == ("prompt.completed", "done in a block")
    assert lock_free == [True]
    assert [d["status"] for d in durable("session", "deliveries", "s", "--json").json()] == ["delivered"]
    assert not sys.modules["durable_cli.deliver"]._NOTED  # no process-wide list left behind

    durable("session", "prompt", "s", "two")
    _finish_in_a_block(store, "s", deliver=False)
    assert len(receiver.requests) == 1  # left pending, for a later wake or sweep
    assert [d["status"] for d in durable("session", "deliveries", "s", "--json").json()] == ["delivered", "pending"]
    assert durable("sweep").status == 0
    assert len(verified(receiver, secret)) == 2


def _lock_is_free(store, name) -> bool:
    """Another holder (a second Store, as another thread or process would be) gets the object's lock at once."""
    from durable_cli.errors import DurableError

    try:
        with Store(lock_timeout="0").open(name):
            return True
    except DurableError as e:
        return e.code
