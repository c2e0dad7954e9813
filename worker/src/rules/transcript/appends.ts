// Appending rows (mirrors durable_cli/core/transcript/appends.py): one transaction, all or none; a request id
// replayed returns what it made.
import { createHash } from "node:crypto";
import { DictRow, Opened, conflict, createObject, invalid, notFound, now, say, dumps } from "../state";
import { check, validRequestId } from "../lifecycle";
import { COLS, Prepared, prepare, requireVisible, rowJson } from "./row";
import type { Lazy, ObjectArgs } from "../../generated/ops";
import { pageOrNull } from "./reads";

const INSERT = "INSERT INTO turns (role, content, tokens, author, created_at, kind, call_id, tool_calls, name, meta, data," +
  " request_id, request_hash, request_last) VALUES (?, ?, ?, ?, ?, 'turn', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq";

/** ROWS inserted in order (an iterable: a batch in parts is read one row at a time, parts.ts); their seqs. */
export function insertRows(obj: Opened, rows: Iterable<Prepared>, author: string | null, requestId: string | null = null, hash: string | null = null): number[] {
  const t = now();
  const seqs: number[] = [];
  let tokens = 0;
  for (const r of rows) {
    const first = seqs.length === 0;
    seqs.push(obj.db.one(INSERT, r.role, r.content, r.tokens, author, t, r.call_id, r.tool_calls, r.name, r.meta, r.data,
      first ? requestId : null, first ? hash : null, null)![0] as number);
    tokens += r.tokens;
  }
  const first = seqs[0], last = seqs[seqs.length - 1];
  if (requestId !== null && last !== first) obj.db.run("UPDATE turns SET request_last = ? WHERE seq = ?", last, first);
  obj.db.run("UPDATE object SET live_turns = live_turns + ?, live_tokens = live_tokens + ?, updated_at = ?, last_active_at = ?," +
    " expires_at = CASE WHEN ttl_seconds IS NULL THEN NULL ELSE ? + ttl_seconds * 1000 END",
    seqs.length, tokens, t, t, t);
  return seqs;
}

export function insertTurn(obj: Opened, role: string, content: string, author: string | null): number {
  return insertRows(obj, [prepare(obj, { role, content })], author)[0];
}

/** The answer of a batch: its rows when they are one page, else their seqs (the client reads them in pages). */
function rowsBetween(obj: Opened, first: number, last: number): DictRow[] | number[] {
  const rows = pageOrNull(obj, `SELECT ${COLS} FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq`, first, last);
  return rows ?? obj.db.all("SELECT seq FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq", first, last).map((r) => r[0]);
}

function oneRow(obj: Opened, seq: number) {
  return rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, seq)!);
}

/** The same digest as the Python side: sha256 over the compact JSON of each row's key, fed one row at a time. */
function requestHasher() {
  const h = createHash("sha256").update("[");
  let n = 0;
  return {
    add(r: Prepared) {
      h.update((n++ ? "," : "") + dumps([r.role, r.content, r.tool_calls, r.call_id, r.name, r.meta, r.data, r.given]));
    },
    digest: () => h.update("]").digest("hex"),
  };
}

/** A list of input rows: an array, or (a body sent in parts) an iterable reading the staged rows one at a time
 *  from the start on each pass (parts.ts), so a batch of any size holds one row in the isolate (docs/reference/remote.md §13). */
export function eachRow(v: unknown, what = "rows"): Iterable<any> {
  if (v == null) return [];
  if (typeof v !== "object" || !(Symbol.iterator in v)) throw invalid(`${what} must be a list`);
  return v as Iterable<any>;
}

/** ROWS checked as they come (WHERE: the prefix of row I's message). */
function* prepared(obj: Opened, rows: Iterable<any>, where: (i: number) => string): Generator<Prepared> {
  let i = 0;
  for (const r of rows) yield prepare(obj, r, where(i++));
}

/** ORIGIN: an adapter's [external_id, adapter], recorded on the object this creates, or on one that has none yet
 *  (core/transcript/appends.py append_many). */
export function checkOrigin(origin: unknown): [string, string] | null {
  if (origin == null) return null;
  if (!Array.isArray(origin) || origin.length !== 2 || typeof origin[0] !== "string" || typeof origin[1] !== "string") {
    throw invalid("origin must be [external_id, adapter]");
  }
  return [origin[0], origin[1]];
}

export function appendMany(obj: Opened, a: Lazy<ObjectArgs["append_many"], "rows">) {
  // two passes over the rows: every row checked (and the request's digest made) before anything is stored,
  // then inserted; the one transaction keeps it all or nothing
  const input = eachRow(a.rows);
  const where = (i: number) => (a.one ? "" : `row ${i + 1}: `);
  const requestId = (validRequestId(a.request_id) as string | null | undefined) ?? null;
  const hasher = requestHasher();
  let count = 0, only: Prepared | null = null;
  for (const r of prepared(obj, input, where)) {
    if (count++ === 0) only = r;
    hasher.add(r);
  }
  if (!count) throw invalid(say("no_rows"));
  const digest = requestId !== null ? hasher.digest() : null;
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
      const same = found[3] !== null ? found[3] === digest : count === 1 && found[1] === only!.role && found[2] === only!.content;
      if (!same) throw conflict(say("append_request_id_reused", { request_id: requestId, what: obj.what }));
      if (a.seqs_only) return obj.db.all("SELECT seq FROM turns WHERE seq BETWEEN ? AND ? ORDER BY seq", found[0], found[4]).map((r) => r[0]);
      return a.one ? oneRow(obj, found[0]) : rowsBetween(obj, found[0], found[4]);
    }
  }
  check(obj, "write", meta.status);
  const seqs = insertRows(obj, prepared(obj, input, where), obj.actor, requestId, digest);
  if (a.seqs_only) return seqs;
  return a.one ? oneRow(obj, seqs[0]) : rowsBetween(obj, seqs[0], seqs[seqs.length - 1]);
}
