// Appending rows (rules/transcript/appends.ts): one transaction, all or none; a request id replayed returns what it made.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../../test/sqlite";
import { DurableError } from "../state";
import { appendMany, show } from ".";
import * as sessions from "../sessions";

type Row = { seq: number; role: string; content: string; author: string };
const contents = (obj: ReturnType<typeof session>) => (show(obj, {}) as { rows: Row[] }).rows.map((r) => r.content);

test("a batch is stored whole or not at all: one bad row refuses the batch, naming it", () => {
  const obj = session();
  const made = appendMany(obj, { rows: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }] }) as Row[];
  assert.deepEqual(made.map((r) => [r.seq, r.role, r.author]), [[1, "user", "alice"], [2, "assistant", "alice"]]);
  assert.throws(() => appendMany(obj, { rows: [{ role: "user", content: "c" }, { role: "nobody", content: "d" }] }),
    (e) => e instanceof DurableError && e.code === "invalid_input" && /^row 2: /.test(e.message));
  assert.deepEqual(contents(obj), ["a", "b"]);
  assert.throws(() => appendMany(obj, { rows: [] }), (e) => e instanceof DurableError && e.code === "invalid_input");
});

test("a request id replayed answers the rows it made, once; reused for other rows it is a conflict", () => {
  const obj = session();
  const rows = [{ role: "user", content: "q" }, { role: "assistant", content: "a" }];
  const first = appendMany(obj, { rows, request_id: "r-1" }) as Row[];
  const again = appendMany(obj, { rows, request_id: "r-1" }) as Row[];
  assert.deepEqual(again, first);
  assert.deepEqual(contents(obj), ["q", "a"]);
  assert.throws(() => appendMany(obj, { rows: [{ role: "user", content: "other" }], request_id: "r-1" }),
    (e) => e instanceof DurableError && e.code === "conflict");
  assert.deepEqual(appendMany(obj, { rows: [{ role: "user", content: "n" }], seqs_only: true }), [3]);
});

test("an append creates the session unless told not to, and an archived session takes no rows", () => {
  const missing = session();
  assert.throws(() => appendMany(missing, { rows: [{ role: "user", content: "x" }], create: false }),
    (e) => e instanceof DurableError && e.code === "not_found");
  const obj = session();
  appendMany(obj, { rows: [{ role: "user", content: "x" }], origin: ["thread-9", "openai-agents"] });
  assert.deepEqual([obj.meta()!.status, obj.meta()!.external_id, obj.meta()!.adapter], ["active", "thread-9", "openai-agents"]);
  sessions.archive(obj);
  assert.throws(() => appendMany(obj, { rows: [{ role: "user", content: "y" }] }), (e) => e instanceof DurableError && e.code === "conflict");
});
