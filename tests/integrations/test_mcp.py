"""`durable mcp` (docs/reference/mcp.md §14) driven by the official SDK's own client over stdio, in both protocol revisions
the SDK serves: a 2025-11-25 client (`mode="legacy"`: elicitation/create, resources/subscribe) and a
2026-07-28 one (InputRequiredResult rounds, subscriptions/listen).

A server start costs about a second of imports (the SDK), so each test drives one server through many
calls; the CLI checks the effects from a separate process, as a person would.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.helpers import Receiver
from tests.integrations.conftest import need
from tests.waiting import wait_until

pytestmark = pytest.mark.both_backends

MODERN = "2026-07-28"
ENV_KEYS = ("DURABLE_HOME", "DURABLE_CONFIG", "DURABLE_USER", "DURABLE_TENANT", "DURABLE_REMOTE", "DURABLE_TOKEN")


@pytest.fixture(autouse=True)
def sdk():
    need("mcp_types", "mcp")


def params(*args):
    from mcp.client.stdio import StdioServerParameters

    env = {k: os.environ[k] for k in ENV_KEYS if k in os.environ}
    return StdioServerParameters(command=sys.executable, args=["-m", "durable_cli", *args, "mcp"], env=env)


class Person:
    """The elicitation callback: answers with ANSWER ("decline", "cancel", or a choice), records what it was asked."""

    def __init__(self, answer, delay=0):
        self.answer, self.asked, self.delay = answer, [], delay
        self.meanwhile = None  # something another process does while the person thinks

    async def __call__(self, ctx, p):
        import anyio
        import mcp_types as types

        self.asked.append(p.message)
        await anyio.sleep(self.delay)
        if self.meanwhile is not None:
            await anyio.to_thread.run_sync(self.meanwhile)
        if self.answer in ("decline", "cancel"):
            return types.ElicitResult(action=self.answer)
        return types.ElicitResult(action="accept", content={} if self.answer is None else {"answer": self.answer})


def client(mode, person=None, *args, **kw):
    from mcp import Client

    return Client(params(*args), mode=mode, elicitation_callback=person, **kw)


def run(main):
    import anyio

    return anyio.run(main)


def cli(*args):
    """`durable ARGS` in a separate process (the environment of the test: files or the test's Worker)."""
    return subprocess.run([sys.executable, "-m", "durable_cli", *args], capture_output=True, text=True, timeout=60)


def look(*args):
    """`durable ARGS --json` in this process (quicker than a process; same data directory or Worker)."""
    from tests.conftest import run_inprocess

    r = run_inprocess(*args, "--json")
    assert r.status == 0, r.err
    return json.loads(r.out)


async def call(c, tool, **arguments):
    r = await c.call_tool(tool, arguments)
    return r.is_error, r.structured_content


def error_of(result, code):
    is_error, doc = result
    assert is_error, doc
    assert set(doc["error"]) >= {"code", "message", "exit_status"} and doc["error"]["code"] == code, doc
    return doc["error"]


def test_every_tool_over_stdio_with_an_accepting_person(durable):
    """Every tool once, through a 2025-11-25 client whose person accepts: §10 documents as structured content,
    §4 errors as isError tool results, and the server still serving after each refusal."""
    import anyio

    person = Person("yes")
    receiver = Receiver()  # a hook's receiver: the finish below is told to it (docs/reference/sessions.md §5.3)

    async def main():
        async with client("legacy", person) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == {"sessions_list", "session_create", "session_show", "session_prompt", "session_next",
                                  "session_finish", "transcript_append", "transcript_recent", "transcript_search",
                                  "memory_set", "memory_get", "memory_list", "memory_confirm", "ask_human", "limit_hit",
                                  "session_tag"}
            for t in tools.values():  # no tool acts for another user
                assert t.input_schema["type"] == "object" and not {"user", "as", "as_user"} & set(t.input_schema["properties"])
                assert t.annotations.read_only_hint == (t.name in {"sessions_list", "session_show", "transcript_recent",
                                                                   "transcript_search", "memory_get", "memory_list"})

            bad, s = await call(c, "session_create", name="plan", title="Trip")
            assert not bad, s
            assert s["name"] == "plan" and s["status"] == "created" and s["owner"] == "alice"
            assert (await call(c, "session_show", name="plan"))[1]["title"] == "Trip"
            names = (await call(c, "sessions_list"))[1]["result"]
            assert [r["name"] for r in names] == ["plan"] and "last_active_at" in names[0]

            p = (await call(c, "session_prompt", name="plan", text="Book a room", request_id="r1"))[1]
            assert p["status"] == "pending" and p["content"] == "Book a room"
            await anyio.to_thread.run_sync(lambda: look("session", "hook", "plan", "--url", receiver.url, "--events", "completed"))
            assert (await call(c, "session_prompt", name="plan", text="Book a room", request_id="r1"))[1]["id"] == p["id"]
            taken = (await call(c, "session_next", name="plan", context_tokens=1000, format="json"))[1]
            assert taken["id"] == p["id"] and taken["status"] == "processing" and taken["window"]["turns"][-1]["content"] == "Book a room"
            error_of(await call(c, "session_next", name="plan"), "conflict")  # one already processing
            error_of(await call(c, "session_finish", name="plan", prompt_id=p["id"], rows=[{"role": "user", "content": "x"}]),
                     "invalid_input")  # a turn's rows are assistant and tool rows: nothing changed
            done = (await call(c, "session_finish", name="plan", prompt_id=p["id"], reply="Booked.", meta={"model": "m1"},
                               rows=[{"role": "assistant", "content": "", "tool_calls": [{"id": "b1", "name": "book", "arguments": "{}"}]},
                                     {"role": "tool", "content": "ok", "call_id": "b1"}]))[1]
            assert done["status"] == "completed"
            # sent while the server keeps serving, off the request (locally its own thread, remotely the object's alarm)
            await anyio.to_thread.run_sync(lambda: wait_until(lambda: receiver.requests, "the finish's delivery", timeout=30, step=0.01))
            assert json.loads(receiver.requests[0][1])["data"]["prompt_id"] == p["id"]
            assert error_of(await call(c, "session_next", name="plan"), "timeout")["exit_status"] == 9

            row = (await call(c, "transcript_append", name="plan", role="assistant", text="",
                              tool_calls=[{"id": "c1", "name": "lookup", "arguments": "{}"}], meta={"model": "m"}))[1]
            assert row["tool_calls"][0]["id"] == "c1" and row["meta"] == {"model": "m"}
            rows = (await call(c, "transcript_append", name="plan", rows=[
                {"role": "tool", "content": "free", "call_id": "c1", "name": "lookup", "data": {"k": [1]}},
                {"role": "assistant", "content": "Room 4 is free"}]))[1]["result"]
            assert [r["role"] for r in rows] == ["tool", "assistant"] and rows[0]["data"] == {"k": [1]}
            recent = (await call(c, "transcript_recent", name="plan", tokens=4000))[1]
            assert set(recent) >= {"turns", "tokens", "budget"} and recent["turns"][-1]["content"] == "Room 4 is free"
            messages = (await call(c, "transcript_recent", name="plan", format="messages"))[1]["result"]
            assert messages[-1] == {"role": "assistant", "content": "Room 4 is free"}
            gemini = (await call(c, "transcript_recent", name="plan", format="gemini"))[1]
            assert gemini["contents"][-1] == {"role": "model", "parts": [{"text": "Room 4 is free"}]}
            hits = (await call(c, "transcript_search", query="room"))[1]["result"]
            assert hits and set(hits[0]) >= {"name", "id", "seq", "role", "created_at", "snippet"}
            # plain text (docs/reference/retention.md §7): "Room 4" and "room OR nothing" are words to find; fts takes FTS5's syntax
            assert [h["snippet"] for h in (await call(c, "transcript_search", query='"Room 4"'))[1]["result"]] == ["[Room 4] is free"]
            assert (await call(c, "transcript_search", query="room OR nothing"))[1]["result"] == []
            assert (await call(c, "transcript_search", query="room OR nothing", fts=True))[1]["result"] == hits

            fact = (await call(c, "memory_set", key="tz", value="Europe/Paris", source="user", confirmed=True))[1]
            assert fact["source"] == "model" and fact["confirmed"] is False  # whatever it is sent
            error_of(await call(c, "memory_get", key="tz"), "not_found")  # unconfirmed: not a fact yet
            assert (await call(c, "memory_list"))[1] == {"result": []}
            confirmed = (await call(c, "memory_confirm", key="tz"))[1]
            assert confirmed["confirmed"] is True and person.asked == ["Remember this as a fact? tz = Europe/Paris"]
            assert (await call(c, "memory_get", key="tz"))[1]["value"] == "Europe/Paris"
            assert [f["key"] for f in (await call(c, "memory_list"))[1]["result"]] == ["tz"]

            person.meanwhile = lambda: look("--lock-timeout", "0", "session", "title", "plan", "Trip, room 4?")  # no lock held while asking
            asked = (await call(c, "ask_human", name="plan", prompt="Book room 4?", choices=["yes", "no"], request_id="room-4"))[1]
            assert asked["status"] == "answered" and asked["answer"] == "yes" and asked["answered_by"] == "alice"
            person.meanwhile = None
            assert (await call(c, "session_show", name="plan"))[1]["title"] == "Trip, room 4?"
            again = (await call(c, "ask_human", name="plan", prompt="Book room 4?", choices=["yes", "no"], request_id="room-4"))[1]
            assert again == asked and len(person.asked) == 2  # the same request, not asked twice
            error_of(await call(c, "ask_human", name="plan", prompt="Book room 5?", request_id="room-4"), "conflict")

            hit = (await call(c, "limit_hit", key="api", rate="1/1h"))[1]
            assert hit == {"key": "api", "allowed": True, "remaining": 0, "retry_after": None}
            refused = error_of(await call(c, "limit_hit", key="api", rate="1/1h"), "rate_limited")
            assert refused["exit_status"] == 8 and 3500 <= refused["retry_after"] <= 3600

            # bad input: the CLI's checks, an MCP tool error each time, never a crash
            assert error_of(await call(c, "no_such_tool"), "invalid_input")["exit_status"] == 2
            error_of(await call(c, "session_show"), "invalid_input")  # missing name
            error_of(await call(c, "session_show", name=7), "invalid_input")
            error_of(await call(c, "session_show", name=" padded "), "invalid_input")
            error_of(await call(c, "session_show", name="plan", user="bob"), "invalid_input")  # no user argument
            error_of(await call(c, "sessions_list", limit=-1), "invalid_input")
            error_of(await call(c, "sessions_list", limit=2 ** 63), "invalid_input")
            error_of(await call(c, "sessions_list", limit=True), "invalid_input")
            error_of(await call(c, "sessions_list", status=["sleeping"]), "invalid_input")
            error_of(await call(c, "session_next", name="plan", wait="30"), "invalid_input")
            error_of(await call(c, "limit_hit", key="api", rate="often"), "invalid_input")
            error_of(await call(c, "transcript_append", name="plan", role="robot", text="x"), "invalid_input")
            error_of(await call(c, "transcript_append", name="plan", rows=[{"role": "user"}]), "invalid_input")
            huge = error_of(await call(c, "transcript_append", name="plan", role="user", text="x" * (2 * 1024 * 1024 + 1)), "invalid_input")
            assert "max_turn_bytes" in huge["message"]
            error_of(await call(c, "session_prompt", name="plan", text="y" * (2 * 1024 * 1024 + 1)), "invalid_input")
            error_of(await call(c, "memory_set", key="big", value="é" * (1024 * 1024 + 1)), "invalid_input")
            error_of(await call(c, "session_show", name="nope"), "not_found")
            assert (await call(c, "session_show", name="plan"))[1]["turns"] == 7  # still serving; nothing refused was stored

            await declined_and_subscribed(c, person, "legacy")

    try:
        run(main)
    finally:
        receiver.close()
    # the effects, seen by the CLI from another process
    shown = look("transcript", "show", "plan")
    assert [r["content"] for r in shown] == ["Book a room", "", "ok", "Booked.", "", "free", "Room 4 is free"]
    assert shown[3]["meta"] == {"model": "m1"}
    requests = look("elicit", "list", "plan")
    assert [(r["status"], r["answer"]) for r in requests] == [("answered", "yes")]
    requests = look("elicit", "list", "ops/daily")
    assert [(r["status"], r["answer"], r["comment"]) for r in requests] == [("answered", None, "decline")]


async def declined_and_subscribed(c, person, mode):
    """Declined questions are answered null with the word as comment; a declined confirmation leaves the
    fact unconfirmed; a subscriber hears of rows another process appends within a second."""
    import anyio

    person.answer, asked_before = "decline", len(person.asked)
    uri = "durable://session/ops%2Fdaily/transcript"  # NAME percent-encoded
    error_of(await call(c, "ask_human", name="ops/daily", prompt="Restart the database?"), "not_found")  # needs the session
    await call(c, "session_create", name="ops/daily")
    asked = (await call(c, "ask_human", name="ops/daily", prompt="Restart the database?", choices=["yes", "no"]))[1]
    assert asked["status"] == "answered" and asked["answer"] is None and asked["comment"] == "decline"
    await call(c, "memory_set", key="editor", value="vim")
    still = (await call(c, "memory_confirm", key="editor"))[1]
    assert still["confirmed"] is False and len(person.asked) == asked_before + 2

    assert json.loads((await c.read_resource(uri)).contents[0].text) == []
    sessions = json.loads((await c.read_resource("durable://sessions")).contents[0].text)
    assert "ops/daily" in [s["name"] for s in sessions]
    assert json.loads((await c.read_resource("durable://session/ops%2Fdaily")).contents[0].text)["name"] == "ops/daily"
    with pytest.raises(Exception, match="not found"):
        await c.read_resource("durable://session/nope")

    def append_elsewhere():
        assert cli("transcript", "append", "ops/daily", "--role", "user", "disk full").returncode == 0
        return time.monotonic()

    heard = []
    if mode == "legacy":
        got = anyio.Event()

        async def handler(message):
            if getattr(message, "method", None) == "notifications/resources/updated":
                heard.append((time.monotonic(), message.params.uri))
                got.set()

        c.session._message_handler = handler  # the test's own client
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is the 2025-11-25 way, deprecated by the SDK
            await c.subscribe_resource(uri)
        await anyio.sleep(0.6)  # the server's first look
        landed = await anyio.to_thread.run_sync(append_elsewhere)
        with anyio.fail_after(5):
            await got.wait()
    else:
        async with c.listen(resource_subscriptions=[uri]) as sub:
            await anyio.sleep(0.6)
            landed = await anyio.to_thread.run_sync(append_elsewhere)
            with anyio.fail_after(5):
                async for event in sub:
                    heard.append((time.monotonic(), event.uri))
                    break
    # the server looks every 0.2 s: within a second (the bound allows a loaded 2-core CI machine its scheduling)
    assert heard[0][1] == uri and heard[0][0] - landed < 1.5
    rows = json.loads((await c.read_resource(uri)).contents[0].text)
    assert [r["content"] for r in rows] == ["disk full"]


@pytest.mark.local_only("restarts a server between calls; the Worker side of ask is the first test's")
def test_without_the_capability_then_a_restart_between_two_ask_human_calls():
    """A client that cannot elicit gets the stored pending request (answerable with `durable elicit answer`)
    and a refused memory_confirm; after a restart, a 2026-07-28 client: the same request_id returns that
    request and asks nothing twice; a client that disconnects mid-call leaves nothing half-done."""
    import anyio

    look("session", "create", "deploy")

    async def first():
        async with client("legacy") as c:
            pending = (await call(c, "ask_human", name="deploy", prompt="Ship v2?", choices=["yes", "no"], request_id="ship-v2"))[1]
            assert pending["status"] == "pending" and pending["answer"] is None
            await call(c, "memory_set", key="team", value="infra")
            refused = error_of(await call(c, "memory_confirm", key="team"), "permission_denied")
            assert "durable memory confirm team" in refused["message"] and refused["exit_status"] == 5
            # a client that goes away mid-call: the waiting session_next ends, and takes nothing
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: call(c, "session_next", name="deploy", wait="30s"))
                await anyio.sleep(0.5)
                tg.cancel_scope.cancel()
            return pending

    pending = run(first)
    person = Person("yes")

    async def second():
        started = time.monotonic()
        async with client(MODERN, person) as c:
            again = (await call(c, "ask_human", name="deploy", prompt="Ship v2?", choices=["yes", "no"], request_id="ship-v2"))[1]
            assert again == pending and person.asked == []  # the same request, asked nothing twice
            error_of(await call(c, "ask_human", name="deploy", prompt="Ship v3?", request_id="ship-v2"), "conflict")
            look("elicit", "answer", "deploy", str(pending["id"]), "--choice", "no")
            answered = (await call(c, "ask_human", name="deploy", prompt="Ship v2?", choices=["yes", "no"], request_id="ship-v2"))[1]
            assert answered["status"] == "answered" and answered["answer"] == "no" and person.asked == []
            fresh = (await call(c, "ask_human", name="deploy", prompt="Roll back?", choices=["yes", "no"], request_id="rb"))[1]
            assert fresh["id"] == pending["id"] + 1 and fresh["answer"] == "yes" and person.asked == ["Roll back?"]
            person.delay = 1.5  # slower than the request's timeout: it expires unanswered
            timed = error_of(await call(c, "ask_human", name="deploy", prompt="Quick?", timeout="1s", request_id="q"), "timeout")
            assert timed["exit_status"] == 9 and timed["document"]["status"] == "expired"
            person.delay = 0
            await declined_and_subscribed(c, person, MODERN)  # a 2026-07-28 client: InputRequiredResult, subscriptions/listen
        return time.monotonic() - started

    run(second)
    look("session", "prompt", "deploy", "later")
    time.sleep(0.5)
    queue = look("session", "queue", "deploy")
    assert [p["status"] for p in queue] == ["pending"]  # the abandoned wait took nothing
    events = look("session", "events", "ops/daily")
    assert [e["type"] for e in events if e["type"].startswith("elicit.")] == ["elicit.asked", "elicit.answered"]


@pytest.mark.local_only("about the installed package, not a backend")
def test_without_the_sdk_it_is_a_clear_usage_error():
    probe = ("import sys; sys.modules['mcp_types'] = None; sys.modules['mcp'] = None\n"
             "from durable_cli.cli.app import run; sys.exit(run(['mcp']))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "durable: error: durable mcp needs the MCP Python SDK (mcp >= 2.3), which is not installed; "
        "install it with: pip install 'durable-cli[mcp]'"]


@pytest.mark.local_only("about the wire, not a backend")
def test_malformed_messages_are_answered_and_stdin_closing_ends_the_server_with_0():
    """What a hostile or broken client writes: a lone surrogate, bytes that are not UTF-8, arguments that are
    not an object. Each gets an exit-2 tool error (the SDK alone would drop the first two unanswered);
    the server goes on, and exits 0 when its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"transcript_append","arguments":{"name":"s","role":"user","text":"\\ud800"}}}',
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"transcript_append","arguments":{"name":"s","role":"user","text":"a\xffb"}}}',
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"session_show","arguments":"oops"}}',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"transcript_append","arguments":{"name":"s","role":"user","text":"caf\\u00e9"}}}',
    ]
    proc.stdin.write(b"\n".join(lines) + b"\n")
    proc.stdin.flush()
    answers = {}
    while len(answers) < 5:
        message = json.loads(proc.stdout.readline())
        if "id" in message:  # not notifications/resources/list_changed (a session was created)
            answers[message["id"]] = message["result"]
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    for request in (2, 3, 4):
        assert answers[request]["isError"] is True
        assert answers[request]["structuredContent"]["error"]["code"] == "invalid_input"
    assert answers[5]["structuredContent"]["content"] == "café"
    shown = look("transcript", "show", "s")
    assert [r["content"] for r in shown] == ["café"]  # the refused rows stored nothing


@pytest.mark.local_only("about the wire, not a backend")
def test_arguments_are_judged_by_durables_json_rules_and_deep_ones_answered():  # and subscriptions' NAMEs
    """docs/reference/transcript.md §6: a duplicate key, NaN or nesting over 200 levels in MCP arguments is an exit-2 tool error (the
    SDK alone kept the last of two keys, and dropped a message nested 198+ levels deep unanswered: the client
    waited for ever); arguments nested 200 levels deep are stored, as the CLI stores them."""
    def nested(depth):
        return '{"a":' * depth + "1" + "}" * depth

    def call(i, meta):
        return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"transcript_append","arguments":'
                '{"name":"s","role":"user","text":"t%d","meta":%s}}}' % (i, i, meta)).encode()

    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        call(2, '{"a":1,"a":2}'), call(3, '{"a":NaN}'), call(4, nested(201)), call(5, nested(200)), call(6, nested(198)),
        b'{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"durable://session/ok%20"}}',
        b'{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"durable://session/later"}}',
    ]
    out, _ = proc.communicate(b"\n".join(lines) + b"\n", timeout=60)  # stdin's end: answers in flight, then exit 0
    assert proc.returncode == 0
    answers = {m["id"]: m.get("result", m) for m in map(json.loads, out.splitlines()) if "id" in m}  # not notifications
    assert sorted(answers) == [1, 2, 3, 4, 5, 6, 7, 8]  # every call answered
    for request in (2, 3, 4):
        assert answers[request]["isError"] is True, answers[request]
        assert answers[request]["structuredContent"]["error"]["code"] == "invalid_input"
    assert "appears twice" in answers[2]["structuredContent"]["error"]["message"]
    assert answers[7]["error"]["code"] == -32602  # subscribing to an invalid NAME is refused as reading it is
    assert answers[7]["error"]["data"]["error"]["code"] == "invalid_input"
    assert answers[8] == {}  # a valid NAME may be subscribed to before it exists
    assert sorted(r["content"] for r in look("transcript", "show", "s")) == ["t5", "t6"]  # calls run side by side


@pytest.mark.local_only("the example runs against the test's data directory")
def test_the_booking_agent_example_runs_offline():
    """examples/booking_agent.py: per-user preferences in memory, availability rows in the session, a booking
    in one transaction, a person's yes for an evening slot, a per-user rate limit."""
    from tests.conftest import ROOT

    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "booking_agent.py")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    alice = [line for line in r.stdout.splitlines() if line.startswith("alice")]
    assert alice[:-1] == [
        "alice is asked: Remember this as a fact? channel = phone",
        "alice: remembered channel=phone (confirmed: True)",
        "alice: booked 2026-12-08 10:00 (phone) in rows 4-6",
        "alice is asked: Book 2026-12-08 19:00, outside business hours?",
        "alice: booked 2026-12-08 19:00 (phone) in rows 10-12",
        "alice: booked 2026-12-09 14:00 (phone) in rows 16-18",
    ]
    assert 1100 <= int(alice.pop()[len("alice: refused, rate_limited: retry after "):-1]) <= 1200  # 3/1h: one per 20m
    assert "bob: booked 2026-12-08 14:00 (video) in rows 4-6" in r.stdout  # bob has his own memory and limit
    fact = look("--as", "alice", "memory", "get", "channel")
    assert fact["source"] == "model" and fact["confirmed"] is True
    assert look("--as", "bob", "memory", "list", "--all") == []
    rows = look("--as", "alice", "transcript", "show", "consult-alice")
    booked = [r["data"] for r in rows if r["name"] == "book_slot"]
    assert [b["slot"] for b in booked] == ["2026-12-08 10:00", "2026-12-08 19:00", "2026-12-09 14:00"]
    assert [r["data"]["slots"] for r in rows if r["name"] == "check_availability"][0][-1] == "2026-12-08 19:00"
    asked = look("--as", "alice", "elicit", "list", "consult-alice")
    assert [(a["prompt"], a["answer"]) for a in asked] == [("Book 2026-12-08 19:00, outside business hours?", "yes")]


@pytest.mark.local_only("about the process, not a backend")
def test_sigterm_while_a_call_waits_exits_143_at_once_with_nothing_taken():
    import signal

    look("session", "create", "s")
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                     b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n'
                     b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                     b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_next","arguments":{"name":"s","wait":"1m"}}}\n')
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    time.sleep(0.5)  # session_next is waiting (stdin stays open: the client is still there)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143 and time.monotonic() - started < 5
    assert proc.stderr.read() == b""
    look("session", "prompt", "s", "after")
    assert [p["status"] for p in look("session", "queue", "s")] == ["pending"]


@pytest.mark.local_only("reads the docs")
def test_the_documented_client_configuration_is_json_that_runs_durable_mcp():
    import re

    from tests.helpers import prose

    text = prose()
    section = text[text.index("## Use from an MCP client"):]
    config = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    for server in config["mcpServers"].values():  # a desktop client has no venv on its PATH: the absolute path
        assert os.path.isabs(server["command"]) and server["command"].endswith("/bin/durable") and server["args"][-1] == "mcp"
    assert "`command -v durable` prints the path" in section.split("```json")[1]


@pytest.mark.local_only("compares `durable export --all` of the data directory before and after")
def test_bad_input_is_refused_before_the_session_is_looked_for_and_touches_nothing():
    """Input first (docs/reference/output.md §4), as `elicit ask` and `session finish` check it: a bad question, request id, reply or
    turn row is exit 2 whether NAME exists or not (it was not_found for a missing session), and a refused
    ask_human leaves the session as it was (it used to open it first, and store an expired request's expiry)."""
    look("session", "create", "s")

    def export():
        return cli("export", "--all").stdout

    async def main():
        async with client("legacy") as c:
            pending = (await call(c, "ask_human", name="s", prompt="Quick?", timeout="1s"))[1]
            assert pending["status"] == "pending"
            time.sleep(1.2)  # the request is past its expiry, not yet marked expired
            before = export()
            for name in ("s", "nope"):
                error_of(await call(c, "ask_human", name=name, prompt="Ship?", request_id="\u2028"), "invalid_input")
                error_of(await call(c, "ask_human", name=name, prompt=" "), "invalid_input")
                error_of(await call(c, "ask_human", name=name, prompt="Ship?", choices=["yes", "yes"]), "invalid_input")
                error_of(await call(c, "session_finish", name=name, prompt_id=1, reply=""), "invalid_input")
                error_of(await call(c, "session_finish", name=name, prompt_id=1, rows=[{"role": "user", "content": "x"}]),
                         "invalid_input")
                error_of(await call(c, "session_finish", name=name, prompt_id=1, meta={"model": "m"}), "invalid_input")
            assert export() == before
            error_of(await call(c, "session_finish", name="nope", prompt_id=1, reply="done"), "not_found")

    run(main)


@pytest.mark.local_only("about the wire, not a backend")
def test_a_client_that_goes_away_while_the_person_is_asked_ends_the_server_with_0():
    """stdin closes while elicitation/create requests are outstanding (a desktop client quit mid-question): the
    server stopped waiting for ever; now ask_human answers with the request still pending (answerable with
    `durable elicit answer`), memory_confirm confirms nothing, and the server exits 0."""
    look("session", "create", "d")
    look("memory", "set", "tz", "Europe/Paris", "--source", "model")
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_human","arguments":{"name":"d","prompt":"Ship?"}}}\n'
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_confirm","arguments":{"key":"tz"}}}\n')
    proc.stdin.flush()
    asked = []
    while len(asked) < 2:
        message = json.loads(proc.stdout.readline())
        if message.get("method") == "elicitation/create":
            asked.append(message["params"]["message"])
    assert sorted(asked) == ["Remember this as a fact? tz = Europe/Paris", "Ship?"]
    proc.stdin.close()  # the client is gone, the person never answered
    assert proc.wait(timeout=10) == 0
    answers = {m["id"]: m["result"] for m in map(json.loads, proc.stdout.read().splitlines()) if "id" in m and "result" in m}
    assert answers[2]["structuredContent"]["status"] == "pending"
    assert answers[3]["structuredContent"]["error"]["code"] == "permission_denied"
    assert [r["status"] for r in look("elicit", "list", "d")] == ["pending"]
    assert look("memory", "list", "--all")[0]["confirmed"] is False


@pytest.mark.local_only("about the wire, not a backend")
def test_a_client_that_closes_stdout_stops_the_server_with_0_not_an_internal_error():
    """The client closes its end of stdout (gone) and a call is answered into the broken pipe: exit 0 as
    `durable ls | head -1` is, with a note; it was exit 1 "internal error: ExceptionGroup ..." (a bug, per §4)."""
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
                     b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n'
                     b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    proc.stdout.close()
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sessions_list","arguments":{}}}\n')
        proc.stdin.close()
    except BrokenPipeError:
        pass  # the server already stopped
    assert proc.wait(timeout=10) == 0
    err = proc.stderr.read().decode()
    assert "internal error" not in err and "Traceback" not in err and "closed stdout" in err


@pytest.mark.local_only("the request_state checks are the server's own")
def test_a_forged_request_state_or_an_oversized_answer_is_refused_and_stores_nothing():
    """A 2026-07-28 client resumes ask_human with request_state and input_responses it made up: a request id
    past 2^63-1 was an internal error (SQLite overflow), now exit 2; an answer over transcript.max_turn_bytes
    was stored as the person's answer, now exit 2 with the request still pending; so were 3 MB of choices."""
    import mcp_types as types

    look("session", "create", "d")
    request = look("elicit", "ask", "d", "--prompt", "Name the release?")

    async def main():
        async with client(MODERN) as c:
            for forged in (2 ** 64, 0, -1):
                r = await c.call_tool("ask_human", {"name": "d", "prompt": "Name the release?"},
                                      request_state=json.dumps({"request": forged}))
                error_of((r.is_error, r.structured_content), "invalid_input")
            many = [f"choice {i:07d}" for i in range(200_000)]  # 3 MB of choices, over the ceiling together
            r = await c.call_tool("ask_human", {"name": "d", "prompt": "Pick one", "choices": many})
            assert "max_turn_bytes" in error_of((r.is_error, r.structured_content), "invalid_input")["message"]
            huge = types.ElicitResult(action="accept", content={"answer": "x" * (2 * 1024 * 1024 + 1)})
            r = await c.call_tool("ask_human", {"name": "d", "prompt": "Name the release?"},
                                  request_state=json.dumps({"request": request["id"]}), input_responses={"answer": huge})
            assert "max_turn_bytes" in error_of((r.is_error, r.structured_content), "invalid_input")["message"]

    run(main)
    assert [(r["status"], r["answer"]) for r in look("elicit", "list", "d")] == [("pending", None)]


@pytest.mark.local_only("the rate's bounds are checked before anything is sent or opened")
def test_a_rate_beyond_2_63_is_refused_and_remaining_stays_within_the_bucket():
    """docs/reference/output.md §4: numbers beyond 2^63-1 are exit 2. limit_hit (and `durable limit hit`) with such a rate was exit 1
    "internal error: OverflowError"; at 2^63-1, remaining read 2^63 (a double's rounding), past the bucket."""
    async def main():
        async with client("legacy") as c:
            error_of(await call(c, "limit_hit", key="api", rate="99999999999999999999/1s"), "invalid_input")
            error_of(await call(c, "limit_hit", key="api", rate="9223372036854775808/1s"), "invalid_input")
            hit = (await call(c, "limit_hit", key="api", rate="9223372036854775807/1s"))[1]
            assert hit["allowed"] is True and hit["remaining"] <= 2 ** 63 - 1

    run(main)


@pytest.mark.local_only("about the protocol, not a backend")
def test_subscriptions_listen_refuses_what_resources_subscribe_refuses():
    """A 2026-07-28 client listening for an invalid NAME or a URI the server does not serve is refused, as a
    2025-11-25 client's resources/subscribe is (it was accepted, and never heard of); the server goes on."""
    import anyio
    from mcp.shared.exceptions import MCPError

    async def main():
        async with client(MODERN) as c:
            for uri, code in (("durable://session/%20padded/transcript", "invalid_input"), ("durable://elsewhere", "not_found")):
                with pytest.raises(MCPError) as refused, anyio.fail_after(10):
                    async with c.listen(resource_subscriptions=[uri]):
                        pass
                assert refused.value.error.data["error"]["code"] == code
            assert (await call(c, "sessions_list"))[1] == {"result": []}

    run(main)


@pytest.mark.local_only("about the server's threads, not a backend")
def test_calls_that_wait_do_not_starve_the_call_that_ends_their_wait():
    """Four session_next calls waiting for prompts took every worker thread: the session_prompt that would end
    one of the waits queued behind them until they timed out (30 s here), and the waiter got nothing."""
    import anyio

    for i in range(4):
        look("session", "create", f"q{i}")

    async def main():
        async with client("legacy") as c:
            taken = {}

            async def waiter(i):
                taken[i] = (await call(c, "session_next", name=f"q{i}", wait="30s"))[1]["content"]

            async with anyio.create_task_group() as tg:
                for i in range(4):
                    tg.start_soon(waiter, i)
                await anyio.sleep(1)  # all four are waiting
                started = time.monotonic()
                assert not (await call(c, "session_prompt", name="q0", text="wake"))[0]
                assert time.monotonic() - started < 5
                for i in range(1, 4):
                    await call(c, "session_prompt", name=f"q{i}", text="wake")
            assert taken == {i: "wake" for i in range(4)}

    run(main)


def test_tags_over_mcp():
    """docs/reference/mcp.md §14: session_create with tags, session_tag (tags, untag: the session object), sessions_list with
    tag (AND, as `ls --tag`); bad tags are the §4 JSON error with code invalid_input, and change nothing."""
    async def main():
        async with client("legacy") as c:
            bad, s = await call(c, "session_create", name="pr42", tags={"pr": "42", "team": "auth"})
            assert not bad and s["tags"] == {"pr": "42", "team": "auth"}, s
            assert not (await call(c, "session_create", name="other", tags={"team": "auth"}))[0]
            bad, s = await call(c, "session_tag", name="pr42", tags={"state": "review"}, untag=["team"])
            assert not bad and s["tags"] == {"pr": "42", "state": "review"} and s["name"] == "pr42", s

            async def listed(*tags):
                bad, doc = await call(c, "sessions_list", tag=list(tags))
                assert not bad, doc
                return sorted(r["name"] for r in doc["result"])

            assert await listed("pr=42") == ["pr42"]
            assert await listed("team") == ["other"]
            assert await listed("pr", "state=review") == ["pr42"]
            assert await listed("pr", "team") == []
            for arguments in ({"tags": {"x": ""}}, {"tags": {"_x": "1"}}, {"tags": {"a": "1"}, "untag": ["a"]},
                              {"untag": ["a", "a"]}, {"tags": {"x": "1\n"}}):
                assert error_of(await call(c, "session_tag", name="pr42", **arguments), "invalid_input")["exit_status"] == 2
            error_of(await call(c, "session_create", name="bad", tags={"k": " v"}), "invalid_input")
            error_of(await call(c, "sessions_list", tag=["_k"]), "invalid_input")
            error_of(await call(c, "sessions_list", tag=["k="]), "invalid_input")
            assert (await call(c, "session_show", name="pr42"))[1]["tags"] == {"pr": "42", "state": "review"}

    run(main)
    assert cli("session", "show", "bad").returncode == 3


def test_the_advertised_schemas_are_as_strict_as_the_server_and_every_result_has_one():
    """Each tool's input schema comes from the contract's args (and the checks they name): what it admits
    the server takes, and what the server refuses as bad input (exit 2) the schema refuses too (an empty or
    201-character name and a ttl of "soon" used to pass it). Each tool declares an output schema, which the
    SDK's client holds every result to."""
    import jsonschema

    cases = [
        ("session_create", {"name": "ok"}), ("session_create", {"name": ""}), ("session_create", {"name": "x" * 201}),
        ("session_create", {"name": " lead"}), ("session_create", {"name": "t1", "ttl": "soon"}),
        ("session_create", {"name": "t2", "ttl": "1h30m"}), ("session_create", {"name": "t3", "title": ""}),
        ("session_create", {"name": "t4", "title": "  "}), ("session_create", {"name": "t5", "title": "A title"}),
        ("session_prompt", {"name": "ok", "text": ""}), ("session_prompt", {"name": "ok", "text": "hi", "wait": "0"}),
        ("session_prompt", {"name": "ok", "text": "hi", "request_id": ""}),
        ("session_next", {"name": "ok", "lease": "0"}), ("session_next", {"name": "ok", "wait": "later"}),
        ("session_finish", {"name": "ok", "prompt_id": 1, "attempt": 0}),
        ("ask_human", {"name": "ok", "prompt": "Ship?", "choices": ["yes", "yes"]}),
        ("ask_human", {"name": "ok", "prompt": "Ship?", "choices": ["yes", ""]}),
        ("ask_human", {"name": "ok", "prompt": ""}), ("ask_human", {"name": "ok", "prompt": "Ship?", "request_id": ""}),
        ("memory_set", {"key": "", "value": "v"}), ("memory_set", {"key": "k", "value": ""}),
        ("memory_set", {"key": "k", "value": "v", "expires": "1d"}), ("memory_get", {"key": "x" * 201}),
        ("limit_hit", {"key": "k", "rate": "5/soon"}), ("limit_hit", {"key": "k", "rate": "0/1m"}),
        ("limit_hit", {"key": "k", "rate": "5/1m"}), ("transcript_search", {"query": "hi", "newer_than": "1 day"}),
        ("transcript_search", {"query": " "}), ("transcript_search", {"query": "PROJ-123"}),
        ("transcript_recent", {"name": "ok", "tokens": 100}),
        ("session_tag", {"name": "ok", "tags": {"_x": "1"}}), ("session_tag", {"name": "ok", "tags": {"x": " 1"}}),
        ("session_tag", {"name": "ok", "tags": {"x": ""}}), ("session_tag", {"name": "ok", "untag": ["-x"]}),
        ("session_tag", {"name": "ok", "tags": {"pr": "42"}, "untag": ["old"]}),
    ]

    async def main():
        async with client("legacy") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert all(t.output_schema is not None for t in tools.values()), [n for n, t in tools.items() if t.output_schema is None]
            outcomes = []
            for tool, arguments in cases:
                admitted = jsonschema.Draft202012Validator(tools[tool].input_schema).is_valid(arguments)
                is_error, doc = await call(c, tool, **arguments)  # a result is validated against the output schema
                refused = is_error and doc["error"]["code"] == "invalid_input"
                outcomes.append((tool, arguments, admitted, not refused))
            assert [o for o in outcomes if o[2] != o[3]] == []
            assert sum(o[2] for o in outcomes) == 9  # both kinds were tried

    run(main)


def raw_server():
    return subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


RAW_INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},'
            b'"clientInfo":{"name":"raw","version":"0"}}}')


@pytest.mark.local_only("about the wire, not a backend")
def test_every_request_with_an_id_is_answered_whatever_its_params():
    """docs/reference/mcp.md §14: a 250-level `_meta` (or any field outside a tool's arguments) in any method was dropped and the
    client waited for ever; so were NaN, a duplicate key and params that are not an object (or taken
    silently). Each is JSON-RPC -32602 carrying the §4 error; nesting within 200 levels is served; a
    notification so refused is dropped; nothing refused is stored."""
    def nested(depth):
        return '{"a":' * depth + "1" + "}" * depth

    def request(i, method, params):
        return ('{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}' % (i, method, params)).encode()

    append = '"name":"transcript_append","arguments":{"name":"s","role":"user","text":"t%d"}'
    lines = [
        RAW_INIT, b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        request(2, "tools/call", '{%s,"_meta":%s}' % (append % 2, nested(250))),
        request(3, "resources/read", '{"uri":"durable://sessions","_meta":%s}' % nested(250)),
        request(4, "resources/subscribe", '{"uri":"durable://sessions","_meta":%s}' % nested(5000)),
        request(5, "tools/list", '{"_meta":{"a":1,"a":2}}'),
        request(6, "tools/call", '{%s,"extra":[NaN]}' % (append % 6)),
        request(7, "tools/call", '"x"'),
        request(8, "ping", '{"deep":%s}' % nested(201)),
        request(9, "initialize", '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"},"x":%s}' % nested(300)),
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"_meta":%s}}' % nested(250).encode(),
        request(10, "tools/call", '{%s,"_meta":%s}' % (append % 10, nested(200))),  # within the rules: served
        request(11, "resources/read", '{"uri":"durable://sessions","_meta":%s}' % nested(199)),
    ]
    proc = raw_server()
    out, _ = proc.communicate(b"\n".join(lines) + b"\n", timeout=60)
    assert proc.returncode == 0
    messages = [json.loads(line) for line in out.splitlines()]
    answers = {m["id"]: m for m in messages if "id" in m}
    assert sorted(answers) == list(range(1, 12))
    assert {m["method"] for m in messages if "id" not in m} <= {"notifications/resources/list_changed"}  # every request answered, the notification not
    for i in (2, 3, 4, 5, 6, 7, 8, 9):
        error = answers[i]["error"]
        assert error["code"] == -32602, answers[i]
        assert error["data"]["error"]["code"] == "invalid_input" and error["data"]["error"]["exit_status"] == 2
        assert error["message"] == error["data"]["error"]["message"]
    assert "nested deeper than 200 levels" in answers[2]["error"]["message"] and "'_meta'" in answers[2]["error"]["message"]
    assert "appears twice" in answers[5]["error"]["message"]
    assert "NaN" in answers[6]["error"]["message"]
    assert answers[10]["result"]["isError"] is False and answers[11]["result"]["contents"]
    assert [r["content"] for r in look("transcript", "show", "s")] == ["t10"]  # the refused calls stored nothing


def test_the_list_of_resources_changes_are_sent_and_nothing_else_is_advertised(durable):
    """docs/reference/mcp.md §14: `resources.listChanged` was advertised and never sent: a session created or deleted from
    another process now reaches the client as notifications/resources/list_changed within a second, in
    both revisions; tools.listChanged (the tools never change) is not advertised."""
    import anyio

    def elsewhere(*args):
        assert cli(*args).returncode == 0
        return time.monotonic()

    async def legacy():
        heard = []
        got = anyio.Event()

        async def handler(message):
            if getattr(message, "method", None) == "notifications/resources/list_changed":
                heard.append(time.monotonic())
                got.set()

        async with client("legacy", None, message_handler=handler) as c:
            caps = c.server_capabilities
            assert caps.resources.list_changed is True and not caps.tools.list_changed
            await anyio.sleep(0.6)  # the server's first look
            for args in (("session", "create", "made-elsewhere"), ("delete", "made-elsewhere", "--yes")):
                got = anyio.Event()
                heard.clear()
                at = await anyio.to_thread.run_sync(elsewhere, *args)
                with anyio.fail_after(5):
                    await got.wait()
                assert heard[0] - at < 1.5

    async def modern():
        async with client("auto") as c:  # negotiates 2026-07-28 through server/discover
            caps = c.server_capabilities
            assert caps.resources.list_changed is True and not caps.tools.list_changed
            async with c.listen(resources_list_changed=True) as sub:
                await anyio.sleep(0.6)
                at = await anyio.to_thread.run_sync(elsewhere, "session", "create", "made-later")
                with anyio.fail_after(5):
                    async for event in sub:
                        assert type(event).__name__ == "ResourcesListChanged" and time.monotonic() - at < 1.5
                        break

    run(legacy)
    run(modern)


@pytest.mark.local_only("the wording of refusals, not a backend")
def test_refusals_name_the_tools_arguments_not_the_clis_options():
    """docs/reference/mcp.md §14: a refusal said `invalid --rate 'often'` to an MCP client, which has no --rate."""
    async def main():
        async with client("legacy") as c:
            said = [error_of(await call(c, "limit_hit", key="api", rate="often"), "invalid_input")["message"],
                    error_of(await call(c, "transcript_append", name="s", role="tool", text="x"), "invalid_input")["message"],
                    error_of(await call(c, "session_show", name="nope"), "not_found")["message"],
                    error_of(await call(c, "limit_hit", key="api", rate="1/1h", burst=0), "invalid_input")["message"]]
            assert said[0].startswith("invalid rate 'often'") and "call_id" in said[1] and "burst" in said[3]
            assert "'durable ls'" in said[2]  # a command to run stays as written
            for message in said:
                assert not re.search(r"--[a-z]", message.replace("'durable --tenant ORG mcp'", "")), message

    run(main)


@pytest.mark.local_only("the terminal, not a backend")
def test_on_a_terminal_it_says_it_is_serving_and_piped_it_says_nothing():
    """docs/reference/mcp.md §14: `durable mcp` run by hand printed nothing while it waited (a hang, to a person); with stderr on
    a terminal it keeps one status line there; with stderr piped (a client's log) nothing."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "mcp"], stdin=slave, stderr=slave, stdout=subprocess.PIPE)
    os.close(slave)
    screen, deadline = b"", time.monotonic() + 60
    while b"\n" not in screen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            screen += os.read(master, 4096)
    os.write(master, b"\x04")  # Ctrl-D: stdin's end
    assert proc.wait(timeout=30) == 0
    os.close(master)
    line = screen.decode().replace("\r", "")
    assert line.startswith("durable mcp: serving user alice, the data in ") and line.count("\n") == 1, line
    assert proc.stdout.read() == b""  # the wire stays clean
    piped = subprocess.run([sys.executable, "-m", "durable_cli", "mcp"], input=b"", capture_output=True, timeout=60)
    assert piped.returncode == 0 and piped.stderr == b"" and piped.stdout == b""
