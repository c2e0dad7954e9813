// durable_cli/contract/vectors.json run against the Worker's rules (tests/test_vectors.py runs it against
// durable_cli): the same input gives the same outcome, message included, in both languages.
import { test } from "node:test";
import assert from "node:assert/strict";
import vectors from "../../durable_cli/contract/vectors.json";
import { DurableError, say, validName } from "../src/rules/state";
import { checkInvite } from "../src/rules/sessions";
import { validRequestId, validTitle } from "../src/rules/lifecycle";
import { checkAsk } from "../src/rules/elicit";
import { approx } from "../src/rules/tokens";
import { COLS, choose, metaProblem, pinnedPrefix, prepare } from "../src/rules/transcript";
import { field } from "../src/rules/verbatim";
import { quote, strip } from "../src/rules/text";
import { searchMatch } from "../src/rules/rights";
import { validChange } from "../src/rules/tags";
import * as durations from "../src/rules/durations";
import * as schedules from "../src/rules/schedules";
import { validUrl } from "../src/rules/hooks";
import { sign } from "../src/deliver";
import { checkKey, stdoutOf, stepId } from "../src/rules/steps";
import { blobText } from "../src/rules/rights";

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
  tag_change: (set, untag) => validChange(set, untag),
  invite: (user, role) => checkInvite(user, role),
  ask: (prompt, choices) => checkAsk(prompt, choices),
  quote: (s) => quote(s),
  approx: (s) => approx(s),
  say: (code, values) => say(code, values),
  search_query: (q) => searchMatch(q),
  duration: (s) => durations.parse(s),
  // docs/reference/sessions.md §5.3: croner's due times are cronsim's (the next five after a time), refusals alike
  cron: (expr, tz, after) => {
    const fields = schedules.validCron(expr);
    const zone = schedules.validTz(tz);
    const t = schedules.parseTime(after);
    const times: string[] = [];
    for (const ms of schedules.cronTimes(fields, zone, t)) {
      if (!times.length && ms > t + 3653 * 86400 * 1000) break;
      times.push(new Date(ms).toISOString());
      if (times.length === 5) break;
    }
    if (!times.length) throw new DurableError("no due time in the next 10 years", "invalid_input");
    return times;
  },
  schedule: (now, options) => {
    const p = schedules.plan(schedules.parseTime(now), options);
    return { ...p, at: p.at === null ? null : new Date(p.at).toISOString(), next_at: new Date(p.next_at).toISOString() };
  },
  hook_url: (url) => validUrl(url, false), // the client's rules (the Worker's own refusal of local hosts: hooks.test.ts)
  step_key: (k) => checkKey(k),
  step_id: (objectId, promptId, key) => stepId(objectId, promptId, key),
  step_stdout: (key, stdout, size, tooLarge) => {
    const data = stdoutOf(key, stdout, size, tooLarge);
    return data === null ? null : (blobText(data) as string).slice(0, 64);
  },
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

/** The stored rows a transcript of FIELDS would hold (seq = pos = 1, 2, ...), in COLS order (gen_vectors.py window_rows). */
function windowRows(fields: any[]): any[][] {
  const names = COLS.split(",").map((c) => c.trim());
  return fields.map((given, n) => {
    const i = n + 1;
    const { kind = "turn", ...f } = given;
    const p = prepare(obj, f, `line ${i}: `);
    const values: Record<string, unknown> = { seq: i, role: p.role, content: p.content, tokens: p.tokens, author: "alice", created_at: 0,
      kind, superseded_by: null, covers_first: kind === "summary" ? 1 : null, covers_last: kind === "summary" ? i - 1 : null,
      call_id: p.call_id, pos: i, tool_calls: p.tool_calls, name: p.name, meta: null, data: null, forked_from: null };
    return names.map((c) => values[c]);
  });
}

test("vectors: window (the rows chosen; the formats are rendered by the Python client for both backends)", () => {
  for (const v of (vectors as any).window as (Vector & { formats?: unknown })[]) {
    const { args: [fields, options], formats: _formats, ...want } = v;
    const got = outcome(() => {
      const rows = windowRows(fields);
      const pin = pinnedPrefix(rows);
      const { rows: chosen, tokens } = choose(pin, rows.slice(pin.length).reverse(), options.budget, options.limit ?? null, options.keep ?? null);
      return { seqs: chosen.map((r) => r[0]), tokens };
    });
    assert.deepEqual(got, want, `window(${JSON.stringify(v.args)})`);
  }
});

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

test("vectors: signature (Standard Webhooks, as deliver.py signs)", async () => {
  for (const v of (vectors as any).signature as Vector[]) {
    const [secret, id, timestamp, body] = v.args;
    assert.equal(await sign(secret, id, timestamp, body), v.ok, JSON.stringify(v.args));
  }
});
