// Summaries (rules/transcript/summaries.ts): a summary row stands for the rows it covers in the live transcript.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../../test/sqlite";
import { DurableError } from "../state";
import { appendMany, commitSummary, compact, contextWindow, planSummary, pop, show, summarize } from ".";

type Shown = { rows: { seq: number; role: string; content: string; kind: string; superseded_by: number | null; covers: number[] | null }[] };
const live = (obj: ReturnType<typeof session>) => (show(obj, {}) as Shown).rows.map((r) => r.content);
const code = (c: string) => (e: unknown) => e instanceof DurableError && e.code === c;

function talk(obj: ReturnType<typeof session>) {
  appendMany(obj, { rows: [{ role: "system", content: "be brief" }, { role: "user", content: "q1" }, { role: "assistant", content: "a1" },
    { role: "user", content: "q2" }, { role: "assistant", content: "a2" }] });
}

test("summarize covers the rows up to THROUGH after the pinned system prompt; pop brings them back", () => {
  const obj = session();
  talk(obj);
  const { summary, superseded } = summarize(obj, { through: 3, text: "asked q1, got a1" }) as { summary: Shown["rows"][0]; superseded: number };
  assert.equal(superseded, 2);
  assert.deepEqual([summary.role, summary.kind, summary.covers], ["system", "summary", [2, 3]]);
  assert.deepEqual(live(obj), ["be brief", "asked q1, got a1", "q2", "a2"]);
  assert.deepEqual((show(obj, { all_rows: true }) as Shown).rows.filter((r) => r.superseded_by !== null).map((r) => r.seq), [2, 3]);
  assert.equal(obj.meta()!.live_turns, 4);
  pop(obj, { count: 3 }); // a2, q2, then the summary: its rows are live again
  assert.deepEqual(live(obj), ["be brief", "q1", "a1"]);
});

test("a summary may not separate a tool call from its result", () => {
  const obj = session();
  appendMany(obj, { rows: [{ role: "user", content: "find it" }, { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "grep" }] },
    { role: "tool", content: "found", call_id: "c1" }, { role: "assistant", content: "here" }] });
  assert.throws(() => summarize(obj, { through: 2, text: "s" }), code("invalid_input"));
  summarize(obj, { through: 3, text: "s" });
  assert.deepEqual(live(obj), ["s", "here"]);
});

test("a plan is committed only while its rows are unchanged", () => {
  const obj = session();
  talk(obj);
  const plan = planSummary(obj, { through: 5 });
  pop(obj, {});
  assert.throws(() => commitSummary(obj, { ...plan, text: "late" }), code("conflict"));
  const again = planSummary(obj, { through: 4 });
  commitSummary(obj, { ...again, text: "fresh" });
  assert.deepEqual(live(obj), ["be brief", "fresh"]);
});

test("compact summarizes the oldest rows once over MAX tokens, keeping at least KEEP of the newest from a user turn", () => {
  const obj = session();
  const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");
  appendMany(obj, { rows: [{ role: "user", content: words(50) }, { role: "assistant", content: words(50) },
    { role: "user", content: words(50) }, { role: "assistant", content: words(50) }] });
  const total = obj.meta()!.live_tokens;
  assert.deepEqual(compact(obj, { max_tokens: total, keep_tokens: 1, text: "x" }), { summary: null, superseded: 0 });
  const done = compact(obj, { max_tokens: total - 1, keep_tokens: 10, text: "the first exchange" }) as { superseded: number };
  assert.equal(done.superseded, 2);
  assert.equal(live(obj)[0], "the first exchange");
  assert.ok(contextWindow(obj, {}).tokens < total);
});
