// durable's JSON (rules/strict.ts): RFC 8259 as JSON.parse does not enforce it (docs/reference/transcript.md §6).
import { test } from "node:test";
import assert from "node:assert/strict";
import { DurableError } from "./state";
import { MAX_DEPTH, parse, scan, tooDeep } from "./strict";

const refused = (e: unknown) => e instanceof DurableError && e.code === "invalid_input";

test("a duplicate key, a number out of range and nesting past 200 levels are refused, naming the field", () => {
  assert.deepEqual(parse('{"a": [1, 2.5, "x"], "b": null}', "data"), { a: [1, 2.5, "x"], b: null });
  assert.throws(() => parse('{"a": 1, "a": 2}', "data"), (e) => refused(e) && /data/.test((e as Error).message));
  assert.throws(() => parse('{"outer": {"k": 1, "k": 1}}', "meta"), refused);
  assert.throws(() => parse("1e400", "data"), refused);
  assert.throws(() => parse("[" .repeat(MAX_DEPTH + 1) + "]".repeat(MAX_DEPTH + 1), "data"), refused);
  assert.deepEqual(parse("[".repeat(MAX_DEPTH) + "]".repeat(MAX_DEPTH), "data") !== undefined, true);
  assert.throws(() => parse("{'a': 1}", "data"), refused);
});

test("the same key in two objects is not a duplicate; a lone surrogate escape is refused in a request body", () => {
  assert.equal(scan('[{"k": 1}, {"k": 2}]'), null);
  assert.equal(scan('{"s": "\\ud800"}'), null); // in stored data: as Python's json reads it
  assert.notEqual(scan('{"s": "\\ud800"}', MAX_DEPTH, undefined, true), null);
  assert.equal(scan('{"s": "\\ud83d\\ude00"}', MAX_DEPTH, undefined, true), null); // a pair is a character
});

test("lexemes keep a number as it was written, so 5.0 is told from 5", () => {
  const lexemes = new Map<string, string>();
  parse('{"usage": {"input_tokens": 5.0, "output_tokens": 7}, "cost_usd": 1e-3}', "meta", lexemes);
  assert.equal(lexemes.get("usage.input_tokens"), "5.0");
  assert.equal(lexemes.get("usage.output_tokens"), "7");
  assert.equal(lexemes.get("cost_usd"), "1e-3");
});

test("tooDeep counts the levels of a parsed value", () => {
  let v: unknown = 1;
  for (let i = 0; i < MAX_DEPTH; i++) v = [v];
  assert.equal(tooDeep(v), false);
  assert.equal(tooDeep([v]), true);
  assert.equal(tooDeep({ a: { b: [] } }, 2), true);
});
