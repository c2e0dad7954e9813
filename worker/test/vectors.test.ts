// durable_cli/contract/vectors.json run against the Worker's rules (tests/test_vectors.py runs it against
// durable_cli): the same input gives the same outcome, message included, in both languages.
import { test } from "node:test";
import assert from "node:assert/strict";
import vectors from "../../durable_cli/contract/vectors.json";
import { DurableError, validName } from "../src/rules/state";
import { checkInvite, validRequestId, validTitle } from "../src/rules/sessions";
import { checkAsk } from "../src/rules/elicit";
import { approx } from "../src/rules/tokens";
import { metaProblem, prepare } from "../src/rules/transcript";
import { field } from "../src/rules/verbatim";
import { quote, strip } from "../src/rules/text";

type Vector = { args: any[]; ok?: unknown; error?: string; message?: string };

function outcome(call: () => unknown): object {
  try {
    const ok = call();
    return { ok: ok === undefined ? null : ok };
  } catch (e) {
    if (!(e instanceof DurableError)) throw e;
    return { error: e.code, message: e.message };
  }
}

const obj: any = { config: { max_turn_bytes: 2 * 1024 * 1024 } };
const RULES: Record<string, (...a: any[]) => unknown> = {
  name: (s, what) => validName(s, what),
  user: (s, what) => validName(s, what),
  title: (s) => validTitle(s),
  request_id: (s) => validRequestId(s),
  invite: (user, role) => checkInvite(user, role),
  ask: (prompt, choices) => checkAsk(prompt, choices),
  quote: (s) => quote(s),
  approx: (s) => approx(s),
  row: (fields) => {
    const p = prepare(obj, fields, "line 1: ");
    return { role: p.role, content: p.content, tokens: p.tokens, call_id: p.call_id, name: p.name,
      tool_calls: p.tool_calls ? JSON.parse(p.tool_calls) : null };
  },
  field_text: (key, text) => {
    const lexemes = new Map<string, string>();
    const [value] = field({ [`${key}_json`]: text }, key, "", lexemes);
    const problem = key === "meta" ? metaProblem(value, lexemes) : null;
    if (problem !== null) throw new DurableError(problem, "invalid_input");
  },
};

for (const [rule, run] of Object.entries(RULES)) {
  test(`vectors: ${rule}`, () => {
    for (const v of (vectors as any)[rule] as Vector[]) {
      const { args, ...want } = v;
      assert.deepEqual(outcome(() => run(...args)), want, `${rule}(${JSON.stringify(args)})`);
    }
  });
}

test("vectors: approx over every code point to U+FFFF", () => {
  for (const [first, last, tokens] of (vectors as any).approx_code_points as number[][]) {
    for (let c = first; c <= last; c++) assert.equal(approx("a" + String.fromCharCode(c) + "b"), tokens, `U+${c.toString(16)}`);
  }
});

test("vectors: strip over every code point to U+FFFF", () => {
  for (const [first, last, stripped] of (vectors as any).strip_code_points as [number, number, boolean][]) {
    for (let c = first; c <= last; c++) assert.equal(strip(String.fromCharCode(c)) === "", stripped, `U+${c.toString(16)}`);
  }
});
