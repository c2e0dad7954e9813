// The rules' unit tests (src/rules/**/*.test.ts) run each rule over a real SQLite: sql.js (SQLite compiled to
// WebAssembly) behind the small part of Cloudflare's SqlStorage that rules/state.ts Db uses (exec: a cursor with
// columnNames and raw()). The schema is the Worker's own (generated/schema.json, as object.ts migrates it),
// less full-text search: sql.js is built without FTS5, so `search` is tested on workerd (tests/remote/); an FTS4
// turns_fts with no triggers stands in for the edits that optimize the index after a rewrite.
import initSqlJs from "sql.js";
import schema from "../src/generated/schema.json";
import { Address, CHUNK_SCHEMA, Config, DEFAULT_CONFIG, Db, Opened } from "../src/rules/state";

const SQL = await initSqlJs();

type Value = number | string | Uint8Array | null;

/** Cloudflare's SqlStorage as Db calls it: exec(query, ...bindings), BLOBs as ArrayBuffer both ways. */
class Storage {
  constructor(private db: InstanceType<typeof SQL.Database>) {}
  exec(query: string, ...bindings: unknown[]) {
    const statement = this.db.prepare(query);
    try {
      statement.bind(bindings.map((v) => (v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v)
        ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : typeof v === "boolean" ? Number(v) : v)) as Value[]);
      const rows: unknown[][] = [];
      while (statement.step()) {
        rows.push((statement.get() as Value[]).map((v) => (v instanceof Uint8Array ? v.slice().buffer : v)));
      }
      const columnNames = statement.getColumnNames();
      return { columnNames, raw: () => rows[Symbol.iterator](), toArray: () => rows };
    } finally {
      statement.free();
    }
  }
}

const FTS = /turns_fts|fts5/;

/** A fresh, empty object's storage with the Worker's schema. */
export function storage(): Db {
  const db = new SQL.Database();
  const sql = new Storage(db) as unknown as SqlStorage;
  const run = (s: string) => sql.exec(s);
  run("CREATE TABLE IF NOT EXISTS _durable_tomb (one INTEGER PRIMARY KEY CHECK (one = 1), last_checkpoint TEXT)");
  for (const step of schema.migrations) for (const s of step.statements) if (!FTS.test(s)) run(s);
  for (const s of CHUNK_SCHEMA) run(s);
  run("CREATE VIRTUAL TABLE turns_fts USING fts4(content, arguments)");
  return new Db(sql);
}

/** ACTOR's view of the object NAME (a user-scoped session of OWNER unless ADDRESS says otherwise) over DB. */
export function open(db: Db, actor = "alice", address: Partial<Address> = {}, config: Partial<Config> = {}): Opened {
  const a: Address = { id_scope: "user", owner: actor, name: "s", scope: "session", ...address };
  return new Opened(db, a, actor, { ...DEFAULT_CONFIG, ...config }, "0".repeat(64));
}

/** A new, empty session opened by ACTOR. */
export function session(actor = "alice", address: Partial<Address> = {}, config: Partial<Config> = {}): Opened {
  return open(storage(), actor, address, config);
}
