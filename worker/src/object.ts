// The Durable Object holding one durable object (docs/reference/remote.md §13). Every request: the schema is migrated
// (wake), due alarms fire in their own transaction, then the operation runs in ONE transactionSync
// (the DO's input gate is the lock). A write's response is remembered under the client's request
// id, so a retried write is answered with the first result and applied once.
import schema from "./generated/schema.json";
import { Address, CHUNK_SCHEMA, Config, FTS_WHOLE, USAGE_WHOLE, DEFAULT_CONFIG, Db, DurableError, Opened, event, httpStatus, internalError, nextAlarmAt, now, pendingAt, touch } from "./rules/state";
import * as fork from "./rules/fork";
import * as rights from "./rules/rights";
import { fireDue } from "./rules/alarms";
import { stringify } from "./rules/verbatim";
import { rebuild, reduce } from "./recall";
import { IndexEnv, IndexRow, ask, shardsOf, homeShard } from "./indexes";
import * as follow from "./follow";
import * as rate from "./rate";
import { rawArgs } from "./raw";
import { Revocations, revocationList, revokedWhy } from "./auth";
import { counted, limitOf } from "./subrequests";
import * as hooks from "./rules/hooks";
import * as deliver from "./deliver";

let USAGE_CATCH_UP: string | undefined; // schema.catch_up's usage step over whole meta (USAGE_WHOLE), made once
import { OBJECT_OPS, ObjectOp, OpSpec } from "./generated/ops";
import { RULES, RuleOp } from "./generated/handlers";
import { PARTS_SCHEMA, abandonedAt, checkPart, dropAbandoned, dropStaged, stage, unstage } from "./parts";

// What the Worker does for each op of the contract's table (durable_cli/contract/contract.json "ops", generated into
// ./generated/ops.ts: write, creates, erases and the argument specs rules/args.ts checks every call against).
// An op's handler is the rule function its contract entry names ("rule" or "worker", ./generated/handlers.ts);
// OWN and FLAGS below are what only this file can say.
// precheck: run before any storage is touched (a refused import leaves no storage behind)
// tomb: a put of a LangGraph thread, judged by the tombstone delete_thread left (rules/checkpoints.ts)
// buries: delete_thread, which leaves that tombstone in the home index shard before the object is erased
// lazy: takes the lists of a body sent in parts as iterators over the staged items (parts.ts), not arrays
// staging: run on each earlier part of a body in parts, before it is staged (fork: NEW exists, exit 4 at once)
type Handler = { run: (obj: Opened, args: any) => unknown; precheck?: (obj: Opened, args: any, exists: boolean) => unknown;
  tomb?: boolean; buries?: boolean; lazy?: boolean; staging?: (obj: Opened) => void };
type Op = Handler & OpSpec;

// The ops with no rule function: they read the opened object itself (tombstone is answered before an
// object is opened, below). An op the contract gives no rule and that is missing here is a tsc error.
const OWN: Record<Exclude<ObjectOp, RuleOp | "tombstone">, Handler["run"]> = {
  meta: (obj: Opened) => obj.meta(),
};
// How this Durable Object runs an op besides its rule: the dispatch below reads these, no rule can.
const FLAGS: Partial<Record<ObjectOp, Omit<Handler, "run">>> = {
  fork_create: { lazy: true, staging: fork.refuseExistingFork },
  append_many: { lazy: true },
  finish: { lazy: true },
  import: { precheck: rights.precheck },
  put_checkpoint: { tomb: true },
  put_checkpoint_writes: { tomb: true },
  delete_thread: { buries: true },
};
const RUNS: Record<Exclude<ObjectOp, "tombstone">, Handler["run"]> = { ...RULES, ...OWN };
const OPS: Record<string, Op> = Object.fromEntries(Object.entries(RUNS).map(([name, run]) =>
  [name, { ...OBJECT_OPS[name as ObjectOp], run, ...FLAGS[name as ObjectOp] }]));

// all_users: an admin's installation-wide command (import --all-users, export --all): tenant objects are
// reachable without being a participant. The Worker sets it for admin tokens only.
export type Call = { op: string; args: any; address: Address; actor: string; id: string; config: Config; create: boolean;
  request_id: string | null; all_users?: boolean; dev_fault?: string };

const OBJECT_ID = "x-durable-object-id"; // the header of an answer from an object its caller may see (fetch)
const REMEMBERED = 1000; // request ids kept per object (and at least a day's worth)

export class DurableObjectSession {
  private db: Db;
  private migrated = false;
  // What this instance knows without asking storage (reset on a wake, and by erase()):
  private indexed: boolean | null = null; // the shards have the last commit (null: unknown, read _durable_index.dirty)
  private due: number | null | undefined = undefined; // the object's next alarm time after the last commit (undefined: unknown)
  private alarmAt: number | null | undefined = undefined; // the DO alarm as this instance last set it (undefined: unknown)
  private sent: string | null = null; // the row and shards last taken by the index (a put of the same is skipped)
  private rootDirty: boolean | null = null; // the root shard's copy lacks a commit (null: unknown, read _durable_index.root_dirty)
  private rootAt: number | null = null; // when the alarm copies the row to the root shard (set once per dirtying)
  private writes = 0; // commits this instance made (a root copy taken before one is not marked clean)
  private backoff: { failures: number; at: number | null } | null = null; // failed index updates in a row, next retry (null: unread)

  private env: IndexEnv; // the namespaces counting the subrequests of the request or alarm running (subrequests.ts)

  constructor(private ctx: DurableObjectState, private base: IndexEnv) {
    this.db = new Db(ctx.storage.sql);
    this.env = base;
    hooks.allowHosts(base.DURABLE_HOOK_ALLOW_HOSTS);
  }

  /** Each request and alarm has Cloudflare's per-request subrequest limit of its own, counted here as deployed
   *  (docs/reference/remote.md §13: `remote dev` counts the objects' own subrequests): one past it fails, so the index update of a
   *  commit that needs too many stays dirty, as it would on Cloudflare. */
  private counting() {
    this.env = counted(this.base, limitOf(this.base), false);
  }

  private exists(): boolean {
    return this.db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'object'") !== null;
  }

  /** Inside a transaction, just before it commits: the search index and usage totals brought up to the
   *  last row (the file store's schema.catch_up; no trigger fills them per inserted row). Returns RESULT. */
  private caughtUp<T>(result: T): T {
    const [check, , usage, mark] = schema.catch_up;
    const fts = FTS_WHOLE.catchUp; // chunked texts indexed whole (rules/state.ts)
    const row = this.db.one(check);
    if (row && row[1] !== null && Number(row[1]) > Number(row[0])) {
      this.db.run(fts, row[0]);
      this.db.run(USAGE_CATCH_UP ??= USAGE_WHOLE.catchUp(usage), row[0]); // a chunked meta read whole
      this.db.run(mark, row[0], row[1]);
    }
    return result;
  }

  /** The same ordered steps as the file store's schema.MIGRATIONS, recorded in _durable_schema. */
  private migrate() {
    if (this.migrated && this.exists()) return;
    this.ctx.storage.transactionSync(() => {
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_schema (one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL)");
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_requests (id TEXT PRIMARY KEY, status INTEGER NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL)");
      // the index shards this object's row was last sent to, and whether a commit since has not reached them
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_index (one INTEGER PRIMARY KEY CHECK (one = 1), dirty INTEGER NOT NULL, shards TEXT NOT NULL)");
      this.db.run("INSERT OR IGNORE INTO _durable_index (one, dirty, shards) VALUES (1, 1, '[]')");
      // the root shard's copy, off the write path (the alarm brings it up to date), and the backoff of failed updates
      if (!this.db.one("SELECT 1 FROM pragma_table_info('_durable_index') WHERE name = 'root_dirty'")) {
        this.db.run("ALTER TABLE _durable_index ADD COLUMN root_dirty INTEGER NOT NULL DEFAULT 1");
        this.db.run("ALTER TABLE _durable_index ADD COLUMN failures INTEGER NOT NULL DEFAULT 0");
        this.db.run("ALTER TABLE _durable_index ADD COLUMN retry_at INTEGER");
      }
      // a LangGraph thread created after a delete_thread: the tombstone it is judged by (rules/checkpoints.ts)
      this.db.run("CREATE TABLE IF NOT EXISTS _durable_tomb (one INTEGER PRIMARY KEY CHECK (one = 1), last_checkpoint TEXT)");
      // live followers: each WebSocket's mapping (follow.ts)
      this.db.run(follow.FOLLOWERS_TABLE);
      const row = this.db.one("SELECT version FROM _durable_schema");
      const version = row ? row[0] : 0;
      if (version > schema.migrations.length) {
        throw new DurableError(`this object was written by a newer durable Worker (schema ${version}, this one knows ${schema.migrations.length}); deploy the newer Worker`, "storage");
      }
      // a step that recomputes from the rows (the usage totals' backfill) reads a chunked meta whole, once the chunks exist
      const chunked = !!this.db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_durable_chunks'");
      for (const step of schema.migrations.slice(version)) for (const s of step.statements) this.db.run(chunked ? USAGE_WHOLE.catchUp(s) : s);
      this.db.run("INSERT OR REPLACE INTO _durable_schema (one, version) VALUES (1, ?)", schema.migrations.length);
      for (const s of CHUNK_SCHEMA) this.db.run(s); // values over a Cloudflare row, in parts (rules/state.ts)
      if (!String(this.db.one("SELECT sql FROM sqlite_master WHERE name = 'turns_fts_source'")?.[0] ?? "").includes(FTS_WHOLE.marker)) {
        for (const s of FTS_WHOLE.statements) this.db.run(s); // the search index over chunked texts whole
      }
      for (const name of Object.keys(USAGE_WHOLE.timing)) { // the usage triggers over a chunked meta whole
        const sql = String(this.db.one("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", name)?.[0] ?? "");
        if (sql && !sql.includes(USAGE_WHOLE.marker)) {
          this.db.run(`DROP TRIGGER ${name}`);
          this.db.run(USAGE_WHOLE.trigger(name, sql));
        }
      }
      for (const s of PARTS_SCHEMA) this.db.run(s); // bodies over DURABLE_MAX_BODY_BYTES, in parts (parts.ts)
    });
    this.migrated = true;
  }

  async fetch(request: Request): Promise<Response> {
    this.counting();
    const path = new URL(request.url).pathname;
    if (path === "/system") return this.system((await request.json()) as SystemCall);
    if (path === "/follow") return this.follow(request);
    if (path === "/rate") { // the Worker's per-token rate limit, kept in the token user's reserved object (rate.ts)
      const { jti, limit } = (await request.json()) as { jti: string; limit: number };
      const retryAfter = this.ctx.storage.transactionSync(() => rate.take(this.ctx.storage.sql, jti, limit, now()));
      return new Response(JSON.stringify({ result: { retry_after: retryAfter } }), { headers: { "content-type": "application/json" } });
    }
    let call: Call;
    try {
      call = await this.callOf(request);
    } catch (e) {
      return this.answer(0, e);
    }
    let fresh = false; // an import into storage that did not exist: a failure leaves none behind
    // the object's id in the answer's x-durable-object-id once the call has woken it as its caller may see it (not
    // for a NAME not found, nor for another user's tenant object): the client's operation span carries it
    // (docs/reference/traces.md §15.6 durable.object.id)
    let woke: string | null = null;
    try {
      if (call.op === "tombstone") { // Store.tombstone(NAME): what delete_thread left for this object, or null
        const grave = await this.tombstone(call);
        return new Response(JSON.stringify({ result: grave ?? null }), { headers: { "content-type": "application/json" } });
      }
      if (call.op === "dev_forget_followers" && this.env.DURABLE_DEV_FAULTS === "1" && this.exists()) {
        // tests only: the followers' mappings lost (as if storage had lost them): the next push closes their sockets with 4002
        this.migrate();
        this.db.run("DELETE FROM _durable_followers");
        return new Response(JSON.stringify({ result: null }), { headers: { "content-type": "application/json" } });
      }
      const op = OPS[call.op];
      if (!op) throw new DurableError(`unknown operation '${call.op}'`, "invalid_input");
      const creating = op.creates && call.create !== false;
      const existed = this.exists();
      let extra: Record<string, unknown> = {};
      if (op.tomb && (!existed || this.db.one("SELECT 1 FROM object") === null)) { // no object: the shard's tombstone judges
        const grave = await this.tombstone(call);
        extra = { __tomb: grave ?? null, __tomb_fetched: true };
      }
      if (!existed) {
        if (!creating) return this.answer(0, this.refuse(call));
      }
      if (op.precheck && call.args?.part == null) { // a body in parts: the op checks it whole, in its last part
        op.precheck(new Opened(this.db, call.address, call.actor, call.config, call.id), { ...(call.args ?? {}), all_users: !!call.all_users }, existed);
        fresh = !existed;
      } else if (op.precheck) { // a part: the storage its earlier parts made holds no object yet
        fresh = !existed || this.db.one("SELECT 1 FROM object") === null;
      }
      this.migrate();
      const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
      if (call.request_id && op.write) {
        const seen = this.db.one("SELECT status, body FROM _durable_requests WHERE id = ?", call.request_id);
        if (seen) {
          // the first answer, or (recall.ts) the rows it named as they are now
          const text = seen[1].startsWith('{"recall":') ? stringify({ result: rebuild(obj, JSON.parse(seen[1])) }) : seen[1];
          const seer = call.address.id_scope !== "tenant" || call.all_users || obj.role() !== null;
          return new Response(text, { status: seen[0], headers: { "content-type": "application/json", "x-durable-replayed": "1",
            ...(seer ? { [OBJECT_ID]: call.id } : {}) } });
        }
      }
      const fired = this.fire(obj);
      if (fired === "expired") {
        await this.erase();
        if (!creating) return this.answer(0, this.refuse(call));
        this.migrate();
        if (op.tomb && !extra.__tomb_fetched) {
          const grave = await this.tombstone(call);
          extra = { __tomb: grave ?? null, __tomb_fetched: true };
        }
      }
      if (fired !== "absent" && fired !== "expired" && call.address.id_scope === "tenant" && !call.all_users && obj.role() === null) {
        // another user's tenant object: exactly "not found" (or "name is taken" for a creating command)
        throw creating ? new DurableError(obj.taken, "conflict") : new DurableError(obj.missing, "not_found");
      }
      woke = call.id;
      let ran: any = null;
      const body = this.ctx.storage.transactionSync(() => {
        if (call.dev_fault === "internal" && this.env.DURABLE_DEV_FAULTS === "1") { // the tests' hook: a bug's error in the transaction
          throw new Error(`dev fault: SQLITE_ERROR near the object's storage of ${call.id}`);
        }
        let args = { ...(call.args ?? {}), all_users: !!call.all_users, ...extra };
        const part = args.part != null ? checkPart(args.part, op.parts) : null;
        let result: unknown;
        if (part && part.index < part.count - 1) {
          op.staging?.(obj);
          result = ran = stage(this.db, part, args, op.parts!); // a body in parts (parts.ts): staged, committed by its last part
        } else {
          if (part) args = unstage(this.db, part, args, op.lazy);
          result = ran = op.run(obj, args);
          if (part && op.lazy) dropStaged(this.db, part);
          if (op.write) this.dirty();
        }
        // a row's JSON fields as stored, verbatim (rules/verbatim.ts), here and in the answer a replay gets
        const text = stringify({ result: result === undefined ? null : result });
        if (call.request_id && op.write) {
          // ids and seqs, never row contents (recall.ts): a batch of any size is one small row here
          const recall = reduce(call.op, call.args ?? {}, result);
          this.db.run("INSERT OR REPLACE INTO _durable_requests (id, status, body, at) VALUES (?, 200, ?, ?)", call.request_id,
            recall ? JSON.stringify(recall) : text, now());
          this.db.run("DELETE FROM _durable_requests WHERE at < ? AND id NOT IN (SELECT id FROM _durable_requests ORDER BY at DESC LIMIT ?)",
            now() - 86400000, REMEMBERED);
        }
        return this.caughtUp(text);
      });
      if (op.buries) { // the tombstone first: an object is never gone without it (a failure leaves the thread as it was)
        await ask(this.env, homeShard(call.address.id_scope, call.address.owner), "bury",
          { id: call.id, owner: ran.owner, last_checkpoint: ran.last_checkpoint, members: ran.members, at: now() });
      }
      if (op.erases) await this.erase(); // `delete`: every byte of the object's storage goes, after the receipt was made
      await this.syncIndex();
      await this.schedule();
      if (op.write || fired === "fired") await this.pushFollowers();
      return new Response(body, { headers: { "content-type": "application/json", [OBJECT_ID]: call.id } });
    } catch (e) {
      if (fresh && this.exists() && this.db.one("SELECT 1 FROM object") === null) await this.erase();
      if (call.op === "import" && e instanceof DurableError && e.document === undefined) e.document = { id: call.id }; // the receipt's entry
      const answer = this.answer(0, e);
      if (woke !== null) answer.headers.set(OBJECT_ID, woke);
      return answer;
    }
  }

  /** A call as the Worker sent it: its JSON, or (a big body, raw.ts) the call without args in a header and the
   *  client's body as it came, decoded, checked and parsed here once. */
  private async callOf(request: Request): Promise<Call> {
    const head = request.headers.get("x-durable-call");
    if (head === null) return (await request.json()) as Call;
    const call = JSON.parse(decodeURIComponent(head)) as Call;
    call.args = rawArgs(new Uint8Array(await request.arrayBuffer()), call.op);
    return call;
  }

  /** The tombstone a deleted LangGraph thread left at this object's id, as its caller may see it (docs/reference/integrations.md §12):
   *  the home shard answers it only to a participant the thread had when deleted (or an admin's
   *  installation-wide call); to anyone else null, as for a thread never made. */
  private tombstone(call: Call): Promise<unknown> {
    return ask(this.env, homeShard(call.address.id_scope, call.address.owner), "tombstone", { id: call.id, user: call.actor, all: !!call.all_users });
  }

  /** Due alarms fire in their own transaction (with the catch-up of a wake) -- skipped when this instance
   *  knows nothing is due: the object's alarm times change only through its own commits, seen here. */
  private fire(obj: Opened): string {
    if (this.due !== undefined && (this.due === null || this.due > now())) return obj.meta() === null ? "absent" : "ok";
    const fired = this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue(obj))));
    if (fired === "ok") this.due = this.exists() ? nextAlarmAt(this.db, false) : null;
    return fired;
  }

  private refuse(call: Call): DurableError {
    const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
    if (call.op === "facts") return new DurableError("", "__empty_list");
    return new DurableError(obj.missing, "not_found");
  }

  private answer(_unused: number, e: unknown): Response {
    if (e instanceof DurableError && e.code === "__empty_list") {
      return new Response(JSON.stringify({ result: [] }), { headers: { "content-type": "application/json" } });
    }
    const err = internalError(e, "an object's Durable Object");
    const body: { error: Record<string, unknown> } = { error: { code: err.code, message: err.message } };
    if (err.document !== undefined) body.error.document = err.document;
    return new Response(JSON.stringify(body), { status: httpStatus(err.code), headers: { "content-type": "application/json" } });
  }

  /** TTL expiry, `delete`, purge and forget: every byte of the object's storage goes (deleteAll), alarm
   *  included; then its rows leave the index shards it was listed in (best effort: a row left behind
   *  points at an absent object, which reindex and the commands across objects drop). */
  private async erase() {
    follow.endAll(this.ctx, "deleted");
    const id = this.exists() ? this.db.one("SELECT id FROM object") : null;
    const sent = this.sentTo();
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.migrated = false;
    this.forgetState();
    if (id) await this.unindex(String(id[0]), sent);
  }

  private async unindex(id: string, shards: string[]) {
    try {
      await Promise.all([...shards.map((s) => ask(this.env, s, "drop", { id })), ask(this.env, `root:${id[0]}`, "unregister", { id })]);
    } catch {
      // left for reindex (docs/remote.md)
    }
  }

  private sentTo(): string[] {
    try {
      const r = this.db.one("SELECT shards FROM _durable_index");
      return r ? (JSON.parse(r[0]) as string[]) : [];
    } catch {
      return [];
    }
  }

  private forgetState() {
    [this.indexed, this.due, this.alarmAt, this.sent] = [null, undefined, null, null];
    [this.rootDirty, this.rootAt, this.backoff] = [null, null, null];
  }

  /** Inside a write transaction: the index has not seen this commit yet. Stored only on the transition
   *  (a page write when it was clean); this instance's memory says when the shards have taken it. */
  private dirty() {
    this.db.run("UPDATE _durable_index SET dirty = 1, root_dirty = 1 WHERE dirty = 0 OR root_dirty = 0");
    this.indexed = false;
    this.due = undefined;
    this.writes++;
    if (this.rootDirty !== true || this.rootAt === null) this.rootAt = now() + ROOT_COPY_MS;
    this.rootDirty = true;
  }

  /** The root shard's copy may lack a commit: known to this instance, else as stored. */
  private isRootDirty(): boolean {
    if (!this.exists()) return false;
    if (this.rootDirty === null) this.rootDirty = !!this.db.one("SELECT root_dirty FROM _durable_index")?.[0];
    if (this.rootDirty && this.rootAt === null) this.rootAt = now();
    return this.rootDirty;
  }

  /** Failed index updates in a row and when the alarm tries again (as stored, read once per instance). */
  private retry(): { failures: number; at: number | null } {
    if (this.backoff === null) {
      const r = this.exists() ? this.db.one("SELECT failures, retry_at FROM _durable_index") : null;
      this.backoff = { failures: r ? Number(r[0]) : 0, at: r && r[1] !== null ? Number(r[1]) : null };
    }
    return this.backoff;
  }

  /** An index update failed: the next try from the alarm after a random delay up to 2 s, its bound doubling
   *  at each failure in a row up to 5 minutes (exponential backoff with full jitter; docs/reference/remote.md §13). */
  private failed() {
    const failures = this.retry().failures + 1;
    const at = now() + Math.floor(Math.random() * Math.min(INDEX_RETRY_MS * 2 ** Math.min(failures - 1, 20), INDEX_RETRY_MAX_MS));
    this.backoff = { failures, at };
    if (this.exists()) this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET failures = ?, retry_at = ?", failures, at));
  }

  private succeeded() {
    if (this.retry().failures === 0) return;
    this.backoff = { failures: 0, at: null };
    if (this.exists()) this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET failures = 0, retry_at = NULL"));
  }

  /** The alarm's copy of the row to its root shard (what installation-wide commands page over): never on a
   *  write's path. A commit made while it was sent leaves the copy dirty for the next alarm. FORCE: reindex. */
  private async syncRoot(force = false): Promise<boolean> {
    if (!this.exists() || !(force || this.isRootDirty())) return true;
    const row = this.indexRow();
    const writes = this.writes;
    if (row !== null) {
      try {
        await ask(this.env, `root:${row.id[0]}`, "put", { row });
      } catch {
        this.failed();
        return false;
      }
    }
    if (this.writes === writes && this.exists()) {
      this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET root_dirty = 0"));
      [this.rootDirty, this.rootAt] = [false, null];
    }
    if (!this.isDirty()) this.succeeded(); // every shard has the row: the backoff starts again from 2 s
    return true;
  }

  private dirtyIf<T>(fired: T): T {
    if (fired === "fired") this.dirty();
    return fired;
  }

  /** The shards may lack a commit: known to this instance, else (a wake) as stored -- an object stays
   *  marked dirty in storage after a hot-path update, so a new instance re-sends its row once (idempotent). */
  private isDirty(): boolean {
    if (!this.exists()) return false;
    if (this.indexed !== null) return !this.indexed;
    const r = this.db.one("SELECT dirty FROM _durable_index");
    this.indexed = !!r && !r[0];
    return !this.indexed;
  }

  /** The object's index row (core/state.py index_row), from its own storage. */
  private indexRow(): IndexRow | null {
    const m = this.db.one("SELECT id, scope, owner, name, title, status, created_at, updated_at, last_active_at, live_turns, live_tokens," +
      " expires_at, external_id FROM object");
    if (!m) return null;
    const [id, scope, owner, name, title, status, created_at, updated_at, last_active_at, turns, tokens, expires_at, external_id] = m;
    const row: IndexRow = {
      id, scope, owner, name, title, status, created_at, updated_at, last_active_at, turns, tokens, expires_at,
      next_alarm_at: nextAlarmAt(this.db), external_id: external_id ?? null, pending_at: pendingAt(this.db),
      pending_requests: Number(this.db.one("SELECT count(*) FROM requests WHERE status = 'pending'")![0]), // the list's badge (docs/reference/ui.md §16.3)
      members: this.db.all("SELECT user, role FROM participants ORDER BY user").map((r) => [r[0], r[1]] as [string, string]),
      tags: this.db.all("SELECT key, value FROM tags ORDER BY key").map((r) => [r[0], r[1]] as [string, string]), // docs/reference/storage.md §3
    };
    if (scope !== "reserved") {
      // counts as text: a JS number would round a total past 2^53 (docs/reference/transcript.md §6: totals carried exactly)
      row.usage = this.db.all("SELECT day, model, CAST(rows AS TEXT), CAST(turns AS TEXT), CAST(tokens AS TEXT)," +
        " CAST(input_tokens AS TEXT), CAST(output_tokens AS TEXT), cost_usd," +
        // docs/reference/retention.md §7 usage, Cost: cache reads and writes, and the sums the client prices (schema PRICED_COLUMNS)
        " CAST(cache_read_tokens AS TEXT), CAST(cache_write_tokens AS TEXT), CAST(uncosted_rows AS TEXT), CAST(uncosted_base AS TEXT)," +
        " CAST(uncosted_cache_read AS TEXT), CAST(uncosted_cache_write AS TEXT), CAST(uncosted_output AS TEXT) FROM usage_totals ORDER BY key");
    }
    return row;
  }

  /** After a commit (or on a wake after a failed update): send the row to its shards, drop it from the
   *  shards it left (a participant removed), and mark the object clean. Other requests wait meanwhile,
   *  as the local index update happens under the object's lock. A failure leaves the object dirty and
   *  an alarm retries it (and so does the next request). FORCE: send even if clean (reindex). */
  private async syncIndex(force = false, persist = false): Promise<IndexRow | null> {
    if (!this.exists() || !(force || this.isDirty())) return null;
    return this.ctx.blockConcurrencyWhile(async () => {
      const row = this.indexRow();
      if (row === null) { // storage without an object (the parts of a body staged, a create refused): nothing to index
        this.indexed = true;
        return null;
      }
      const home = homeShard(row.scope, row.owner);
      const shards = shardsOf(row);
      const before = this.sentTo();
      const gone = before.filter((s) => !shards.includes(s));
      // docs/reference/remote.md §13: the row (member list included) goes to its home shard only; a participant's own shard is
      // told of their membership when it starts (and dropped when it ends), never at each commit
      const joined = shards.filter((s) => s !== home && (force || !before.includes(s))); // reindex: every one again
      const text = JSON.stringify([row, shards]);
      if (!force && text === this.sent && !gone.length) { // the shards already hold exactly this
        this.indexed = true;
        return row;
      }
      this.indexed = false;
      try { // (the root shard's copy is the alarm's: syncRoot)
        await Promise.all([ask(this.env, home, "put", { row, home: true }),
          ...joined.map((s) => ask(this.env, s, "join", { id: row.id, home })),
          ...gone.map((s) => ask(this.env, s, "drop", { id: row.id }))]);
      } catch {
        this.failed();
        return row; // still dirty: schedule() sets an alarm to retry, backing off
      }
      this.indexed = true;
      this.sent = text;
      // storage is written only when the shard set changed, or off the hot path (alarm, reindex): a clean
      // mark left unwritten costs one idempotent re-send on the next wake, not a write per request
      if (persist || shards.join() !== before.join()) {
        this.ctx.storage.transactionSync(() => this.db.run("UPDATE _durable_index SET dirty = ?, shards = ?", persist ? 0 : 1, JSON.stringify(shards)));
      }
      return row;
    });
  }

  /** The DO alarm at the object's next due time (or a retry of a failed index update); storage is told
   *  only when that time changed since this instance last set it. */
  private async schedule() {
    const exists = this.exists();
    let due = exists ? nextAlarmAt(this.db) : null; // pending deliveries' next attempts included: the alarm sends them
    this.due = exists ? nextAlarmAt(this.db, false) : null; // what a wake fires
    // an index update to retry (backing off), or the root copy to make; storage holding only the parts of a
    // body (no object yet) has no row to send: its one alarm is the staged parts' expiry below
    const indexable = exists && this.db.one("SELECT 1 FROM object") !== null;
    if (indexable && (this.isDirty() || this.isRootDirty())) {
      const next = this.retry().at ?? (this.isDirty() ? now() : this.rootAt ?? now());
      due = Math.min(due ?? Infinity, next);
    }
    const staged = exists ? abandonedAt(this.db) : null; // a body in parts whose last part never came (parts.ts)
    if (staged !== null) due = Math.min(due ?? Infinity, staged);
    if (due === this.alarmAt) return;
    if (due === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(due, now() + 1));
    this.alarmAt = due;
  }

  async alarm() {
    this.counting();
    this.alarmAt = null; // a fired alarm is no longer set
    if (!this.exists()) return;
    this.migrate();
    const left = this.ctx.storage.transactionSync(() => dropAbandoned(this.db));
    if (this.db.one("SELECT 1 FROM object") === null) { // storage without an object: what parts of a body left (a killed fork)
      if (left === null) await this.erase();
      else await this.schedule();
      return;
    }
    const obj = new Opened(this.db, { id_scope: "user", owner: "", name: "", scope: "user" }, "", DEFAULT_CONFIG, "");
    const fired = this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue(obj))));
    if (fired === "expired") await this.erase();
    else {
      if (fired === "fired") await this.pushFollowers(); // a prompt a schedule queued, before any delivery is sent
      await this.deliver();
      if (!this.exists()) return;
      if (this.retry().at === null || this.retry().at! <= now()) {
        await this.syncIndex(false, true);
        if (!this.isDirty()) await this.syncRoot();
      }
      await this.schedule();
      await this.pushFollowers();
    }
  }

  /** docs/reference/remote.md §13: the due deliveries of the outbox, at most PER_ALARM of them in one invocation, each
   *  claimed in a transaction, sent with fetch outside it (other requests run meanwhile; the claim keeps them from
   *  sending it too) and recorded in another. A receiver's error is recorded, never thrown; what is left is due at
   *  once, so schedule() sets the alarm again for it. */
  private async deliver() {
    for (let n = 0; n < deliver.PER_ALARM; n++) {
      if (!this.exists() || this.db.one("SELECT 1 FROM object") === null) return;
      const claimed = this.ctx.storage.transactionSync(() => deliver.claim(this.db));
      if (claimed === null) return;
      const [status, error] = await deliver.post(claimed);
      if (!this.exists()) return; // deleted meanwhile: nothing to record
      this.ctx.storage.transactionSync(() => {
        deliver.record(this.db, claimed, status, error);
        this.dirty(); // the index's next alarm time moved
      });
    }
  }

  /** The newer rows to the live followers (follow.ts), after a commit; a follower whose token expired or
   *  was revoked since is closed instead (the revocation list as the Worker reads it, auth.ts). */
  private async pushFollowers() {
    if (this.exists() && this.ctx.getWebSockets().length) {
      let list: Awaited<ReturnType<typeof revocationList>> | null = null;
      try {
        list = await revocationList(Date.now(), () => ask<Revocations>(this.env, "auth:0", "revocations", {}));
      } catch {
        // unreadable past its stale bound: each follower reconnects, its token checked again at the upgrade
      }
      if (!this.exists()) return;
      this.migrate();
      follow.push(this.ctx, this.db, (t) => (list === null ? null : revokedWhy(t, list) !== null));
    }
  }

  /** GET /v1/follow upgraded (the Worker checked the token and the caller): a follower of this object
   *  from the seq it names, accepted with the hibernation API (follow.ts). */
  private async follow(request: Request): Promise<Response> {
    let call: Call;
    try {
      call = JSON.parse(decodeURIComponent(request.headers.get("x-durable-call") ?? "")) as Call;
    } catch {
      return this.answer(0, new DurableError("a follow request carries its call", "invalid_input"));
    }
    try {
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") throw new DurableError("GET /v1/follow takes a WebSocket upgrade", "invalid_input");
      const given = call.args?.since;
      // any integer up to 2^63 - 1 (`--follow --since N` as locally); no seq reaches 2^53, so it is taken at most that
      if (!Number.isInteger(given) || given < 0 || given > 2 ** 63) throw new DurableError("since must be a non-negative integer", "invalid_input");
      const since = Math.min(given, Number.MAX_SAFE_INTEGER);
      if (!this.exists()) return this.answer(0, this.refuse(call));
      this.migrate();
      const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
      const fired = this.fire(obj);
      if (fired === "expired") {
        await this.erase();
        return this.answer(0, this.refuse(call));
      }
      if (fired === "absent") return this.answer(0, this.refuse(call));
      if (call.address.id_scope === "tenant" && !call.all_users && obj.role() === null) throw new DurableError(obj.missing, "not_found");
      if (fired === "fired") {
        await this.syncIndex();
        await this.schedule();
      }
      return follow.accept(this.ctx, this.db, call, since);
    } catch (e) {
      return this.answer(0, e);
    }
  }

  async webSocketMessage(_ws: WebSocket, _message: string | ArrayBuffer) {
    // a follower sends nothing; the object pushes
  }

  async webSocketClose(ws: WebSocket, code: number, reason: string) {
    follow.closed(this.db, ws, this.exists());
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  async webSocketError(ws: WebSocket) {
    follow.closed(this.db, ws, this.exists());
  }

  /** Operations the Worker runs for the commands across objects (never reachable from /v1/call): each
   *  re-checks the object itself, since the index row that led here can be stale. */
  private async system(call: SystemCall): Promise<Response> {
    try {
      let result: unknown = null;
      if (this.exists()) {
        this.migrate();
        result = await this.systemOp(call);
        if (this.exists()) {
          await this.syncIndex(call.op === "reindex", true);
          if (!(await this.syncRoot(call.op === "reindex")) && call.op === "reindex") {
            throw new DurableError("the root index shard did not take the object's row; run reindex again", "busy");
          }
          await this.schedule();
          await this.pushFollowers();
          if (call.op === "reindex" && this.isDirty()) throw new DurableError("the index did not take the object's row; run reindex again", "busy");
        }
      } else {
        result = { absent: true }; // the index row that led here is stale
      }
      return new Response(JSON.stringify({ result }), { headers: { "content-type": "application/json" } });
    } catch (e) {
      return this.answer(0, e);
    }
  }

  private async systemOp(call: SystemCall): Promise<unknown> {
    const config = DEFAULT_CONFIG;
    const obj = new Opened(this.db, call.address, "", config, call.id);
    const meta = obj.meta();
    if (meta === null) return { absent: true };
    const entry = (extra: object = {}) => ({ id: meta.id, owner: meta.owner, name: meta.name, ...extra });
    const a = call.args ?? {};
    switch (call.op) {
      case "reindex":
        return this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue(obj)))) === "expired"
          ? (await this.erase(), null) : this.indexRow();
      case "purge_if": { // the object's own last_active_at decides, not the index row
        if (meta.scope === "reserved" || meta.last_active_at >= a.cutoff || (a.statuses?.length && !a.statuses.includes(meta.status))) return null;
        await this.erase();
        return { deleted: entry() };
      }
      case "sweep": {
        // docs/reference/retention.md §7: the receipt says where a schedule fired
        const scheduleDue = a.kind === "alarm" && this.db.one("SELECT 1 FROM schedules WHERE next_at <= ? LIMIT 1", now()) !== null;
        const fired = this.ctx.storage.transactionSync(() => this.caughtUp(this.dirtyIf(fireDue(obj))));
        if (fired === "expired") {
          await this.erase();
          return a.kind === "alarm" ? { deleted: entry({ reason: "ttl expired" }) } : null;
        }
        if (a.kind === "alarm") return fired === "fired" ? { changed: entry({ what: scheduleDue ? "schedule fired" : "alarm fired" }) } : null;
        const archived = this.ctx.storage.transactionSync(() => {
          const m = obj.meta()!;
          if (m.status !== "created" || m.updated_at >= a.draft_before || this.db.one("SELECT 1 FROM prompts LIMIT 1")) return false;
          this.db.run("UPDATE object SET status = 'archived'");
          event(obj, "session.status", { from: "created", to: "archived", reason: "draft expired" }, null);
          touch(obj, false);
          this.dirty();
          return true;
        });
        return archived ? { changed: entry({ what: "draft archived" }) } : null;
      }
      case "erase": // forget: an object the user owns (or their memory object)
        if (meta.owner !== a.user || meta.scope === "tenant") return null;
        await this.erase();
        return { deleted: entry() };
      case "leave": // forget: the user's traces in a tenant object (across/rights.py _leave_tenant)
        return this.leave(obj, entry, a.user);
      default:
        throw new DurableError(`unknown system operation '${call.op}'`, "invalid_input");
    }
  }

  private async leave(obj: Opened, entry: (extra?: object) => object, user: string): Promise<unknown> {
    if (obj.address.id_scope !== "tenant" || !this.db.one("SELECT 1 FROM participants WHERE user = ?", user)) return null;
    let gone: string[] = [];
    const left = this.ctx.storage.transactionSync(() => {
      this.db.run("DELETE FROM participants WHERE user = ?", user);
      for (const [table, column] of [["turns", "author"], ["prompts", "author"], ["events", "actor"], ["requests", "answered_by"]]) {
        this.db.run(`UPDATE ${table} SET ${column} = NULL WHERE ${column} = ?`, user);
      }
      // docs/reference/sessions.md §5.3: the schedules and hooks USER made go (a hook's deliveries with it)
      gone = ["schedules", "hooks"].filter((table) => this.db.one(`SELECT 1 FROM ${table} WHERE author = ? LIMIT 1`, user));
      this.db.run("DELETE FROM schedules WHERE author = ?", user);
      this.db.run("DELETE FROM deliveries WHERE hook_id IN (SELECT id FROM hooks WHERE author = ?)", user);
      this.db.run("DELETE FROM hooks WHERE author = ?", user);
      this.db.run("UPDATE events SET data = '{}' WHERE type IN ('participant.added', 'participant.removed') AND json_extract(data, '$.user') = ?", user);
      const rest = this.db.all("SELECT user, role FROM participants ORDER BY joined_at, user");
      event(obj, "participant.removed", {}, null);
      if (rest.length && !rest.some((r) => r[1] === "owner")) this.db.run("UPDATE participants SET role = 'owner' WHERE user = ?", rest[0][0]);
      this.dirty();
      return rest.length;
    });
    if (!left) {
      await this.erase();
      return { deleted: entry() };
    }
    return { changed: entry({ what: ["participant removed", ...gone].join(", ") }) };
  }
}

const INDEX_RETRY_MS = 2000; // the bound of the first retry's random delay after a failed index update (then doubling)
const INDEX_RETRY_MAX_MS = 300000; // ... up to 5 minutes
const ROOT_COPY_MS = 0; // the alarm copies a commit to the root shard this soon after it (off the write path)

type SystemCall = { op: string; args: any; address: Address; id: string };
