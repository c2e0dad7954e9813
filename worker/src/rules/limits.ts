// Rate limits: a token bucket per key in the user's reserved object (mirrors durable_cli/core/limits.py).
// The rate ("N/DUR") is parsed by the client; the Worker gets n and per (seconds), and the rate as the
// client shows it (N/ and the canonical duration, as durable_cli/durations.py `format` writes it).
import { DurableError, Opened, createObject, invalid, now, say, validName } from "./state";
import type { ObjectArgs } from "../generated/ops";

export function hit(obj: Opened, a: ObjectArgs["hit"]) {
  validName(a.key, "limit key");
  if (!(a.n >= 1) || !(a.per >= 1)) throw invalid(say("invalid_rate", { rate: a.rate }));
  if (a.burst != null && a.burst < 1) throw invalid(say("invalid_burst"));
  const capacity = a.burst || a.n;
  const refill = a.n / (a.per * 1000);
  const t = now();
  if (obj.meta() === null) createObject(obj, "active");
  const r = obj.db.one("SELECT tokens, updated_at FROM buckets WHERE key = ?", a.key);
  let tokens = r === null ? capacity : Math.min(capacity, r[0] + Math.max(0, t - r[1]) * refill);
  const allowed = tokens >= 1;
  if (allowed) tokens -= 1;
  obj.db.run("INSERT OR REPLACE INTO buckets (key, tokens, updated_at) VALUES (?, ?, ?)", a.key, tokens, t);
  const retry = allowed ? null : Math.max(1, Math.ceil((1 - tokens) / refill / 1000 - 1e-9));
  const doc = { key: a.key, allowed, remaining: Math.floor(tokens + 1e-9), retry_after: retry };
  if (!allowed) throw new DurableError(say("rate_limited", { key: a.key, rate: a.rate, retry }), "rate_limited", doc);
  return doc;
}
