// The Durable Object holding one durable object (SPEC §13). Every request: the schema is migrated
// (wake), due alarms fire in their own transaction, then the operation runs in ONE transactionSync
// (the DO's input gate is the lock). A write's response is remembered under the client's request
// id, so a retried write is answered with the first result and applied once.
import schema from "./generated/schema.json";
import { Address, Config, Db, DurableError, Opened, httpStatus, nextAlarmAt, now } from "./rules/state";
import * as sessions from "./rules/sessions";
import * as transcript from "./rules/transcript";
import * as elicit from "./rules/elicit";
import * as memory from "./rules/memory";
import * as limits from "./rules/limits";
import * as retention from "./rules/retention";
import { fireDue } from "./rules/alarms";

type Op = { run: (obj: Opened, args: any) => unknown; write: boolean; creates?: boolean; erases?: boolean };

// The library's Session method names (durable_cli/library.py), one entry per operation.
const OPS: Record<string, Op> = {
  create: { run: sessions.create, write: true, creates: true },
  show: { run: sessions.show, write: false },
  prompt: { run: sessions.prompt, write: true, creates: true },
  next_prompt: { run: sessions.nextPrompt, write: true },
  renew: { run: sessions.renew, write: true },
  finish: { run: sessions.finish, write: true },
  stop: { run: sessions.stop, write: true },
  cancel: { run: sessions.cancel, write: true },
  archive: { run: sessions.archive, write: true },
  unarchive: { run: sessions.unarchive, write: true },
  set_title: { run: sessions.setTitle, write: true },
  invite: { run: sessions.invite, write: true },
  dequeue: { run: sessions.dequeue, write: true },
  queue: { run: sessions.queue, write: false },
  events: { run: sessions.events, write: false },
  participants: { run: sessions.participants, write: false },
  get_prompt: { run: sessions.getPrompt, write: false },
  append_many: { run: transcript.appendMany, write: true, creates: true },
  show_transcript: { run: transcript.show, write: false },
  context_window: { run: transcript.contextWindow, write: false },
  pop: { run: transcript.pop, write: true },
  clear: { run: transcript.clear, write: true },
  redact: { run: transcript.redact, write: true },
  prune: { run: transcript.prune, write: true },
  summarize: { run: transcript.summarize, write: true },
  compact: { run: transcript.compact, write: true },
  plan_summary: { run: transcript.planSummary, write: false },
  plan_compact: { run: transcript.planCompact, write: false },
  commit_summary: { run: transcript.commitSummary, write: true },
  fork_plan: { run: transcript.forkPlan, write: false },
  fork_create: { run: transcript.forkCreate, write: true, creates: true },
  delete: { run: retention.remove, write: true, erases: true },
  ask: { run: elicit.ask, write: true },
  requests: { run: elicit.list, write: false },
  request: { run: elicit.get, write: false },
  answer: { run: elicit.answer, write: true },
  set_fact: { run: memory.setFact, write: true, creates: true },
  get_fact: { run: memory.getFact, write: false },
  facts: { run: memory.listFacts, write: false },
  confirm_fact: { run: memory.confirm, write: true },
  forget_fact: { run: memory.forgetFact, write: true },
  hit: { run: limits.hit, write: true, creates: true },
  ttl: { run: retention.ttl, write: true },
};

export type Call = { op: string; args: any; address: Address; actor: string; id: string; config: Config; create: boolean; request_id: string | null };

const REMEMBERED = 1000; // request ids kept per object (and at least a day's worth)

export class DurableObjectSession {
  private db: Db;
  private migrated = false;

  constructor(private ctx: DurableObjectState, _env: unknown) {
    this.db = new Db(ctx.storage.sql);
  }

  private exists(): boolean {
    return this.db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'object'") !== null;
  }

  /** Inside a transaction, just before it commits: the search index and usage totals brought up to the
   *  last row (the file store's schema.catch_up; no trigger fills them per inserted row). Returns RESULT. */
  private caughtUp<T>(result: T): T {
    const [check, fts, usage, mark] = schema.catch_up;
    const row = this.db.one(check);
    if (row && row[1] !== null && Number(row[1]) > Number(row[0])) {
      this.db.run(fts, row[0]);
      this.db.run(usage, row[0]);
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
      const row = this.db.one("SELECT version FROM _durable_schema");
      const version = row ? row[0] : 0;
      if (version > schema.migrations.length) {
        throw new DurableError(`this object was written by a newer durable Worker (schema ${version}, this one knows ${schema.migrations.length}); deploy the newer Worker`, "storage");
      }
      for (const step of schema.migrations.slice(version)) for (const s of step.statements) this.db.run(s);
      this.db.run("INSERT OR REPLACE INTO _durable_schema (one, version) VALUES (1, ?)", schema.migrations.length);
    });
    this.migrated = true;
  }

  async fetch(request: Request): Promise<Response> {
    const call = (await request.json()) as Call;
    try {
      const op = OPS[call.op];
      if (!op) throw new DurableError(`unknown operation '${call.op}'`, "invalid_input");
      const creating = op.creates && call.create !== false;
      if (!this.exists()) {
        if (!creating) return this.answer(0, this.refuse(call));
      }
      this.migrate();
      if (call.request_id && op.write) {
        const seen = this.db.one("SELECT status, body FROM _durable_requests WHERE id = ?", call.request_id);
        if (seen) return new Response(seen[1], { status: seen[0], headers: { "content-type": "application/json", "x-durable-replayed": "1" } });
      }
      const obj = new Opened(this.db, call.address, call.actor, call.config, call.id);
      const fired = this.ctx.storage.transactionSync(() => this.caughtUp(fireDue(obj)));
      if (fired === "expired") {
        await this.erase();
        if (!creating) return this.answer(0, this.refuse(call));
        this.migrate();
      }
      if (fired !== "absent" && fired !== "expired" && call.address.id_scope === "tenant" && obj.role() === null) {
        // another user's tenant object: exactly "not found" (or "name is taken" for a creating command)
        throw creating ? new DurableError(`${obj.what}: the name is taken; pick another name`, "conflict") : new DurableError(obj.missing, "not_found");
      }
      const body = this.ctx.storage.transactionSync(() => {
        const result = op.run(obj, call.args ?? {});
        const text = JSON.stringify({ result: result === undefined ? null : result });
        if (call.request_id && op.write) {
          this.db.run("INSERT OR REPLACE INTO _durable_requests (id, status, body, at) VALUES (?, 200, ?, ?)", call.request_id, text, now());
          this.db.run("DELETE FROM _durable_requests WHERE at < ? AND id NOT IN (SELECT id FROM _durable_requests ORDER BY at DESC LIMIT ?)",
            now() - 86400000, REMEMBERED);
        }
        return this.caughtUp(text);
      });
      if (op.erases) await this.erase(); // `delete`: every byte of the object's storage goes, after the receipt was made
      await this.schedule();
      return new Response(body, { headers: { "content-type": "application/json" } });
    } catch (e) {
      return this.answer(0, e);
    }
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
    const err = e instanceof DurableError ? e : new DurableError(`internal error in the Worker: ${(e as Error)?.message ?? e}`, "internal");
    const body: any = { error: { code: err.code, message: err.message } };
    if (err.document !== undefined) body.error.document = err.document;
    return new Response(JSON.stringify(body), { status: httpStatus(err.code), headers: { "content-type": "application/json" } });
  }

  /** TTL expiry and `delete`: every byte of the object's storage goes (deleteAll), alarm included. */
  private async erase() {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.migrated = false;
  }

  private async schedule() {
    const due = this.exists() ? nextAlarmAt(this.db) : null;
    if (due === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(due, now() + 1));
  }

  async alarm() {
    if (!this.exists()) return;
    this.migrate();
    const obj = new Opened(this.db, { id_scope: "user", owner: "", name: "", scope: "user" }, "", { max_unfinished: 10, max_turn_bytes: 2097152, token_budget: 4000 }, "");
    const fired = this.ctx.storage.transactionSync(() => this.caughtUp(fireDue(obj)));
    if (fired === "expired") await this.erase();
    else await this.schedule();
  }
}
