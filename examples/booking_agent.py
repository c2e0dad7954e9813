"""The seeds' consultation booking agent, as an MCP client of `durable mcp`, driven offline by a scripted model.

    pip install 'durable-cli[mcp]'
    python examples/booking_agent.py            # in a throw-away DURABLE_HOME unless one is set

Each user gets their own `durable --as USER mcp` server (one user per server, docs/reference/mcp.md §14): their preferences
are facts in their memory (remembered by the model, unconfirmed until the person confirms them), the
availability the agent looked up is rows in their session, a booking is written in one transaction
(`transcript_append` with rows: the tool call, its result and the reply, all or none), a slot outside
business hours needs the person's yes (`ask_human`, stored first), and a per-user rate limit
(`limit_hit`) refuses the fourth booking within an hour. The "model" is a script: no network, no keys.

Prints one line per step; exits 0.
"""

import json
import os
import sys
import tempfile

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

BUSINESS_HOURS = range(9, 17)  # a slot starting 09:00-16:00 needs no confirmation
RATE = "3/1h"  # bookings per user


def availability(day):
    """The calendar the agent looks up (a tool it calls; here, a fixed one)."""
    return [f"{day} {h:02d}:00" for h in (10, 14, 18, 19)]


class ScriptedModel:
    """Offline stand-in for a model: given the user's request, the tool calls a model would make."""

    def plan(self, request):
        day, hour = request["day"], request["hour"]
        return {"slot": f"{day} {hour:02d}:00", "remember": request.get("remember")}


class Person:
    """The person at the client: confirms remembered preferences, and says yes to an evening slot."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    async def __call__(self, ctx, params):
        self.log(f"{self.name} is asked: {params.message}")
        choices = params.requested_schema.get("properties", {}).get("answer", {}).get("enum")
        return types.ElicitResult(action="accept", content={"answer": "yes"} if choices else {})


async def tool(client, tool_name, **arguments):
    result = await client.call_tool(tool_name, arguments)
    if result.is_error:
        return None, result.structured_content["error"]
    return result.structured_content, None


async def book(client, user, request, model, log):
    """One booking: limit, preferences, availability, confirmation, then the booking in one transaction."""
    session = f"consult-{user}"
    _, refused = await tool(client, "limit_hit", key="booking", rate=RATE)
    if refused:
        log(f"{user}: refused, {refused['code']}: retry after {refused['retry_after']}s")
        return None
    plan = model.plan(request)
    if plan["remember"]:
        key, value = plan["remember"]
        await tool(client, "memory_set", key=key, value=value)  # stored as source model, unconfirmed
        fact, _ = await tool(client, "memory_confirm", key=key)  # the person vouches for it, or not
        log(f"{user}: remembered {key}={value} (confirmed: {fact['confirmed']})")
    prefs, _ = await tool(client, "memory_list")
    channel = next((f["value"] for f in prefs["result"] if f["key"] == "channel"), "video")

    slots = availability(request["day"])
    await tool(client, "transcript_append", name=session, rows=[
        {"role": "user", "content": f"Book a consultation on {plan['slot']}"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"avail-{plan['slot']}", "name": "check_availability", "arguments": json.dumps({"day": request["day"]})}]},
        {"role": "tool", "call_id": f"avail-{plan['slot']}", "name": "check_availability",
         "content": ", ".join(slots), "data": {"slots": slots}},
    ])
    if plan["slot"] not in slots:
        log(f"{user}: {plan['slot']} is not free")
        return None
    if int(plan["slot"][-5:-3]) not in BUSINESS_HOURS:
        answer, _ = await tool(client, "ask_human", name=session, prompt=f"Book {plan['slot']}, outside business hours?",
                               choices=["yes", "no"], request_id=f"confirm {plan['slot']}")
        if answer["answer"] != "yes":
            log(f"{user}: {plan['slot']} not confirmed ({answer['status']})")
            return None
    booking = {"slot": plan["slot"], "channel": channel, "user": user}
    rows, _ = await tool(client, "transcript_append", name=session, request_id=f"book {plan['slot']}", rows=[
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"book-{plan['slot']}", "name": "book_slot", "arguments": json.dumps(booking)}]},
        {"role": "tool", "call_id": f"book-{plan['slot']}", "name": "book_slot", "content": "booked", "data": booking},
        {"role": "assistant", "content": f"Booked {plan['slot']} ({channel}).", "meta": {"model": "scripted"}},
    ])
    log(f"{user}: booked {plan['slot']} ({channel}) in rows {rows['result'][0]['seq']}-{rows['result'][-1]['seq']}")
    return booking


async def serve_user(user, requests, log):
    params = StdioServerParameters(command=sys.executable, args=["-m", "durable_cli", "--as", user, "mcp"],
                                   env={k: v for k, v in os.environ.items() if k.startswith("DURABLE_")})
    async with Client(params, mode="legacy", elicitation_callback=Person(user, log)) as client:
        await tool(client, "session_create", name=f"consult-{user}", title=f"Consultations of {user}")
        model = ScriptedModel()
        for request in requests:
            await book(client, user, request, model, log)


async def main():
    lines = []

    def log(line):
        lines.append(line)
        print(line, flush=True)

    alice = [{"day": "2026-12-08", "hour": 10, "remember": ("channel", "phone")},
             {"day": "2026-12-08", "hour": 19},  # outside business hours: the person is asked
             {"day": "2026-12-09", "hour": 14},
             {"day": "2026-12-10", "hour": 10}]  # the fourth within the hour: rate limited
    bob = [{"day": "2026-12-08", "hour": 14}]
    async with anyio.create_task_group() as tg:  # one server per user, side by side
        tg.start_soon(serve_user, "alice", alice, log)
        tg.start_soon(serve_user, "bob", bob, log)
    return lines


if __name__ == "__main__":
    if "DURABLE_HOME" not in os.environ:
        os.environ["DURABLE_HOME"] = tempfile.mkdtemp(prefix="durable-booking-")
        os.environ.setdefault("DURABLE_CONFIG", os.path.join(tempfile.mkdtemp(prefix="durable-booking-config-"), "config.toml"))
    anyio.run(main)
