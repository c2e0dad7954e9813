// Hooks and the outbox (mirrors durable_cli/core/hooks.py, docs/reference/sessions.md §5.3): URLs told about each prompt's
// outcome. An outcome writes one pending delivery per subscribed hook in the outcome's own transaction (`outcome`);
// the object's alarm sends them after the commit (../deliver.ts). Hook URLs are checked with the client's rules and,
// remotely, refused when their host is local or private (docs/reference/remote.md §13) unless DURABLE_HOOK_ALLOW_HOSTS
// lists it.
import { CONSTANTS, DictRow, Opened, conflict, event, invalid, iso, notFound, now, pyRepr, touch } from "./state";
import { requireSession } from "./lifecycle";
import { hasSpace } from "./text";
import type { ObjectArgs } from "../generated/ops";

const KINDS = ["completed", "failed", "cancelled"];
const MAX_HOOKS = 5;
const MAX_URL_BYTES = 2048;
const MAX_ERROR_BYTES = 4096;
const MAX_REPLY_BYTES = 64 * 1024;
const HOOK_COLUMNS = ["id", "url", "events", "include_reply", "secret", "author", "created_at"];
const DELIVERY_COLUMNS = ["id", "hook_id", "webhook_id", "type", "prompt_id", "status", "attempts", "created_at",
  "last_attempt_at", "next_attempt_at", "delivered_at", "last_response", "last_error"];
const DELIVERY_TIMES = ["created_at", "last_attempt_at", "next_attempt_at", "delivered_at"];
const encoder = new TextEncoder();

let ALLOWED: string[] = []; // DURABLE_HOOK_ALLOW_HOSTS, as the Worker was configured (object.ts sets it)

/** The hosts a hook may name although local or private (a comma-separated variable; `remote dev`: loopback). */
export function allowHosts(variable: unknown) {
  ALLOWED = typeof variable === "string" ? variable.split(",").map((h) => hostKey(h.trim())).filter(Boolean) : [];
}

/** A host as compared: lowercased, without a trailing dot or an IPv6 literal's brackets. */
function hostKey(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

function ipv4Private(a: number[]): boolean {
  const [x, y] = a;
  return x === 0 || x === 10 || x === 127 || (x === 100 && y >= 64 && y <= 127) || (x === 169 && y === 254) ||
    (x === 172 && y >= 16 && y <= 31) || (x === 192 && y === 168) || (x >= 224 && x <= 239) || a.every((n) => n === 255);
}

/** The eight 16-bit groups of an IPv6 address as WHATWG serializes it (hex groups, one `::`, a dotted tail). */
function ipv6Groups(text: string): number[] | null {
  let t = text;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(t);
  if (dotted) {
    const b = dotted[2].split(".").map(Number);
    tail.push((b[0] << 8) | b[1], (b[2] << 8) | b[3]);
    t = dotted[1].endsWith("::") ? dotted[1] : dotted[1].slice(0, -1);
  }
  const [head, rest] = t.includes("::") ? t.split("::") : [t, null];
  const hex = (s: string) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const left = hex(head), right = rest === null ? [] : hex(rest);
  const fill = 8 - tail.length - left.length - right.length;
  if (fill < 0 || (rest === null && fill !== 0)) return null;
  const groups = [...left, ...new Array(fill).fill(0), ...right, ...tail];
  return groups.some((g) => Number.isNaN(g)) ? null : groups;
}

/** docs/reference/sessions.md §5.3 URLs: what a remote Worker refuses to call (the host after WHATWG parsing). */
export function localHost(hostname: string): boolean {
  const h = hostKey(hostname);
  if (h === "localhost" || h.endsWith(".localhost") || h.endsWith(".local") || h.endsWith(".internal")) return true;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) return ipv4Private(h.split(".").map(Number));
  if (h.includes(":")) {
    const g = ipv6Groups(h);
    if (g === null) return true;
    if (g.every((x) => x === 0) || (g.slice(0, 7).every((x) => x === 0) && g[7] === 1)) return true; // :: and ::1
    if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return ipv4Private([g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255]);
    return (g[0] & 0xfe00) === 0xfc00 || (g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xff00) === 0xff00;
  }
  return false;
}

/** http or https, with a host, at most 2,048 bytes, no user name or password (core/hooks.valid_url); REMOTE: also
 *  no local or private host unless allowed. Exit 2 else. */
export function validUrl(url: unknown, remote = true): string {
  const bad = invalid([...`invalid --url ${pyRepr(url)}: use an http:// or https:// URL with a host and no user name or password`].slice(0, 300).join(""));
  if (typeof url !== "string" || !url || encoder.encode(url).length > MAX_URL_BYTES) throw bad;
  if (hasSpace(url) || /[\u0000-\u001f]/.test(url)) throw bad;
  const authority = /^https?:\/\/([^/?#]+)/i.exec(url);
  if (authority === null || authority[1].includes("@")) throw bad;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad;
  }
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.hostname || parsed.username || parsed.password) throw bad;
  if (remote && localHost(parsed.hostname) && !ALLOWED.includes(hostKey(parsed.hostname))) {
    throw invalid(`invalid --url ${pyRepr([...url].slice(0, 200).join(""))}: its host ${parsed.hostname} is local or private, which a remote ` +
      "Worker does not call (list it in the Worker's DURABLE_HOOK_ALLOW_HOSTS to allow it)");
  }
  return url;
}

export function validEvents(events: unknown): string[] {
  if (events == null) return [...KINDS];
  const items = typeof events === "string" ? events.split(",") : Array.isArray(events) ? events : [events];
  for (const item of items) {
    if (!KINDS.includes(item as string)) throw invalid(`invalid --events item ${pyRepr(item)}: use a comma-separated list of completed, failed, cancelled`);
  }
  return KINDS.filter((k) => items.includes(k));
}

export function validSecret(secret: unknown): string {
  const bad = invalid("invalid --secret-file: it must hold whsec_ followed by the standard base64 of 24 to 64 bytes");
  if (typeof secret !== "string" || !secret.startsWith("whsec_")) throw bad;
  const b64 = secret.slice(6);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw bad;
  const n = atob(b64).length;
  if (n < 24 || n > 64) throw bad;
  return secret;
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

function hookJson(r: unknown[]) {
  const h: Record<string, unknown> = {};
  HOOK_COLUMNS.forEach((k, i) => (h[k] = r[i]));
  h.events = JSON.parse(h.events as string);
  h.include_reply = !!h.include_reply;
  h.created_at = iso(h.created_at as number);
  return h;
}

function deliveryJson(r: unknown[]) {
  const d: Record<string, unknown> = {};
  DELIVERY_COLUMNS.forEach((k, i) => (d[k] = r[i]));
  for (const k of DELIVERY_TIMES) d[k] = iso(d[k] as number | null);
  return d;
}

function owner(obj: Opened, doing: string) {
  requireSession(obj);
  obj.requireVisible();
  obj.requireOwner(doing);
}

/** docs/reference/sessions.md §5.3 Body: a `transcript redact`, `pop`, `clear` or `prune` that removes the content of the
 *  assistant row a pending delivery's `reply` holds sets that `reply` to null (core/hooks.py drop_removed_replies). */
export function dropRemovedReplies(obj: Opened) {
  const rows = obj.db.all(`SELECT id, body FROM deliveries WHERE status = 'pending' AND body LIKE '%"reply":"%'`);
  for (const [id, body] of rows) {
    const doc = JSON.parse(body as string);
    const data = doc.data;
    if (data.reply == null || obj.db.one("SELECT 1 FROM turns WHERE role = 'assistant' AND seq > ? AND content = ? LIMIT 1",
      data.turn_seq ?? 0, data.reply)) continue;
    data.reply = null;
    obj.db.run("UPDATE deliveries SET body = ? WHERE id = ?", JSON.stringify(doc), id);
  }
}

/** `session hook`: add a hook (owners only); event `hook.created`. */
export function create(obj: Opened, a: ObjectArgs["hook"]) {
  validUrl(a.url);
  const kinds = validEvents(a.events);
  const secret = a.secret != null ? validSecret(a.secret) : "whsec_" + b64(crypto.getRandomValues(new Uint8Array(32)));
  owner(obj, "add a hook");
  if (obj.meta()!.status === "archived") throw conflict(`${obj.what} is archived (read-only): unarchive it to add a hook`);
  const count = Number(obj.db.one("SELECT count(*) FROM hooks")![0]);
  if (count >= MAX_HOOKS) throw conflict(`too many hooks: ${obj.what} has ${count} (at most ${MAX_HOOKS}); unhook one first`);
  // the events as core/hooks.py stores them (json.dumps: ", " between items)
  const id = obj.db.one("INSERT INTO hooks (url, events, include_reply, secret, author, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    a.url, JSON.stringify(kinds).replace(/","/g, '", "'), a.include_reply ? 1 : 0, secret, obj.actor, now())![0];
  event(obj, "hook.created", { hook_id: id, events: kinds });
  touch(obj);
  return hookJson(obj.db.one(`SELECT ${HOOK_COLUMNS.join(", ")} FROM hooks WHERE id = ?`, id)!);
}

export function hooks(obj: Opened, _a: ObjectArgs["hooks"]) {
  owner(obj, "list its hooks");
  return obj.db.all(`SELECT ${HOOK_COLUMNS.join(", ")} FROM hooks ORDER BY id`).map(hookJson);
}

function hook(obj: Opened, id: number) {
  const r = obj.db.one(`SELECT ${HOOK_COLUMNS.join(", ")} FROM hooks WHERE id = ?`, id);
  if (!r) throw notFound(`no hook ${id} in ${obj.what}; see 'durable session hooks ${obj.name}'`);
  return hookJson(r);
}

/** `session unhook`: the hook and its deliveries go (pending ones are never sent); event `hook.deleted`. */
export function unhook(obj: Opened, a: ObjectArgs["unhook"]) {
  requireSession(obj);
  obj.requireVisible();
  const found = hook(obj, a.hook_id); // an unknown ID is exit 3 before a non-owner's 5 (docs/reference/output.md §4)
  obj.requireOwner("delete a hook");
  obj.db.run("DELETE FROM deliveries WHERE hook_id = ?", a.hook_id);
  obj.db.run("DELETE FROM hooks WHERE id = ?", a.hook_id);
  event(obj, "hook.deleted", { hook_id: a.hook_id });
  touch(obj);
  return found;
}

/** A page of `session deliveries` (the contract's webhooks.list_page). */
const DELIVERIES_PAGE = CONSTANTS.webhooks.list_page;

/** One page of the deliveries after id AFTER, oldest first: {rows, next} (core/hooks.deliveries). */
export function deliveries(obj: Opened, a: ObjectArgs["deliveries"]) {
  if (a.status != null && !["pending", "delivered", "failed"].includes(a.status)) {
    throw invalid(`invalid --status ${pyRepr(a.status)}: use pending, delivered or failed`);
  }
  requireSession(obj);
  obj.requireVisible();
  if (a.hook_id != null) hook(obj, a.hook_id); // an unknown --hook is exit 3 before a non-owner's 5 (docs/reference/output.md §4)
  obj.requireOwner("list its deliveries");
  const where: string[] = [], params: unknown[] = [];
  if (a.hook_id != null) {
    where.push("hook_id = ?");
    params.push(a.hook_id);
  }
  if (a.status != null) {
    where.push("status = ?");
    params.push(a.status);
  }
  if (a.after != null) {
    where.push("id > ?");
    params.push(a.after);
  }
  const rows = obj.db.all(`SELECT ${DELIVERY_COLUMNS.join(", ")} FROM deliveries${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY id LIMIT ?`,
    ...params, DELIVERIES_PAGE + 1).map(deliveryJson);
  const more = rows.length > DELIVERIES_PAGE;
  const page = rows.slice(0, DELIVERIES_PAGE);
  return { rows: page, next: more ? page[page.length - 1].id : null };
}

/** At most LIMIT bytes of UTF-8, cut at a code point boundary and ended with "…" (core/hooks._cut). */
function cut(text: string | null, limit: number): string | null {
  if (text === null || text === undefined) return null;
  const data = encoder.encode(text);
  if (data.length <= limit) return text;
  let end = limit - 3;
  while (end > 0 && (data[end] & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(data.subarray(0, end)) + "…";
}

/** Inside the outcome's own transaction: one pending delivery per hook subscribed to KIND (completed, failed or
 *  cancelled) for prompt P (its JSON, sessions.getPrompt), its body fixed now. Returns how many. */
export function outcome(obj: Opened, p: DictRow, kind: string): number {
  const subscribed = obj.db.all("SELECT id, events, include_reply FROM hooks ORDER BY id").filter((h) => JSON.parse(h[1]).includes(kind));
  if (!subscribed.length) return 0;
  const meta = obj.meta()!;
  let reply: string | null = null;
  if (kind === "completed" && p.turn_seq !== null) {
    const r = obj.db.one("SELECT content FROM turns WHERE seq > ? AND role = 'assistant' AND superseded_by IS NULL ORDER BY seq DESC LIMIT 1", p.turn_seq);
    if (r && encoder.encode(r[0]).length <= MAX_REPLY_BYTES) reply = r[0];
  }
  const t = now();
  const type = "prompt." + kind;
  for (const [hookId, , includeReply] of subscribed) {
    const data = { hook_id: hookId, session: meta.name, session_id: meta.id, scope: meta.scope, owner: meta.owner, prompt_id: p.id,
      request_id: p.request_id, source: p.source, schedule_id: p.schedule_id, status: p.status, error: cut(p.error, MAX_ERROR_BYTES),
      attempts: p.attempts, turn_seq: p.turn_seq, created_at: p.created_at, started_at: p.started_at, completed_at: p.completed_at,
      reply: includeReply ? reply : null };
    const body = JSON.stringify({ type, timestamp: p.completed_at, data });
    const webhookId = "msg_" + [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");
    obj.db.run("INSERT INTO deliveries (hook_id, webhook_id, type, prompt_id, body, status, created_at, next_attempt_at)" +
      " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)", hookId, webhookId, type, p.id, body, t, t);
  }
  return subscribed.length;
}
