"""Remote summaries through the library: the plan a client sends back is checked whole by the Worker,
and a summary committed over a changed transcript is exit 4 with nothing changed."""

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


def _rows(store, name):
    with store.open(name) as s:
        return s.rows(all=True)


def test_a_forged_or_stale_plan_is_refused_and_changes_nothing(store):
    name = unique("plan")
    with store.open(name, create=True) as s:
        s.append_many([{"role": "user", "content": f"row {i}"} for i in range(1, 5)])
        plan = s._call("plan_summary", through=3)
        assert [r[0] for r in plan["covered"]] == [1, 2, 3]
        before = s.rows(all=True)
        gap = [plan["covered"][0], plan["covered"][2]]  # real rows, but not consecutive
        with pytest.raises(DurableError) as e:
            s._call("commit_summary", covered=gap, high=plan["high"], text="x")
        assert e.value.code == "invalid_input"
        forged = [list(plan["covered"][0])]
        forged[0][2] = "not what row 1 says"
        with pytest.raises(DurableError) as e:
            s._call("commit_summary", covered=forged, high=plan["high"], text="x")
        assert e.value.code == "conflict" and "changed while summarizing" in str(e.value)
        assert s.rows(all=True) == before
        s.redact(2)  # the plan is stale now
        with pytest.raises(DurableError) as e:
            s._call("commit_summary", covered=plan["covered"], high=plan["high"], text="x")
        assert e.value.code == "conflict"
        done = s._call("commit_summary", covered=s._call("plan_summary", through=3)["covered"],
                       high=plan["high"], text="three rows")
        assert done["superseded"] == 3 and done["summary"]["covers"] == [1, 3]


def test_library_summarize_and_compact_through_the_remote_store(store):
    name = unique("cmd")
    with store.open(name, create=True) as s:
        s.append_many([{"role": "user", "content": "alpha"}, {"role": "assistant", "content": "beta"}])
    doc = store.summarize(name, through=2, command="cat")  # the rows as text on its stdin
    assert doc["summary"]["content"] == "user: alpha\n\nassistant: beta" and doc["superseded"] == 2
    assert store.compact(name, max_tokens=10**6, keep_tokens=0, text="x") == {"summary": None, "superseded": 0}
    assert [r["kind"] for r in _rows(store, name)] == ["turn", "turn", "summary"]


def test_a_summary_with_a_command_over_more_than_100_rows_and_calls(store):
    """The commit checks the covered rows and their calls in slices of at most 100 bound parameters (Cloudflare's
    limit, enforced by the Worker everywhere): 150 rows and 120 tool calls were a storage error (exit 7)."""
    name = unique("long")
    with store.open(name, create=True) as s:
        rows = []
        for i in range(120):
            rows += [{"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "name": "f", "arguments": "{}"}]},
                     {"role": "tool", "call_id": f"c{i}", "content": f"result {i}"}]
        s.append_many(rows + [{"role": "user", "content": "the question"}])
    doc = store.summarize(name, through=240, command="cat > /dev/null; echo the summary")
    assert doc["superseded"] == 240
    with store.open(name) as s:
        assert [r["content"] for r in s.rows()] == ["the summary", "the question"]
