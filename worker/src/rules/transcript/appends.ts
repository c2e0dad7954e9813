// Appending rows (mirrors durable_cli/core/transcript/appends.py): one transaction, all or none; a request id
// replayed returns what it made.
import { createHash } from "node:crypto";
import { Opened, conflict, createObject, invalid, notFound, now, say, dumps } from "../state";
import { check, validRequestId } from "../sessions";
import { COLS, Prepared, prepare, requireVisible, rowJson } from "./row";

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

/** The same digest as the Python side: sha256 over the compact JSON of each row's key. */
function requestHash(rows: Prepared[]): string {
  const key = rows.map((r) => [r.role, r.content, r.tool_calls, r.call_id, r.name, r.meta, r.data, r.given]);
  return createHash("sha256").update(dumps(key)).digest("hex");
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
