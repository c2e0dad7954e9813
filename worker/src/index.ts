// The Worker: checks its own configuration, verifies the signed token (auth.ts), decides the acting user,
// computes the object id by HMAC with its own secret and forwards the call to that object's Durable
// Object (`idFromName(id)`).
//
// Secrets / vars (docs/remote.md "Configuration"): DURABLE_SECRET (the HMAC key of object ids),
// DURABLE_TOKEN_KEY (the HS256 key of tokens; an admin token may act as any user with --as),
// DURABLE_MAX_TURN_BYTES, DURABLE_MAX_BODY_BYTES.
import { DEFAULT_CONFIG, DurableError, httpStatus, internalError, say, validName } from "./rules/state";
import { Claims, Revocations, checkConfig, checkRevoked, forgetRevocations, verify } from "./auth";
import * as strict from "./rules/strict";
import { across } from "./across";
import { checkArgs } from "./rules/args";
import type { AuthArgs } from "./generated/ops";
import { ask, listObjects } from "./indexes";
import { searchAll } from "./search";
import { callObject } from "./calls";
import { counted } from "./subrequests";
import { limited } from "./rate";
import { RAW_AT, envelope } from "./raw";
export { DurableObjectSession } from "./object";
export { DurableIndex } from "./indexes";

export interface Env {
  OBJECTS: DurableObjectNamespace;
  INDEX: DurableObjectNamespace; // the index shards (indexes.ts)
  DURABLE_DEV_FAULTS?: string; // "1" only under `durable remote dev` for the tests' fault hook
  DURABLE_SECRET: string;
  DURABLE_TOKEN_KEY: string;
  DURABLE_MAX_TURN_BYTES?: string; // the Worker's own turn ceiling (a var): a client's transcript.max_turn_bytes only lowers it
  DURABLE_MAX_BODY_BYTES?: string; // a larger body is 413 before it is parsed (the client sends a larger batch in parts)
  DURABLE_SUBREQUEST_LIMIT?: string; // subrequests one request may make (default Workers Paid's 10,000; `durable remote dev`: 1,000)
  DURABLE_RATE_LIMIT?: string; // requests a minute per token (rate.ts; default 1,200; 0: no limit)
}

/** The config a call runs with: the client's values where they are positive integers, the turn ceiling
 *  never above the Worker's own (a client cannot raise what the storage is asked to hold). */
function callConfig(cap: number, c: Record<string, number>) {
  // any positive integer the client's config holds (up to 2^63 - 1, as locally: one past 2^53 fell back to the
  // default, a queue of 10 where the file store allowed any number); no count reaches 2^53, so it is taken at most that
  const positive = (v: unknown, fallback: number) => (Number.isInteger(v) && (v as number) > 0 ? Math.min(v as number, Number.MAX_SAFE_INTEGER) : fallback);
  return { max_unfinished: positive(c.max_unfinished, DEFAULT_CONFIG.max_unfinished), max_turn_bytes: Math.min(positive(c.max_turn_bytes, cap), cap),
    token_budget: positive(c.token_budget, DEFAULT_CONFIG.token_budget),
    tags_max: Math.min(positive(c.tags_max, DEFAULT_CONFIG.tags_max), DEFAULT_CONFIG.tags_max) }; // tags.max: 1-32 (docs/reference/sessions.md §5)
}

// owner: another user's user-scoped object or memory, for an admin's installation-wide command only
// (all_users: import --all-users, export --all / --user U); a user token names its own objects only.
type Body = { op: string; args?: unknown; scope: string; label?: string; name?: string; tenant?: string | null;
  actor?: string | null; create?: boolean; request_id?: string | null; config?: Record<string, number>;
  owner?: string | null; all_users?: boolean; dev_fault?: string | null };

let keyCache: { secret: string; key: CryptoKey } | null = null;

async function objectId(secret: string, scope: string, owner: string, name: string): Promise<string> {
  if (!keyCache || keyCache.secret !== secret) {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keyCache = { secret, key };
  }
  // length-prefixed fields: injective whatever the names hold
  const fields = [scope, owner, name].map((f) => `${new TextEncoder().encode(f).length}:${f}`).join("");
  const mac = await crypto.subtle.sign("HMAC", keyCache.key, new TextEncoder().encode(fields));
  return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function fail(e: DurableError): Response {
  // unauthorized (a token that is not one of this Worker's): HTTP 401, permission_denied (exit 5) to the client
  const code = e.code === "unauthorized" ? "permission_denied" : e.code;
  const error: Record<string, unknown> = { code, message: e.message };
  if (e.document !== undefined) error.document = e.document;
  if ((e as { retryable?: boolean }).retryable) error.retryable = true;
  const retryAfter = (e as { retryAfter?: number }).retryAfter;
  if (retryAfter !== undefined) error.retry_after = retryAfter; // a token over its rate (rate.ts)
  return new Response(JSON.stringify({ error }), {
    status: e.code === "unauthorized" ? 401 : (e as { status?: number }).status ?? httpStatus(e.code),
    headers: { "content-type": "application/json", ...(retryAfter !== undefined ? { "retry-after": String(retryAfter) } : {}) },
  });
}

/** The caller: the claims of a valid, unrevoked token of this Worker (auth.ts), or 401. */
export async function who(env: Env, header: string | null): Promise<{ user: string; admin: boolean; claims: Claims }> {
  const token = header?.startsWith("Bearer ") ? header.slice(7) : null;
  if (!token) throw new DurableError("missing token: set DURABLE_TOKEN or config remote.token ('durable remote token' issues one)", "unauthorized");
  const t = Date.now();
  const claims = await verify(token, env.DURABLE_TOKEN_KEY, t);
  await checkRevoked(claims, t, () => askIndex<Revocations>(env, "revocations", {}));
  return { user: claims.sub, admin: claims.adm, claims };
}

/** The revocation list lives in one index shard (indexes.ts), read rarely (cached per isolate). */
const AUTH_SHARD = "auth:0";

async function askIndex<T>(env: Env, op: string, args: unknown): Promise<T> {
  return ask<T>(env, AUTH_SHARD, op, args);
}

function json(doc: unknown): Response {
  return new Response(JSON.stringify(doc), { headers: { "content-type": "application/json" } });
}

/** The owner of a user-scoped object or memory: the acting user's own, or (an admin's installation-wide
 *  command) the one named. */
function ownerOf(body: Body, actor: string): string {
  return body.owner == null ? actor : validName(body.owner, "user");
}

/** Another user's user-scoped object or memory: an admin's installation-wide call only. For an import the
 *  refusal says what the file backend says of such a record, with the id for the receipt's entry. */
function refuseOthers(body: Body, address: { id_scope: string; owner: string; name: string }, actor: string, id: string) {
  const what = address.id_scope === "reserved" ? say("user_memory", { user: address.owner })
    : say("owned_label", { what: say("session", { name: address.name }), user: address.owner });
  if (body.op === "import") {
    throw new DurableError(say("import_others", { what }), "permission_denied", { id });
  }
  throw new DurableError(`${what} belongs to another user; only they can reach it (or an admin's installation-wide command)`, "permission_denied");
}

/** A body over MAX bytes is HTTP 413 before a byte of it is parsed (by its Content-Length, or while it
 *  streams in); the error's document tells the client the limit, so it sends a batch in parts. The bytes are
 *  read into one buffer (of the declared length when there is one), never held twice. */
async function bodyBytes(request: Request, max: number): Promise<Uint8Array> {
  const tooLarge = (n: number | null) => Object.assign(new DurableError(
    `the request body${n === null ? "" : ` of ${n} bytes`} is over this Worker's DURABLE_MAX_BODY_BYTES (${max}); ` +
    "send a batch in parts (the durable client does) or raise the variable", "invalid_input", { max_body_bytes: max }), { status: 413 });
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw tooLarge(Number(declared));
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  let all = new Uint8Array(declared !== null && /^[0-9]+$/.test(declared) ? Number(declared) : 65536);
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (total + value.byteLength > max) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(null);
    }
    if (total + value.byteLength > all.length) { // (no or a wrong Content-Length: grown by doubling)
      const grown = new Uint8Array(Math.min(max, Math.max(all.length * 2, total + value.byteLength)));
      grown.set(all.subarray(0, total));
      all = grown;
    }
    all.set(value, total);
    total += value.byteLength;
  }
  return all.subarray(0, total);
}

function decoded(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    // docs/reference/transcript.md §6: invalid UTF-8 (a lone surrogate's bytes included) is exit 2, never text with U+FFFD stored in its place
    throw new DurableError("the request body is not valid UTF-8", "invalid_input");
  }
}

/** The ops of an object's scope the Worker answers itself: their bodies are always parsed here. */
const WORKER_OPS = new Set(["whoami", "limits", "object_id"]);

/** A follow request's call (the x-durable-call header: JSON, ASCII): op "follow" of one object, args {since}. */
function followCall(request: Request): Body {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") throw new DurableError("GET /v1/follow takes a WebSocket upgrade", "invalid_input");
  let body: Body;
  try {
    body = JSON.parse(request.headers.get("x-durable-call") ?? "") as Body;
  } catch {
    throw new DurableError("the x-durable-call header of a follow request is not JSON", "invalid_input");
  }
  if (body === null || typeof body !== "object" || body.op !== "follow" || !["user", "tenant"].includes(body.scope)) {
    throw new DurableError("a follow request names one session (op follow, scope user or tenant)", "invalid_input");
  }
  return body;
}

/** The upgrade forwarded to the object's Durable Object, which accepts the WebSocket (follow.ts); its answer as is. */
async function followObject(env: Env, id: string, call: unknown): Promise<Response> {
  const stub = env.OBJECTS.get(env.OBJECTS.idFromName(id));
  try {
    return await stub.fetch("https://object/follow", { headers: { upgrade: "websocket", "x-durable-call": encodeURIComponent(JSON.stringify(call)) } });
  } catch (e) {
    throw new DurableError(`the object did not answer: ${(e as Error).message}`, "busy");
  }
}

/** One request from the token's bucket (rate.ts), kept in its user's reserved object; 429 when it is empty. */
async function rateCheck(env: Env, claims: Claims, limit: number) {
  const id = await objectId(env.DURABLE_SECRET, "reserved", claims.sub, "");
  let answer: { result?: { retry_after: number | null } };
  try {
    const response = await env.OBJECTS.get(env.OBJECTS.idFromName(id)).fetch("https://object/rate", {
      method: "POST", body: JSON.stringify({ jti: claims.jti, limit }) });
    answer = (await response.json()) as typeof answer;
  } catch (e) {
    throw Object.assign(new DurableError(`the rate limit's object did not answer: ${(e as Error).message}`, "busy"), { retryable: true });
  }
  const retryAfter = answer.result?.retry_after ?? null;
  if (retryAfter !== null) throw limited(limit, retryAfter);
}

/** `durable remote revoke` (admin): a token by its jti, or a user's tokens issued before a time (whole seconds of iat). */
async function revoke(env: Env, admin: boolean, args: AuthArgs["revoke"] | undefined): Promise<unknown> {
  if (!admin) throw new DurableError("'remote revoke' needs an admin token", "permission_denied");
  const jti = args?.jti ?? null, user = args?.user ?? null, before = args?.issued_before ?? null;
  if ((jti === null) === (user === null)) throw new DurableError("revoke takes a token id (JTI) or --user USER, not both", "invalid_input");
  if (jti !== null && (typeof jti !== "string" || !jti || jti.length > 200)) throw new DurableError("invalid JTI: use the jti of a token", "invalid_input");
  if (user !== null) validName(user, "user");
  if (user !== null && (before === null || !Number.isSafeInteger(before) || before < 0)) throw new DurableError("issued_before must be whole seconds since the epoch", "invalid_input");
  await askIndex(env, "revoke", { jti, user, issued_before: user === null ? null : before });
  forgetRevocations(); // this isolate sees it at once; others within the cache's life (auth.ts)
  return { revoked: jti, user, issued_before: user === null ? null : before };
}

export default {
  async fetch(request: Request, plain: Env): Promise<Response> {
    const url = new URL(request.url);
    try {
      const settings = checkConfig(plain); // before anything else: a misconfigured Worker touches no storage
      const env = counted(plain, settings.subrequests); // every call to a Durable Object counted (subrequests.ts)
      if (url.pathname === "/v1/health") return new Response(JSON.stringify({ ok: true }), { headers: { "content-type": "application/json" } });
      // GET /v1/follow upgraded to a WebSocket: a live follower (follow.ts), its call in the x-durable-call header
      const following = url.pathname === "/v1/follow" && request.method === "GET";
      if (!following && (url.pathname !== "/v1/call" || request.method !== "POST")) {
        throw new DurableError(`no such endpoint ${request.method} ${url.pathname}; is the remote URL a durable Worker?`, "invalid_input");
      }
      const token = await who(env, request.headers.get("authorization"));
      if (settings.rateLimit > 0) await rateCheck(env, token.claims, settings.rateLimit); // before the body is read: 429, nothing done
      let body: Body;
      // the body of a call (413 past DURABLE_MAX_BODY_BYTES, before it is parsed)
      const bytes = following ? null : await bodyBytes(request, settings.maxBodyBytes);
      // a big body to an object goes to it unparsed: only its envelope is read here (raw.ts)
      const head = bytes !== null && bytes.byteLength >= RAW_AT ? envelope(bytes) : null;
      const raw = head !== null && ["user", "tenant", "reserved"].includes(head.scope as string) && !WORKER_OPS.has(head.op as string) ? bytes : null;
      if (raw !== null) body = head as unknown as Body;
      else {
        // the text checked below: the body of a call, the x-durable-call header of a follow
        const text = bytes === null ? request.headers.get("x-durable-call") ?? "" : decoded(bytes);
        try {
          body = following ? followCall(request) : (JSON.parse(text) as Body);
        } catch (e) {
          if (e instanceof DurableError) throw e;
          throw new DurableError("the request body is not JSON", "invalid_input");
        }
        // RFC 8259 (docs/reference/transcript.md §6): no duplicate key or 1e400 anywhere; each field's value is held to 200 levels where it is read
        const why = strict.scan(text, strict.MAX_DEPTH + strict.ENVELOPE_DEPTH, undefined, true);
        if (why !== null) throw new DurableError(`invalid request body: ${why}`, "invalid_input");
      }
      if (body === null || typeof body !== "object" || Array.isArray(body)) throw new DurableError("the request body is not a JSON object", "invalid_input");
      const actor = body.actor == null ? token.user : validName(body.actor, "user");
      if (!token.admin && actor !== token.user) {
        throw new DurableError(`this token acts as user "${token.user}", not "${actor}"; use an admin token to act as another user`, "permission_denied");
      }
      if (body.op === "whoami") return json({ result: { user: actor, admin: token.admin } });
      // what a client must know before it sends a big batch: whether it goes in parts
      if (body.op === "limits") return json({ result: { max_body_bytes: settings.maxBodyBytes, max_turn_bytes: settings.maxTurnBytes } });
      if (body.op === "sql_limits" && body.scope === "dev" && token.admin && settings.faults) return json({ result: await ask(env, "dev:0", "sql_limits", {}) });
      // (a follow request's since is checked by its object, follow.ts; dev_forget_followers is a test hook of remote dev)
      if (!following && raw === null && !(body.op === "dev_forget_followers" && settings.faults)) { // (a raw body: its object checks them)
        checkArgs(["index", "objects", "auth"].includes(body.scope) ? body.scope : "object", body.op, body.args);
      }
      if (body.op === "revoke" && body.scope === "auth") return json({ result: await revoke(env, token.admin, body.args as AuthArgs["revoke"] | undefined) });
      const allUsers = body.all_users === true;
      if (allUsers && !token.admin) {
        throw new DurableError(`an installation-wide ${body.op === "import" ? "import (--all-users)" : body.op} needs an admin token; this token acts as user "${token.user}" only`, "permission_denied");
      }
      if (body.scope === "objects") return json({ result: await searchAll(env, body.op, body.args, actor, token.admin, listObjects) });
      if (body.scope === "index") { // the commands across objects (across.ts)
        const tenant = body.tenant == null ? null : validName(body.tenant, "tenant");
        const reservedId = (u: string) => objectId(env.DURABLE_SECRET, "reserved", u, "");
        const result = await across(env, { actor, admin: token.admin, token_user: token.user, tenant, reservedId, request_id: body.request_id ?? null }, body.op, body.args ?? {});
        return new Response(JSON.stringify({ result: result ?? null }), { headers: { "content-type": "application/json" } });
      }
      let idScope: string, owner: string, name: string, scope: string;
      if (body.scope === "tenant") {
        [idScope, owner, name, scope] = ["tenant", validName(body.tenant, "tenant"), validName(body.name), "tenant"];
      } else if (body.scope === "reserved") {
        [idScope, owner, name, scope] = ["reserved", ownerOf(body, actor), "", "reserved"];
      } else if (body.scope === "user") {
        [idScope, owner, name, scope] = ["user", ownerOf(body, actor), validName(body.name), body.label === "session" ? "session" : "user"];
      } else throw new DurableError(`unknown scope '${body.scope}'`, "invalid_input");
      const id = await objectId(env.DURABLE_SECRET, idScope, owner, name);
      if (idScope !== "tenant" && owner !== actor && !allUsers) refuseOthers(body, { id_scope: idScope, owner, name }, actor, id);
      // an import receipt's entry for a record the client refused: the caller's own (or, for an admin's
      // installation-wide call, anyone's) id at once; a tenant object's only to a participant (its DO says)
      if (body.op === "object_id" && (idScope !== "tenant" || allUsers)) return json({ result: { id } });
      const c = body.config ?? {};
      const call = {
        op: body.op, args: body.args ?? {}, address: { id_scope: idScope, owner, name, scope }, actor, id,
        create: !!body.create, request_id: body.request_id ?? null, all_users: allUsers,
        config: callConfig(settings.maxTurnBytes, c),
      };
      // a follower's mapping keeps its token's exp and jti: it is closed (4001) at the first push after the token expired or was revoked
      const { sub, iat, exp, jti } = token.claims;
      const devFault = settings.faults ? body.dev_fault ?? null : null;
      // the tests' hooks of an error no rule foresaw, in the Worker or in the object (its message must reach only the log)
      if (devFault === "internal_worker") throw new Error(`dev fault: a detail of the Worker's own for the log only (${id})`);
      return following ? await followObject(env, id, { ...call, token: { sub, iat, exp, jti } })
        : await callObject(env, id, devFault === "internal" ? { ...call, dev_fault: devFault } : call, devFault, raw);
    } catch (e) {
      return fail(internalError(e, "the Worker")); // an internal error's message goes to the log, its id to the caller
    }
  },
};
