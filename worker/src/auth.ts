// Who is calling (docs/reference/remote.md §13 "Tokens are signed, not listed") and whether the Worker may serve at all.
//
// A token is a JWT (RFC 7519) signed with HS256 under the secret DURABLE_TOKEN_KEY: header {"alg": "HS256"},
// claims sub (the user), adm (bool), iat, exp (seconds) and jti. Only HS256 is accepted, only canonical
// base64url (the one encoding of each segment: no padding, no stray bits), the signature is checked with
// WebCrypto (crypto.subtle.verify: constant time), then exp and the revocation list the index keeps
// (index shard `auth:0`, cached per isolate for REVOCATIONS_TTL_MS; a revoke clears this isolate's copy).
// Anything else is 401 (exit 5). `durable remote token` (durable_cli/remote/tokens.py) issues them.
import { DEFAULT_SUBREQUESTS } from "./subrequests";
import { DurableError, validName } from "./rules/state";

/** The Worker's variables and what each must be (docs/remote.md "Configuration"). */
export interface Config {
  DURABLE_SECRET?: unknown;
  DURABLE_TOKEN_KEY?: unknown;
  DURABLE_MAX_TURN_BYTES?: unknown;
  DURABLE_MAX_BODY_BYTES?: unknown;
  DURABLE_SUBREQUEST_LIMIT?: unknown;
  DURABLE_RATE_LIMIT?: unknown;
  DURABLE_DEV_FAULTS?: unknown;
  DURABLE_HOOK_ALLOW_HOSTS?: unknown;
  DURABLE_TOKENS?: unknown;
  DURABLE_ADMIN_TOKENS?: unknown;
}

const MIN_KEY_BYTES = 32;
const MiB = 1048576;

function misconfigured(variable: string, why: string): DurableError {
  return new DurableError(`the Worker is misconfigured: ${variable} ${why} (docs/remote.md "Configuration"); nothing was done`, "misconfigured");
}

/** A positive integer variable as text ("16777216"), within [1, MAX]: its value, or the default when unset. */
function positiveVar(env: Config, name: keyof Config, fallback: number, max: number, unit = "bytes"): number {
  const v = env[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "string" || !/^[1-9][0-9]{0,15}$/.test(v) || Number(v) > max) {
    throw misconfigured(name, `must be a positive integer of at most ${max} (${unit}), as text`);
  }
  return Number(v);
}

export type Settings = { maxTurnBytes: number; maxBodyBytes: number; subrequests: number; rateLimit: number; faults: boolean };

export const DEFAULT_RATE_LIMIT = 1200; // requests a minute per token (docs/reference/remote.md §13 "Rate limit"); 0: no limit
export const MAX_RATE_LIMIT = 10000000;

let checked: { env: Config; settings: Settings } | null = null;

/** The configuration checked before anything else on every request (memoised per env object, which
 *  Cloudflare keeps for the isolate's life): HTTP 500 `misconfigured` naming the variable otherwise. */
export function checkConfig(env: Config): Settings {
  if (checked && checked.env === env) return checked.settings;
  for (const name of ["DURABLE_SECRET", "DURABLE_TOKEN_KEY"] as const) {
    const v = env[name];
    if (typeof v !== "string" || !v) throw misconfigured(name, `is not set: put a random secret of at least ${MIN_KEY_BYTES} bytes (npx wrangler secret put ${name})`);
    if (new TextEncoder().encode(v).length < MIN_KEY_BYTES) throw misconfigured(name, `is shorter than ${MIN_KEY_BYTES} bytes`);
  }
  for (const old of ["DURABLE_TOKENS", "DURABLE_ADMIN_TOKENS"] as const) {
    if (env[old] !== undefined) throw misconfigured(old, "is no longer read: tokens are signed with DURABLE_TOKEN_KEY ('durable remote token'); delete it");
  }
  const maxTurnBytes = positiveVar(env, "DURABLE_MAX_TURN_BYTES", 2 * MiB, 2 * MiB);
  const maxBodyBytes = positiveVar(env, "DURABLE_MAX_BODY_BYTES", 16 * MiB, 100 * MiB);
  if (maxBodyBytes < 64 * 1024) throw misconfigured("DURABLE_MAX_BODY_BYTES", "must be at least 65536 (bytes); keep it at least 6 times DURABLE_MAX_TURN_BYTES, so any turn can be sent");
  const f = env.DURABLE_DEV_FAULTS;
  if (f !== undefined && f !== "1" && f !== "0") throw misconfigured("DURABLE_DEV_FAULTS", 'must be "1" or unset (a test hook of durable remote dev)');
  // Cloudflare's per-request subrequest limit (subrequests.ts): Workers Paid's default, up to its 10 million
  const subrequests = positiveVar(env, "DURABLE_SUBREQUEST_LIMIT", DEFAULT_SUBREQUESTS, 10000000, "subrequests per request");
  // each token's requests a minute (rate.ts): a whole number from 0 (no limit)
  const r = env.DURABLE_RATE_LIMIT;
  if (r !== undefined && r !== null && (typeof r !== "string" || !/^(0|[1-9][0-9]{0,7})$/.test(r) || Number(r) > MAX_RATE_LIMIT)) {
    throw misconfigured("DURABLE_RATE_LIMIT", `must be a whole number from 0 (no limit) to ${MAX_RATE_LIMIT} (requests a minute per token), as text`);
  }
  // hosts a hook may name although local or private (rules/hooks.ts): comma-separated host names or IP literals
  const h = env.DURABLE_HOOK_ALLOW_HOSTS;
  if (h !== undefined && h !== null && (typeof h !== "string" || !/^[A-Za-z0-9.:\[\]_-]*(,[A-Za-z0-9.:\[\]_-]*)*$/.test(h.replace(/ /g, "")))) {
    throw misconfigured("DURABLE_HOOK_ALLOW_HOSTS", "must be a comma-separated list of host names or IP addresses, as text");
  }
  const rateLimit = r === undefined || r === null ? DEFAULT_RATE_LIMIT : Number(r);
  const settings = { maxTurnBytes, maxBodyBytes, subrequests, rateLimit, faults: f === "1" };
  checked = { env, settings };
  return settings;
}

export type Claims = { sub: string; adm: boolean; iat: number; exp: number; jti: string };

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Canonical base64url (RFC 4648 §5, no padding) to bytes, or null: any other spelling of the same bytes is refused. */
function unb64url(text: string): Uint8Array | null {
  if (!B64URL.test(text) || text.length % 4 === 1) return null;
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "==".slice(0, (4 - (text.length % 4)) % 4));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return b64url(bytes) === text ? bytes : null;
}

export function b64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

let verifyKey: { text: string; key: CryptoKey } | null = null;

async function keyFor(text: string): Promise<CryptoKey> {
  if (!verifyKey || verifyKey.text !== text) {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(text), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    verifyKey = { text, key };
  }
  return verifyKey.key;
}

const unauthorized = (why: string) =>
  new DurableError(`the token is not valid for this Worker (${why}); check DURABLE_TOKEN or config remote.token, or issue one with 'durable remote token'`, "unauthorized");

const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

function decodeJson(bytes: Uint8Array): any {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes));
  } catch {
    return null;
  }
}

/** The claims of a valid token signed with KEY, or a 401 DurableError. NOW in ms. */
export async function verify(token: string, keyText: string, nowMs: number): Promise<Claims> {
  const parts = token.split(".");
  if (parts.length !== 3) throw unauthorized("not a signed token");
  const [h, p, s] = parts.map(unb64url);
  if (!h || !p || !s) throw unauthorized("not canonical base64url");
  const header = decodeJson(h);
  if (!header || typeof header !== "object" || Array.isArray(header) || header.alg !== "HS256" || ("crit" in header)) {
    throw unauthorized("only HS256 tokens are accepted");
  }
  if (s.length !== 32) throw unauthorized("bad signature");
  const ok = await crypto.subtle.verify("HMAC", await keyFor(keyText), s, new TextEncoder().encode(`${parts[0]}.${parts[1]}`));
  if (!ok) throw unauthorized("bad signature");
  const c = decodeJson(p);
  if (!c || typeof c !== "object" || Array.isArray(c) || typeof c.sub !== "string" || typeof c.adm !== "boolean" || !isInt(c.iat)
      || !isInt(c.exp) || typeof c.jti !== "string" || !c.jti || c.jti.length > 200) {
    throw unauthorized("claims sub, adm, iat, exp and jti are required");
  }
  try {
    validName(c.sub, "user");
  } catch {
    throw unauthorized("sub is not a valid user name");
  }
  if (c.exp * 1000 <= nowMs) throw unauthorized(`expired at ${new Date(c.exp * 1000).toISOString()}`);
  return { sub: c.sub, adm: c.adm, iat: c.iat, exp: c.exp, jti: c.jti };
}

/** The revocation list as the index keeps it: jti -> revoked, user -> the iat (s) before which their tokens are revoked. */
export type Revocations = { jtis: string[]; users: Record<string, number> };

const REVOCATIONS_TTL_MS = 5000; // each isolate reads the list at most this often
const STALE_MS = 60000; // a list this old is still served while a read fails (docs/reference/remote.md §13 "stale list"); older: 503
const RETRY_READ_MS = 1000; // while reads fail, the stale list is served without a new read for this long
type List = { jtis: Set<string>; users: Map<string, number> };
let revocations: { at: number; list: List } | null = null;
let lastFailure = -Infinity; // when a read of the list last failed (ms)
let devFail = false; // tests only (DURABLE_DEV_FAULTS): every read of the list fails

export function forgetRevocations() {
  revocations = null;
}

/** Tests only (`durable remote dev`, DURABLE_DEV_FAULTS): reads of the list fail (FAIL), and this isolate's
 *  copy is taken as AGE ms old (due for a read, or past the stale bound). */
export function devRevocationFault(fail: boolean, ageMs: number | null, nowMs: number) {
  devFail = fail;
  lastFailure = -Infinity;
  if (revocations && ageMs !== null) revocations.at = nowMs - ageMs;
}

/** The revocation list: this isolate's copy while under REVOCATIONS_TTL_MS old, else read again by FETCH
 *  (one subrequest per isolate per 5 s). When a read fails, the last list read is served for up to
 *  STALE_MS after that read, then HTTP 503 `busy` marked retryable (the client retries, then exit 6). */
export async function revocationList(nowMs: number, fetch: () => Promise<Revocations>): Promise<List> {
  const held = revocations;
  if (held && nowMs - held.at <= REVOCATIONS_TTL_MS && nowMs >= held.at) return held.list;
  const usable = held !== null && nowMs - held.at <= STALE_MS && nowMs >= held.at;
  if (usable && nowMs - lastFailure < RETRY_READ_MS) return held!.list; // a read failed just now: not again yet
  try {
    if (devFail) throw new Error("the revocation list cannot be read (dev fault)");
    const got = await fetch();
    revocations = { at: nowMs, list: { jtis: new Set(got.jtis), users: new Map(Object.entries(got.users)) } };
    return revocations.list;
  } catch (e) {
    lastFailure = nowMs;
    console.error(`durable: the revocation list (index shard auth:0) could not be read: ${(e as Error)?.message ?? e}`);
    if (usable) return held!.list;
    throw Object.assign(new DurableError("the Worker cannot read its token revocation list just now; try again shortly", "busy"),
      { status: 503, retryable: true });
  }
}

/** Why the token of these claims is revoked, or null. */
export function revokedWhy(c: { sub: string; iat: number; jti: string }, list: List): string | null {
  if (list.jtis.has(c.jti)) return `token ${c.jti} was revoked`;
  const before = list.users.get(c.sub);
  if (before !== undefined && c.iat < before) return `the tokens of user "${c.sub}" issued before ${new Date(before * 1000).toISOString()} were revoked`;
  return null;
}

/** Refuse a revoked token. FETCH reads the list from the index (revocationList). */
export async function checkRevoked(c: Claims, nowMs: number, fetch: () => Promise<Revocations>): Promise<void> {
  const why = revokedWhy(c, await revocationList(nowMs, fetch));
  if (why !== null) throw unauthorized(why);
}
