// Reads (rules/transcript/reads.ts): show's pages join into one consistent listing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../../test/sqlite";
import { DurableError } from "../state";
import { appendMany, rowsAfter, show, storedRows, summarize } from ".";
import { PAGE_BYTES } from "./reads";

type Page = { rows: { seq: number; content: string }[]; next: unknown };

test("pages end at PAGE_BYTES and the next pages list no row written after the first page", () => {
  const obj = session();
  const text = "x".repeat(PAGE_BYTES / 4);
  appendMany(obj, { rows: Array.from({ length: 10 }, (_, i) => ({ role: "user", content: `${i}${text}` })) });
  const first = show(obj, {}) as Page;
  assert.equal(first.rows.length, 4);
  appendMany(obj, { rows: [{ role: "user", content: "written while paging" }] });
  const seen = [...first.rows];
  for (let page = first; page.next !== null;) {
    page = show(obj, { cursor: page.next }) as Page;
    seen.push(...page.rows);
  }
  assert.deepEqual(seen.map((r) => r.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.throws(() => show(obj, { cursor: { after: "x" } }), (e) => e instanceof DurableError && e.code === "invalid_input");
});

test("--last N is the newest N live rows in logical order; --all lists the covered rows too, in seq order", () => {
  const obj = session();
  appendMany(obj, { rows: ["a", "b", "c", "d"].map((content) => ({ role: "user", content })) });
  summarize(obj, { through: 2, text: "ab" });
  assert.deepEqual((show(obj, { last: 2 }) as Page).rows.map((r) => r.content), ["c", "d"]);
  assert.deepEqual((show(obj, { last: 9 }) as Page).rows.map((r) => r.content), ["ab", "c", "d"]);
  assert.deepEqual((show(obj, { all_rows: true }) as Page).rows.map((r) => r.content), ["a", "b", "c", "d", "ab"]);
  assert.deepEqual((show(obj, { since: 3 }) as Page).rows.map((r) => r.content), ["ab", "d"]);
  assert.throws(() => show(obj, { last: 1, all_rows: true }), (e) => e instanceof DurableError && e.code === "invalid_input");
  const [after, status] = rowsAfter(obj, { seq: 3 }) as [{ seq: number }[], string];
  assert.deepEqual([after.map((r) => r.seq), status], [[4, 5], "active"]);
});

test("stored rows give an adapter the JSON fields as the text stored", () => {
  const obj = session();
  appendMany(obj, { rows: [{ role: "assistant", content: "", data_json: '{"b": 1,  "a": 2}', tool_calls: [{ id: "c", name: "f" }] }] });
  const page = storedRows(obj, {}) as { rows: unknown[][] };
  assert.deepEqual(page.rows[0], ['{"b": 1,  "a": 2}', "assistant", "turn", "", null, '[{"id":"c","name":"f","arguments":"{}"}]']);
});
