#!/usr/bin/env python3
"""A tool-using agent for `durable work --command 'python3 examples/tool_agent.py'` (docs/reference/sessions.md §5.1).

It reads the prompt document (JSON, with its context window) on stdin, "calls" a tool, and prints the
turn as JSONL rows: the assistant's tool call, the tool's result, then the final answer with its usage.
`durable work` appends them and finishes the prompt in one transaction. Swap the fake model for a real
one: the rows are what an OpenAI/Anthropic tool loop produces.
"""

import json
import sys

doc = json.load(sys.stdin)
question = doc["content"]
call = {"id": "call_1", "name": "word_count", "arguments": json.dumps({"text": question})}
result = str(len(question.split()))
for row in (
    {"role": "assistant", "content": "", "tool_calls": [call]},
    {"role": "tool", "call_id": "call_1", "name": "word_count", "content": result},
    {"role": "assistant", "content": f"Your prompt has {result} words.",
     "meta": {"model": "fake-tool-model", "usage": {"input_tokens": len(question) // 4 + 1, "output_tokens": 6}}},
):
    print(json.dumps(row))
