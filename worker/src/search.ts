// `durable search` across the acting user's objects, fanned out inside the Worker (one client request):
// the index lists the objects (`ls --all`: owned or taken part in, archived and tenant ones included),
// each object's Durable Object ranks its own rows (rules/rights.ts searchObject, bm25 per object), and the
// tops are merged as across/search.py merges them: rank, newer last_active_at, NAME, seq.
import { DEFAULT_CONFIG, DurableError, denied, invalid, iso, now, say, validName } from "./rules/state";
import type { IndexEnv, IndexRow } from "./indexes";
import type { ObjectsArgs } from "./generated/ops";
import { callObject } from "./calls";

// Each object is one subrequest: Cloudflare allows 1,000 per request on the paid plan (50 on the free
// one). A search that would need more is refused (exit 2), never answered with part of the objects.
export const MAX_OBJECTS = 1000;
const PARALLEL = 32;

type List = (env: IndexEnv, opts: { user?: string; limit: number }) => Promise<IndexRow[]>;
const MAX_LISTED = 20 * MAX_OBJECTS; // index rows one search may read before its own filters (one page of the user's shard)
type Hit = { rank: number; seq: number; role: string; created_at: number; snippet: string };
// one object's answer to search_object (rules/rights.ts searchObject), or its error
type Answer = { result: { hits: Hit[]; last_active_at: number; name: string; id: string }; error?: undefined }
  | { error: { code: string; message: string } };
type Skipped = { id: string; owner: string; name: string; reason: string };

export async function searchAll(env: IndexEnv, op: string, args: unknown, actor: string, admin: boolean, list: List) {
  if (op !== "search") throw invalid(`unknown operation '${op}' across objects`);
  const a = (args ?? {}) as ObjectsArgs["search"]; // checked against the contract by index.ts
  const user = a.user == null ? actor : validName(a.user, "user");
  if (user !== actor && !admin) throw denied(`searching the sessions of user "${user}" needs an admin token or their own`);
  const limit = a.limit;
  if (!Number.isInteger(limit) || limit < 0) throw invalid(say("limit_negative"));
  const t = now();
  const tenant = a.tenant == null ? null : validName(a.tenant, "tenant"); // --tenant ORG: that tenant's sessions only, as `ls`
  const all = await list(env, { user, limit: MAX_LISTED + 1 });
  if (all.length > MAX_LISTED) throw invalid(`this search spans more than ${MAX_LISTED} sessions; narrow it with --session or --newer-than`);
  const listed = all.filter((r) => (r.expires_at === null || r.expires_at > t) &&
    (tenant === null || (r.scope === "tenant" && r.owner === tenant)));
  if (a.session != null && !listed.some((r) => r.name === a.session)) {
    throw new DurableError(say("search_session_not_found", { session: a.session }), "not_found");
  }
  const rows = listed.filter((r) => r.turns > 0 && (a.session == null || r.name === a.session) &&
    (a.cutoff == null || r.last_active_at >= a.cutoff));
  const skipped: Skipped[] = [];
  if (limit === 0) return { hits: [], skipped };
  if (rows.length > MAX_OBJECTS) {
    throw invalid(`this search spans ${rows.length} sessions, more than the ${MAX_OBJECTS} one request may reach; narrow it with --session or --newer-than`);
  }
  const found: { key: [number, number, string, number, string]; hit: Record<string, unknown> }[] = [];
  const one = async (r: IndexRow) => {
    const call = {
      op: "search_object", args: { query: a.query, fts: !!a.fts, role: a.role ?? null, cutoff: a.cutoff ?? null, superseded: !!a.superseded, limit },
      address: { id_scope: r.scope === "tenant" || r.scope === "reserved" ? r.scope : "user", owner: r.owner, name: r.name, scope: r.scope },
      actor: user, id: r.id, create: false, request_id: null, all_users: false,
      config: DEFAULT_CONFIG,
    };
    let doc: Answer;
    try {
      doc = await (await callObject(env, r.id, call)).json<Answer>();
    } catch (e) {
      skipped.push({ id: r.id, owner: r.owner, name: r.name, reason: "busy" });
      return;
    }
    if (doc.error) {
      if (doc.error.code === "not_found") return; // gone since the index listed it
      if (doc.error.code === "invalid_input") throw new DurableError(doc.error.message, "invalid_input");
      skipped.push({ id: r.id, owner: r.owner, name: r.name, reason: doc.error.code === "busy" ? "busy" : doc.error.message });
      return;
    }
    const res = doc.result;
    for (const h of res.hits) {
      found.push({ key: [h.rank, -res.last_active_at, res.name, h.seq, res.id],
        hit: { name: res.name, id: res.id, seq: h.seq, role: h.role, created_at: iso(h.created_at), snippet: h.snippet } });
    }
  };
  for (let i = 0; i < rows.length; i += PARALLEL) await Promise.all(rows.slice(i, i + PARALLEL).map(one));
  found.sort((x, y) => compare(x.key, y.key));
  return { hits: found.slice(0, limit).map((f) => f.hit), skipped };
}

/** Python's tuple order: numbers by value, strings by code point. */
function compare(x: unknown[], y: unknown[]): number {
  for (let i = 0; i < x.length; i++) {
    const [a, b] = [x[i], y[i]];
    if (typeof a === "string" && typeof b === "string") {
      const [ca, cb] = [[...a].map((c) => c.codePointAt(0)!), [...b].map((c) => c.codePointAt(0)!)];
      for (let j = 0; j < Math.min(ca.length, cb.length); j++) if (ca[j] !== cb[j]) return ca[j] - cb[j];
      if (ca.length !== cb.length) return ca.length - cb.length;
    } else if (a !== b) return (a as number) < (b as number) ? -1 : 1;
  }
  return 0;
}
