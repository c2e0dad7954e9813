// The step journal over a real SQLite (../../test/sqlite.ts): what core/steps.py promises (docs/reference/sessions.md §5.2),
// with liveness judged by this object's clock (Date.now here, as in the Durable Object).
import { test } from "node:test";
import assert from "node:assert/strict";
import { open, storage } from "../../test/sqlite";
import { DurableError } from "./state";
import * as sessions from "./sessions";
import * as steps from "./steps";

const code = (c: string) => (e: unknown) => e instanceof DurableError && e.code === c;
const T1 = "a".repeat(32);
const T2 = "b".repeat(32);

function started() {
  const obj = open(storage(), "alice");
  sessions.create(obj, {});
  sessions.prompt(obj, { content: "charge the card" });
  sessions.nextPrompt(obj, { lease_seconds: 3600 });
  return obj;
}

test("a step is reserved, committed once, then replayed with its bytes; a second caller waits while it is live", () => {
  const obj = started();
  assert.equal(steps.begin(obj, { key: "pay", token: T1 }).action, "run");
  assert.equal(steps.begin(obj, { key: "pay", token: T2 }).action, "wait");
  const done = steps.commit(obj, { prompt_id: 1, key: "pay", token: T1, start: 1, exit_status: 3, stdout_bytes: 5, stdout: "YQBi/wo=" });
  assert.deepEqual([done.status, done.exit_status, done.stdout, done.stdout_base64], ["done", 3, null, "YQBi/wo="]);
  const again = steps.begin(obj, { key: "pay", token: T2 });
  assert.deepEqual([again.action, again.step!.replays, again.step!.stdout_base64], ["replay", 1, "YQBi/wo="]);
  assert.throws(() => steps.commit(obj, { prompt_id: 1, key: "pay", token: T1, start: 1, exit_status: 0, stdout_bytes: 0 }), code("conflict"));
});

test("a commit over 1 MiB not marked output_too_large is refused and changes nothing", () => {
  const obj = started();
  steps.begin(obj, { key: "big", token: T1 });
  const over = btoa("x".repeat(steps.MAX_STDOUT + 1));
  assert.throws(() => steps.commit(obj, { prompt_id: 1, key: "big", token: T1, start: 1, exit_status: 0, stdout_bytes: steps.MAX_STDOUT + 1, stdout: over }),
    code("invalid_input"));
  assert.equal(steps.listing(obj, {}).rows[0].status, "running");
  const marked = steps.commit(obj, { prompt_id: 1, key: "big", token: T1, start: 1, exit_status: 0, stdout_bytes: steps.MAX_STDOUT + 1, output_too_large: true });
  assert.deepEqual([marked.output_too_large, marked.stdout_base64], [true, null]);
  assert.throws(() => steps.begin(obj, { key: "big", token: T2 }), code("invalid_input"));
});

test("a step not renewed for 30 s by the object's clock reads as abandoned, and the next caller runs it", (t) => {
  const obj = started();
  steps.begin(obj, { key: "slow", token: T1 });
  const at = Date.now();
  t.mock.method(Date, "now", () => at + steps.LIVE_MS - 1000);
  steps.renew(obj, { prompt_id: 1, key: "slow", token: T1, start: 1 });
  t.mock.method(Date, "now", () => at + 2 * steps.LIVE_MS - 1500);
  assert.equal(steps.begin(obj, { key: "slow", token: T2 }).action, "wait"); // renewed 29.5 s ago
  t.mock.method(Date, "now", () => at + 2 * steps.LIVE_MS);
  assert.equal(steps.listing(obj, {}).rows[0].status, "abandoned");
  assert.equal(steps.begin(obj, { key: "slow", token: T2 }).action, "run");
  assert.throws(() => steps.renew(obj, { prompt_id: 1, key: "slow", token: T1, start: 1 }), code("conflict")); // no longer T1's
  assert.equal(steps.listing(obj, {}).rows[0].runs, 2);
});
