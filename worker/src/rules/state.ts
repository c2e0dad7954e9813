// An opened object as the rules see it (mirrors durable_cli/core/state.py).
import contract from "../../../durable_cli/contract/contract.json";
import { printable, quote, strip } from "./text";

export type Address = { id_scope: string; owner: string; name: string; scope: string };
export type Config = { max_unfinished: number; max_turn_bytes: number; token_budget: number; tags_max: number };

/** The names and numbers both runtimes hold (durable_cli/contract/contract.json "constants"; durable_cli/contract/vocabulary.py). */
export const CONSTANTS = contract.constants;

export type MessageKey = keyof typeof contract.messages;
/** The catalog's message CODE (durable_cli/contract/contract.json "messages"; durable_cli/contract/messages.py) with its
 * fields filled: `{name}` takes the value as text, `{name!r}` quotes it as Python's repr() does. */
export function say(code: MessageKey, values: Record<string, unknown> = {}): string {
  return contract.messages[code].replace(/\{(\w+)(!r)?\}/g, (_, name: string, r?: string) => (r ? quote(values[name]) : String(values[name])));
}
const defaults = contract.constants.config_defaults;
export const DEFAULT_CONFIG: Config = { max_unfinished: defaults["queue.max_unfinished"],
  max_turn_bytes: defaults["transcript.max_turn_bytes"], token_budget: defaults["transcript.token_budget"], tags_max: defaults["tags.max"] };

export class DurableError extends Error {
  constructor(message: string, public code: string = "internal", public document: unknown = undefined) {
    super(message);
  }
}
/** An error no rule foresaw (docs/reference/remote.md §13): its message and stack go to the Worker's log (console.error) under a
 *  fresh id and the caller is answered only `internal error <id>`, never the message. A DurableError of
 *  another code is the caller's to read, as is one already answered this way (an object's or a shard's,
 *  passed on by the Worker under the id it was logged with). WHERE names the part that failed in the log. */
export function internalError(e: unknown, where: string): DurableError {
  if (e instanceof DurableError && (e.code !== "internal" || INTERNAL_ANSWER.test(e.message))) return e;
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  const id = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  const message = e instanceof Error ? e.message : String(e);
  console.error(`durable: internal error ${id} in ${where}: ${message}${e instanceof Error && e.stack ? `\n${e.stack}` : ""}`);
  return new DurableError(`internal error ${id}`, "internal");
}
const INTERNAL_ANSWER = /^internal error [0-9a-f]{16}$/;
export const invalid = (m: string) => new DurableError(m, "invalid_input");
export const notFound = (m: string) => new DurableError(m, "not_found");
export const conflict = (m: string) => new DurableError(m, "conflict");
export const denied = (m: string) => new DurableError(m, "permission_denied");

export function httpStatus(code: string): number {
  const e = (contract.errors as Record<string, { exit: number; http: number | null }>)[code];
  return e?.http ?? 500;
}

/** A row as SQLite gives it: each column's value dynamically typed (TEXT, INTEGER, REAL, BLOB or NULL). */
export type Row = any[];
/** A row keyed by column name (Db.dicts), its values as dynamically typed as Row's. */
export type DictRow = Record<string, any>;

/** Cloudflare's SQL limits (developers.cloudflare.com/durable-objects/platform/limits/): a string, BLOB or
 *  row of at most 2,000,000 bytes, a statement of at most 100 KB, at most 100 bound parameters. workerd
 *  does not enforce them; this storage layer does, everywhere, so a test on workerd fails where a
 *  deployment would (docs/reference/remote.md §13). */
export const SQL_LIMITS = { value: 2000000, statement: 100000, params: 100 };

const encoder = new TextEncoder();

/** Bytes of a bound value: exact (UTF-8 for text) when EXACT, else an upper bound (3 per UTF-16 unit). */
function sizeOf(v: unknown, exact: boolean): number {
  if (typeof v === "string") return exact ? encoder.encode(v).length : v.length * 3;
  if (v instanceof ArrayBuffer) return v.byteLength;
  if (ArrayBuffer.isView(v)) return v.byteLength;
  return 8;
}

export function guardSql(q: string, b: unknown[]) {
  if (q.length > SQL_LIMITS.statement / 3 && encoder.encode(q).length > SQL_LIMITS.statement) {
    throw new DurableError(`a SQL statement of ${encoder.encode(q).length} bytes is over Cloudflare's limit of 100 KB; nothing was written`, "storage");
  }
  if (b.length > SQL_LIMITS.params) {
    throw new DurableError(`a SQL statement with ${b.length} bound parameters is over Cloudflare's limit of 100; nothing was written`, "storage");
  }
  let bound = 0;
  for (const v of b) bound += sizeOf(v, false);
  if (bound <= SQL_LIMITS.value) return; // the common case: no text is encoded to be measured
  let total = 0;
  for (const v of b) {
    const n = sizeOf(v, true);
    if (n > SQL_LIMITS.value) {
      throw new DurableError(`a value of ${n} bytes is over Cloudflare's limit of 2,000,000 bytes per string, BLOB or row; nothing was written`, "storage");
    }
    total += n;
  }
  if (total > SQL_LIMITS.value) {
    throw new DurableError(`a row of ${total} bytes is over Cloudflare's limit of 2,000,000 bytes per row; nothing was written`, "storage");
  }
}

// A value too big for one Cloudflare row (a turn between 2,000,000 bytes and the 2 MiB ceiling; a LangGraph
// checkpoint's bytes, a fact's value, which have no ceiling) is stored in chunks within its transaction: the
// row holds a marker (two control characters and 32 hex digits), the text (or the bytes) goes in parts of
// _durable_chunks, and every read through Db gets the whole value back. The
// table and the triggers that delete a value's chunks with its row are the Worker's own (CHUNK_SCHEMA,
// run by object.ts on each wake). A marker-like text given by a client is stored in chunks too, so a
// marker in a row always means chunks.
const MARK = "\u0001\u0002";
const MARK_LENGTH = MARK.length + 32;
const ROW_BUDGET = 1900000; // the bound values of one row, leaving room for its other columns
const PART_UNITS = 500000; // UTF-16 units per chunk: at most 1.5 MB of UTF-8
const PART_BYTES = 1500000; // bytes per chunk of a BLOB (an adapter's serialized value)
const isMarker = (v: unknown): v is string => typeof v === "string" && v.length === MARK_LENGTH && v.startsWith(MARK);
const isBytes = (v: unknown): v is ArrayBuffer | ArrayBufferView => v instanceof ArrayBuffer || ArrayBuffer.isView(v);
const chunkColumns = "coalesce(NEW.content, ''), coalesce(NEW.tool_calls, ''), coalesce(NEW.meta, ''), coalesce(NEW.data, '')";
export const CHUNK_SCHEMA = [
  "CREATE TABLE IF NOT EXISTS _durable_chunks (key TEXT NOT NULL, part INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (key, part))",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_turn_gone AFTER DELETE ON turns BEGIN" +
    " DELETE FROM _durable_chunks WHERE key IN (OLD.content, OLD.tool_calls, OLD.meta, OLD.data); END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_turn_changed AFTER UPDATE OF content, tool_calls, meta, data ON turns BEGIN" +
    ` DELETE FROM _durable_chunks WHERE key IN (OLD.content, OLD.tool_calls, OLD.meta, OLD.data) AND key NOT IN (${chunkColumns}); END`,
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_prompt_gone AFTER DELETE ON prompts BEGIN DELETE FROM _durable_chunks WHERE key = OLD.content; END",
  // a schedule's content (docs/reference/remote.md §13: chunked as a prompt's is)
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_schedule_gone AFTER DELETE ON schedules BEGIN DELETE FROM _durable_chunks WHERE key = OLD.content; END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_prompt_changed AFTER UPDATE OF content ON prompts BEGIN" +
    " DELETE FROM _durable_chunks WHERE key = OLD.content AND key <> NEW.content; END",
  // a LangGraph checkpoint or pending write over a Cloudflare value (its serialized bytes), a fact's value: their
  // chunks go with the row when it is deleted (keep_checkpoints, memory forget)
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_checkpoint_gone AFTER DELETE ON lg_checkpoints BEGIN" +
    " DELETE FROM _durable_chunks WHERE key IN (OLD.checkpoint, OLD.metadata); END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_write_gone AFTER DELETE ON lg_writes BEGIN DELETE FROM _durable_chunks WHERE key = OLD.value; END",
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_fact_gone AFTER DELETE ON facts BEGIN DELETE FROM _durable_chunks WHERE key = OLD.value; END",
];

/** TEXT (an SQL expression) whole: the text of its chunks when it is a marker. Inside SQLite the value may
 *  reach the 2 MiB turn ceiling: Cloudflare's 2,000,000 bytes bound what is stored, and workerd's
 *  SQLITE_LIMIT_LENGTH (4 MiB, src/workerd/util/sqlite.c++ setupSecurity) what a statement computes. */
const wholeSql = (text: string) => `CASE WHEN length(${text}) = ${MARK_LENGTH} AND substr(${text}, 1, 2) = char(1, 2)` +
  ` THEN (SELECT group_concat(text, '') FROM (SELECT text FROM _durable_chunks WHERE key = ${text} ORDER BY part)) ELSE ${text} END`;
const argumentsSql = (calls: string) => `CASE WHEN ${calls} IS NULL THEN NULL ELSE (SELECT group_concat(json_extract(value, '$.arguments'),` +
  ` char(10)) FROM json_each(${wholeSql(calls)})) END`;
const counted = (row: string) => `${row}.seq <= (SELECT mark FROM turns_mark)`;
const ftsDelete = (row: string) => `INSERT INTO turns_fts (turns_fts, rowid, content, arguments) VALUES ('delete', ${row}.seq,` +
  ` ${wholeSql(`${row}.content`)}, ${argumentsSql(`${row}.tool_calls`)});`;

/** The usage totals (the file store's schema.catch_up and its usage_* triggers) over whole meta: a meta big
 *  enough to be stored in chunks is a marker in its row, which json_extract reads as malformed JSON (such a
 *  write was an internal error). The catch-up reads turns.meta whole; each trigger is the file store's own,
 *  rewritten on wake (TRIGGER) to read OLD.meta and NEW.meta whole, and the two that take a row's figures out
 *  run BEFORE the delete or update, while the old meta's chunks are still there. */
export const USAGE_WHOLE = {
  marker: "_durable_chunks", // in the triggers' SQL once the Worker's version is in place
  timing: { usage_delete_counted: "BEFORE", usage_update_old_counted: "BEFORE", usage_update_new_counted: "AFTER" } as Record<string, string>,
  catchUp: (usage: string) => usage.replaceAll("turns.meta", wholeSql("turns.meta")),
  trigger: (name: string, sql: string) => sql
    .replace(/^CREATE TRIGGER (IF NOT EXISTS )?/i, "CREATE TRIGGER ")
    .replace(/\b(AFTER|BEFORE) (DELETE|UPDATE)\b/, `${USAGE_WHOLE.timing[name]} $2`)
    .replaceAll("OLD.meta", wholeSql("OLD.meta"))
    .replaceAll("NEW.meta", wholeSql("NEW.meta")),
};

/** The search index (turns_fts, external content read through the view turns_fts_source; the file store's
 *  schema) over whole texts: the view, the catch-up and the triggers that take a row out of the index read
 *  a chunked content or tool_calls whole, so a turn stored in chunks is found as locally and leaves no
 *  token behind when it goes (pop, clear, redact, prune; delete, forget, TTL and purge erase the storage).
 *  The update trigger's 'delete' runs BEFORE the update, while the old text's chunks are still there. */
export const FTS_WHOLE = {
  marker: "_durable_chunks", // in the view's SQL once the Worker's version is in place
  statements: [
    "DROP VIEW IF EXISTS turns_fts_source",
    `CREATE VIEW turns_fts_source AS SELECT seq, ${wholeSql("content")} AS content, ${argumentsSql("tool_calls")} AS arguments FROM turns`,
    "DROP TRIGGER IF EXISTS turns_fts_forget",
    `CREATE TRIGGER turns_fts_forget BEFORE DELETE ON turns WHEN ${counted("OLD")} BEGIN ${ftsDelete("OLD")} END`,
    "DROP TRIGGER IF EXISTS turns_fts_rewrite",
    `CREATE TRIGGER turns_fts_rewrite BEFORE UPDATE OF content, tool_calls ON turns WHEN ${counted("OLD")} BEGIN ${ftsDelete("OLD")} END`,
    "DROP TRIGGER IF EXISTS turns_fts_rewritten",
    `CREATE TRIGGER turns_fts_rewritten AFTER UPDATE OF content, tool_calls ON turns WHEN ${counted("OLD")} BEGIN` +
      " INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, arguments FROM turns_fts_source WHERE seq = NEW.seq; END",
  ],
  // schema.catch_up's index step, through the view
  catchUp: "INSERT INTO turns_fts (rowid, content, arguments) SELECT seq, content, arguments FROM turns_fts_source WHERE seq > ?1",
};

function joinBytes(parts: ArrayBuffer[]): ArrayBuffer {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(new Uint8Array(p), at);
    at += p.byteLength;
  }
  return out.buffer;
}

/** SqlStorage with Python's cursor habits: all/one/run, undefined bindings as null; every statement
 *  within Cloudflare's SQL limits (guardSql), a row's oversized values stored in chunks. Every method
 *  goes through exec (the guard, the chunks) and makes each row whole (whole): never call sql.exec
 *  directly. */
export class Db {
  constructor(private sql: SqlStorage) {}
  private exec(q: string, b: unknown[]) {
    let bound: unknown[] = b.map((x) => (x === undefined ? null : x));
    if (/^\s*(INSERT|UPDATE|REPLACE)/i.test(q)) bound = this.chunked(bound);
    guardSql(q, bound);
    return this.sql.exec(q, ...bound);
  }
  /** BOUND with its biggest texts or BLOBs replaced by chunk markers until the row fits (and any marker-like text). */
  private chunked(bound: unknown[]): unknown[] {
    let upper = 0;
    for (const v of bound) upper += typeof v === "string" ? v.length * 3 : isBytes(v) ? v.byteLength : 8;
    if (upper <= ROW_BUDGET && !bound.some(isMarker)) return bound;
    const sizes = bound.map((v) => (typeof v === "string" ? encoder.encode(v).length : isBytes(v) ? v.byteLength : 8));
    let total = sizes.reduce((a, n) => a + n, 0);
    const out = [...bound];
    const order = out.map((_, i) => i).sort((a, c) => sizes[c] - sizes[a]);
    for (const i of order) {
      const v = out[i];
      if (!(isMarker(v) || ((typeof v === "string" || isBytes(v)) && total > ROW_BUDGET && sizes[i] > MARK_LENGTH))) continue;
      out[i] = typeof v === "string" ? this.store(v) : this.storeBytes(v as ArrayBuffer | ArrayBufferView);
      total -= sizes[i] - MARK_LENGTH;
    }
    return out;
  }
  private static key(): string {
    return MARK + [...crypto.getRandomValues(new Uint8Array(16))].map((x) => x.toString(16).padStart(2, "0")).join("");
  }
  /** A BLOB in chunks (BLOB parts: whole() gives its bytes back); its row holds the marker text. */
  private storeBytes(v: ArrayBuffer | ArrayBufferView): string {
    const key = Db.key();
    const bytes = v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    for (let at = 0, part = 0; at < bytes.length; at += PART_BYTES, part++) {
      this.sql.exec("INSERT INTO _durable_chunks (key, part, text) VALUES (?, ?, ?)", key, part, bytes.slice(at, at + PART_BYTES));
    }
    return key;
  }
  private store(text: string): string {
    const key = Db.key();
    let part = 0;
    for (let at = 0; at < text.length || part === 0; part++) {
      let end = Math.min(at + PART_UNITS, text.length);
      const last = text.charCodeAt(end - 1);
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--; // never split a surrogate pair
      const piece = text.slice(at, end);
      guardSql("", [piece]);
      this.sql.exec("INSERT INTO _durable_chunks (key, part, text) VALUES (?, ?, ?)", key, part, piece);
      at = end;
    }
    return key;
  }
  /** ROWS with every chunk marker replaced by its whole text. */
  private whole(rows: Row[]): Row[] {
    for (const r of rows) {
      for (let i = 0; i < r.length; i++) {
        if (isMarker(r[i])) {
          const parts = [...this.sql.exec("SELECT text FROM _durable_chunks WHERE key = ? ORDER BY part", r[i]).raw()].map((p) => p[0]);
          r[i] = parts.length && isBytes(parts[0]) ? joinBytes(parts as ArrayBuffer[]) : parts.join("");
        }
      }
    }
    return rows;
  }
  all(q: string, ...b: unknown[]): Row[] {
    return this.whole([...this.exec(q, b).raw()] as Row[]);
  }
  /** The rows one at a time, read from storage as they are iterated (SQL cursors are lazy: a request
   *  holds the row it is at, not the result; docs/reference/remote.md §13). */
  iter(q: string, ...b: unknown[]): IterableIterator<Row> {
    // through exec (Cloudflare's limits, a big value stored in chunks) and each row made whole as it comes
    const rows = this.exec(q, b).raw() as IterableIterator<Row>;
    const whole = (r: Row) => this.whole([r])[0];
    return (function* () {
      for (const r of rows) yield whole(r);
    })();
  }
  one(q: string, ...b: unknown[]): Row | null {
    const first = this.iter(q, ...b).next();
    return first.done ? null : first.value;
  }
  /** Rows as objects keyed by column name, in the table's column order (as Python's `SELECT *` dicts). */
  dicts(q: string, ...b: unknown[]): DictRow[] {
    const cur = this.exec(q, b);
    const names = cur.columnNames;
    return this.whole([...cur.raw()] as Row[]).map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]])));
  }
  /** Rows as objects keyed by column name, one at a time as read (a lazy cursor). */
  *dictIter(q: string, ...b: unknown[]): Generator<DictRow> {
    const cur = this.exec(q, b); // Cloudflare's limits; a chunked value made whole row by row
    const names = cur.columnNames;
    for (const r of cur.raw()) {
      const row = this.whole([r as Row])[0];
      yield Object.fromEntries(names.map((n, i) => [n, row[i]]));
    }
  }
  run(q: string, ...b: unknown[]): void {
    this.exec(q, b);
  }
}

export function now(): number {
  return Date.now();
}

export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(Number(ms)).toISOString();
}

export function dumps(v: unknown): string {
  return JSON.stringify(v);
}

const META = ["one", "id", "scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
  "ttl_seconds", "expires_at", "live_turns", "live_tokens", "external_id", "adapter"] as const;
export type Meta = Record<(typeof META)[number], any>;

export class Opened {
  constructor(public db: Db, public address: Address, public actor: string, public config: Config, public id: string) {}
  get name() { return this.address.name; }
  get what(): string {
    const a = this.address;
    if (a.id_scope === "reserved") return say("user_memory", { user: a.owner });
    if (a.id_scope === "tenant") return say("tenant_session", { name: a.name, tenant: a.owner });
    return say("session", { name: a.name });
  }
  get missing(): string {
    if (this.address.id_scope === "reserved") return say("memory_empty", { what: this.what });
    return say("not_found", { what: this.what });
  }
  get taken(): string { return say("name_taken", { what: this.what }); }
  meta(): Meta | null {
    const r = this.db.one(`SELECT ${META.join(", ")} FROM object`);
    if (!r) return null;
    const m = {} as Meta;
    META.forEach((k, i) => (m[k] = r[i]));
    return m;
  }
  role(): string | null {
    const r = this.db.one("SELECT role FROM participants WHERE user = ?", this.actor);
    return r ? r[0] : null;
  }
  requireVisible(): void {
    if (this.address.id_scope === "tenant" && this.role() === null) throw notFound(this.missing);
  }
  requireOwner(doing: string): void {
    if (this.role() !== "owner") throw denied(say("owner_only", { what: this.what, doing }));
  }
}

/** The object's id (as `session show` prints it), to a participant only: an import receipt names a tenant
 *  object by it (core/state.py object_id). */
export function objectId(obj: Opened) {
  obj.requireVisible();
  return { id: obj.id };
}

export function createObject(obj: Opened, status: string, title: string | null = null, ttl: number | null = null) {
  const t = now();
  const a = obj.address;
  obj.db.run(
    "INSERT INTO object (one, id, scope, owner, name, title, status, created_at, updated_at, last_active_at, ttl_seconds, expires_at)" +
      " VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    obj.id, a.scope, a.owner, a.name, title, status, t, t, t, ttl, ttl ? t + ttl * 1000 : null,
  );
  if (a.id_scope !== "reserved") {
    obj.db.run("INSERT INTO participants (user, role, joined_at) VALUES (?, 'owner', ?)", obj.actor, t);
    event(obj, "session.created", { scope: a.scope, status });
    if (ttl) event(obj, "ttl.set", { ttl_seconds: ttl });
  }
}

/** Python's json.dumps(V, separators=(",", ":")): compact, every character past "~" escaped (ensure_ascii), so an
 *  event's data is the same text on both backends (an answer "déjà" was "d\u00e9j\u00e0" in the file store's
 *  export and "déjà" in the Worker's). */
export function pyDumps(v: unknown): string {
  return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

export function event(obj: Opened, type: string, data: unknown = null, actor: string | null | undefined = undefined): number {
  const r = obj.db.one("INSERT INTO events (type, actor, data, at) VALUES (?, ?, ?, ?) RETURNING seq",
    type, actor === undefined ? obj.actor : actor, pyDumps(data ?? {}), now());
  return r![0];
}

export function touch(obj: Opened, active = true) {
  const t = now();
  if (active) {
    obj.db.run("UPDATE object SET updated_at = ?, last_active_at = ?, expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END", t, t, t);
  } else {
    obj.db.run("UPDATE object SET updated_at = ?", t);
  }
}

export function setStatus(obj: Opened, to: string, from: string) {
  if (to === from) return;
  obj.db.run("UPDATE object SET status = ?", to);
  event(obj, "session.status", { from, to });
}

/** The object's next due time (core/state.py NEXT_ALARM_AT): TTL, lease, elicitation expiry, schedules' next_at and,
 *  unless DELIVERIES is false (what a wake fires: deliveries are the alarm's to send), pending deliveries' next attempt. */
export function nextAlarmAt(db: Db, deliveries = true): number | null {
  const r = db.one("SELECT min(t) FROM (SELECT expires_at AS t FROM object" +
    " UNION ALL SELECT min(lease_expires_at) FROM prompts WHERE status = 'processing'" +
    " UNION ALL SELECT min(expires_at) FROM requests WHERE status = 'pending'" +
    " UNION ALL SELECT min(next_at) FROM schedules" +
    (deliveries ? " UNION ALL SELECT min(next_attempt_at) FROM deliveries WHERE status = 'pending'" : "") + ")");
  return r ? r[0] : null;
}

/** docs/reference/sessions.md §5.1 `work --all` (core/state.py PENDING_AT): when the oldest startable pending prompt could start,
 *  or null when none is pending or one is processing. */
export function pendingAt(db: Db): number | null {
  const r = db.one("SELECT CASE WHEN EXISTS (SELECT 1 FROM prompts WHERE status = 'processing') THEN NULL" +
    " ELSE (SELECT min(max(created_at, coalesce(not_before, 0))) FROM prompts WHERE status = 'pending') END");
  return r ? r[0] : null;
}

export function sessionJson(obj: Opened) {
  const m = obj.meta()!;
  const participants = obj.db.all("SELECT user, role, joined_at FROM participants ORDER BY joined_at, user")
    .map(([user, role, j]) => ({ user, role, joined_at: iso(j) }));
  const counts: Record<string, number> = {};
  for (const [s, n] of obj.db.all("SELECT status, count(*) FROM prompts WHERE status IN ('pending','processing') GROUP BY status")) counts[s] = n;
  return {
    name: m.name, id: m.id, scope: m.scope, owner: m.owner, title: m.title, status: m.status,
    created_at: iso(m.created_at), updated_at: iso(m.updated_at), last_active_at: iso(m.last_active_at),
    participants, queue: { pending: counts.pending ?? 0, processing: counts.processing ?? 0 },
    turns: m.live_turns, tokens: m.live_tokens, expires_at: iso(m.expires_at), ttl_seconds: m.ttl_seconds,
    external_id: m.external_id ?? null,
    tags: Object.fromEntries(obj.db.all("SELECT key, value FROM tags ORDER BY key").map((r) => [r[0], r[1]])),
    schedules: Number(obj.db.one("SELECT count(*) FROM schedules")![0]),
    hooks: Number(obj.db.one("SELECT count(*) FROM hooks")![0]),
  };
}

/** docs/reference/concepts.md §2 names: 1-200 code points, printable, equal to their own strip(). */
export function validName(text: unknown, what = "name"): string {
  const s = typeof text === "string" ? text : "";
  const n = [...s].length;
  if (typeof text !== "string" || n < 1 || n > 200 || !printable(s) || s !== strip(s)) {
    throw invalid(say("invalid_name", { what, value: text }));
  }
  return s;
}

/** Python's repr() of a str, for messages that must read the same in both languages. */
export const pyRepr = quote;
