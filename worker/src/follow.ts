// Live follow (docs/reference/remote.md §13 "Live follow"): `transcript show --follow --remote` holds one WebSocket to the
// object's Durable Object, accepted with the hibernation API (ctx.acceptWebSocket), so an idle follower
// costs no requests and no duration. As in the seeds' system, the socket's mapping (its user, what it
// follows, the last seq sent) is written to SQLite when the socket is accepted; after each commit the
// object pushes the newer rows to every socket, reading the mapping from SQLite again (so it is rebuilt
// after a hibernation or an eviction); a socket the object has no mapping for is closed with 4002. The
// end of the stream (archived, cancelled, deleted, forgotten, purged, expired, or no longer visible to
// the follower) is one close code, END_OF_STREAM. Messages are one row each: {"row": {...}} (a row as
// `transcript show --jsonl` prints it), read from a lazy cursor one at a time. A follower whose socket would
// hold more than MAX_BACKLOG unsent is closed with 4003 and reconnects from the last seq it printed.
import { Address, Config, Db, Opened, now } from "./rules/state";
import { rowsSince } from "./rules/transcript";
import { stringify } from "./rules/verbatim";

export const END_OF_STREAM = 4000; // the session ended (or is no longer visible): the follower exits 0
export const TOKEN_ENDED = 4001; // the follower's token was revoked or expired: the follower exits 5
export const UNKNOWN_SOCKET = 4002; // "session expired, reconnect": no mapping for this socket
export const TOO_FAR_BEHIND = 4003; // "too far behind, reconnect": its backlog would pass MAX_BACKLOG
/** The most a follower may leave unsent on its socket (docs/reference/remote.md §13 "backlog"): a follower that never reads
 *  would otherwise grow the isolate by every row pushed to it. */
export const MAX_BACKLOG = 4 * 1024 * 1024;
const ENDS = ["archived", "cancelled"]; // as the file backend's follow (library.FOLLOW_ENDS)

export const FOLLOWERS_TABLE = "CREATE TABLE IF NOT EXISTS _durable_followers (id TEXT PRIMARY KEY, user TEXT NOT NULL," +
  " call TEXT NOT NULL, last_seq INTEGER NOT NULL, at INTEGER NOT NULL)";

type Token = { sub: string; iat: number; exp: number; jti: string };
type Follow = { address: Address; actor: string; config: Config; id: string; all_users?: boolean; token?: Token };
/** Why a follower's token no longer holds ("token revoked", "token expired"), or null; REVOKED tells
 *  whether the revocation list revokes it (null: the list could not be read). */
export type TokenCheck = (t: Token) => boolean | null;

function fidOf(ws: WebSocket): string | null {
  try {
    const a = ws.deserializeAttachment() as { fid?: string } | null;
    return a && typeof a.fid === "string" ? a.fid : null;
  } catch {
    return null;
  }
}

function close(ws: WebSocket, code: number, why: string) {
  try {
    ws.close(code, why.slice(0, 120));
  } catch {
    // already closing or closed
  }
}

/** Accept a follower of CALL's object from seq SINCE: its mapping stored, the rows committed since SINCE
 *  pushed at once (a reconnect loses nothing), and the answer that completes the upgrade. */
export function accept(ctx: DurableObjectState, db: Db, call: Follow, since: number): Response {
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  const fid = crypto.randomUUID();
  ctx.acceptWebSocket(server);
  server.serializeAttachment({ fid });
  const follow: Follow = { address: call.address, actor: call.actor, config: call.config, id: call.id, all_users: !!call.all_users,
    token: call.token };
  db.run("INSERT INTO _durable_followers (id, user, call, last_seq, at) VALUES (?, ?, ?, ?, ?)", fid, call.actor, JSON.stringify(follow), since, now());
  pushOne(db, server, fid, null);
  return new Response(null, { status: 101, webSocket: client });
}

/** After a commit: the newer rows to every follower (the mapping read from SQLite), a socket without
 *  one closed with 4002, and the mappings of sockets that are gone (an eviction, a restart) dropped. */
export function push(ctx: DurableObjectState, db: Db, revoked: TokenCheck) {
  const sockets = ctx.getWebSockets();
  const live = new Set<string>();
  for (const ws of sockets) {
    const fid = fidOf(ws);
    if (fid === null) close(ws, UNKNOWN_SOCKET, "session expired, reconnect");
    else {
      live.add(fid);
      pushOne(db, ws, fid, revoked);
    }
  }
  for (const [fid] of db.all("SELECT id FROM _durable_followers")) { // (a few rows: one per follower)
    if (!live.has(fid)) db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
  }
}

function pushOne(db: Db, ws: WebSocket, fid: string, revoked: TokenCheck | null) {
  const m = db.one("SELECT user, call, last_seq FROM _durable_followers WHERE id = ?", fid);
  if (!m) return close(ws, UNKNOWN_SOCKET, "session expired, reconnect");
  const f = JSON.parse(m[1]) as Follow;
  if (f.token && revoked) { // (at accept the Worker has just checked the token)
    const ended = f.token.exp * 1000 <= now() ? "token expired" : revoked(f.token) === true ? "token revoked" : null;
    if (ended !== null || revoked(f.token) === null) {
      db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
      // the list unreadable past its stale bound: reconnect (the upgrade checks the token again)
      return ended !== null ? close(ws, TOKEN_ENDED, ended) : close(ws, UNKNOWN_SOCKET, "session expired, reconnect");
    }
  }
  const obj = new Opened(db, f.address, m[0], f.config, f.id);
  const meta = obj.meta();
  const end = (why: string) => {
    db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
    close(ws, END_OF_STREAM, why);
  };
  if (meta === null) return end("deleted");
  if (f.address.id_scope === "tenant" && !f.all_users && obj.role() === null) return end("no longer visible");
  let last = Number(m[2]);
  for (const [seq, row] of rowsSince(obj, last)) {
    const message = stringify({ row });
    // the backlog bounded: a row that would leave more than MAX_BACKLOG unsent is not buffered; the socket is
    // closed after what it holds (4003) and its follower reconnects from the last seq it printed. A row always
    // goes onto a socket with nothing unsent, so a follower that reads makes progress whatever a row's size.
    const backlog = ws.bufferedAmount;
    if (backlog > 0 && backlog + utf8Length(message) > MAX_BACKLOG) {
      db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
      return close(ws, TOO_FAR_BEHIND, "too far behind, reconnect");
    }
    ws.send(message);
    last = seq;
  }
  if (last !== Number(m[2])) db.run("UPDATE _durable_followers SET last_seq = ? WHERE id = ?", last, fid);
  if (ENDS.includes(meta.status)) end(meta.status);
}

/** The UTF-8 bytes of TEXT (what send() queues for it), counted without encoding a copy of it. */
function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x800 && (c < 0xd800 || c > 0xdfff)) n += 2;
    else if (c >= 0x80 && c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff) n += 1; // a pair: 4 bytes for 2 units (a lone surrogate is never stored)
  }
  return n;
}

/** The object's storage is about to be erased (delete, purge, forget, TTL expiry): every follower's stream ends. */
export function endAll(ctx: DurableObjectState, why: string) {
  for (const ws of ctx.getWebSockets()) close(ws, END_OF_STREAM, why);
}

/** A follower went away: its mapping goes too. */
export function closed(db: Db, ws: WebSocket, exists: boolean) {
  const fid = fidOf(ws);
  if (fid !== null && exists) db.run("DELETE FROM _durable_followers WHERE id = ?", fid);
}
