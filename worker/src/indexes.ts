// The index of docs/reference/remote.md §13: what index.db holds locally, held by Durable Objects of class DurableIndex.
//
// Sharding (docs/remote.md "Index and commands across objects"):
// - `user:U`   one per user: the home rows of U's own objects and of their memory object, and U's own
//              membership of each tenant object (its id and home shard: `joined`), written when that
//              membership starts or ends, never at each commit (docs/reference/remote.md §13). `ls`, `usage` and `forget U`
//              read this shard and the tenant shards it names (memberShards).
// - `tenant:T` one per tenant: the home rows of T's objects with their member lists, kept once here
//              (`purge --tenant`, installation-wide commands, a member's `ls`).
// - `root:X`   16 root shards (X = the object id's first hex digit): a copy of the home row of every
//              object whose id starts with X (members and usage included) and the registry id -> home
//              shard, i.e. "the objects the index knows"; and the names of the user and tenant shards
//              (by a hash of the name, rootOf). The installation-wide commands (`ls`/`usage`/`export
//              --all` by an admin, `purge`, `sweep`, `forget`, `reindex`) page over the 16 root shards,
//              never over the user and tenant shards: one page costs at most 16 index subrequests plus
//              its own objects, whatever the number of users and tenants (docs/remote.md).
// Each object sends its row after it commits (object.ts syncIndex), in parallel: to its home shard and to
// its root shard, whatever its number of participants; a new participant's shard gets one `join`.
import { Db, DurableError, denied, internalError, invalid, now } from "./rules/state";

export interface IndexEnv {
  OBJECTS: DurableObjectNamespace;
  INDEX: DurableObjectNamespace;
  DURABLE_DEV_FAULTS?: string;
  DURABLE_SUBREQUEST_LIMIT?: string;
  DURABLE_HOOK_ALLOW_HOSTS?: string; // hosts a hook may name although local or private (rules/hooks.ts)
}

/** One object's index row (times in ms since the epoch, as index.db keeps them). */
export type IndexRow = {
  id: string; scope: string; owner: string; name: string; title: string | null; status: string;
  created_at: number; updated_at: number; last_active_at: number; turns: number; tokens: number;
  expires_at: number | null; next_alarm_at: number | null; external_id: string | null; pending_at?: number | null;
  pending_requests?: number | null; cost_given_usd?: number; // the questions waiting; (list) the given cost of its usage rows (`ls`, docs/reference/ui.md §16.3)
  members: [string, string][]; usage?: unknown[][]; tags?: [string, string][];
};

export const ROOTS = "0123456789abcdef";
export const ROW_COLUMNS = ["id", "scope", "owner", "name", "title", "status", "created_at", "updated_at", "last_active_at",
  "turns", "tokens", "expires_at", "next_alarm_at", "external_id", "pending_at", "pending_requests"] as const;
// docs/reference/retention.md §7 usage, Cost: after the cost, the cache reads and writes and the sums of the rows without a
// given cost that the client prices with its own table (durable_cli/store/schema.py PRICED_COLUMNS)
const PRICED_COLUMNS = ["cache_read_tokens", "cache_write_tokens", "uncosted_rows", "uncosted_base", "uncosted_cache_read",
  "uncosted_cache_write", "uncosted_output"];
const USAGE_COLUMNS = ["day", "model", "rows", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", ...PRICED_COLUMNS];

export function homeShard(scope: string, owner: string): string {
  return scope === "tenant" ? `tenant:${owner}` : `user:${owner}`;
}

/** The shards an object's row goes to: its home, and the user shard of each participant. */
export function shardsOf(row: { scope: string; owner: string; members: [string, string][] }): string[] {
  const out = new Set([homeShard(row.scope, row.owner)]);
  for (const [user] of row.members) out.add(`user:${user}`);
  return [...out].sort();
}

export function shardStub(env: IndexEnv, shard: string): DurableObjectStub {
  return env.INDEX.get(env.INDEX.idFromName(shard));
}

/** The Durable Object of the object an index row stands for (rows carry the object id; the DO is idFromName(id)). */
export function objectStub(env: IndexEnv, row: { id: string }): DurableObjectStub {
  return env.OBJECTS.get(env.OBJECTS.idFromName(row.id));
}

/** The address (as object.ts's Call takes it) of the object an index row stands for. */
export function addressOf(row: { scope: string; owner: string; name: string }) {
  const idScope = row.scope === "session" ? "user" : row.scope;
  return { id_scope: idScope, owner: row.owner, name: row.name, scope: row.scope };
}

async function answer<T>(response: Response): Promise<T> {
  const doc = (await response.json()) as { result?: T; error?: { code: string; message: string } };
  if (doc.error) throw new DurableError(doc.error.message, doc.error.code);
  return doc.result as T;
}

/** One request to an index shard. */
export async function ask<T>(env: IndexEnv, shard: string, op: string, args: unknown = {}): Promise<T> {
  return answer<T>(await shardStub(env, shard).fetch(`https://index/${op}`, { method: "POST", body: JSON.stringify({ shard, ...(args as object) }) }));
}

/** A Worker-side operation on an object's DO (object.ts SYSTEM ops: not reachable from /v1/call). */
export async function system<T>(env: IndexEnv, row: IndexRow | { id: string; scope: string; owner: string; name: string }, op: string, args: unknown = {}): Promise<T> {
  const call = { op, args, address: addressOf(row), id: row.id };
  return answer<T>(await objectStub(env, row).fetch("https://object/system", { method: "POST", body: JSON.stringify(call) }));
}

/** What a shard's `list` selects (all optional; the SQL is the shard's, mirroring across/retention.ls_where). */
export type Filter = {
  member?: string | null; home_only?: boolean; statuses?: string[]; all_objects?: boolean; older_than?: number | null;
  tenant?: string | null; owner?: string | null; name?: string | null; cutoff?: number | null; alarm_due?: number | null;
  draft_before?: number | null; reserved?: boolean; expired?: boolean; limit?: number | null; at?: number;
  after_id?: string | null; // with it: in id order, ids after this one (pages in id order)
  before?: [number, string] | null; // newest first, rows after this (last_active_at, id) key (pages of ls)
  pending_due?: number | null; // with it: objects with a startable pending prompt by then, oldest first (`work --all`)
  tags?: [string, string | null][] | null; // each a tag the object has (with that value unless null): `ls --tag`, `usage --tag`
};

function whereOf(f: Filter): [string[], unknown[]] {
  const at = f.at ?? now();
  const where: string[] = [];
  const params: unknown[] = [];
  if (!f.reserved) where.push("o.scope != 'reserved'");
  if (!f.expired) { where.push("(o.expires_at IS NULL OR o.expires_at > ?)"); params.push(at); }
  if (f.member != null && f.reserved) { // the member's memory object has no participants: it is theirs by owner
    where.push("(EXISTS (SELECT 1 FROM members m WHERE m.user = ? AND m.object_id = o.id) OR (o.scope = 'reserved' AND o.owner = ?))");
    params.push(f.member, f.member);
  } else if (f.member != null) { where.push("EXISTS (SELECT 1 FROM members m WHERE m.user = ? AND m.object_id = o.id)"); params.push(f.member); }
  if (f.home_only) where.push("o.home = 1");
  if (f.statuses && f.statuses.length) { where.push(`o.status IN (${f.statuses.map(() => "?").join(",")})`); params.push(...f.statuses); }
  else if (f.all_objects === false) where.push("o.status != 'archived'");
  if (f.older_than != null) { where.push("o.last_active_at < ?"); params.push(at - f.older_than * 1000); }
  if (f.cutoff != null) { where.push("o.last_active_at < ?"); params.push(f.cutoff); }
  if (f.tenant != null) { where.push("o.scope = 'tenant' AND o.owner = ?"); params.push(f.tenant); }
  if (f.owner != null) { where.push("o.owner = ? AND o.scope IN ('user', 'session')"); params.push(f.owner); }
  if (f.name != null) { where.push("o.name = ?"); params.push(f.name); }
  if (f.alarm_due != null) { where.push("o.next_alarm_at IS NOT NULL AND o.next_alarm_at <= ?"); params.push(f.alarm_due); }
  if (f.after_id != null) { where.push("o.id > ?"); params.push(f.after_id); }
  if (f.before != null) { where.push("(o.last_active_at < ? OR (o.last_active_at = ? AND o.id < ?))"); params.push(f.before[0], f.before[0], f.before[1]); }
  if (f.pending_due != null) { where.push("o.pending_at IS NOT NULL AND o.pending_at <= ?"); params.push(f.pending_due); }
  for (const [key, value] of f.tags ?? []) {
    if (value == null) { where.push("o.id IN (SELECT t.object_id FROM tags t WHERE t.key = ?)"); params.push(key); }
    else { where.push("o.id IN (SELECT t.object_id FROM tags t WHERE t.key = ? AND t.value = ?)"); params.push(key, value); }
  }
  if (f.draft_before != null) { where.push("o.status = 'created' AND o.updated_at < ? AND o.scope != 'reserved'"); params.push(f.draft_before); }
  if (!where.length) where.push("1");
  return [where, params];
}

const PAGE_MEMORY_MS = 86400000; // a page's answer is kept a day for a retry
const PAGE_ABANDONED_MS = 60000; // a claimed page with no answer this long is run again

// The counts are summed as 64-bit integers by SQLite (sum() fails past 2^63-1 rather than turn to a float) and
// carried as decimal text, never through a JS number (exact past 2^53); cost_usd is a double.
const SUMS = "count(DISTINCT u.object_id), CAST(sum(u.turns) AS TEXT), CAST(sum(u.tokens) AS TEXT)," +
  " CAST(sum(u.input_tokens) AS TEXT), CAST(sum(u.output_tokens) AS TEXT), sum(u.cost_usd)," +
  " CAST(coalesce(sum(u.cache_read_tokens), 0) AS TEXT), CAST(coalesce(sum(u.cache_write_tokens), 0) AS TEXT)";
const FIELDS = ["sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens", "cache_write_tokens"];
// per group and model, what the client prices: [model, rows, base, cache reads, cache writes, output] (counts as text)
const PRICED = "CAST(sum(u.uncosted_rows) AS TEXT), CAST(sum(u.uncosted_base) AS TEXT), CAST(sum(u.uncosted_cache_read) AS TEXT)," +
  " CAST(sum(u.uncosted_cache_write) AS TEXT), CAST(sum(u.uncosted_output) AS TEXT)";
const MAX_TOTAL = (1n << 63n) - 1n;

/** docs/reference/transcript.md §6: a usage total past 2^63-1 is exit 7, never a float (across/usage.py says the same). */
export function overflow(): DurableError {
  return new DurableError("a usage total is past 2^63-1 and cannot be counted exactly; narrow it with --user, --session or --newer-than", "storage");
}

/** The exact sum of two counts given as decimal text (or numbers), as decimal text. */
export function addCount(a: unknown, b: unknown): string {
  const sum = BigInt(String(a ?? 0)) + BigInt(String(b ?? 0));
  if (sum > MAX_TOTAL) throw overflow();
  return sum.toString();
}
const fields = (v: unknown[]) => Object.fromEntries(FIELDS.map((k, i) => [k, k === "cost_usd" ? Number(v[i] ?? 0) : String(v[i] ?? 0)]));

/** One index shard (user:U, tenant:T or root:X); every shard has every table, each uses its own. */
export class DurableIndex {
  private db: Db;
  private ready = false;

  constructor(private ctx: DurableObjectState, private env: IndexEnv) {
    this.db = new Db(ctx.storage.sql);
  }

  private init() {
    if (this.ready) return;
    const cols = "id TEXT PRIMARY KEY, scope TEXT NOT NULL, owner TEXT NOT NULL, name TEXT NOT NULL, title TEXT, status TEXT NOT NULL," +
      " created_at INTEGER, updated_at INTEGER, last_active_at INTEGER, turns INTEGER, tokens INTEGER, expires_at INTEGER," +
      " next_alarm_at INTEGER, external_id TEXT, home INTEGER NOT NULL";
    this.ctx.storage.transactionSync(() => {
      this.db.run(`CREATE TABLE IF NOT EXISTS objects (${cols})`);
      this.db.run("CREATE INDEX IF NOT EXISTS objects_by_activity ON objects (last_active_at, id)");
      this.db.run("CREATE INDEX IF NOT EXISTS objects_by_alarm ON objects (next_alarm_at) WHERE next_alarm_at IS NOT NULL");
      // docs/reference/sessions.md §5.1 `work --all`: each object's oldest startable pending time (a shard made before it gains the column)
      if (!this.db.one("SELECT 1 FROM pragma_table_info('objects') WHERE name = 'pending_at'")) this.db.run("ALTER TABLE objects ADD COLUMN pending_at INTEGER");
      this.db.run("CREATE INDEX IF NOT EXISTS objects_by_pending ON objects (pending_at) WHERE pending_at IS NOT NULL");
      // docs/reference/ui.md §16.3: the pending-question badge of `durable ui --remote`'s list (a shard made before it gains the column)
      if (!this.db.one("SELECT 1 FROM pragma_table_info('objects') WHERE name = 'pending_requests'")) this.db.run("ALTER TABLE objects ADD COLUMN pending_requests INTEGER");
      this.db.run("CREATE TABLE IF NOT EXISTS members (object_id TEXT NOT NULL, user TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (object_id, user))");
      this.db.run("CREATE INDEX IF NOT EXISTS members_by_user ON members (user, object_id)");
      this.db.run("CREATE TABLE IF NOT EXISTS usage (object_id TEXT NOT NULL, day TEXT NOT NULL, model TEXT, rows INTEGER, turns INTEGER," +
        " tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL)");
      this.db.run("CREATE INDEX IF NOT EXISTS usage_by_object ON usage (object_id)");
      // each object's tags, one row per tag, found by key and value (docs/reference/remote.md §13: `ls --tag`, `usage --tag`)
      this.db.run("CREATE TABLE IF NOT EXISTS tags (object_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (object_id, key))");
      this.db.run("CREATE INDEX IF NOT EXISTS tags_by_key ON tags (key, value, object_id)");
      for (const c of PRICED_COLUMNS) { // a shard made before these columns gains them (null until its objects send their rows again)
        if (!this.db.one("SELECT 1 FROM pragma_table_info('usage') WHERE name = ?", c)) this.db.run(`ALTER TABLE usage ADD COLUMN ${c} INTEGER`);
      }
      // a user shard: the tenant objects its user participates in, and the shard that holds each one's row
      this.db.run("CREATE TABLE IF NOT EXISTS joined (object_id TEXT PRIMARY KEY, home TEXT NOT NULL)");
      this.db.run("CREATE INDEX IF NOT EXISTS joined_by_home ON joined (home)");
      this.db.run("CREATE TABLE IF NOT EXISTS registry (id TEXT PRIMARY KEY, home TEXT NOT NULL)");
      this.db.run("CREATE INDEX IF NOT EXISTS registry_by_home ON registry (home)");
      this.db.run("CREATE TABLE IF NOT EXISTS faults (one INTEGER PRIMARY KEY CHECK (one = 1), refuse INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS refusals (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL)"); // tests only
      // a root shard: every user and tenant shard (so that installation-wide commands reach them all)
      this.db.run("CREATE TABLE IF NOT EXISTS shards (name TEXT PRIMARY KEY)");
      // a user or tenant shard: its own name, once it has told its root shard about itself
      this.db.run("CREATE TABLE IF NOT EXISTS self (one INTEGER PRIMARY KEY CHECK (one = 1), name TEXT NOT NULL)");
      // a root shard: the answers of recent pages of purge/sweep/forget/reindex by request id (a retried page is answered once)
      this.db.run("CREATE TABLE IF NOT EXISTS pages (id TEXT PRIMARY KEY, body TEXT, at INTEGER NOT NULL)");
      // a user or tenant shard: the tombstones of deleted LangGraph threads it is the home of (index.db's tombstones)
      this.db.run("CREATE TABLE IF NOT EXISTS tombstones (id TEXT PRIMARY KEY, owner TEXT NOT NULL, last_checkpoint TEXT, deleted_at INTEGER NOT NULL)");
      // who may read a tombstone (docs/reference/integrations.md §12): the thread's participants when it was deleted (JSON; a shard made before it gains the column)
      if (!this.db.one("SELECT 1 FROM pragma_table_info('tombstones') WHERE name = 'members'")) this.db.run("ALTER TABLE tombstones ADD COLUMN members TEXT");
      // the shard auth:0: revoked tokens (`durable remote revoke`): by jti, or a user's issued before a time (s)
      this.db.run("CREATE TABLE IF NOT EXISTS revoked_jtis (jti TEXT PRIMARY KEY, at INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS revoked_users (user TEXT PRIMARY KEY, issued_before INTEGER NOT NULL)");
    });
    this.ready = true;
  }

  async fetch(request: Request): Promise<Response> {
    const op = new URL(request.url).pathname.slice(1);
    const args = (await request.json()) as any;
    try {
      this.init();
      const refused = this.db.one("SELECT refuse FROM faults");
      if (refused && refused[0] && (op === "put" || op === "drop" || op === "join")) {
        this.db.run("INSERT INTO refusals (one, n) VALUES (1, 1) ON CONFLICT (one) DO UPDATE SET n = n + 1"); // the tests count retries
        throw new DurableError("index shard refuses updates (dev fault)", "busy");
      }
      let result: unknown;
      switch (op) {
        case "put": result = args.shard.startsWith("root:") ? this.putRoot(args.row) : await this.put(args.shard, args.row, !!args.home); break;
        case "drop": result = this.drop(args.id); break;
        case "join": await this.join(args.shard, args.id, args.home); break;
        case "homes": // a user shard: the shards holding the rows of the tenant objects its user joined
          result = this.db.all("SELECT DISTINCT home FROM joined ORDER BY home").map((r) => r[0]);
          break;
        case "list": result = this.list(args.filter ?? {}); break;
        case "usage": result = this.usage(args.filter ?? {}, args.by, args.newer_day ?? null); break;
        case "register": this.db.run("INSERT OR REPLACE INTO registry (id, home) VALUES (?, ?)", args.id, args.home); break;
        case "unregister": this.drop(args.id); break; // a root shard: the registry entry and the row's copy
        case "registry": result = this.db.all("SELECT id, home FROM registry WHERE id > ? ORDER BY id LIMIT ?", args.after ?? "", args.limit ?? 1000)
          .map(([id, home]) => ({ id, home })); break;
        case "shard": this.db.run("INSERT OR IGNORE INTO shards (name) VALUES (?)", args.name); break;
        case "unshard": this.db.run("DELETE FROM shards WHERE name = ?", args.name); break;
        case "shards": // a page of the shard names a root shard knows (reindex)
          result = this.db.all("SELECT name FROM shards WHERE name > ? ORDER BY name LIMIT ?", args.after ?? "", args.limit ?? 100).map((r) => r[0]);
          break;
        case "seed": this.seed(args); break; // tests only (across.ts "seed")
        case "wipe": // forget, and the tests' "index shard lost": every byte of the shard goes, and its root forgets it
          await this.ctx.storage.deleteAll();
          this.ready = false;
          if (args.shard && !args.shard.startsWith("root:")) await ask(this.env, rootOf(args.shard), "unshard", { name: args.shard });
          break;
        case "bury": { // as index.db's bury: left, or moved forward; its readers are every participant of each thread buried there
          const had = this.db.one("SELECT members FROM tombstones WHERE id = ?", args.id);
          const members = [...new Set([...(had && had[0] ? JSON.parse(had[0]) as string[] : []), ...(args.members ?? [])])].sort();
          this.db.run("INSERT INTO tombstones (id, owner, last_checkpoint, deleted_at, members) VALUES (?, ?, ?, ?, ?)" +
            " ON CONFLICT (id) DO UPDATE SET last_checkpoint = max(coalesce(last_checkpoint, ''), coalesce(excluded.last_checkpoint, ''))," +
            " deleted_at = excluded.deleted_at, members = excluded.members", args.id, args.owner, args.last_checkpoint ?? null, args.at,
            JSON.stringify(members));
          break;
        }
        case "tombstone": { // only to a caller who may see the thread (docs/reference/integrations.md §12); to anyone else null, as for a thread never made
          const r = this.db.one("SELECT id, owner, last_checkpoint, deleted_at, members FROM tombstones WHERE id = ?", args.id);
          // a tombstone buried before its readers were kept: its owner's shard (a user-scoped thread) only
          const readers: string[] = r && r[4] ? JSON.parse(r[4]) : [];
          const may = !!r && (args.all === true || readers.includes(args.user) || (r[4] === null && args.shard === `user:${args.user}`));
          result = may ? { id: r![0], owner: r![1], last_checkpoint: r![2], deleted_at: r![3] } : null;
          break;
        }
        case "claim": result = this.claim(args.id); break;
        case "unclaim": this.db.run("DELETE FROM pages WHERE id = ? AND body IS NULL", args.id); break;
        case "settle":
          this.db.run("UPDATE pages SET body = ?, at = ? WHERE id = ?", args.body, now(), args.id);
          this.db.run("DELETE FROM pages WHERE at < ?", now() - PAGE_MEMORY_MS);
          break;
        case "revoke":
          if (args.jti !== null) this.db.run("INSERT OR IGNORE INTO revoked_jtis (jti, at) VALUES (?, ?)", args.jti, now());
          else this.db.run("INSERT INTO revoked_users (user, issued_before) VALUES (?, ?) ON CONFLICT (user) DO UPDATE SET" +
            " issued_before = max(issued_before, excluded.issued_before)", args.user, args.issued_before);
          break;
        case "revocations":
          result = { jtis: this.db.all("SELECT jti FROM revoked_jtis").map((r) => r[0]),
            users: Object.fromEntries(this.db.all("SELECT user, issued_before FROM revoked_users").map((r) => [r[0], r[1]])) };
          break;
        case "sql_limits": { // tests only (DURABLE_DEV_FAULTS): what this storage layer refuses, as Cloudflare would
          if (this.env.DURABLE_DEV_FAULTS !== "1") throw invalid("sql_limits is a test hook of 'durable remote dev' only");
          const tries: Record<string, () => void> = {
            value: () => this.db.run("SELECT length(?)", "x".repeat(2000001)),
            row: () => this.db.run("SELECT length(?) + length(?)", "x".repeat(1000001), "y".repeat(1000000)),
            statement: () => this.db.run(`SELECT 1 /* ${"x".repeat(100000)} */`),
            parameters: () => this.db.run(`SELECT ${new Array(101).fill("?").join(" + ")}`, ...new Array(101).fill(1)),
            within: () => this.db.run(`SELECT ${new Array(99).fill("?").join(" + ")}, length(?)`, ...new Array(99).fill(1), "x".repeat(1999000)),
          };
          const out: Record<string, string | null> = {};
          for (const [k, f] of Object.entries(tries)) {
            try {
              f();
              out[k] = null;
            } catch (e) {
              out[k] = (e as Error).message;
            }
          }
          result = out;
          break;
        }
        case "census": // tests only (across.ts "census"): how many rows this shard holds
          result = Object.fromEntries(["objects", "members", "joined", "usage"].map((t) => [t, this.db.one(`SELECT count(*) FROM ${t}`)![0]]));
          break;
        case "fault": // (answers how many updates the shard refused so far)
          this.db.run("INSERT OR REPLACE INTO faults (one, refuse) VALUES (1, ?)", args.refuse ? 1 : 0);
          result = Number(this.db.one("SELECT n FROM refusals")?.[0] ?? 0);
          break;
        default: throw invalid(`unknown index operation '${op}'`);
      }
      return new Response(JSON.stringify({ result: result ?? null }), { headers: { "content-type": "application/json" } });
    } catch (e) {
      const err = internalError(e, "an index shard");
      return new Response(JSON.stringify({ error: { code: err.code, message: err.message } }), { status: 500, headers: { "content-type": "application/json" } });
    }
  }

  /** The object's row replaces what the shard had (a shard tells its root shard its name once). */
  private async put(shard: string, row: IndexRow, home: boolean) {
    await this.named(shard);
    this.ctx.storage.transactionSync(() => this.store(row, home));
  }

  /** A shard tells its root shard its name once (so that installation-wide commands reach it). */
  private async named(shard: string) {
    if (!this.db.one("SELECT 1 FROM self")) {
      await ask(this.env, rootOf(shard), "shard", { name: shard });
      this.db.run("INSERT OR REPLACE INTO self (one, name) VALUES (1, ?)", shard);
    }
  }

  /** A user shard: its user participates in object ID, whose row HOME holds (one row, whatever the object's size). */
  private async join(shard: string, id: string, home: string) {
    await this.named(shard);
    this.db.run("INSERT OR REPLACE INTO joined (object_id, home) VALUES (?, ?)", id, home);
  }

  /** A root shard: the object's home row, copied (what the installation-wide commands page over), and its registry entry. */
  private putRoot(row: IndexRow) {
    this.ctx.storage.transactionSync(() => {
      this.store(row, true);
      this.db.run("INSERT OR REPLACE INTO registry (id, home) VALUES (?, ?)", row.id, homeShard(row.scope, row.owner));
    });
  }

  /** Tests only: N users' shard names and the home rows of their memory objects, without the objects (a
   *  seeded installation of thousands of users in a few requests; the rows match no command's filter). */
  private seed(a: { shards: string[]; rows: IndexRow[] }) {
    this.ctx.storage.transactionSync(() => {
      for (const name of a.shards ?? []) this.db.run("INSERT OR IGNORE INTO shards (name) VALUES (?)", name);
      for (const row of a.rows ?? []) this.store(row, true);
    });
  }

  /** Inside a transaction: the row replaces what the shard had. */
  private store(row: IndexRow, home: boolean) {
    this.db.run(`INSERT OR REPLACE INTO objects (${ROW_COLUMNS.join(", ")}, home) VALUES (${ROW_COLUMNS.map(() => "?").join(", ")}, ?)`,
      ...ROW_COLUMNS.map((c) => (row as Record<string, unknown>)[c] ?? null), home ? 1 : 0);
    // the member list as it changed (a commit that changes no membership writes no member row: docs/reference/remote.md §13)
    const had = new Map(this.db.all("SELECT user, role FROM members WHERE object_id = ?", row.id).map((r) => [r[0] as string, r[1] as string]));
    const has = new Map(row.members);
    for (const user of had.keys()) if (!has.has(user)) this.db.run("DELETE FROM members WHERE object_id = ? AND user = ?", row.id, user);
    for (const [user, role] of has) {
      if (had.get(user) !== role) this.db.run("INSERT OR REPLACE INTO members (object_id, user, role) VALUES (?, ?, ?)", row.id, user, role);
    }
    this.db.run("DELETE FROM tags WHERE object_id = ?", row.id);
    for (const [k, v] of row.tags ?? []) this.db.run("INSERT INTO tags (object_id, key, value) VALUES (?, ?, ?)", row.id, k, v);
    this.db.run("DELETE FROM usage WHERE object_id = ?", row.id);
    for (const u of row.usage ?? []) this.db.run(`INSERT INTO usage (object_id, ${USAGE_COLUMNS.join(", ")}) VALUES (?${", ?".repeat(USAGE_COLUMNS.length)})`, row.id, ...u);
  }

  /** A page request arrives: its first answer if it has one; "pending" while another attempt runs it
   *  (the client retries busy); else it is claimed and runs (an attempt silent for PAGE_ABANDONED_MS is taken over). */
  private claim(id: string): { body?: string; pending?: boolean } {
    const r = this.db.one("SELECT body, at FROM pages WHERE id = ?", id);
    if (r && r[0] !== null) return { body: r[0] };
    if (r && r[1] > now() - PAGE_ABANDONED_MS) return { pending: true };
    this.db.run("INSERT OR REPLACE INTO pages (id, body, at) VALUES (?, NULL, ?)", id, now());
    return {};
  }

  private drop(id: string) {
    this.ctx.storage.transactionSync(() => {
      for (const t of ["objects WHERE id", "members WHERE object_id", "usage WHERE object_id", "tags WHERE object_id", "registry WHERE id", "joined WHERE object_id"]) this.db.run(`DELETE FROM ${t} = ?`, id);
    });
  }

  private list(f: Filter): IndexRow[] {
    const [where, params] = whereOf(f);
    const order = f.after_id != null ? "o.id" : f.pending_due != null ? "o.pending_at, o.id" : "o.last_active_at DESC, o.id DESC";
    // each row's given cost (what the web view's list shows, docs/reference/ui.md §16.3), from its usage rows (usage_by_object)
    let sql = `SELECT ${ROW_COLUMNS.map((c) => "o." + c).join(", ")}, (SELECT total(u.cost_usd) FROM usage u WHERE u.object_id = o.id)` +
      ` FROM objects o WHERE ${where.join(" AND ")} ORDER BY ${order}`;
    if (f.limit != null) { sql += " LIMIT ?"; params.push(f.limit); }
    const rows: IndexRow[] = [];
    for (const r of this.db.iter(sql, ...params)) { // the page's rows only, each with its own members (by primary key)
      const row: Record<string, unknown> = {};
      ROW_COLUMNS.forEach((c, i) => (row[c] = r[i]));
      row.cost_given_usd = r[ROW_COLUMNS.length] ?? 0;
      row.members = [...this.db.iter("SELECT user, role FROM members WHERE object_id = ? ORDER BY user", row.id)].map((m) => [m[0], m[1]]);
      row.tags = [...this.db.iter("SELECT key, value FROM tags WHERE object_id = ? ORDER BY key", row.id)].map((t) => [t[0], t[1]]);
      rows.push(row as IndexRow);
    }
    return rows;
  }

  /** Usage groups over the selected objects (across/usage.py's query), with each session group's last activity for merging. */
  private usage(f: Filter, by: string, newerDay: string | null) {
    try {
      return this.usageGroups(f, by, newerDay);
    } catch (e) {
      if (/integer overflow/.test(String((e as Error).message))) throw overflow();
      throw e;
    }
  }

  /** The usage groups of one page of objects: at most F.limit of those F selects, in id order after F.after_id
   *  (docs/reference/remote.md §13: usage answers one page of groups), with the page's total, its object count and last id. */
  private usageGroups(f: Filter, by: string, newerDay: string | null) {
    const [where, params] = whereOf(f);
    const page = `SELECT o.id, o.name, o.owner, o.last_active_at FROM objects o WHERE ${where.join(" AND ")} ORDER BY o.id LIMIT ?`;
    params.push(f.limit ?? -1);
    const [objects, last] = this.db.one(`SELECT count(*), max(id) FROM (${page})`, ...params)!;
    if (newerDay !== null) params.push(newerDay);
    const source = `FROM usage u JOIN (${page}) o ON o.id = u.object_id${newerDay !== null ? " WHERE u.day >= ?" : ""}`;
    let groups: any[];
    const column = by === "session" ? "u.object_id" : by === "day" ? "u.day" : by === "model" ? "u.model" : "u.day, u.model";
    // day_model (the web view's usage page, docs/reference/ui.md §16.3): one group per UTC day and model, keyed by the JSON text of [day, model]
    const keyOf = (r: unknown[]) => (by === "day_model" ? [JSON.stringify([r[0], r[1] ?? null]), 2] : [r[0], 1]) as [string | null, number];
    if (by === "day_model") {
      groups = this.db.all(`SELECT ${column}, ${SUMS} ${source} GROUP BY ${column}`, ...params).map((r) => ({ key: keyOf(r)[0], ...fields(r.slice(2)) }));
    } else if (by === "session") {
      groups = this.db.all(`SELECT u.object_id, o.name, o.owner, max(o.last_active_at), ${SUMS} ${source} GROUP BY u.object_id`, ...params)
        .map((r) => ({ key: r[0], name: r[1], owner: r[2], last_active_at: r[3], ...fields(r.slice(4)) }));
    } else {
      groups = this.db.all(`SELECT ${column}, ${SUMS} ${source} GROUP BY ${column}`, ...params).map((r) => ({ key: r[0], ...fields(r.slice(1)) }));
    }
    const byKey = new Map(groups.map((g) => [g.key, g]));
    for (const g of groups) g.priced = [];
    const grouped = by === "day_model" ? column : `${column}, u.model`;
    for (const r of this.db.all(`SELECT ${column}, u.model, ${PRICED} ${source} GROUP BY ${grouped} HAVING sum(u.uncosted_rows) > 0`, ...params)) {
      const [k, width] = keyOf(r);
      byKey.get(k)?.priced.push(r.slice(width).map((v, i) => (i === 0 ? v : String(v ?? 0))));
    }
    const total = this.db.one(`SELECT ${SUMS} ${source}`, ...params);
    return { groups, total: fields(total ?? []), objects: Number(objects), last };
  }
}

// -- the Worker's side: reading the index ----------------------------------------------------------

/** The root shard that knows a user or tenant shard. */
export function rootOf(shard: string): string {
  let h = 0;
  for (const ch of shard) h = (h * 31 + ch.codePointAt(0)!) >>> 0;
  return `root:${ROOTS[h % ROOTS.length]}`;
}

/** The root shards, in id order (a page in id order starts at the root of its cursor's first digit). */
export const ROOT_SHARDS = [...ROOTS].map((x) => `root:${x}`);

/** One page (at most LIMIT rows) in id order after AFTER of every object's home row matching FILTER, read
 *  from the root shards in turn (at most 16 subrequests), and whether more may follow. */
export async function rootsPage(env: IndexEnv, filter: Filter, after: string, limit: number): Promise<IndexRow[]> {
  const out: IndexRow[] = [];
  const first = after ? ROOTS.indexOf(after[0]) : 0;
  for (let i = Math.max(first, 0); i < ROOTS.length && out.length < limit; i++) {
    const from = i === first ? after : "";
    out.push(...(await ask<IndexRow[]>(env, ROOT_SHARDS[i], "list", { filter: { ...filter, after_id: from, limit: limit - out.length } })));
  }
  return out;
}

function newestFirst(a: IndexRow, b: IndexRow): number {
  return b.last_active_at - a.last_active_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

export const LIST_PAGE = 200; // rows per page of `ls` and the index rows of export/ls --all

/** One page of rows matching FILTER, newest activity first, after the cursor BEFORE ([last_active_at, id]):
 *  from USER's shard (rows USER participates in, one subrequest), or (ALL) from the 16 root shards' copies
 *  of every home row. At most FILTER.limit (else LIST_PAGE) rows; NEXT is the cursor of the next page. */
export async function select(env: IndexEnv, opts: { user?: string | null; all?: boolean }, filter: Filter,
  before: [number, string] | null = null): Promise<{ rows: IndexRow[]; next: [number, string] | null }> {
  const n = Math.min(filter.limit ?? LIST_PAGE, LIST_PAGE);
  if (n <= 0) return { rows: [], next: null };
  let lists: IndexRow[][];
  if (opts.all) {
    lists = await Promise.all(ROOT_SHARDS.map((s) => ask<IndexRow[]>(env, s, "list", { filter: { ...filter, home_only: true, before, limit: n } })));
  } else {
    if (!opts.user) throw invalid("no user to list the objects of");
    lists = await memberLists(env, opts.user, { ...filter, before, limit: n });
  }
  const merged = lists.flat().sort(newestFirst);
  const rows = merged.slice(0, n);
  // the newest N of the union are all among what was fetched: a shard that had more gave N rows
  const more = merged.length > n || (lists.some((l) => l.length === n) && rows.length > 0);
  const last = rows[rows.length - 1];
  return { rows, next: more ? [last.last_active_at, last.id] : null };
}

/** The objects `ls --all` lists for USER (archived included, past-TTL and memory objects hidden), newest
 *  activity first, at most LIMIT of them. Address one with objectStub(env, row). */
export async function listObjects(env: IndexEnv, opts: { user?: string; limit: number }): Promise<IndexRow[]> {
  return (await memberLists(env, opts.user!, { limit: opts.limit })).flat().sort(newestFirst).slice(0, opts.limit);
}

/** The shards holding the rows of USER's objects (docs/reference/remote.md §13): their own shard, and the home shard of each
 *  tenant object they joined (one subrequest to learn them; with TENANT, that tenant's only). */
export async function memberShards(env: IndexEnv, user: string, tenant: string | null = null): Promise<string[]> {
  const homes = await ask<string[]>(env, `user:${user}`, "homes");
  return [`user:${user}`, ...homes.filter((h) => tenant == null || h === `tenant:${tenant}`)];
}

/** USER's rows matching FILTER from each of their shards (each list at most FILTER.limit rows). Only home
 *  rows count: a user shard written before the member list was kept once holds stale copies of tenant rows. */
export async function memberLists(env: IndexEnv, user: string, filter: Filter): Promise<IndexRow[][]> {
  const shards = await memberShards(env, user, filter.tenant ?? null);
  return Promise.all(shards.map((s) => ask<IndexRow[]>(env, s, "list", { filter: { member: user, ...filter, home_only: true } })));
}

export { denied };
