// `session fork` (mirrors durable_cli/core/fork.py): the source plans, NEW's object creates.
import { DurableError, Opened, conflict, createObject, event, invalid, now, say, sessionJson, DictRow } from "./state";
import { validTitle } from "./lifecycle";
import { CALLS, CALL_ID, COLS, CONTENT, CREATED, DATA, KIND, META, NAME, POS, ROLE, TOKENS, isInt, marks, prepare, requireVisible } from "./transcript/row";
import { PAGE_BYTES, PAGE_ROWS } from "./transcript/reads";
import { liveRow, splitsACall } from "./transcript/summaries";
import type { Lazy, ObjectArgs } from "../generated/ops";

/** The transcript changes that alter rows already copied (an append adds rows after the cut: it does not). */
const REWRITES = ["transcript.popped", "transcript.cleared", "transcript.redacted", "transcript.pruned", "transcript.summarized"];

type ForkCursor = { after: number; cut: number; seq: number; events: number };

/** One page of `session fork`'s plan, on the source (docs/reference/remote.md §13: a request holds one row plus one page of its
 *  answer): its id, NAME, title, the seq the fork copies up to, and the next live rows up to that seq's
 *  position (in logical order), read from a lazy cursor; the client asks again with `cursor: next` until it
 *  is null. The first page checks AT (exit 3 for one that is not a live row, 2 for one separating a tool call
 *  from its results) and fixes the cut: rows appended meanwhile are not copied, and a later page finds
 *  whether the copied rows were rewritten meanwhile (pop, clear, redact, prune, summary): then it is a
 *  conflict marked `restart`, and the client plans the fork again from the first page. */
export function forkPlan(obj: Opened, a: ObjectArgs["fork_plan"]) {
  const meta = requireVisible(obj);
  let c = (a.cursor ?? null) as ForkCursor | null; // the client's copy of a page's next, checked here
  if (c !== null) {
    if (typeof c !== "object" || ![c.after, c.cut, c.seq, c.events].every(isInt)) throw invalid("cursor must be the `next` of the previous page");
    const cut = obj.db.one("SELECT seq FROM turns WHERE pos = ? AND superseded_by IS NULL", c.cut);
    if (cut === null || cut[0] !== c.seq ||
      obj.db.one(`SELECT 1 FROM events WHERE seq > ? AND type IN (${marks(REWRITES.length)}) LIMIT 1`, c.events, ...REWRITES) !== null) {
      throw new DurableError(`the transcript of ${obj.what} was rewritten while it was being forked; run the fork again`, "conflict", { restart: true });
    }
  } else {
    const events = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM events")![0]);
    const last = a.at == null ? obj.db.one("SELECT pos, seq FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1") : null;
    if (a.at == null && last === null) return { id: obj.id, name: obj.name, title: meta.title, seq: null, rows: [], next: null };
    if (a.at != null) {
      const cut = liveRow(obj, a.at);
      if (splitsACall(obj, obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos <= ? AND tool_calls IS NOT NULL ORDER BY pos`, cut[POS]), cut[POS])) {
        throw invalid(say("fork_splits_tool_call", { at: a.at, what: obj.what }));
      }
      c = { after: Number.MIN_SAFE_INTEGER, cut: cut[POS], seq: a.at, events };
    } else {
      c = { after: Number.MIN_SAFE_INTEGER, cut: last![0], seq: last![1], events };
    }
  }
  const page = { id: obj.id, name: obj.name, title: meta.title, seq: c.seq };
  const rows: DictRow[] = [];
  let bytes = 0;
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos`, c.after, c.cut)) {
    // the JSON fields as the text stored, which fork_create stores as given (prepare)
    rows.push({ role: r[ROLE], content: r[CONTENT], tool_calls_json: r[CALLS], call_id: r[CALL_ID], name: r[NAME],
      meta_json: r[META], data_json: r[DATA], tokens: r[TOKENS], created_at: r[CREATED], kind: r[KIND] });
    for (const x of [r[CONTENT], r[CALLS], r[META], r[DATA]]) if (typeof x === "string") bytes += x.length;
    if ((rows.length >= PAGE_ROWS || bytes >= PAGE_BYTES) && r[POS] !== c.cut) {
      // a client that sends no cursor (one older than paged plans) would take the first page for the whole plan
      if (a.cursor === undefined) throw invalid(`${obj.what} is too long for this client's fork; upgrade durable (the Worker answers a fork's plan in pages)`);
      return { ...page, rows, next: { ...c, after: r[POS] } };
    }
  }
  return { ...page, rows, next: null };
}

const COPY = "INSERT INTO turns (seq, role, content, tokens, author, created_at, kind, covers_first, covers_last, call_id," +
  " tool_calls, name, meta, data, forked_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)";

/** `session fork`, on NEW: create it (`created`, the acting user its owner) holding the rows a fork plan
 *  gave, renumbered from 1 here; every row is checked as an append's would be. NEW existing is exit 4.
 *  ROWS may be a lazy iterator (a fork in parts: object.ts gives the staged rows one at a time), so the
 *  rows are checked and inserted as they come; any refusal rolls the whole transaction back. */
export function forkCreate(obj: Opened, a: Lazy<ObjectArgs["fork_create"], "rows">) {
  const src = a.source ?? {};
  const bad = (what: string) => invalid(`the fork plan is not one this Worker made: ${what}`);
  if (typeof src.id !== "string" || !/^[0-9a-f]{64}$/.test(src.id)) throw bad("source id");
  if (typeof src.name !== "string" || !src.name) throw bad("source name");
  if (src.seq !== null && !(isInt(src.seq) && src.seq >= 1)) throw bad("seq");
  if (a.rows === null || typeof a.rows !== "object" || !(Symbol.iterator in a.rows)) throw bad("rows");
  refuseExistingFork(obj);
  const title = a.title != null ? validTitle(a.title) : src.title != null ? validTitle(src.title) : null;
  createObject(obj, "created", title);
  let seq = 0, tokens = 0;
  for (const r of a.rows) {
    const c = forkCopy(obj, r, `row ${seq + 1}: `, bad);
    seq += 1;
    tokens += c.tokens;
    obj.db.run(COPY, seq, c.role, c.content, c.tokens, obj.actor, c.created_at, c.kind, c.kind === "summary" ? seq : null,
      c.call_id, c.tool_calls, c.name, c.meta, c.data, src.id);
  }
  const t = now();
  obj.db.run("UPDATE object SET live_turns = ?, live_tokens = ?, updated_at = ?, last_active_at = ?", seq, tokens, t, t);
  event(obj, "session.forked", { name: src.name, id: src.id, seq: src.seq });
  return sessionJson(obj);
}

/** A fork into NEW that exists already is exit 4 (checked by each part of a fork sent in parts, too). */
export function refuseExistingFork(obj: Opened) {
  if (obj.meta() !== null) {
    obj.requireVisible();
    throw conflict(say("fork_exists", { what: obj.what }));
  }
}

/** One row of a fork plan as NEW stores it, checked as an append's row (WHERE: the row it is, for the message). */
function forkCopy(obj: Opened, r: any, where: string, bad: (what: string) => DurableError) {
  if (r === null || typeof r !== "object" || !isInt(r.created_at) || r.created_at < 0) throw bad(`${where}created_at`);
  if (r.kind === "summary") {
    if (r.role !== "system" || typeof r.content !== "string" || !r.content || !isInt(r.tokens) || r.tokens < 0 ||
      r.call_id != null || r.name != null || ["tool_calls", "meta", "data"].some((k) => r[k] != null || r[`${k}_json`] != null)) {
      throw bad(`${where}summary`);
    }
    return { role: "system", content: r.content, tokens: r.tokens, call_id: null, tool_calls: null, name: null, meta: null,
      data: null, created_at: r.created_at, kind: "summary" };
  }
  if (r.kind !== "turn") throw bad(`${where}kind`);
  if (!isInt(r.tokens)) throw bad(`${where}tokens`);
  const p = prepare(obj, r, where);
  return { ...p, created_at: r.created_at, kind: "turn" };
}
