// A LangGraph thread's checkpoints and pending writes (mirrors durable_cli/core/checkpoints.py, docs/reference/integrations.md §12).
// The values are the framework's serialized bytes, sent base64 over JSON and stored as BLOBs; metadata is
// JSON text. durable never interprets them. The root namespace's messages are mirrored into transcript rows
// (each message once, by id) in the transaction that stores the checkpoint.
//
// Tombstones (delete_thread): locally in index.db, here in the index shard that is the object's home
// (user:OWNER or tenant:T, so `forget` wipes a user's with their shard). object.ts reads the tombstone from
// the shard when a put finds no object (args.__tomb) and keeps a copy in the object's own storage
// (_durable_tomb) while the object lives: a late write from before the delete is refused in the put itself.
import { Opened, conflict, createObject, invalid, say, touch } from "./state";
import { check } from "./lifecycle";
import { insertRows, prepare } from "./transcript";
import * as strict from "./strict";
import { blobBytes, blobText, isBase64 } from "./rights";
import type { ObjectArgs } from "../generated/ops";

export const ADAPTER = "langgraph";
const CHECKPOINT = "checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";

type Tomb = { last_checkpoint: string | null } | null;
// what object.ts adds to a put's arguments: the home shard's tombstone, fetched when the object was absent
type Buried = { __tomb?: Tomb; __tomb_fetched?: boolean };

/** A serialized value as the client sends it: base64 text, or null (exit 2 otherwise: atob's refusal was an internal error). */
function bytes(v: unknown, what: string): Uint8Array | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== "string" || !isBase64(v)) throw invalid(`${what} must be base64 text`);
  return blobBytes(v);
}
const text = (v: unknown) => (v === null || v === undefined ? null : typeof v === "string" ? v : blobText(v));

function str(v: unknown, what: string): string {
  if (typeof v !== "string") throw invalid(`${what} must be a string`);
  return v;
}

/** The tombstone this put is judged by: the shard's (object absent: fetched by object.ts), else the kept copy. */
function tombOf(obj: Opened, a: Buried): Tomb {
  if (a.__tomb_fetched) return a.__tomb ?? null;
  const r = obj.db.one("SELECT last_checkpoint FROM _durable_tomb");
  return r ? { last_checkpoint: r[0] } : null;
}

/** The adapter's _refuse_late: a write carrying a checkpoint id from before the delete is refused. */
function refuseLate(obj: Opened, a: Buried, externalId: string, ids: (string | null | undefined)[]) {
  const grave = tombOf(obj, a);
  if (grave === null || !grave.last_checkpoint) return;
  if (ids.some((i) => i !== null && i !== undefined && i <= grave.last_checkpoint!)) {
    throw conflict(say("thread_deleted", { thread: externalId }));
  }
}

/** Inside the transaction: the object's row, created (active, owned by the saver) when absent. */
function writable(obj: Opened, a: Buried, externalId: string) {
  let meta = obj.meta();
  if (meta === null) {
    createObject(obj, "active");
    obj.db.run("UPDATE object SET external_id = ?, adapter = ?", externalId, ADAPTER);
    const grave = tombOf(obj, a);
    if (grave !== null) obj.db.run("INSERT OR REPLACE INTO _durable_tomb (one, last_checkpoint) VALUES (1, ?)", grave.last_checkpoint);
    meta = obj.meta()!;
  } else {
    obj.requireVisible();
    if (meta.external_id === null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", externalId, ADAPTER);
  }
  check(obj, "write", meta.status);
  return meta;
}

/** core/checkpoints._moves: putting ID (root namespace) makes it the newest checkpoint under a parent that was not. */
function moves(obj: Opened, id: string, parent: string | null): boolean {
  const newest = obj.db.one("SELECT max(checkpoint_id) FROM lg_checkpoints WHERE checkpoint_ns = ''")![0];
  return newest !== null && id > newest && parent !== newest;
}

/** core/checkpoints.follow_branch: the mirrored rows of the new checkpoint's messages are live, the others
 * superseded with superseded_by 0 (the thread left their branch; `show --all` still shows them). */
function followBranch(obj: Opened, messageIds: string[]) {
  const ids = JSON.stringify(messageIds);
  const mine = (op: string) => `seq IN (SELECT seq FROM lg_mirrored WHERE message_id ${op} (SELECT value FROM json_each(?)))`;
  obj.db.run(`UPDATE turns SET superseded_by = 0 WHERE superseded_by IS NULL AND ${mine("NOT IN")}`, ids);
  obj.db.run(`UPDATE turns SET superseded_by = NULL WHERE superseded_by = 0 AND ${mine("IN")}`, ids);
  obj.db.run("UPDATE object SET live_turns = (SELECT count(*) FROM turns WHERE superseded_by IS NULL)," +
    " live_tokens = (SELECT coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL)");
}

export function putCheckpoint(obj: Opened, a: ObjectArgs["put_checkpoint"] & Buried) {
  const externalId = str(a.external_id, "external_id"), ns = str(a.ns, "ns"), id = str(a.checkpoint_id, "checkpoint_id");
  const parent = a.parent_id ?? null;
  refuseLate(obj, a, externalId, [parent]);
  const keep = a.keep ?? null;
  if (keep !== null && (!Number.isInteger(keep) || keep < 1)) throw invalid(say("keep_checkpoints"));
  const prepared = (a.mirror ?? []).map(([mid, fields]) => {
    if (fields === null || typeof fields !== "object" || Array.isArray(fields)) throw invalid("a mirrored message's row must be a JSON object");
    return [str(mid, "message id"), prepare(obj, fields)] as const;
  });
  // the checkpoint's metadata: JSON text, RFC 8259 as every JSON durable takes in (docs/reference/transcript.md §6); the column is NOT NULL
  strict.parse(str(a.metadata, "metadata"), "checkpoint metadata");
  const blob = bytes(a.blob, "the checkpoint");
  writable(obj, a, externalId);
  if (ns === "" && moves(obj, id, parent)) followBranch(obj, prepared.map(([mid]: readonly [string, unknown]) => mid));
  // a checkpoint put again under its id replaces it: the old row deleted first, its chunks with it (REPLACE's
  // delete fires no trigger)
  obj.db.run("DELETE FROM lg_checkpoints WHERE checkpoint_ns = ? AND checkpoint_id = ?", ns, id);
  obj.db.run(`INSERT INTO lg_checkpoints (${CHECKPOINT}) VALUES (?, ?, ?, ?, ?, ?)`,
    ns, id, parent, a.type ?? null, blob, a.metadata);
  const fresh = prepared.filter(([mid]: readonly [string, unknown]) => obj.db.one("SELECT 1 FROM lg_mirrored WHERE message_id = ?", mid) === null);
  if (fresh.length) {
    const seqs = insertRows(obj, fresh.map(([, row]) => row), obj.actor);
    fresh.forEach(([mid]: readonly [string, unknown], i: number) => obj.db.run("INSERT OR IGNORE INTO lg_mirrored (message_id, seq) VALUES (?, ?)", mid, seqs[i]));
  } else touch(obj);
  if (keep !== null) {
    const old = obj.db.all("SELECT checkpoint_id FROM lg_checkpoints WHERE checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT -1 OFFSET ?", ns,
      Math.min(keep, Number.MAX_SAFE_INTEGER)); // keep_checkpoints=sys.maxsize reads as 2^63, a REAL OFFSET refuses
    for (const [c] of old) {
      obj.db.run("DELETE FROM lg_checkpoints WHERE checkpoint_ns = ? AND checkpoint_id = ?", ns, c);
      obj.db.run("DELETE FROM lg_writes WHERE checkpoint_ns = ? AND checkpoint_id = ?", ns, c);
    }
  }
  return null;
}

export function putWrites(obj: Opened, a: ObjectArgs["put_checkpoint_writes"] & Buried) {
  const externalId = str(a.external_id, "external_id"), ns = str(a.ns, "ns"), id = str(a.checkpoint_id, "checkpoint_id");
  refuseLate(obj, a, externalId, [id]);
  // each write as the adapter makes it: [task_id, task_path, idx, channel, type or null, base64 or null] (exit 2 otherwise)
  const writes = (a.writes ?? []).map((w: unknown[], i: number) => {
    const [task, path, idx, channel, type, blob] = w;
    if (w.length !== 6 || typeof task !== "string" || typeof path !== "string" || !Number.isSafeInteger(idx) || typeof channel !== "string" ||
      (type !== null && typeof type !== "string")) {
      throw invalid(`write ${i + 1} must be [task_id, task_path, idx, channel, type, value]: strings, an integer idx, a type or null`);
    }
    return [task, path, idx, channel, type, bytes(blob, `the value of write ${i + 1}`)];
  });
  writable(obj, a, externalId);
  // REPLACE overwrites a same-keyed write, else the first stored is kept: as INSERT OR REPLACE / OR IGNORE, but a
  // value stored in chunks is never written only to be dropped, and a replaced one's chunks go with its row
  const key = "checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = ?";
  for (const w of writes) {
    if (a.replace) obj.db.run(`DELETE FROM lg_writes WHERE ${key}`, ns, id, w[0], w[2]);
    else if (obj.db.one(`SELECT 1 FROM lg_writes WHERE ${key}`, ns, id, w[0], w[2])) continue;
    obj.db.run("INSERT INTO lg_writes (checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      ns, id, ...w);
  }
  touch(obj);
  return null;
}

/** Checkpoints newest first, as [ns, id, parent, type, blob (base64), metadata]; none unless the saver owns the
 *  object. WITH_WRITES: also each one's pending writes ([task_id, channel, type, blob, task_path, idx]), in one read. */
export function checkpointRows(obj: Opened, a: ObjectArgs["checkpoint_rows"]) {
  const meta = obj.meta();
  if (a.page != null) return checkpointPage(obj, meta, a);
  if (meta === null || (a.owned && meta.adapter !== ADAPTER)) return a.with_writes ? [[], []] : [];
  obj.requireVisible();
  const [where, params] = filters(a);
  // LIMIT (the saver's latest: 1) read in SQL, as the file store reads it: every step of a graph asks for its latest
  // checkpoint, and the whole thread's checkpoints in each answer made a step's cost grow with the thread
  if (a.limit != null) params.push(Math.min(a.limit, Number.MAX_SAFE_INTEGER));
  const sql = `SELECT ${CHECKPOINT} FROM lg_checkpoints${where.length ? " WHERE " + where.join(" AND ") : ""} ORDER BY checkpoint_id DESC` +
    (a.limit != null ? " LIMIT ?" : "");
  const rows = obj.db.all(sql, ...params).map((r) => [r[0], r[1], r[2], r[3], text(r[4]), r[5]]);
  if (!a.with_writes) return rows;
  return [rows, rows.map((r) => writeRows(obj, { ns: r[0] as string, checkpoint_id: r[1] as string }))];
}

function filters(a: { ns?: string | null; checkpoint_id?: string | null; before?: string | null }): [string[], unknown[]] {
  const where: string[] = [], params: unknown[] = [];
  for (const [column, value, op] of [["checkpoint_ns", a.ns, "="], ["checkpoint_id", a.checkpoint_id, "="], ["checkpoint_id", a.before, "<"]] as const) {
    if (value !== null && value !== undefined) { where.push(`${column} ${op} ?`); params.push(value); }
  }
  return [where, params];
}

const PAGE_BYTES = 524288; // a page of checkpoints ends at the one that reaches this many bytes (as show's pages)

/** One page of checkpoint_rows (PAGE: [] for the first, else the [id, ns] of the last one sent): {rows, writes,
 *  next}, newest first (ties of an id across namespaces by namespace), read from a lazy cursor until LIMIT rows
 *  or PAGE_BYTES (docs/reference/remote.md §13: a request holds one row plus one page). A thread keeps every checkpoint, each its
 *  whole state: the saver's list() (get_state_history) had them all, with their writes, in one answer. */
function checkpointPage(obj: Opened, meta: unknown, a: { ns?: string | null; checkpoint_id?: string | null; before?: string | null;
  owned?: boolean | null; limit?: number | null; page?: string[] | null }) {
  const out = { rows: [] as unknown[][], writes: [] as unknown[][][], next: null as string[] | null };
  if (meta === null || (a.owned && (meta as { adapter: string | null }).adapter !== ADAPTER)) return out;
  obj.requireVisible();
  const page = a.page!;
  if (page.length !== 0 && page.length !== 2) throw invalid("page must be [] or the next of the previous page");
  const [where, params] = filters(a);
  if (page.length) { where.push("(checkpoint_id, checkpoint_ns) < (?, ?)"); params.push(page[0], page[1]); }
  const limit = a.limit ?? Infinity;
  let bytes = 0;
  for (const r of obj.db.iter(`SELECT ${CHECKPOINT} FROM lg_checkpoints${where.length ? " WHERE " + where.join(" AND ") : ""}` +
    " ORDER BY checkpoint_id DESC, checkpoint_ns DESC", ...params)) {
    const row = [r[0], r[1], r[2], r[3], text(r[4]), r[5]];
    const writes = writeRows(obj, { ns: r[0], checkpoint_id: r[1] });
    out.rows.push(row);
    out.writes.push(writes);
    bytes += String(row[4] ?? "").length + String(row[5] ?? "").length + writes.reduce((n, w) => n + String(w[3] ?? "").length, 0);
    if (out.rows.length >= limit) break;
    if (bytes >= PAGE_BYTES) { out.next = [r[1], r[0]]; break; }
  }
  return out;
}

export function writeRows(obj: Opened, a: ObjectArgs["checkpoint_writes"]) {
  return obj.db.all("SELECT task_id, channel, type, value, task_path, idx FROM lg_writes WHERE checkpoint_ns = ? AND checkpoint_id = ?",
    a.ns, a.checkpoint_id).map((r) => [r[0], r[1], r[2], text(r[3]), r[4], r[5]]);
}

/** The thread's newest checkpoint id, for the tombstone object.ts leaves in the home shard before it erases
 *  the object (as core/checkpoints.delete_thread). */
export function deleteThread(obj: Opened) {
  const meta = obj.meta();
  const r = meta ? obj.db.one("SELECT max(checkpoint_id) FROM lg_checkpoints") : null;
  // who may read the tombstone (docs/reference/integrations.md §12): the participants the thread had when it was deleted
  const members = meta ? obj.db.all("SELECT user FROM participants ORDER BY user").map((m) => String(m[0])) : [];
  return { last_checkpoint: r ? r[0] : null, owner: obj.address.owner, members };
}
