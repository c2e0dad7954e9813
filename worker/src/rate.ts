// The per-token rate limit (docs/reference/remote.md §13 "Rate limit"; docs/remote.md "Rate limit"). Cloudflare enforces none of
// its own limits on a Worker's callers and workerd enforces nothing, so the Worker does it itself, in every
// environment: each token (its jti) has a token bucket of DURABLE_RATE_LIMIT requests, refilled at that many
// a minute, kept in the SQLite of its user's reserved object (one Durable Object per user, exact across
// isolates and locations: the DO's input gate serialises the count). Every request after the token is
// verified takes one, each part of a batch and each page included; an empty bucket is HTTP 429
// `rate_limited` with `retry_after` (whole seconds) and nothing is done.
import { DurableError } from "./rules/state";

const MINUTE_MS = 60000;

export const RATE_TABLE = "CREATE TABLE IF NOT EXISTS _durable_rate (jti TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL)";

/** In the user's reserved object: take one request from JTI's bucket of LIMIT a minute at time AT (ms).
 *  Returns null when taken, else the whole seconds until one is there again. */
export function take(sql: SqlStorage, jti: string, limit: number, at: number): number | null {
  sql.exec(RATE_TABLE);
  const row = sql.exec("SELECT tokens, at FROM _durable_rate WHERE jti = ?", jti).toArray()[0] as { tokens: number; at: number } | undefined;
  const refill = limit / MINUTE_MS; // per ms
  const tokens = row ? Math.min(limit, row.tokens + Math.max(0, at - row.at) * refill) : limit;
  // a bucket untouched for a minute is full again, as one never made: those rows go (a few per user)
  sql.exec("DELETE FROM _durable_rate WHERE at < ? AND jti != ?", at - MINUTE_MS, jti);
  if (tokens < 1) {
    sql.exec("INSERT OR REPLACE INTO _durable_rate (jti, tokens, at) VALUES (?, ?, ?)", jti, tokens, at);
    return Math.max(1, Math.ceil((1 - tokens) / refill / 1000));
  }
  sql.exec("INSERT OR REPLACE INTO _durable_rate (jti, tokens, at) VALUES (?, ?, ?)", jti, tokens - 1, at);
  return null;
}

/** The refusal of a token over its rate: HTTP 429, code rate_limited (exit 8), retry_after in its error. */
export function limited(limit: number, retryAfter: number): DurableError {
  return Object.assign(new DurableError(
    `this token is over its rate limit of ${limit} requests a minute (DURABLE_RATE_LIMIT); retry after ${retryAfter} s; nothing was done`,
    "rate_limited"), { status: 429, retryAfter });
}
