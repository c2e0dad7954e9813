"""Remote `session fork`: the Worker checks the rows a client gives NEW's object (a forged plan is exit 2
and creates nothing), renumbers them itself, and NEW names the source in forked_from."""

import pytest

from durable_cli import Store
from durable_cli.errors import DurableError
from tests.remote.conftest import ALICE_TOKEN, unique


@pytest.fixture
def store(remote_dev, monkeypatch):
    monkeypatch.delenv("DURABLE_USER", raising=False)
    s = Store(remote=remote_dev.url, token=ALICE_TOKEN)
    yield s
    s.close()


def test_a_forged_fork_plan_is_refused_and_creates_nothing(store):
    name, new = unique("src"), unique("fork")
    with store.open(name, create=True) as s:
        s.append_many([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
        plan = s._call("fork_plan", at=None)
    rows = plan.pop("rows")
    assert [r["content"] for r in rows] == ["q", "a"] and plan["seq"] == 2
    with store.open(new, create=True) as target:
        for forged in ([{**rows[0], "role": "wizard"}], [{**rows[0], "kind": "other"}], [{**rows[0], "created_at": "now"}],
                       [{**rows[0], "call_id": "c1"}], [{**rows[0], "kind": "summary", "role": "user"}]):
            with pytest.raises(DurableError) as e:
                target._call("fork_create", source=plan, rows=forged, title=None)
            assert e.value.code == "invalid_input", forged
        with pytest.raises(DurableError) as e:
            target._call("fork_create", source={**plan, "id": "not an id"}, rows=rows, title=None)
        assert e.value.code == "invalid_input"
    with pytest.raises(DurableError) as e, store.open(new) as target:
        target.show()
    assert e.value.code == "not_found"
    # the seqs are the Worker's own: a seq a client slips in is ignored
    with store.open(new, create=True) as target:
        doc = target._call("fork_create", source=plan, rows=[{**r, "seq": 40 + i} for i, r in enumerate(rows)], title=None)
    assert doc["status"] == "created" and doc["turns"] == 2
    with store.open(new) as target:
        copied = target.rows(all=True)
    assert [(r["seq"], r["content"], r["forked_from"]) for r in copied] == [(1, "q", plan["id"]), (2, "a", plan["id"])]
    with pytest.raises(DurableError) as e:
        store.fork(name, new)
    assert e.value.code == "conflict"
