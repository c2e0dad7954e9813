"""An OpenAI Agents SDK agent whose session lives in durable (pip install 'durable-cli[openai-agents]').

    python examples/openai_agents_loop.py [SESSION_ID] [QUESTION...]

The model is scripted (no network, no key): asked "what is A+B?", it calls the `add` tool, then
answers with the tool's result. Put a real model name in `Agent(model=...)` to use OpenAI's.
Afterwards the conversation is an ordinary durable session:

    durable transcript recent SESSION_ID --format messages
    durable forget "$USER" --yes
"""

import asyncio
import re
import sys

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from durable_cli.integrations.openai_agents import DurableSession


class ScriptedModel(Model):
    """Decides from its input alone: a tool result pending an answer -> the answer; else a call of add."""

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None):
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        last = items[-1]
        turn = sum(1 for i in items if i.get("role") == "user")
        if last.get("type") == "function_call_output":
            text = f"The sum is {last['output']}."
            out = ResponseOutputMessage(id=f"msg_{turn}", type="message", role="assistant", status="completed",
                                        content=[ResponseOutputText(type="output_text", text=text, annotations=[])])
        else:
            a, b = (int(n) for n in re.findall(r"\d+", str(last.get("content")))[:2])
            out = ResponseFunctionToolCall(id=f"fc_{turn}", call_id=f"call_{turn}", type="function_call",
                                           name="add", arguments=f'{{"a": {a}, "b": {b}}}')
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("this scripted model answers Runner.run only")


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def main(session_id: str, questions) -> None:
    set_tracing_disabled(True)
    agent = Agent(name="calc", instructions="Add numbers with the add tool.", tools=[add], model=ScriptedModel())
    session = DurableSession(session_id)
    for question in questions:
        result = await Runner.run(agent, question, session=session)
        print(f"{question} -> {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "chat-42",
                     sys.argv[2:] or ["what is 2+2?", "and 40+2?", "then 7+8?"]))
