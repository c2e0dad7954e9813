// The transcript and its context window (mirrors durable_cli/core/transcript/, SPEC §6), in sections
// as its modules: row.py, appends.py, reads.py, context.py, edits.py, summaries.py; then core/fork.py.
import { createHash } from "node:crypto";
import { CONSTANTS, DurableError, Opened, conflict, createObject, event, invalid, iso, notFound, now, say, touch, dumps, sessionJson } from "../state";
import { approx } from "../tokens";
import { quote } from "../text";
import { check, requireSession, validRequestId, validTitle } from "../sessions";
import { field, raw } from "../verbatim";
import * as strict from "../strict";

const ROLES: string[] = CONSTANTS.row_roles;
const PINNED: string[] = CONSTANTS.pinned_roles;
const USAGE_KEYS: string[] = CONSTANTS.usage_keys;
export const COLS = "seq, role, content, tokens, author, created_at, kind, superseded_by, covers_first, covers_last, call_id, pos, tool_calls, name, meta, data, forked_from";
const [SEQ, ROLE, CONTENT, TOKENS, AUTHOR, CREATED, KIND, SUPERSEDED, FIRST, LAST, CALL_ID, POS, CALLS, NAME, META, DATA, FORKED] =
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
const MAX_USAGE = 1e12; // core/transcript/row.py MAX_USAGE: a usage count's ceiling
const MAX_COST = 1e9; // meta.cost_usd's ceiling, in dollars
const MAX_TOKENS = 1e9; // core/tokens.py MAX_TOKENS: one row's given count at most
const REDACTED = "[redacted]";

const utf8 = (s: string) => new TextEncoder().encode(s).length;
const isInt = (n: unknown) => typeof n === "number" && Number.isInteger(n);

export function checkText(obj: Opened, content: unknown, what = "content") {
  if (typeof content !== "string" || content === "") throw invalid(say("empty_text", { what }));
  const size = utf8(content);
  const limit = obj.config.max_turn_bytes;
  if (size > limit) throw invalid(say("text_too_large", { what, size, limit }));
}

type Prepared = { role: string; content: string; tokens: number; tool_calls: string | null; call_id: string | null;
  name: string | null; meta: string | null; data: string | null; given: number | null };

export function toolCalls(v: unknown, where: string) {
  if (!Array.isArray(v)) throw invalid(where + say("tool_calls_not_array"));
  const seen = new Set<string>();
  return v.map((call: any, i: number) => {
    const n = i + 1;
    if (call === null || typeof call !== "object" || Array.isArray(call)) throw invalid(where + say("tool_call_not_object", { n }));
    const extra = Object.keys(call).filter((k) => !["id", "name", "arguments"].includes(k)).sort();
    if (extra.length) throw invalid(where + say("tool_call_unknown_keys", { n, keys: `[${extra.map(quote).join(", ")}]` }));
    for (const k of ["id", "name"]) if (typeof call[k] !== "string" || !call[k]) throw invalid(where + say("tool_call_needs", { n, key: k }));
    const args = call.arguments ?? "{}";
    if (typeof args !== "string") throw invalid(where + say("tool_call_arguments", { n }));
    if (seen.has(call.id)) throw invalid(where + say("tool_call_id_twice", { id: call.id }));
    seen.add(call.id);
    return { id: call.id, name: call.name, arguments: args };
  });
}

/** meta's rules (core/transcript/row.py _meta): usage counts integers from 0 to 10^12 (LEXEMES: as written, so `5.0`
 *  is refused as in Python), cost_usd a finite number from 0 to 10^9. The message without WHERE is the reason. */
export function metaProblem(v: any, lexemes?: Map<string, string>): string | null {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return say("meta_not_object");
  if ("model" in v && typeof v.model !== "string") return say("meta_model");
  if ("usage" in v) {
    const u = v.usage;
    if (u === null || typeof u !== "object" || Array.isArray(u)) return say("meta_usage");
    for (const k of USAGE_KEYS) {
      const required = k === "input_tokens" || k === "output_tokens";
      if (!(k in u) && !required) continue;
      if (!isInt(u[k]) || !(u[k] >= 0 && u[k] <= MAX_USAGE) || !strict.integerLexeme(lexemes?.get(`usage.${k}`))) {
        return say("meta_usage_count", { key: k });
      }
    }
  }
  if ("cost_usd" in v && (typeof v.cost_usd !== "number" || !(v.cost_usd >= 0 && v.cost_usd <= MAX_COST))) return say("meta_cost");
  return null;
}

function checkMeta(v: any, where: string, lexemes?: Map<string, string>) {
  const problem = metaProblem(v, lexemes);
  if (problem !== null) throw invalid(`${where}${problem}`);
  return v;
}

/** One input row checked as a whole (core/transcript/row.py prepare). Its JSON fields come as text (`tool_calls_json`,
 *  `meta_json`, `data_json`: what the Python client prepared, the text the file backend stores) or as values
 *  (`tool_calls`, `meta`, `data`); text is parsed only to be checked and is stored as given (rules/verbatim.ts). */
export function prepare(obj: Opened, f: any, where = ""): Prepared {
  const role = f.role;
  if (!ROLES.includes(role)) throw invalid(where + say("invalid_row_role", { role, roles: ROLES.join(", ") }));
  const content = f.content ?? "";
  if (typeof content !== "string") throw invalid(where + say("content_not_string"));
  let calls: any[] | null = null;
  let [givenCalls, callsText] = field(f, "tool_calls", where);
  if (givenCalls !== null) {
    if (role !== "assistant") throw invalid(where + say("tool_calls_not_assistant", { role }));
    calls = toolCalls(givenCalls, where);
    if (!calls.length) calls = null;
    else if (dumps(calls) !== dumps(givenCalls)) callsText = dumps(calls); // "arguments" filled in: the text stored is the calls'
  }
  const callId = f.call_id ?? null, name = f.name ?? null;
  if (role === "tool") {
    if (typeof callId !== "string" || !callId) throw invalid(where + say("tool_row_call_id"));
    if (name !== null && (typeof name !== "string" || !name)) throw invalid(where + say("tool_row_name"));
  } else {
    if (callId !== null) throw invalid(where + say("call_id_not_tool", { role }));
    if (name !== null) throw invalid(where + say("name_not_tool", { role }));
  }
  const lexemes = new Map<string, string>();
  const [meta, metaText] = field(f, "meta", where, lexemes);
  if (meta !== null) checkMeta(meta, where, lexemes);
  const [data, dataText] = field(f, "data", where);
  if (content === "" && !(calls && role === "assistant") && data === null) {
    throw invalid(where + say("empty_content"));
  }
  const given = f.tokens ?? null;
  if (given !== null && (!isInt(given) || given < 0 || given > MAX_TOKENS)) throw invalid(where + say("row_tokens", { max: MAX_TOKENS }));
  const p: Prepared = { role, content, call_id: callId, name, given, tokens: 0,
    tool_calls: calls ? callsText : null, meta: metaText, data: dataText };
  let size = utf8(content);
  for (const x of [p.tool_calls, p.meta, p.data]) if (x !== null) size += utf8(x);
  const limit = obj.config.max_turn_bytes;
  if (size > limit) throw invalid(where + say("row_too_large", { size, limit }));
  if (given === null) {
    const parts = [content];
    for (const c of calls ?? []) parts.push(c.name, c.arguments);
    p.tokens = approx(parts.join("\n"));
  } else p.tokens = given;
  return p;
}

/** A row as SPEC §10 shows it; its JSON fields are the stored text, emitted as is (rules/verbatim.ts `stringify`). */
export function rowJson(r: any[]) {
  const summary = r[KIND] === "summary";
  return {
    seq: r[SEQ], role: r[ROLE], content: r[CONTENT], tool_calls: raw(r[CALLS]), call_id: r[CALL_ID], name: r[NAME],
    meta: raw(r[META]), data: raw(r[DATA]), forked_from: r[FORKED], tokens: r[TOKENS], author: r[AUTHOR],
    created_at: iso(r[CREATED]), kind: r[KIND], superseded_by: r[SUPERSEDED], covers: summary && r[LAST] !== null ? [r[FIRST], r[LAST]] : null,
  };
}

const INSERT = "INSERT INTO turns (role, content, tokens, author, created_at, kind, call_id, tool_calls, name, meta, data," +
  " request_id, request_hash, request_last) VALUES (?, ?, ?, ?, ?, 'turn', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq";

export function insertRows(obj: Opened, rows: Prepared[], author: string | null, requestId: string | null = null, hash: string | null = null): number[] {
  const t = now();
  const seqs = rows.map((r, i) => obj.db.one(INSERT, r.role, r.content, r.tokens, author, t, r.call_id, r.tool_calls, r.name, r.meta, r.data,
    i === 0 ? requestId : null, i === 0 ? hash : null, null)![0] as number);
  const first = seqs[0], last = seqs[seqs.length - 1];
  if (requestId !== null && last !== first) obj.db.run("UPDATE turns SET request_last = ? WHERE seq = ?", last, first);
  obj.db.run("UPDATE object SET live_turns = live_turns + ?, live_tokens = live_tokens + ?, updated_at = ?, last_active_at = ?," +
    " expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END",
    rows.length, rows.reduce((s, r) => s + r.tokens, 0), t, t, t);
  return seqs;
}

export function insertTurn(obj: Opened, role: string, content: string, author: string | null): number {
  return insertRows(obj, [prepare(obj, { role, content })], author)[0];
}

function rowsBetween(obj: Opened, first: number, last: number) {
  return obj.db.all(`SELECT ${COLS} FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq`, first, last).map(rowJson);
}

function requireVisible(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  return meta;
}

/** The same digest as the Python side: sha256 over the compact JSON of each row's key. */
function requestHash(rows: Prepared[]): string {
  const key = rows.map((r) => [r.role, r.content, r.tool_calls, r.call_id, r.name, r.meta, r.data, r.given]);
  return createHash("sha256").update(dumps(key)).digest("hex");
}

/** ORIGIN: an adapter's [external_id, adapter], recorded on the object this creates, or on one that has none yet
 *  (core/transcript/appends.py append_many). */
function checkOrigin(origin: unknown): [string, string] | null {
  if (origin == null) return null;
  if (!Array.isArray(origin) || origin.length !== 2 || typeof origin[0] !== "string" || typeof origin[1] !== "string") {
    throw invalid("origin must be [external_id, adapter]");
  }
  return [origin[0], origin[1]];
}

export function appendMany(obj: Opened, a: { rows: any[]; request_id?: string | null; create?: boolean; one?: boolean; seqs_only?: boolean;
  origin?: [string, string] | null }) {
  const rows = (a.rows ?? []).map((r, i) => prepare(obj, r, a.one ? "" : `row ${i + 1}: `));
  if (!rows.length) throw invalid(say("no_rows"));
  const requestId = (validRequestId(a.request_id) as string | null | undefined) ?? null;
  const digest = requestId !== null ? requestHash(rows) : null;
  const origin = checkOrigin(a.origin);
  let meta = obj.meta();
  if (meta === null) {
    if (a.create === false) throw notFound(obj.missing);
    createObject(obj, "active");
    if (origin !== null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", origin[0], origin[1]);
    meta = obj.meta()!;
  } else {
    obj.requireVisible();
    if (origin !== null && meta.external_id === null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", origin[0], origin[1]);
  }
  if (requestId !== null) {
    const found = obj.db.one("SELECT seq, role, content, request_hash, coalesce(request_last, seq) FROM turns WHERE request_id = ?", requestId);
    if (found) {
      const same = found[3] !== null ? found[3] === digest : rows.length === 1 && found[1] === rows[0].role && found[2] === rows[0].content;
      if (!same) throw conflict(say("append_request_id_reused", { request_id: requestId, what: obj.what }));
      const made = rowsBetween(obj, found[0], found[4]);
      return a.seqs_only ? made.map((r) => r.seq) : a.one ? made[0] : made;
    }
  }
  check(obj, "write", meta.status);
  const seqs = insertRows(obj, rows, obj.actor, requestId, digest);
  if (a.seqs_only) return seqs;
  const made = rowsBetween(obj, seqs[0], seqs[seqs.length - 1]);
  return a.one ? made[0] : made;
}

const PAGE_ROWS = 1000; // a page of `show` holds at most this many rows
const PAGE_BYTES = 524288; // ... and stops at the row that reaches this many bytes of text (one row alone may be up to 2 MiB)

type ShowCursor = { after: number; from_pos?: number | null; high: number };

/** One page of what `show` lists (SPEC §6), read from a lazy cursor (SPEC §13: a request holds one row plus
 *  one page of its answer): {rows, next}; the client asks again with `cursor: next` until it is null. The
 *  first page fixes HIGH, the highest seq then written: later pages list no row written after it, so the
 *  pages join into one consistent listing. --all pages in seq order, live rows in logical order (pos);
 *  --last N is the live rows from the pos of the Nth newest on. */
export function show(obj: Opened, a: { all_rows?: boolean; since?: number; last?: number | null; cursor?: ShowCursor | null }) {
  requireVisible(obj);
  const since = a.since ?? 0;
  if (!isInt(since)) throw invalid("--since must be an integer");
  let c = a.cursor ?? null;
  if (c !== null && (typeof c !== "object" || !isInt(c.after) || !isInt(c.high) || (c.from_pos != null && typeof c.from_pos !== "number"))) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  if (c === null) {
    const high = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0]);
    let fromPos: number | null = null;
    if (a.last != null) {
      if (a.all_rows) throw invalid(say("last_with_all"));
      if (!isInt(a.last) || a.last < 0) throw invalid(say("last_negative"));
      if (a.last === 0) return { rows: [], next: null };
      const nth = obj.db.one("SELECT pos FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos DESC LIMIT 1 OFFSET ?", since, a.last - 1);
      fromPos = nth ? nth[0] : null;
    }
    c = { after: Number.MIN_SAFE_INTEGER, from_pos: fromPos, high };
  }
  const sql = a.all_rows
    ? `SELECT ${COLS} FROM turns WHERE seq > ? AND seq > ? AND seq <= ? ORDER BY seq`
    : `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND seq > ? AND seq <= ?${c.from_pos != null ? " AND pos >= ?" : ""} ORDER BY pos`;
  const params: unknown[] = [c.after, since, c.high];
  if (!a.all_rows && c.from_pos != null) params.push(c.from_pos);
  const rows: any[] = [];
  let bytes = 0;
  let last: number | null = null;
  for (const r of obj.db.iter(sql, ...params)) {
    rows.push(rowJson(r));
    last = a.all_rows ? r[SEQ] : r[POS];
    for (const x of [r[CONTENT], r[CALLS], r[META], r[DATA]]) if (typeof x === "string") bytes += x.length;
    if (rows.length >= PAGE_ROWS || bytes >= PAGE_BYTES) {
      return { rows, next: { after: last, from_pos: c.from_pos ?? null, high: c.high } };
    }
  }
  return { rows, next: null };
}

const STORED = "data, role, kind, content, call_id, tool_calls";

/** The live rows in logical order (LAST: the newest N) as [data, role, kind, content, call_id, tool_calls], `data`
 *  and `tool_calls` the JSON text stored (core/transcript/reads.py stored_rows: what an adapter rebuilds its items from). */
export function storedRows(obj: Opened, a: { last?: number | null; cursor?: ShowCursor | null }) {
  requireVisible(obj);
  // in pages, as show's (SPEC §13): {rows, next}; the client asks again with `cursor: next` until it is null
  let c = a.cursor ?? null;
  if (c !== null && (typeof c !== "object" || !isInt(c.after) || !isInt(c.high) || (c.from_pos != null && typeof c.from_pos !== "number"))) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  if (c === null) {
    let fromPos: number | null = null;
    if (a.last != null) {
      if (!isInt(a.last) || a.last < 0) throw invalid(say("stored_last_negative"));
      if (a.last === 0) return { rows: [], next: null };
      const nth = obj.db.one("SELECT pos FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1 OFFSET ?", a.last - 1);
      fromPos = nth ? nth[0] : null;
    }
    c = { after: Number.MIN_SAFE_INTEGER, from_pos: fromPos, high: Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0]) };
  }
  const params: unknown[] = [c.after, c.high];
  if (c.from_pos != null) params.push(c.from_pos);
  const rows: any[] = [];
  let bytes = 0;
  for (const r of obj.db.iter(`SELECT ${STORED}, pos FROM turns WHERE superseded_by IS NULL AND pos > ? AND seq <= ?` +
    `${c.from_pos != null ? " AND pos >= ?" : ""} ORDER BY pos`, ...params)) {
    rows.push(r.slice(0, 6));
    for (const x of r) if (typeof x === "string") bytes += x.length;
    if (rows.length >= PAGE_ROWS || bytes >= PAGE_BYTES) return { rows, next: { after: r[6], from_pos: c.from_pos ?? null, high: c.high } };
  }
  return { rows, next: null };
}

/** `show --follow`'s first read: the rows `show` lists, the highest seq written so far (what follows must be
 *  newer) and the session's status (core/transcript/reads.py follow_start). */
export function followStart(obj: Opened, a: { all_rows?: boolean; since?: number; last?: number | null }) {
  const page = show(obj, { ...a, cursor: null });
  const high = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0]);
  // the first page of `show`, the highest seq, the status, and the cursor of show's next page (or null)
  return [page.rows, Math.max(high, a.since ?? 0), obj.meta()!.status, page.next];
}

/** Every row with a seq greater than SEQ, in seq order, and the session's status (one poll of `--follow`). */
export function rowsAfter(obj: Opened, a: { seq: number }) {
  requireVisible(obj);
  if (!isInt(a.seq)) throw invalid("seq must be an integer");
  return [obj.db.all(`SELECT ${COLS} FROM turns WHERE seq > ? ORDER BY seq`, a.seq).map(rowJson), obj.meta()!.status];
}

/** The rows with a seq greater than SEQ, in seq order, one at a time as read (a live follower's push):
 *  [seq, row as JSON]. */
export function* rowsSince(obj: Opened, seq: number): Generator<[number, any]> {
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE seq > ? ORDER BY seq`, seq)) yield [r[SEQ], rowJson(r)];
}

/** The leading system and developer turns of ROWS (live rows in logical order, read until the first other row). */
export function pinnedPrefix(rows: Iterable<any[]>): any[][] {
  const out: any[][] = [];
  for (const r of rows) {
    if (PINNED.includes(r[ROLE]) && r[KIND] === "turn") out.push(r);
    else break;
  }
  return out;
}

function pinned(obj: Opened) {
  // lazily: stops at the first unpinned row
  return pinnedPrefix(obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos LIMIT 1000`));
}

function callIds(r: any[]): string[] {
  return r[CALLS] ? JSON.parse(r[CALLS]).map((c: any) => c.id) : [];
}

function checkBounds(budget: number, limit: number | null) {
  if (budget < 0 || (limit !== null && limit < 0)) throw invalid(say("window_negative"));
}

/** The window's rule over rows (mirrors core/transcript/context.py `choose`): PIN, then the longest suffix
 *  of the other live rows (NEWER_FIRST, read only as far as needed) within BUDGET tokens and LIMIT rows;
 *  tool calls and their results as one group, KEEP's row forced in. contract/vectors.json "window". */
export function choose(pin: any[][], newerFirst: Iterable<any[]>, budget: number, limit: number | null = null, keep: number | null = null) {
  checkBounds(budget, limit);
  let total = pin.reduce((s, r) => s + r[TOKENS], 0);
  if (total > budget && keep === null) return { rows: [] as any[][], tokens: 0 };
  const tail: any[][] = [];
  let count = 0;
  const waiting = new Map<string, any[][]>();
  for (const r of newerFirst) {
    if (r[ROLE] === "tool" && r[KIND] === "turn") {
      if (!waiting.has(r[CALL_ID])) waiting.set(r[CALL_ID], []);
      waiting.get(r[CALL_ID])!.push(r);
      continue;
    }
    const group = [r];
    for (const id of callIds(r)) {
      group.push(...(waiting.get(id) ?? []));
      waiting.delete(id);
    }
    const cost = group.reduce((s, g) => s + g[TOKENS], 0);
    if (r[SEQ] !== keep && (total + cost > budget || (limit !== null && count + group.length > limit))) break;
    tail.push(...group);
    total += cost;
    count += group.length;
  }
  tail.sort((x, y) => x[POS] - y[POS]);
  return { rows: [...pin, ...tail], tokens: total };
}

export function contextWindow(obj: Opened, a: { budget?: number | null; limit?: number | null; keep?: number | null }) {
  const budget = a.budget ?? obj.config.token_budget;
  const limit = a.limit ?? null;
  checkBounds(budget, limit);
  requireVisible(obj);
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  // a lazy cursor (SPEC §13): the rows are read newest first only until the budget is spent, one at a time,
  // so a window of a long transcript holds the window, not the transcript
  const cursor = obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC`, boundary);
  const { rows, tokens } = choose(pin, cursor, budget, limit, a.keep ?? null);
  return { turns: rows.map(rowJson), tokens, budget };
}

export function pop(obj: Opened, a: { count?: number }) {
  const count = a.count ?? 1;
  if (!isInt(count) || count < 1) throw invalid(say("pop_count"));
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be popped");
  check(obj, "write", meta.status);
  if (!obj.db.one("SELECT 1 FROM turns WHERE superseded_by IS NULL LIMIT 1")) throw conflict(say("pop_empty", { what: obj.what }));
  const removed: any[] = [];
  for (let i = 0; i < count; i++) {
    const r = obj.db.one(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1`);
    if (!r) break;
    obj.db.run("DELETE FROM turns WHERE seq = ?", r[SEQ]);
    let restored = [0, 0];
    if (r[KIND] === "summary") {
      restored = obj.db.one("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by = ?", r[SEQ])!;
      obj.db.run("UPDATE turns SET superseded_by = NULL WHERE superseded_by = ?", r[SEQ]);
    } else obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", r[SEQ]);
    obj.db.run("UPDATE object SET live_turns = live_turns - 1 + ?, live_tokens = live_tokens - ? + ?", restored[0], r[TOKENS], restored[1]);
    removed.push(rowJson(r));
  }
  event(obj, "transcript.popped", { seqs: removed.map((r) => r.seq) });
  touch(obj);
  return removed;
}

export function clear(obj: Opened) {
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be cleared");
  const n = obj.db.one("SELECT count(*) FROM turns")![0];
  if (n === 0) return { deleted: 0 };
  check(obj, "write", meta.status);
  obj.db.run("DELETE FROM turns");
  obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq IS NOT NULL");
  obj.db.run("UPDATE object SET live_turns = 0, live_tokens = 0");
  event(obj, "transcript.cleared", { deleted: n });
  touch(obj);
  return { deleted: n };
}

export function redact(obj: Opened, a: { seq: number }) {
  const meta = requireVisible(obj);
  const row = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, a.seq);
  if (!row) throw notFound(say("row_not_found", { seq: a.seq, what: obj.what, name: obj.name }));
  refuseRewriteIfOwned(obj, meta, "be redacted");
  const calls = row[CALLS] ? JSON.parse(row[CALLS]).map((c: any) => ({ ...c, arguments: "{}" })) : null;
  const parts = [REDACTED];
  for (const c of calls ?? []) parts.push(c.name, c.arguments);
  const count = approx(parts.join("\n"));
  obj.db.run("UPDATE turns SET content = ?, tokens = ?, tool_calls = ?, data = NULL WHERE seq = ?", REDACTED, count, calls ? dumps(calls) : null, a.seq);
  if (row[SUPERSEDED] === null) obj.db.run("UPDATE object SET live_tokens = live_tokens - ? + ?", row[TOKENS], count);
  obj.db.run("UPDATE prompts SET content = ? WHERE turn_seq = ?", REDACTED, a.seq);
  event(obj, "transcript.redacted", { seq: a.seq });
  touch(obj);  // a redaction is activity (SPEC §3)
  return rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, a.seq)!);
}

const PRUNED = "[pruned]"; // what a prompt's text becomes when prune deletes the turn it became

/** SPEC §12: rows a LangGraph saver mirrors from its checkpoints are not rewritten behind its back. */
function refuseRewriteIfOwned(obj: Opened, meta: any, doing: string) {
  if (meta.adapter === "langgraph") {
    throw conflict(say("langgraph_owned", { what: obj.what, doing, name: obj.name }));
  }
}

/** Removals rewrite the search index: merge it so no segment keeps a token of what was removed. */
function dropRemovedTokens(obj: Opened) {
  obj.db.run("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')");
}

const marks = (n: number) => new Array(n).fill("?").join(",");

export function prune(obj: Opened, a: { older_than: number; dry_run?: boolean }) {
  const olderThan = a.older_than;
  if (!isInt(olderThan) || olderThan < 0) throw invalid("--older-than must be a non-negative number of seconds");
  refuseRewriteIfOwned(obj, requireVisible(obj), "be pruned");
  const dryRun = !!a.dry_run;
  const cutoff = now() - olderThan * 1000;
  const pin = new Set(pinned(obj).map((r) => r[SEQ]));
  const doomed = new Set<number>();
  for (const [s] of obj.db.all("SELECT seq FROM turns WHERE created_at < ?", cutoff)) if (!pin.has(s)) doomed.add(s);
  let frontier = obj.db.all("SELECT seq FROM turns WHERE kind = 'summary' AND created_at < ?", cutoff).map((r) => r[0]).filter((s) => doomed.has(s));
  // IN lists of at most 100 bound parameters (Cloudflare's limit, enforced by Db everywhere)
  const inParts = (sql: (m: string) => string, seqs: number[]) => {
    const out: number[] = [];
    for (let i = 0; i < seqs.length; i += 100) {
      const part = seqs.slice(i, i + 100);
      for (const r of obj.db.all(sql(marks(part.length)), ...part)) out.push(r[0]);
    }
    return out;
  };
  while (frontier.length) {
    const more = inParts((m) => `SELECT seq FROM turns WHERE superseded_by IN (${m})`, frontier).filter((s) => !doomed.has(s));
    for (const s of more) doomed.add(s);
    frontier = more.length ? inParts((m) => `SELECT seq FROM turns WHERE kind = 'summary' AND seq IN (${m})`, more) : [];
  }
  if (dryRun || doomed.size === 0) return { deleted: doomed.size, dry_run: dryRun };
  for (const s of [...doomed].sort((x, y) => x - y)) {
    obj.db.run("DELETE FROM turns WHERE seq = ?", s);
    obj.db.run("UPDATE prompts SET content = ?, turn_seq = NULL WHERE turn_seq = ?", PRUNED, s);
  }
  const live = obj.db.one("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL")!;
  obj.db.run("UPDATE object SET live_turns = ?, live_tokens = ?", live[0], live[1]);
  dropRemovedTokens(obj);
  event(obj, "transcript.pruned", { deleted: doomed.size, older_than_seconds: olderThan });
  touch(obj, false);
  return { deleted: doomed.size, dry_run: false };
}

// -- summaries (plan under the object, commit only if the covered rows are unchanged) -----------------

type Plan = { covered: any[][]; high: number };

function liveRow(obj: Opened, seq: unknown) {
  const row = isInt(seq) ? obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq) : null;
  if (!row || row[SUPERSEDED] !== null) throw notFound(say("not_live_row", { seq, what: obj.what, name: obj.name }));
  return row;
}

/** Whether a cut after THROUGHPOS separates a live tool call among COVERED (rows at or before it, read as
 *  they are iterated: a lazy cursor is never held whole) from a live result after it. */
function splitsACall(obj: Opened, covered: Iterable<any[]>, throughPos: number): boolean {
  if (obj.db.one("SELECT 1 FROM turns WHERE role = 'tool' AND superseded_by IS NULL AND pos > ? LIMIT 1", throughPos) === null) return false;
  let ids: string[] = [];
  const splits = () => { // at most 100 bound parameters a statement (Cloudflare)
    const hit = ids.length > 0 && obj.db.one(`SELECT 1 FROM turns WHERE call_id IN (${marks(ids.length)}) AND role = 'tool' AND superseded_by IS NULL AND pos > ? LIMIT 1`,
      ...ids, throughPos) !== null;
    ids = [];
    return hit;
  };
  for (const r of covered) {
    if (r[KIND] !== "turn") continue;
    for (const id of callIds(r)) if (ids.push(id) >= 90 && splits()) return true;
  }
  return splits();
}

function makePlan(obj: Opened, covered: any[][]): Plan {
  return { covered, high: obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0] };
}

export function planSummary(obj: Opened, a: { through: number }): Plan {
  const meta = requireVisible(obj);
  liveRow(obj, a.through);
  refuseRewriteIfOwned(obj, meta, "be summarized");
  check(obj, "write", meta.status);
  const row = liveRow(obj, a.through);
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const covered = obj.db.all(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos`, boundary, row[POS]);
  if (!covered.length) throw conflict(say("summary_pinned", { through: a.through, what: obj.what }));
  if (splitsACall(obj, covered, row[POS])) {
    throw invalid(say("summary_splits_tool_call", { through: a.through, what: obj.what }));
  }
  return makePlan(obj, covered);
}

export function planCompact(obj: Opened, a: { max_tokens: number; keep_tokens: number }): Plan | null {
  const max = a.max_tokens, keep = a.keep_tokens;
  if (!isInt(max) || !isInt(keep) || max < 0 || keep < 0) throw invalid(say("compact_negative"));
  if (max < keep) throw invalid(say("compact_keep"));
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be compacted");
  check(obj, "write", meta.status);
  if (meta.live_tokens <= max) return null;
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const live = obj.db.all(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos`, boundary);
  let kept = 0;
  let fallback: number | null = null;
  for (let i = live.length - 1; i > 0; i--) { // a cut before live[i] keeps live[i:] and covers live[:i]
    kept += live[i][TOKENS];
    if (kept < keep || live[i][ROLE] === "tool") continue;
    if (splitsACall(obj, live.slice(0, i), live[i - 1][POS])) continue;
    if (live[i][ROLE] === "user" && live[i][KIND] === "turn") return makePlan(obj, live.slice(0, i));
    if (fallback === null) fallback = i;
  }
  return fallback === null ? null : makePlan(obj, live.slice(0, fallback));
}

const sameRow = (x: any[] | undefined, y: any[]) => !!x && x.length === y.length && x.every((v, i) => v === y[i]);

/** Insert the summary of PLAN if every covered row is still live and unchanged and no `tool` row answering a
 *  covered call was appended meanwhile; otherwise exit 4 and nothing changes. A plan sent back by a client is
 *  checked whole: its rows must be the object's own, live, unpinned and consecutive in the logical order. */
export function commitSummary(obj: Opened, a: { covered: any[][]; high: number; text: string }) {
  checkText(obj, a.text);
  const meta = requireVisible(obj);
  check(obj, "write", meta.status);
  const covered = a.covered;
  if (!Array.isArray(covered) || !covered.length || !isInt(a.high) || !covered.every((r) => Array.isArray(r) && isInt(r[SEQ]))) {
    throw invalid("the summary plan is not one this Worker made");
  }
  const changed = conflict(say("summary_changed", { what: obj.what }));
  const seqs = covered.map((r) => r[SEQ]);
  const current = new Map<number, any[]>();
  for (let i = 0; i < seqs.length; i += 90) { // at most 100 bound parameters a statement (Cloudflare)
    const chunk = seqs.slice(i, i + 90);
    for (const r of obj.db.all(`SELECT ${COLS} FROM turns WHERE seq IN (${marks(chunk.length)})`, ...chunk)) current.set(r[SEQ], r);
  }
  if (covered.some((r) => !sameRow(current.get(r[SEQ]), r) || r[SUPERSEDED] !== null)) throw changed;
  const ids = covered.filter((r) => r[KIND] === "turn").flatMap(callIds);
  for (let i = 0; i < ids.length; i += 90) {
    const chunk = ids.slice(i, i + 90);
    if (obj.db.one(`SELECT 1 FROM turns WHERE seq > ? AND role = 'tool' AND call_id IN (${marks(chunk.length)}) LIMIT 1`, a.high, ...chunk)) throw changed;
  }
  const positions = covered.map((r) => r[POS]);
  const low = Math.min(...positions), top = Math.max(...positions);
  const pin = pinned(obj);
  const between = obj.db.one("SELECT count(*) FROM turns WHERE superseded_by IS NULL AND pos BETWEEN ? AND ?", low, top)![0];
  if (new Set(seqs).size !== seqs.length || between !== seqs.length || (pin.length && low <= pin[pin.length - 1][POS])) {
    throw invalid("the summary plan is not one this Worker made");
  }
  return insertSummary(obj, covered, a.text);
}

function insertSummary(obj: Opened, covered: any[][], text: string) {
  const first = Math.min(...covered.map((r) => (r[KIND] === "summary" ? r[FIRST] : r[SEQ])));
  const last = Math.max(...covered.map((r) => (r[KIND] === "summary" ? (r[LAST] ?? r[FIRST]) : r[SEQ])));
  const count = approx(text);
  const seq = obj.db.one("INSERT INTO turns (role, content, tokens, author, created_at, kind, covers_first, covers_last)" +
    " VALUES ('system', ?, ?, ?, ?, 'summary', ?, ?) RETURNING seq", text, count, obj.actor, now(), first, last)![0];
  for (const r of covered) obj.db.run("UPDATE turns SET superseded_by = ? WHERE seq = ?", seq, r[SEQ]);
  obj.db.run("UPDATE object SET live_turns = live_turns - ? + 1, live_tokens = live_tokens - ? + ?",
    covered.length, covered.reduce((s, r) => s + r[TOKENS], 0), count);
  event(obj, "transcript.summarized", { seq, covers: [first, last], superseded: covered.length });
  touch(obj);
  return { summary: rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq)!), superseded: covered.length };
}

/** `transcript summarize --text`: plan and commit in one transaction. */
export function summarize(obj: Opened, a: { through: number; text: string }) {
  checkText(obj, a.text, "summary");
  return insertSummary(obj, planSummary(obj, a).covered, a.text);
}

/** `transcript compact --text`: plan and commit in one transaction. */
export function compact(obj: Opened, a: { max_tokens: number; keep_tokens: number; text: string }) {
  checkText(obj, a.text, "summary");
  const plan = planCompact(obj, a);
  return plan === null ? { summary: null, superseded: 0 } : insertSummary(obj, plan.covered, a.text);
}

// -- fork (mirrors durable_cli/core/fork.py): the source plans, NEW's object creates -------------------

/** The transcript changes that alter rows already copied (an append adds rows after the cut: it does not). */
const REWRITES = ["transcript.popped", "transcript.cleared", "transcript.redacted", "transcript.pruned", "transcript.summarized"];

type ForkCursor = { after: number; cut: number; seq: number; events: number };

/** One page of `session fork`'s plan, on the source (SPEC §13: a request holds one row plus one page of its
 *  answer): its id, NAME, title, the seq the fork copies up to, and the next live rows up to that seq's
 *  position (in logical order), read from a lazy cursor; the client asks again with `cursor: next` until it
 *  is null. The first page checks AT (exit 3 for one that is not a live row, 2 for one separating a tool call
 *  from its results) and fixes the cut: rows appended meanwhile are not copied, and a later page finds
 *  whether the copied rows were rewritten meanwhile (pop, clear, redact, prune, summary): then it is a
 *  conflict marked `restart`, and the client plans the fork again from the first page. */
export function forkPlan(obj: Opened, a: { at?: number | null; cursor?: ForkCursor | null }) {
  const meta = requireVisible(obj);
  let c = a.cursor ?? null;
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
  const rows: any[] = [];
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
export function forkCreate(obj: Opened, a: { source: any; rows: Iterable<any>; title?: string | null }) {
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
