"""DurableSaver behaves as langgraph-checkpoint-sqlite's savers (docs/reference/integrations.md §12): LangGraph's own conformance
suite and a small tool-calling StateGraph run against both; then what only durable adds."""

import asyncio
import tempfile

import pytest

from durable_cli.core import rights
from tests.integrations.conftest import need

# each test using the `durable` fixture runs over files and over a fresh Worker (tests/conftest.py): DURABLE_REMOTE
# is then set, so DurableSaver's Store is the remote backend (docs/reference/remote.md §13)
pytestmark = pytest.mark.both_backends


@pytest.fixture
def lg():
    need("langgraph.checkpoint.sqlite", "langgraph")
    return need("langgraph.checkpoint.conformance", "langgraph")


def conformance(lg, factory):
    from langgraph.checkpoint.conformance.report import ProgressCallbacks

    results = {}

    def on_result(capability, test, passed, error):
        results[(capability, test)] = (passed, error)

    registered = lg.checkpointer_test(name=factory.__name__)(factory)
    report = asyncio.run(lg.validate(registered, progress=ProgressCallbacks(on_test_result=on_result)))
    return report.conformance_level(), results


def test_conformance_suite_passes_what_sqlite_saver_passes(lg, home, durable, backend):
    async def durable_saver():
        from durable_cli.integrations.langgraph import DurableSaver

        saver = DurableSaver(home=str(home), user="alice")
        assert getattr(saver.store, "remote", False) == (backend == "remote")
        yield saver
        saver.close()

    async def sqlite_saver():
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        with tempfile.TemporaryDirectory() as d:
            async with AsyncSqliteSaver.from_conn_string(d + "/reference.db") as saver:
                yield saver

    reference_level, reference = conformance(lg, sqlite_saver)
    level, ours = conformance(lg, durable_saver)
    assert set(ours) == set(reference) and len(ours) > 40
    passed_by_reference = {k for k, (ok, _) in reference.items() if ok}
    failed = {k: ours[k][1] for k in passed_by_reference if not ours[k][0]}
    assert not failed, failed
    assert level == reference_level


# -- a small StateGraph with a tool node, three turns, each saver -------------------------------------

def three_turns(saver, turns=(1, 2, 3)):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def model(state):
        last = state["messages"][-1]
        turn = sum(1 for m in state["messages"] if isinstance(m, HumanMessage))
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"The sum is {last.content}.", id=f"ai-answer-{turn}")]}
        a, b = turn, 1
        return {"messages": [AIMessage(content="", id=f"ai-call-{turn}",
                                       tool_calls=[{"id": f"call_{turn}", "name": "add", "args": {"a": a, "b": b}}])]}

    def tools(state):
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(content=str(call["args"]["a"] + call["args"]["b"]), tool_call_id=call["id"],
                                         name="add", id=f"tool-{call['id']}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    builder.add_edge("tools", "model")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "calc"}}
    for n in turns:
        graph.invoke({"messages": [HumanMessage(content=f"what is {n}+1?", id=f"human-{n}")]}, config)
    state = graph.get_state(config)
    history = [(s.values, s.next, s.metadata.get("step")) for s in graph.get_state_history(config)]
    return state.values, history


def test_a_tool_graph_gives_equal_state_with_either_saver(lg, home, tmp_path, durable, backend):
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from durable_cli.integrations.langgraph import DurableSaver

    reference = three_turns(SqliteSaver(sqlite3.connect(tmp_path / "reference.db", check_same_thread=False)))
    saver = DurableSaver(home=str(home))
    assert getattr(saver.store, "remote", False) == (backend == "remote")
    ours = three_turns(saver)
    assert ours[0] == reference[0]
    assert [m.content for m in ours[0]["messages"]][-1] == "The sum is 4."
    assert ours[1] == reference[1]


def test_the_cli_shows_the_thread_and_refuses_to_rewrite_it(lg, home, durable):
    from durable_cli.integrations.langgraph import DurableSaver

    three_turns(DurableSaver(home=str(home)))
    rows = durable("transcript", "show", "calc", "--json").json()
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"] * 3
    assert rows[1]["tool_calls"] == [{"id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 1}'}]
    assert (rows[2]["call_id"], rows[2]["content"], rows[3]["content"]) == ("call_1", "2", "The sum is 2.")
    assert durable("session", "show", "calc", "--json").json()["external_id"] == "calc"
    for args in (["pop"], ["clear", "--yes"], ["summarize", "--through", "2", "--text", "s"],
                 ["compact", "--max-tokens", "1", "--keep-tokens", "1", "--text", "s"],
                 ["prune", "--older-than", "1s"], ["redact", "1"]):
        r = durable("transcript", args[0], "calc", *args[1:])
        assert r.status == 4 and "LangGraph" in r.err, (args, r.err)
    assert len(durable("transcript", "show", "calc", "--json").json()) == 12


@pytest.mark.cross_object
def test_a_deleted_thread_stays_deleted_and_forget_erases_its_tombstone(lg, home, durable):
    from durable_cli import DurableError, Store
    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver(home=str(home))
    three_turns(saver)
    config = {"configurable": {"thread_id": "calc", "checkpoint_ns": ""}}
    old = saver.get_tuple(config)
    saver.delete_thread("calc")
    assert saver.get_tuple(config) is None and list(saver.list(config)) == []
    assert durable("session", "show", "calc").status == 3
    with pytest.raises(DurableError) as e:
        saver.put(old.config, old.checkpoint, old.metadata, {})
    assert e.value.code == "conflict"
    with pytest.raises(DurableError):
        saver.put_writes(old.config, [("messages", [])], "task-1")
    assert durable("session", "show", "calc").status == 3  # not resurrected
    three_turns(saver)  # a new thread under that id starts from no checkpoint
    assert len(list(saver.list(config))) > 0
    with pytest.raises(DurableError) as e:  # the new thread does not make the old checkpoint ids valid again
        saver.put(old.config, old.checkpoint, old.metadata, {})
    assert e.value.code == "conflict" and "was deleted" in e.value.message
    assert Store(home=str(home)).tombstone("calc") is not None
    assert durable("forget", "alice", "--yes").status == 0
    assert Store(home=str(home)).tombstone("calc") is None


def test_keep_checkpoints_keeps_the_newest_per_namespace(lg, home, durable):
    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver(home=str(home), keep_checkpoints=2)
    values, _ = three_turns(saver)
    config = {"configurable": {"thread_id": "calc"}}
    kept = list(saver.list(config))
    assert len(kept) == 2
    assert saver.get_tuple(config).checkpoint["channel_values"]["messages"][-1].content == "The sum is 4."


# -- export and import carry the thread (docs/reference/retention.md §7: the adapters' tables are in the export format) ----------

def _thread(saver):
    config = {"configurable": {"thread_id": "calc"}}
    return [(t.config, t.checkpoint, t.metadata, t.parent_config, t.pending_writes) for t in saver.list(config)]


@pytest.mark.cross_object
def test_export_delete_import_gives_back_a_resumable_thread(lg, home, durable):
    import json

    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver(home=str(home))
    values, _ = three_turns(saver)
    before = _thread(saver)
    saver.close()
    dump = durable("export", "calc").out
    record = json.loads(dump)
    assert record["version"] == rights.VERSION and record["object"]["adapter"] == "langgraph"
    assert len(record["lg_checkpoints"]) == len(before) and record["lg_writes"]
    assert {m["message_id"] for m in record["lg_mirrored"]} >= {"human-1", "ai-call-1", "tool-call_1", "ai-answer-3"}
    assert durable("delete", "calc", "--yes").status == 0
    assert durable("import", "-", input=dump).status == 0
    assert durable("export", "calc").out == dump  # byte for byte
    assert durable("import", "-", input=dump).status == 0  # re-run: already imported
    saver = DurableSaver(home=str(home))
    assert _thread(saver) == before
    # the graph goes on from the restored checkpoint: a fourth turn sees the three before it
    values4, _ = three_turns(saver, turns=(4,))
    assert [m.content for m in values4["messages"]] == [m.content for m in values["messages"]] + [
        "what is 4+1?", "", "5", "The sum is 5."]
    assert len(durable("transcript", "show", "calc", "--json").json()) == 16  # 12 mirrored rows, then the 4th turn


@pytest.mark.cross_object
def test_import_refuses_broken_checkpoint_rows_and_stores_nothing(lg, home, durable):
    import json

    from durable_cli.integrations.langgraph import DurableSaver

    three_turns(DurableSaver(home=str(home)))
    record = json.loads(durable("export", "calc").out)
    assert durable("delete", "calc", "--yes").status == 0
    first = record["lg_checkpoints"][0]
    cases = [
        (dict(record, lg_checkpoints=[dict(first, checkpoint="not base64!")]), "lg_checkpoints[0].checkpoint must be base64"),
        (dict(record, lg_checkpoints=[first, dict(first)]), "lg_checkpoints[1] repeats the key (checkpoint_ns, checkpoint_id)"),
        (dict(record, lg_checkpoints=[dict(first, metadata="{not json")]), "lg_checkpoints[0].metadata must be JSON text"),
        (dict(record, lg_writes=[dict(record["lg_writes"][0], idx="1")]), "lg_writes[0].idx must be an integer"),
        (dict(record, object=dict(record["object"], adapter=None)), "lg_checkpoints only an object made by the langgraph adapter"),
        (dict(record, version=3), "lg_checkpoints is not a field of the export format"),
    ]
    for bad, message in cases:
        r = durable("import", "-", input=json.dumps(bad) + "\n")
        assert r.status == 2 and message in r.err, (message, r.err)
        assert durable("session", "show", "calc").status == 3  # nothing of the record was stored



# -- where checkpoint-sqlite's own tests look (issue 23) ----------------------------------------------------

def _both(home, tmp_path, backend):
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver(home=str(home))
    assert getattr(saver.store, "remote", False) == (backend == "remote")
    return SqliteSaver(sqlite3.connect(tmp_path / "reference.db", check_same_thread=False)), saver


def _put(saver, thread, checkpoint_id, parent=None, metadata=None, values=None):
    from langgraph.checkpoint.base import empty_checkpoint

    checkpoint = empty_checkpoint()
    checkpoint["id"] = checkpoint_id
    checkpoint["channel_values"] = values or {}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", **({"checkpoint_id": parent} if parent else {})}}
    return saver.put(config, checkpoint, metadata or {}, {})


def test_an_empty_checkpoint_id_means_the_latest(lg, home, tmp_path, durable, backend):
    for saver in _both(home, tmp_path, backend):
        _put(saver, "t", "1f0-a")
        _put(saver, "t", "1f0-b", parent="1f0-a")
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": ""}}
        assert saver.get_tuple(config).config["configurable"]["checkpoint_id"] == "1f0-b", type(saver)
        assert [c.config["configurable"]["checkpoint_id"] for c in saver.list(config)] == ["1f0-b", "1f0-a"]


def test_list_filters_on_dotted_metadata_paths_and_refuses_sql_characters(lg, home, tmp_path, durable, backend):
    results = []
    for saver in _both(home, tmp_path, backend):
        _put(saver, "t", "1f0-a", metadata={"user": {"access-level": 2, "name": "ann"}, "step": 1})
        _put(saver, "t", "1f0-b", parent="1f0-a", metadata={"user": {"access-level": 3}, "step": 2, "tags": ["x"]})
        config = {"configurable": {"thread_id": "t"}}

        def ids(**filter):
            return [c.config["configurable"]["checkpoint_id"] for c in saver.list(config, filter=filter)]

        results.append([ids(**{"user.access-level": 2}), ids(**{"user.name": None}), ids(step=2, tags=["x"]),
                        ids(**{"user.access-level": 4}), ids(nothing=None)])
        for key in ("step') OR 1=1 --", "a b", "user.$x"):
            with pytest.raises(ValueError):
                list(saver.list(config, filter={key: 1}))
    assert results[0] == results[1] == [["1f0-a"], ["1f0-b"], ["1f0-b"], [], ["1f0-b", "1f0-a"]]


def test_delta_channel_history_ends_on_a_parent_cycle(lg, home, durable):
    import threading

    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver(home=str(home))
    if not hasattr(saver, "get_delta_channel_history"):
        pytest.skip("this langgraph-checkpoint has no delta channel history")
    _put(saver, "loop", "1f0-a", parent="1f0-b")  # a damaged thread: a is b's parent and b is a's
    _put(saver, "loop", "1f0-b", parent="1f0-a")
    config = {"configurable": {"thread_id": "loop", "checkpoint_ns": "", "checkpoint_id": "1f0-b"}}
    done = {}
    worker = threading.Thread(target=lambda: done.update(history=saver.get_delta_channel_history(
        config=config, channels=["messages"])), daemon=True)
    worker.start()
    worker.join(20)
    assert "history" in done, "get_delta_channel_history walked a parent cycle forever"
    assert done["history"] == {"messages": {"writes": []}}
    assert asyncio.run(saver.aget_delta_channel_history(config=config, channels=["messages"])) == done["history"]


def test_a_saver_reading_step_after_step_sees_every_other_writer(lg, home, durable):
    """get_tuple reads the thread's kept connection once nothing needs doing first (issue 27); what another
    saver or the CLI did in between is still seen: a newer checkpoint, a delete, a new thread, an expiry."""
    import time

    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    from durable_cli.integrations.langgraph import DurableSaver

    reader, writer = DurableSaver(home=str(home)), DurableSaver(home=str(home))
    config = {"configurable": {"thread_id": "steps", "checkpoint_ns": ""}}

    def put(saver, step):
        checkpoint = create_checkpoint(empty_checkpoint(), {}, step)
        return saver.put(config, checkpoint, {"step": step}, {})["configurable"]["checkpoint_id"]

    first = put(reader, 1)
    for _ in range(3):  # the kept connection is taken up
        assert reader.get_tuple(config).config["configurable"]["checkpoint_id"] == first
    second = put(writer, 2)
    assert reader.get_tuple(config).metadata["step"] == 2
    assert reader.get_tuple(config).config["configurable"]["checkpoint_id"] == second
    assert durable("delete", "steps", "--yes").status == 0
    assert reader.get_tuple(config) is None and list(reader.list(config)) == []
    put(writer, 3)  # a new thread under the same id
    assert reader.get_tuple(config).metadata["step"] == 3
    assert reader.get_tuple(config).metadata["step"] == 3
    assert durable("ttl", "steps", "1s").status == 0
    assert reader.get_tuple(config).metadata["step"] == 3
    time.sleep(1.2)
    assert reader.get_tuple(config) is None  # expired: the read fired the TTL, as any open does
    assert durable("session", "show", "steps").status == 3
    reader.close()
    writer.close()


def test_savers_taking_turns_on_a_thread_mirror_each_message_once_and_see_each_others_delete(lg, home, durable):
    """A saver carries which messages it mirrored from one put to the next on its kept connection (issue 27),
    and a thread's tombstone from one check to the next: neither may outlive another writer's commit."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    from durable_cli import DurableError
    from durable_cli.integrations.langgraph import DurableSaver

    a, b = DurableSaver(home=str(home)), DurableSaver(home=str(home))
    config = {"configurable": {"thread_id": "turns", "checkpoint_ns": ""}}
    checkpoint, messages, configs = empty_checkpoint(), [], []
    for step in range(8):
        kind = HumanMessage if step % 2 == 0 else AIMessage
        messages = messages + [kind(content=f"line {step}", id=f"m{step}")]
        checkpoint = create_checkpoint(checkpoint, {}, step)
        checkpoint["channel_values"] = {"messages": messages}
        saver = (a, a, b, a, b, b, a, a)[step]  # each saver's kept connection is taken up between its turns
        config = saver.put(config, checkpoint, {"step": step}, {})
        configs.append(config)
    rows = durable("transcript", "show", "turns", "--json").json()
    assert [r["content"] for r in rows] == [f"line {i}" for i in range(8)]
    stale = (a.get_tuple(configs[2]), a.get_tuple(configs[6]))
    assert all(stale)
    b.put(configs[-1], checkpoint, {"step": 8}, {})  # nothing new to mirror
    assert len(durable("transcript", "show", "turns", "--json").json()) == 8
    b.delete_thread("turns")
    for old in stale:  # a's next check of the tombstone sees b's delete
        with pytest.raises(DurableError) as e:
            a.put(old.config, old.checkpoint, old.metadata, {})
        assert e.value.code == "conflict"
    assert durable("session", "show", "turns").status == 3
    a.close()
    b.close()


# -- a thread another saver wrote (issue 33: langgraph's test_checkpoint_migration.py) ------------------------

def _ask_graph(saver):
    """START -> draft -> ask (interrupt: a human answers) -> END, over a list channel and a str channel."""
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict, total=False):
        steps: Annotated[list, operator.add]
        answer: str

    builder = StateGraph(State)
    builder.add_node("draft", lambda s: {"steps": ["draft"]})
    builder.add_node("ask", lambda s: {"steps": ["ask"], "answer": interrupt("ok to send?")})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def test_a_paused_thread_copied_from_sqlite_saver_resumes(lg, home, tmp_path, durable, backend):
    """SqliteSaver (as InMemorySaver and PostgresSaver) writes string channel versions: DurableSaver's
    get_next_version takes them (the base class raises NotImplementedError on a string), and a thread
    durable wrote with integer versions goes on with integers."""
    from langgraph.types import Command

    reference, saver = _both(home, tmp_path, backend)
    config = {"configurable": {"thread_id": "paused"}}
    _ask_graph(reference).invoke({"steps": ["start"]}, config)
    tuples = list(reference.list(config))
    assert all(isinstance(v, str) for v in tuples[0].checkpoint["channel_versions"].values())
    for t in reversed(tuples):  # the thread copied checkpoint by checkpoint, oldest first, with its pending writes
        parent = t.parent_config or {"configurable": {"thread_id": "paused", "checkpoint_ns": ""}}
        saver.put(parent, t.checkpoint, t.metadata, t.checkpoint["channel_versions"])
        for task_id, channel, value in t.pending_writes:
            saver.put_writes(t.config, [(channel, value)], task_id)
    assert _ask_graph(saver).get_state(config).next == ("ask",)

    ours = _ask_graph(saver).invoke(Command(resume="yes"), config)
    theirs = _ask_graph(reference).invoke(Command(resume="yes"), config)
    assert ours == theirs == {"steps": ["start", "draft", "ask"], "answer": "yes"}
    assert _ask_graph(saver).get_state(config).next == ()

    assert saver.get_next_version(None, None) > "0"  # a new thread's versions are strings too, increasing
    assert saver.get_next_version(saver.get_next_version(None, None), None)[:32] == f"{2:032}"
    assert saver.get_next_version(7, None) == 8  # integer versions a thread already holds go on as integers


# -- time travel: the window follows the graph's state (issue 33, docs/reference/integrations.md §12 "Branches") ----------------------

def _chat_graph(saver):
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    builder = StateGraph(MessagesState)
    builder.add_node("reply", lambda s: {"messages": [AIMessage(f"re: {s['messages'][-1].content}")]})
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


def _window(durable, name="travel"):
    return [m["content"] for m in durable("transcript", "recent", name, "--format", "messages").json()]


@pytest.mark.cross_object
def test_after_time_travel_the_window_follows_the_graph_and_show_all_keeps_every_branch(lg, home, durable, backend):
    import json

    from langchain_core.messages import HumanMessage

    from durable_cli.integrations.langgraph import DurableSaver

    saver = DurableSaver(home=str(home))
    graph = _chat_graph(saver)
    config = {"configurable": {"thread_id": "travel"}}
    for n, text in enumerate(("one", "two"), 1):
        graph.invoke({"messages": [HumanMessage(text, id=f"h-{text}")]}, config)

    def state():
        return [m.content for m in graph.get_state(config).values["messages"]]

    assert _window(durable) == state() == ["one", "re: one", "two", "re: two"]
    after_one = next(s.config for s in graph.get_state_history(config) if len(s.values["messages"]) == 2 and not s.next)
    old_tip = graph.get_state(config).config

    # a fork from the checkpoint after the first turn: the second turn's rows leave the window
    graph.invoke({"messages": [HumanMessage("three", id="h-three")]}, after_one)
    assert state() == ["one", "re: one", "three", "re: three"]
    assert _window(durable) == state()
    rows = durable("transcript", "show", "travel", "--all", "--json").json()
    assert [(r["content"], r["superseded_by"]) for r in rows] == [
        ("one", None), ("re: one", None), ("two", 0), ("re: two", 0), ("three", None), ("re: three", None)]
    shown = durable("session", "show", "travel", "--json").json()
    assert (shown["turns"], shown["tokens"]) == (4, sum(r["tokens"] for r in rows if r["superseded_by"] is None))

    # a replay from the checkpoint before the fork's reply: the reply is made again (a new message)
    before_reply = next(s.config for s in graph.get_state_history(config) if s.next == ("reply",)
                        and s.values["messages"][-1].content == "three")
    graph.invoke(None, before_reply)
    assert state() == ["one", "re: one", "three", "re: three"] and _window(durable) == state()
    assert len(durable("transcript", "show", "travel", "--all", "--json").json()) == 7  # both replies are kept

    # back to the first branch's tip: its rows are live again, the fork's superseded
    graph.invoke({"messages": [HumanMessage("four", id="h-four")]}, old_tip)
    assert state() == ["one", "re: one", "two", "re: two", "four", "re: four"]
    assert _window(durable) == state()
    assert [m["role"] for m in durable("transcript", "recent", "travel", "--format", "messages").json()] == [
        "user", "assistant"] * 3

    # export and import carry the superseded rows as they are
    saver.close()
    dump = durable("export", "travel").out
    assert sorted(t["superseded_by"] for t in json.loads(dump)["turns"] if t["superseded_by"] is not None) == [0, 0, 0]
    assert durable("delete", "travel", "--yes").status == 0
    assert durable("import", "-", input=dump).status == 0
    assert durable("export", "travel").out == dump
    assert _window(durable) == ["one", "re: one", "two", "re: two", "four", "re: four"]
    # a 0 is a LangGraph branch's mark only: not on a session no adapter made
    record = json.loads(dump)
    record["object"]["adapter"] = None
    for table in ("lg_checkpoints", "lg_writes", "lg_mirrored"):
        record.pop(table, None)
    assert durable("delete", "travel", "--yes").status == 0
    r = durable("import", "-", input=json.dumps(record) + "\n")
    assert r.status == 2 and "superseded_by" in r.err, r.err
    assert durable("session", "show", "travel").status == 3
