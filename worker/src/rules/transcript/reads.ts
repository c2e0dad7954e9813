// Reading rows (mirrors durable_cli/core/transcript/reads.py): `show` in pages, `stored_rows`, `--follow`'s reads.
import { Opened, invalid, say, DictRow, Row } from "../state";
import { CALLS, COLS, CONTENT, DATA, META, POS, SEQ, isInt, marks, requireVisible, rowJson } from "./row";
import type { ObjectArgs } from "../../generated/ops";
import { Raw } from "../verbatim";

export const PAGE_ROWS = 1000; // a page of `show` holds at most this many rows
export const PAGE_BYTES = 524288; // ... and stops at the row that reaches this many bytes of text (one row alone may be up to 2 MiB)

type ShowCursor = { after: number; from_pos?: number | null; high: number };

/** The OFFSET of the Nth newest row. N may be any integer up to 2^63 - 1 (as locally), but JSON.parse reads one
 *  from 2^63 - 512 up as 2^63, which SQLite binds as a REAL and OFFSET refuses (datatype mismatch, an internal
 *  error): no transcript holds 2^53 rows, so N is taken at most that. */
const offset = (n: number) => Math.min(n, Number.MAX_SAFE_INTEGER) - 1;

/** One page of what `show` lists (docs/reference/transcript.md §6), read from a lazy cursor (docs/reference/remote.md §13: a request holds one row plus
 *  one page of its answer): {rows, next}; the client asks again with `cursor: next` until it is null. The
 *  first page fixes HIGH, the highest seq then written: later pages list no row written after it, so the
 *  pages join into one consistent listing. --all pages in seq order, live rows in logical order (pos);
 *  --last N is the live rows from the pos of the Nth newest on. */
export function show(obj: Opened, a: ObjectArgs["show_transcript"]) {
  requireVisible(obj);
  const since = a.since ?? 0;
  if (!isInt(since)) throw invalid("--since must be an integer");
  let c = (a.cursor ?? null) as ShowCursor | null; // the client's copy of a page's next, checked here
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
      const nth = obj.db.one("SELECT pos FROM turns WHERE superseded_by IS NULL AND seq > ? ORDER BY pos DESC LIMIT 1 OFFSET ?", since, offset(a.last));
      fromPos = nth ? nth[0] : null;
    }
    c = { after: Number.MIN_SAFE_INTEGER, from_pos: fromPos, high };
  }
  const sql = a.all_rows
    ? `SELECT ${COLS} FROM turns WHERE seq > ? AND seq > ? AND seq <= ? ORDER BY seq`
    : `SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? AND seq > ? AND seq <= ?${c.from_pos != null ? " AND pos >= ?" : ""} ORDER BY pos`;
  const params: unknown[] = [c.after, since, c.high];
  if (!a.all_rows && c.from_pos != null) params.push(c.from_pos);
  const rows: DictRow[] = [];
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

/** The text bytes of a stored row (what a page's budget counts). */
export function rowBytes(r: Row): number {
  let bytes = 0;
  for (const x of [r[CONTENT], r[CALLS], r[META], r[DATA]]) if (typeof x === "string") bytes += x.length;
  return bytes;
}

/** The rows SQL selects (COLS, in order), read one at a time, as JSON -- or, when they are more than one page
 *  (PAGE_ROWS rows or PAGE_BYTES of text), null: the caller answers their seqs and the client reads them in pages
 *  (docs/reference/remote.md §13: no op answers or loads more than one row plus one page, whatever the client asks). */
export function pageOrNull(obj: Opened, sql: string, ...params: unknown[]): DictRow[] | null {
  const rows: DictRow[] = [];
  let bytes = 0;
  for (const r of obj.db.iter(sql, ...params)) {
    bytes += rowBytes(r);
    if (rows.length >= PAGE_ROWS || (bytes > PAGE_BYTES && rows.length)) return null;
    rows.push(rowJson(r));
  }
  return rows;
}

/** The live rows in logical order (LAST: the newest N) as [data, role, kind, content, call_id, tool_calls], `data`
 *  and `tool_calls` the JSON text stored (core/transcript/reads.py stored_rows: what an adapter rebuilds its items from). */
export function storedRows(obj: Opened, a: ObjectArgs["stored_rows"]) {
  requireVisible(obj);
  // in pages, as show's (docs/reference/remote.md §13): {rows, next}; the client asks again with `cursor: next` until it is null
  let c = (a.cursor ?? null) as ShowCursor | null; // the client's copy of a page's next, checked here
  if (c !== null && (typeof c !== "object" || !isInt(c.after) || !isInt(c.high) || (c.from_pos != null && typeof c.from_pos !== "number"))) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  if (c === null) {
    let fromPos: number | null = null;
    if (a.last != null) {
      if (!isInt(a.last) || a.last < 0) throw invalid(say("stored_last_negative"));
      if (a.last === 0) return { rows: [], next: null };
      const nth = obj.db.one("SELECT pos FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1 OFFSET ?", offset(a.last));
      fromPos = nth ? nth[0] : null;
    }
    c = { after: Number.MIN_SAFE_INTEGER, from_pos: fromPos, high: Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0]) };
  }
  const params: unknown[] = [c.after, c.high];
  if (c.from_pos != null) params.push(c.from_pos);
  const rows: DictRow[] = [];
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
export function followStart(obj: Opened, a: ObjectArgs["follow_start"]) {
  const page = show(obj, { ...a, cursor: null });
  const high = Number(obj.db.one("SELECT coalesce(max(seq), 0) FROM turns")![0]);
  // the first page of `show`, the highest seq, the status, and the cursor of show's next page (or null)
  return [page.rows, Math.max(high, a.since ?? 0), obj.meta()!.status, page.next];
}

/** One page of the rows with a seq greater than SEQ, in seq order (at most PAGE_ROWS rows, ending with the row
 *  that reaches PAGE_BYTES of text), the session's status, and whether more follow (the client asks again
 *  after the page's last seq): [rows, status, more]. */
export function rowsAfter(obj: Opened, a: ObjectArgs["rows_after"]) {
  requireVisible(obj);
  if (!isInt(a.seq)) throw invalid("seq must be an integer");
  const rows: DictRow[] = [];
  let bytes = 0;
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE seq > ? ORDER BY seq`, a.seq)) {
    if (rows.length >= PAGE_ROWS || bytes >= PAGE_BYTES) return [rows, obj.meta()!.status, true];
    rows.push(rowJson(r));
    bytes += rowBytes(r);
  }
  return [rows, obj.meta()!.status, false];
}

/** The rows with a seq greater than SEQ, in seq order, one at a time as read (a live follower's push):
 *  [seq, row as JSON]. */
export function* rowsSince(obj: Opened, seq: number): Generator<[number, DictRow]> {
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE seq > ? ORDER BY seq`, seq)) yield [r[SEQ], rowJson(r)];
}

const UI_ROWS = 200; // the web view's page of rows (docs/reference/ui.md §16.3)
const IN_LIST = 90; // call ids per `IN (...)`: at most 100 bound parameters a statement (docs/reference/remote.md §13)

/** One page of the web view's transcript, newest first, at most LIMIT rows and one PAGE_BYTES of text (then
 *  `next`: the BEFORE to go on from); `earlier`, `later` and `results` as core/transcript/reads.py rows_before says. */
export function rowsBefore(obj: Opened, a: ObjectArgs["rows_before"]) {
  requireVisible(obj);
  const [key, index] = a.superseded ? ["seq", SEQ] : ["pos", POS];
  const live = a.superseded ? "" : "superseded_by IS NULL AND ";
  const limit = a.limit ?? UI_ROWS;
  const bounded = a.before != null;
  const rows: DictRow[] = [];
  let bytes = 0;
  let going: number | null = null;
  for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE ${live}${bounded ? `${key} < ?` : "1"} ORDER BY ${key} DESC LIMIT ?`, ...(bounded ? [a.before] : []), limit)) {
    const row = rowJson(r) as DictRow;
    row.key = r[index];
    rows.push(row);
    for (const x of [r[CONTENT], r[CALLS], r[META], r[DATA]]) if (typeof x === "string") bytes += x.length;
    if (bytes >= PAGE_BYTES && rows.length < limit) {
      going = r[index];
      break;
    }
  }
  const low = rows.length ? rows[rows.length - 1].key : bounded ? a.before : null;
  const earlier = low === null ? false : !!obj.db.one(`SELECT 1 FROM turns WHERE ${live}${key} < ? LIMIT 1`, low);
  let later: number | null = null;
  if (bounded) {
    const found = obj.db.one(`SELECT ${key} FROM turns WHERE ${live}${key} >= ? ORDER BY ${key} LIMIT 1 OFFSET ?`, a.before, UI_ROWS);
    later = found ? found[0] : null;
  }
  const seqs = new Set(rows.map((r) => r.seq));
  const ids = new Set<string>();
  for (const r of rows) {
    const given = r.tool_calls instanceof Raw ? r.tool_calls.value : null; // the stored text, parsed here only to read the ids
    for (const c of Array.isArray(given) ? given : []) if (c && typeof c === "object" && typeof c.id === "string") ids.add(c.id);
  }
  const calls = [...ids].sort();
  const results: DictRow[] = [];
  for (let i = 0; i < calls.length; i += IN_LIST) {
    const chunk = calls.slice(i, i + IN_LIST);
    for (const r of obj.db.iter(`SELECT ${COLS} FROM turns WHERE ${live}call_id IN (${marks(chunk.length)}) ORDER BY seq`, ...chunk)) {
      if (!seqs.has(r[SEQ])) results.push(rowJson(r) as DictRow);
    }
  }
  results.sort((x, y) => (x.seq as number) - (y.seq as number));
  return { rows, next: earlier ? going : null, earlier, later, results };
}
