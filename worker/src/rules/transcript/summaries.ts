// Summaries (mirrors durable_cli/core/transcript/summaries.py): plan under the object, commit only if the
// covered rows are unchanged.
import { Opened, conflict, event, invalid, notFound, now, say, touch, Row } from "../state";
import { approx } from "../tokens";
import { check } from "../lifecycle";
import { createHash } from "node:crypto";
import { CALLS, COLS, CONTENT, DATA, FIRST, KIND, LAST, META, POS, ROLE, SEQ, SUPERSEDED, TOKENS, checkText, isInt, marks, refuseRewriteIfOwned, requireVisible, rowJson } from "./row";
import { callIds, pinned } from "./context";
import { PAGE_BYTES, PAGE_ROWS, rowBytes } from "./reads";
import type { ObjectArgs } from "../../generated/ops";

// A plan's rows are light (docs/reference/remote.md §13: plan over each row's seq, tokens, role, kind and call ids, without its
// content): a stored row with its content, tool calls, meta and data left out (null), then a digest of the
// whole row (a commit finds a row changed since by it) and its call ids as JSON. A plan of a 150 MB
// transcript is a few hundred bytes a row, read one row at a time.
const DIGEST = COLS.split(",").length;
const IDS = DIGEST + 1;
type Plan = { covered: Row[]; high: number };

/** A stored row made light (above). */
function light(r: Row): Row {
  const out = [...r];
  for (const i of [CONTENT, CALLS, META, DATA]) out[i] = null;
  out.push(createHash("sha256").update(JSON.stringify(r)).digest("hex"), JSON.stringify(r[KIND] === "turn" ? callIds(r) : []));
  return out;
}

/** Light rows of SQL, one stored row read at a time. */
function lightRows(obj: Opened, sql: string, ...params: unknown[]): Row[] {
  const out: Row[] = [];
  for (const r of obj.db.iter(sql, ...params)) out.push(light(r));
  return out;
}

const idsOf = (r: Row): string[] => (r.length > IDS ? JSON.parse(r[IDS]) : r[KIND] === "turn" ? callIds(r) : []);

export function liveRow(obj: Opened, seq: unknown) {
  const row = isInt(seq) ? obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq) : null;
  if (!row || row[SUPERSEDED] !== null) throw notFound(say("not_live_row", { seq, what: obj.what, name: obj.name }));
  return row;
}

/** Whether a cut after THROUGHPOS separates a live tool call among COVERED (rows at or before it, read as
 *  they are iterated: a lazy cursor is never held whole) from a live result after it. */
export function splitsACall(obj: Opened, covered: Iterable<Row>, throughPos: number): boolean {
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
    for (const id of idsOf(r)) if (ids.push(id) >= 90 && splits()) return true;
  }
  return splits();
}

function makePlan(obj: Opened, covered: Row[]): Plan {
  return { covered, high: obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0] };
}

export function planSummary(obj: Opened, a: ObjectArgs["plan_summary"]): Plan {
  const meta = requireVisible(obj);
  liveRow(obj, a.through);
  refuseRewriteIfOwned(obj, meta, "be summarized");
  check(obj, "write", meta.status);
  const row = liveRow(obj, a.through);
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const covered = lightRows(obj, `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND pos <= ? ORDER BY pos`, boundary, row[POS]);
  if (!covered.length) throw conflict(say("summary_pinned", { through: a.through, what: obj.what }));
  if (splitsACall(obj, covered, row[POS])) {
    throw invalid(say("summary_splits_tool_call", { through: a.through, what: obj.what }));
  }
  return makePlan(obj, covered);
}

export function planCompact(obj: Opened, a: ObjectArgs["plan_compact"]): Plan | null {
  const max = a.max_tokens, keep = a.keep_tokens;
  if (!isInt(max) || !isInt(keep) || max < 0 || keep < 0) throw invalid(say("compact_negative"));
  if (max < keep) throw invalid(say("compact_keep"));
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be compacted");
  check(obj, "write", meta.status);
  if (meta.live_tokens <= max) return null;
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  const live = lightRows(obj, `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos`, boundary);
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

const sameRow = (x: Row | undefined, y: Row) => !!x && x.length === y.length && x.every((v, i) => v === y[i]);

/** Insert the summary of PLAN if every covered row is still live and unchanged and no `tool` row answering a
 *  covered call was appended meanwhile; otherwise exit 4 and nothing changes. A plan sent back by a client is
 *  checked whole: its rows must be the object's own, live, unpinned and consecutive in the logical order. */
export function commitSummary(obj: Opened, a: ObjectArgs["commit_summary"]) {
  checkText(obj, a.text);
  const meta = requireVisible(obj);
  check(obj, "write", meta.status);
  const covered: Row[] = a.covered; // checked next: the light rows of a plan this Worker made
  if (!Array.isArray(covered) || !covered.length || !isInt(a.high) || !covered.every((r) => Array.isArray(r) && r.length === IDS + 1 && isInt(r[SEQ]))) {
    throw invalid("the summary plan is not one this Worker made");
  }
  const changed = conflict(say("summary_changed", { what: obj.what }));
  const seqs = covered.map((r) => r[SEQ]);
  for (const r of covered) { // each covered row as it is now, made light: one stored row read at a time
    const now = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, r[SEQ]);
    if (!sameRow(now ? light(now) : undefined, r) || r[SUPERSEDED] !== null) throw changed;
  }
  const ids = covered.filter((r) => r[KIND] === "turn").flatMap(idsOf);
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

function insertSummary(obj: Opened, covered: Row[], text: string) {
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

/** The stored rows of a plan's SEQS a page at a time (what a summarizer command reads, docs/reference/remote.md §13): the first
 *  of SEQS in order up to PAGE_ROWS rows, ending with the row that reaches PAGE_BYTES of text; the client
 *  asks again for the rest. A seq no longer stored answers [seq] alone (the commit finds the plan changed). */
export function planRows(obj: Opened, a: { seqs: number[] }) {
  requireVisible(obj);
  if (!Array.isArray(a.seqs) || !a.seqs.every(isInt)) throw invalid("seqs must be a list of integers");
  const rows: Row[] = [];
  let bytes = 0;
  for (const seq of a.seqs) {
    if (rows.length >= PAGE_ROWS || bytes >= PAGE_BYTES) break;
    const r = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq);
    if (r) bytes += rowBytes(r);
    rows.push(r ?? [seq]);
  }
  return rows;
}

/** `transcript summarize --text`: plan and commit in one transaction. */
export function summarize(obj: Opened, a: ObjectArgs["summarize"]) {
  checkText(obj, a.text, "summary");
  return insertSummary(obj, planSummary(obj, a).covered, a.text);
}

/** `transcript compact --text`: plan and commit in one transaction. */
export function compact(obj: Opened, a: ObjectArgs["compact"]) {
  checkText(obj, a.text, "summary");
  const plan = planCompact(obj, a);
  return plan === null ? { summary: null, superseded: 0 } : insertSummary(obj, plan.covered, a.text);
}
