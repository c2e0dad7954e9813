// Export and import (rules/rights.ts): an object's record, checked field by field, and written back all or nothing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { open, session, storage } from "../../test/sqlite";
import { DurableError } from "./state";
import { Content, checkContent, dump, exportObject, importObject } from "./rights";
import { appendMany, show } from "./transcript";
import * as sessions from "./sessions";
import * as memory from "./memory";

/** The record's content, as import takes it: the tables (and sequences) without the export's head. */
function contentOf(obj: ReturnType<typeof session>): Content {
  const { format: _f, version: _v, id: _i, scope: _s, owner: _o, name: _n, ...content } = dump(obj) as Record<string, unknown>;
  return content;
}

const invalidAt = (where: RegExp) => (e: unknown) => e instanceof DurableError && e.code === "invalid_input" && where.test(e.message);

function filled() {
  const obj = session();
  sessions.prompt(obj, { content: "hello", created: true });
  appendMany(obj, { rows: [{ role: "assistant", content: "hi", meta_json: '{"usage": {"input_tokens": 3, "output_tokens": 4}}' }] });
  return obj;
}

test("an object's record imports into an empty object as the same object", () => {
  const obj = filled();
  const record = contentOf(obj);
  const copy = open(storage());
  importObject(copy, { record, all_users: false });
  assert.deepEqual(show(copy, { all_rows: true }), show(obj, { all_rows: true }));
  assert.deepEqual(sessions.queue(copy, {}), sessions.queue(obj, {}));
  assert.deepEqual(contentOf(copy), record);
  const again = importObject(copy, { record, all_users: false }) as Record<string, unknown>;
  assert.ok("already" in again); // the same record again changes nothing
});

test("export pages join into the record dump makes", () => {
  const obj = filled();
  const first = exportObject(obj, { all_users: false }) as { head: Record<string, unknown>; tables: Record<string, unknown[]>; next: unknown };
  assert.equal(first.head.name, "s");
  assert.equal(first.tables.turns.length, 1);
  assert.deepEqual(first.next, null);
  assert.throws(() => exportObject(obj, { cursor: { t: 99 }, all_users: false }), invalidAt(/cursor/));
});

test("a record is checked field by field, naming the field", () => {
  const record = contentOf(filled());
  const address = { id_scope: "user", owner: "alice", name: "s" };
  checkContent(record, address, 1 << 20);
  const broken = (change: (r: Content) => void) => {
    const r = structuredClone(record);
    change(r);
    return () => checkContent(r, address, 1 << 20);
  };
  assert.throws(broken((r) => { r.turns[0].role = "robot"; }), invalidAt(/turns\[0\]\.role/));
  assert.throws(broken((r) => { r.turns.push({ ...r.turns[0] }); }), invalidAt(/turns\[1\]\.seq/));
  assert.throws(broken((r) => { r.object.name = "other"; }), invalidAt(/object/));
  assert.throws(broken((r) => { r.turns[0].meta = '{"a": 1, "a": 2}'; }), invalidAt(/turns\[0\]\.meta/));
  assert.throws(broken((r) => { r.surprise = []; }), invalidAt(/surprise/));
  assert.throws(() => checkContent(record, address, 10), invalidAt(/turns\[0\]/)); // over the turn ceiling
});

test("a user's memory is reserved: no participants, no turns", () => {
  const mem = open(storage(), "alice", { id_scope: "reserved", name: "", scope: "reserved" });
  memory.setFact(mem, { key: "lang", value: "fr" });
  const record = contentOf(mem);
  const address = { id_scope: "reserved", owner: "alice", name: "" };
  checkContent(record, address, 1 << 20);
  assert.throws(() => checkContent({ ...record, participants: [{ user: "alice", role: "owner", joined_at: 1 }] }, address, 1 << 20), invalidAt(/participants/));
});
