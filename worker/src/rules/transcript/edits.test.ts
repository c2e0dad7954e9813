// Edits (rules/transcript/edits.ts): pop, clear, redact, prune and replace_tail, each recorded as an event.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../../test/sqlite";
import { DurableError, now } from "../state";
import { appendMany, clear, pop, prune, redact, replaceTail, show } from ".";
import { events } from "../sessions";

type Shown = { rows: { seq: number; content: string; tool_calls: unknown; data: unknown; tokens: number }[] };
const rows = (obj: ReturnType<typeof session>) => (show(obj, {}) as Shown).rows;

test("pop removes the newest rows and says which; an empty transcript has nothing to pop", () => {
  const obj = session();
  appendMany(obj, { rows: ["a", "b", "c"].map((content) => ({ role: "user", content })) });
  const popped = pop(obj, { count: 2 });
  assert.deepEqual(popped.map((r) => [r.seq, r.content]), [[3, "c"], [2, "b"]]);
  assert.deepEqual(rows(obj).map((r) => r.content), ["a"]);
  assert.equal(obj.meta()!.live_turns, 1);
  assert.deepEqual(clear(obj), { deleted: 1 });
  assert.throws(() => pop(obj, {}), (e) => e instanceof DurableError && e.code === "conflict");
  assert.deepEqual(events(obj, {}).map((e) => e.type).slice(-2), ["transcript.popped", "transcript.cleared"]);
});

test("redact keeps the row and its place but not its text, data or call arguments", () => {
  const obj = session();
  appendMany(obj, { rows: [{ role: "assistant", content: "my password is hunter2", data: { secret: 1 },
    tool_calls: [{ id: "c1", name: "login", arguments: '{"password": "hunter2"}' }] }, { role: "user", content: "ok" }] });
  const before = rows(obj)[0].tokens;
  redact(obj, { seq: 1 });
  const [r] = rows(obj);
  assert.equal(r.seq, 1);
  assert.doesNotMatch(JSON.stringify(r), /hunter2/);
  assert.equal(r.data, null);
  assert.ok(r.tokens < before);
  assert.throws(() => redact(obj, { seq: 9 }), (e) => e instanceof DurableError && e.code === "not_found");
});

test("prune deletes the rows older than the cutoff, keeping the pinned system prompt; a dry run deletes nothing", () => {
  const obj = session();
  appendMany(obj, { rows: [{ role: "system", content: "rules" }, { role: "user", content: "old" }] });
  obj.db.run("UPDATE turns SET created_at = ?", now() - 3600_000);
  appendMany(obj, { rows: [{ role: "user", content: "new" }] });
  assert.deepEqual(prune(obj, { older_than: 60, dry_run: true }), { deleted: 1, dry_run: true });
  assert.equal(rows(obj).length, 3);
  assert.deepEqual(prune(obj, { older_than: 60 }), { deleted: 1, dry_run: false });
  assert.deepEqual(rows(obj).map((r) => r.content), ["rules", "new"]);
});

test("replace_tail swaps the rows it expects, and changes nothing when the tail moved", () => {
  const obj = session();
  appendMany(obj, { rows: [{ role: "user", content: "q" }, { role: "assistant", content: "draft" }] });
  assert.equal(replaceTail(obj, { expected: [1, 2], rows: [{ role: "user", content: "q" }, { role: "assistant", content: "final" }] }), true);
  assert.deepEqual(rows(obj).map((r) => [r.seq, r.content]), [[3, "q"], [4, "final"]]);
  assert.equal(replaceTail(obj, { expected: [1, 2], rows: [{ role: "user", content: "lost" }] }), false);
  assert.deepEqual(rows(obj).map((r) => r.content), ["q", "final"]);
  assert.equal(obj.meta()!.live_turns, 2);
});
