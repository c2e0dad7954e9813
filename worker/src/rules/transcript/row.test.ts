// One input row checked as a whole (rules/transcript/row.ts), as core/transcript/row.py checks it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../../test/sqlite";
import { DurableError } from "../state";
import { metaProblem, prepare, toolCalls } from "./row";

const refused = (words: RegExp) => (e: unknown) => e instanceof DurableError && e.code === "invalid_input" && words.test(e.message);

test("tool calls belong to an assistant row, a tool row names its call, and arguments default to {}", () => {
  const obj = session();
  const p = prepare(obj, { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "grep" }] });
  assert.equal(p.tool_calls, '[{"id":"c1","name":"grep","arguments":"{}"}]');
  assert.throws(() => prepare(obj, { role: "user", content: "x", tool_calls: [{ id: "c1", name: "grep" }] }), refused(/assistant/));
  assert.throws(() => prepare(obj, { role: "tool", content: "out" }), refused(/call/));
  assert.equal(prepare(obj, { role: "tool", content: "out", call_id: "c1", name: "grep" }).call_id, "c1");
  assert.throws(() => prepare(obj, { role: "user", content: "x", call_id: "c1" }), refused(/call/));
  assert.throws(() => toolCalls([{ id: "c1", name: "a" }, { id: "c1", name: "b" }], ""), refused(/c1/));
  assert.throws(() => prepare(obj, { role: "robot", content: "x" }), refused(/robot/));
});

test("JSON fields are stored as the text given, tokens are estimated unless given, and a row over the ceiling is refused", () => {
  const obj = session("alice", {}, { max_turn_bytes: 1000 });
  const p = prepare(obj, { role: "user", content: "hello world", meta_json: '{"model":"m",  "usage":{"input_tokens":3,"output_tokens":4}}' });
  assert.equal(p.meta, '{"model":"m",  "usage":{"input_tokens":3,"output_tokens":4}}'); // verbatim, spaces kept
  assert.ok(p.tokens > 0);
  assert.equal(prepare(obj, { role: "user", content: "hello", tokens: 42 }).tokens, 42);
  assert.throws(() => prepare(obj, { role: "user", content: "x".repeat(1001) }), refused(/1000/));
  assert.throws(() => prepare(obj, { role: "user", content: "" }), refused(/empty|content/));
  assert.throws(() => prepare(obj, { role: "user", content: "x", meta: { a: 1 }, meta_json: "{}" }), refused(/not both/));
});

test("meta's usage counts are integers written as integers, its cost a number", () => {
  assert.equal(metaProblem({ model: "m", usage: { input_tokens: 1, output_tokens: 2 }, cost_usd: 0.01 }), null);
  assert.notEqual(metaProblem({ usage: { input_tokens: 1 } }), null); // output_tokens missing
  assert.notEqual(metaProblem({ usage: { input_tokens: -1, output_tokens: 0 } }), null);
  assert.notEqual(metaProblem({ model: 7 }), null);
  assert.notEqual(metaProblem({ usage: { input_tokens: 5, output_tokens: 0 } }, new Map([["usage.input_tokens", "5.0"]])), null);
  assert.notEqual(metaProblem([]), null);
});
