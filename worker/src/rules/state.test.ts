// The storage layer every rule stands on (rules/state.ts), over a real SQLite: Cloudflare's SQL limits are
// enforced here, and a value over one row's limit is stored in chunks and read back whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session, storage } from "../../test/sqlite";
import { DurableError, createObject, guardSql, sessionJson, validName } from "./state";

const storageError = (e: unknown) => e instanceof DurableError && e.code === "storage";

test("a text over one Cloudflare row is stored in chunks and every read gets it back whole", () => {
  const db = storage();
  db.run("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)");
  const big = "é".repeat(1_100_000) + "𝄞" + "x".repeat(10); // 2.2 MB of UTF-8: over 2,000,000 bytes
  db.run("INSERT INTO t (k, v) VALUES (1, ?)", big);
  const stored = db.one("SELECT length(v) FROM t")![0];
  assert.ok(stored < 100, "the row holds a marker, not the text");
  assert.ok(db.one("SELECT count(*) FROM _durable_chunks")![0] >= 2);
  assert.equal(db.one("SELECT v FROM t")![0], big);
  assert.equal(db.dicts("SELECT k, v FROM t")[0].v, big);
  assert.equal([...db.iter("SELECT v FROM t")][0][0], big);
});

test("a statement over Cloudflare's limits is refused before it reaches storage", () => {
  assert.throws(() => guardSql("SELECT 1", new Array(101).fill(1)), storageError);
  assert.throws(() => guardSql("SELECT '" + "x".repeat(100_001) + "'", []), storageError);
  assert.throws(() => guardSql("SELECT ?", ["é".repeat(1_000_001)]), storageError); // 2,000,002 bytes
  guardSql("SELECT ?", ["x".repeat(2_000_000)]);
});

test("a new object's session document: its owner, its status, no queue and no turns", () => {
  const obj = session("carol");
  createObject(obj, "created", "Fix login", 3600);
  const s = sessionJson(obj);
  assert.deepEqual([s.name, s.owner, s.status, s.title, s.turns, s.ttl_seconds], ["s", "carol", "created", "Fix login", 0, 3600]);
  assert.deepEqual(s.participants.map((p: { user: string; role: string }) => [p.user, p.role]), [["carol", "owner"]]);
  assert.deepEqual(s.queue, { pending: 0, processing: 0 });
  assert.equal(Date.parse(s.expires_at!) - Date.parse(s.created_at!), 3600 * 1000);
});

test("a name is 1-200 printable code points with no surrounding space", () => {
  assert.equal(validName("fix-login"), "fix-login");
  assert.equal(validName("😀".repeat(200)), "😀".repeat(200));
  for (const bad of ["", " x", "x ", "a\nb", "😀".repeat(201), 7]) {
    assert.throws(() => validName(bad, "session"), (e) => e instanceof DurableError && e.code === "invalid_input" && /session/.test(e.message));
  }
});
