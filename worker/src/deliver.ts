// Sending the outbox from the object's alarm (mirrors durable_cli/deliver.py; docs/reference/sessions.md §5.3 and
// docs/reference/remote.md §13): a due delivery is claimed in one transaction (its attempt counted, its next attempt
// pushed past the attempt's own time), sent with fetch outside any transaction, and its result recorded in another.
// One alarm invocation sends at most PER_ALARM deliveries; a receiver's error is recorded, never thrown (a throw would
// make Cloudflare retry the whole alarm). Signed as the Standard Webhooks specification says, as the client signs.
import { CONSTANTS, Db, now, pyDumps } from "./rules/state";
import { version } from "../package.json";

// contract.json "webhooks" (durable_cli/deliver.py has the same): attempt n+1 is due DELAYS[n-1] seconds after attempt n (the
// Standard Webhooks schedule, no jitter), 8 attempts in all; a claim's hold; an attempt's bound
const WEBHOOKS = CONSTANTS.webhooks;
export const DELAYS = WEBHOOKS.delays;
const ATTEMPTS = DELAYS.length + 1;
const CLAIM_FLOOR = WEBHOOKS.claim_floor_seconds; // seconds: a claimed attempt is not sent again for at least this long
const TIMEOUT_MS = WEBHOOKS.attempt_timeout_seconds * 1000;
export const PER_ALARM = WEBHOOKS.alarm_deliveries; // within Cloudflare's per-invocation subrequest limit (docs/remote.md)
const KEEP_FINISHED = 100;

export type Claimed = { id: number; attempt: number; started: number; url: string; secret: string; webhookId: string; body: string };

/** Inside a transaction: the oldest due pending delivery, its attempt counted, or null when none is due. */
export function claim(db: Db): Claimed | null {
  const t = now();
  const r = db.one("SELECT d.id, d.attempts, h.url, h.secret, d.webhook_id, d.body FROM deliveries d JOIN hooks h ON h.id = d.hook_id" +
    " WHERE d.status = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.id LIMIT 1", t);
  if (!r) return null;
  const attempt = Number(r[1]) + 1;
  const delay = attempt <= DELAYS.length ? DELAYS[attempt - 1] : 0;
  db.run("UPDATE deliveries SET attempts = ?, last_attempt_at = ?, next_attempt_at = ? WHERE id = ?",
    attempt, t, t + Math.max(delay, CLAIM_FLOOR) * 1000, r[0]);
  db.run("UPDATE object SET updated_at = ?", t); // a delivery's bookkeeping (docs/reference/storage.md §3)
  return { id: r[0], attempt, started: t, url: r[2], secret: r[3], webhookId: r[4], body: r[5] };
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** `v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, the key being the secret's base64 after whsec_. */
export async function sign(secret: string, webhookId: string, timestamp: number, body: string): Promise<string> {
  const raw = Uint8Array.from(atob(secret.slice("whsec_".length)), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${webhookId}.${timestamp}.${body}`));
  return "v1," + b64(new Uint8Array(mac));
}

/** One attempt: [HTTP status or null, null when delivered else a short reason]. Never throws. */
export async function post(c: Claimed): Promise<[number | null, string | null]> {
  try {
    const timestamp = Math.floor(Date.now() / 1000);
    const answer = await fetch(c.url, {
      method: "POST", redirect: "manual", signal: AbortSignal.timeout(TIMEOUT_MS), body: c.body,
      headers: { "content-type": "application/json", "user-agent": `durable/${version}`, "webhook-id": c.webhookId,
        "webhook-timestamp": String(timestamp), "webhook-signature": await sign(c.secret, c.webhookId, timestamp, c.body) },
    });
    try {
      await answer.body?.cancel(); // the answer's body is not read
    } catch {
      // already closed
    }
    return answer.status >= 200 && answer.status < 300 ? [answer.status, null] : [answer.status, `HTTP ${answer.status}`];
  } catch (e) {
    const name = e instanceof Error ? e.name : "";
    const message = e instanceof Error ? e.message : String(e);
    if (name === "TimeoutError" || name === "AbortError" || /timed? ?out/i.test(message)) return [null, "timeout"];
    if (/refused/i.test(message)) return [null, "connection refused"];
    if (/connection lost|connect/i.test(message)) return [null, "connection failed"]; // workerd's words for a refused or reset one
    return [null, (message || name || "fetch failed").slice(0, 200)];
  }
}

/** Inside a transaction: the attempt's result (delivered, failed for good after the 8th, or due again later). */
export function record(db: Db, c: Claimed, status: number | null, error: string | null) {
  const r = db.one("SELECT hook_id, prompt_id, attempts, status FROM deliveries WHERE id = ?", c.id);
  if (!r || Number(r[2]) !== c.attempt || r[3] !== "pending") return; // unhooked, or another attempt went on with it
  const [hookId, promptId] = r;
  const t = now();
  db.run("UPDATE object SET updated_at = ?", t); // a delivery's bookkeeping, not activity (docs/reference/storage.md §3)
  if (error === null) {
    db.run("UPDATE deliveries SET status = 'delivered', delivered_at = ?, next_attempt_at = NULL, last_response = ?, last_error = NULL WHERE id = ?",
      t, status, c.id);
  } else if (c.attempt >= ATTEMPTS) {
    db.run("UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, last_response = ?, last_error = ? WHERE id = ?", status, error, c.id);
    db.run("INSERT INTO events (type, actor, data, at) VALUES ('delivery.failed', NULL, ?, ?)",
      pyDumps({ delivery_id: c.id, hook_id: hookId, prompt_id: promptId, attempts: c.attempt, error }), t);
  } else {
    db.run("UPDATE deliveries SET next_attempt_at = ?, last_response = ?, last_error = ? WHERE id = ?",
      c.started + DELAYS[c.attempt - 1] * 1000, status, error, c.id);
  }
  // a session keeps its 100 newest finished deliveries per hook
  db.run("DELETE FROM deliveries WHERE hook_id = ? AND status IN ('delivered', 'failed') AND id NOT IN" +
    " (SELECT id FROM deliveries WHERE hook_id = ? AND status IN ('delivered', 'failed') ORDER BY id DESC LIMIT ?)", hookId, hookId, KEEP_FINISHED);
}
