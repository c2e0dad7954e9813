// session fork (rules/fork.ts): a plan read from the source in pages, the copy made on NEW.
import { test } from "node:test";
import assert from "node:assert/strict";
import { open, storage } from "../../test/sqlite";
import { DurableError } from "./state";
import { forkCreate, forkPlan } from "./fork";
import { appendMany, pop, show } from "./transcript";

type Plan = { id: string; name: string; title: string | null; seq: number | null; rows: Record<string, unknown>[]; next: unknown };
const source = () => {
  const obj = open(storage(), "alice", { name: "src" });
  appendMany(obj, { rows: [{ role: "user", content: "q" }, { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "f" }] },
    { role: "tool", content: "r", call_id: "c1" }, { role: "assistant", content: "a", meta_json: '{"model":  "m"}' }] });
  return obj;
};

test("a fork copies the live rows up to AT, renumbered from 1, its JSON text as stored, and remembers its source", () => {
  const src = source();
  const plan = forkPlan(src, { at: 3, cursor: null }) as Plan;
  assert.deepEqual([plan.name, plan.seq, plan.rows.length, plan.next], ["src", 3, 3, null]);
  const fork = open(storage(), "bob", { name: "copy" });
  const made = forkCreate(fork, { source: plan, rows: plan.rows, title: "mine" });
  assert.deepEqual([made.owner, made.status, made.title, made.turns], ["bob", "created", "mine", 3]);
  const rows = (show(fork, { all_rows: true }) as { rows: { seq: number; role: string; forked_from: string }[] }).rows;
  assert.deepEqual(rows.map((r) => [r.seq, r.role]), [[1, "user"], [2, "assistant"], [3, "tool"]]);
  assert.ok(rows.every((r) => r.forked_from === src.id));
  const whole = forkPlan(src, {}) as Plan;
  assert.equal(whole.rows[3].meta_json, '{"model":  "m"}');
});

test("a fork may not separate a tool call from its result, nor land on an existing session", () => {
  const src = source();
  assert.throws(() => forkPlan(src, { at: 2 }), (e) => e instanceof DurableError && e.code === "invalid_input");
  const plan = forkPlan(src, {}) as Plan;
  const target = open(storage(), "alice", { name: "copy" });
  forkCreate(target, { source: plan, rows: plan.rows });
  assert.throws(() => forkCreate(target, { source: plan, rows: plan.rows }), (e) => e instanceof DurableError && e.code === "conflict");
});

test("a plan that is not the Worker's is refused, and a page after a rewrite asks for the fork again", () => {
  const src = source();
  const plan = forkPlan(src, {}) as Plan;
  assert.throws(() => forkCreate(open(storage()), { source: { ...plan, id: "nope" }, rows: plan.rows }), (e) => e instanceof DurableError && e.code === "invalid_input");
  const forged = plan.rows.map((r, i) => (i === 0 ? { ...r, kind: "summary" } : r));
  assert.throws(() => forkCreate(open(storage()), { source: plan, rows: forged }), (e) => e instanceof DurableError && e.code === "invalid_input");
  const cursor = { after: 1, cut: 4, seq: 4, events: 0 };
  pop(src, {});
  assert.throws(() => forkPlan(src, { cursor }), (e) => e instanceof DurableError && e.code === "conflict" && (e.document as { restart?: boolean })?.restart === true);
});
