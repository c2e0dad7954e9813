// The commands across objects (docs/reference/retention.md §7 ls, usage, purge, sweep, forget; docs/reference/remote.md §13 reindex), run by the
// Worker from the index shards (indexes.ts), each deletion or change re-checked by the object itself.
// Receipts are docs/reference/json.md §10's; the client turns their skips into the exit status (across/retention.conclude).
import { devRevocationFault } from "./auth";
import { DurableError, denied, invalid, notFound, now, say } from "./rules/state";
import { takeMaxSubrequests, takeServed } from "./subrequests";
import type { IndexArgs } from "./generated/ops";
import { validKey, validValue } from "./rules/tags";
import { Filter, IndexEnv, IndexRow, LIST_PAGE, addCount, ask, memberLists, memberShards, select, shardsOf, system, ROOTS, ROOT_SHARDS, homeShard, rootOf, rootsPage } from "./indexes";

export type Who = { actor: string; admin: boolean; token_user: string; tenant: string | null; reservedId: (user: string) => Promise<string>;
  request_id?: string | null };
type Entry = { id: string; owner: string | null; name: string | null; [k: string]: unknown };
type Receipt = { deleted: Entry[]; skipped: Entry[]; changed: Entry[]; dry_run: boolean };

const receipt = (dry_run = false): Receipt => ({ deleted: [], skipped: [], changed: [], dry_run });
const entry = (row: { id: string; owner?: string | null; name?: string | null }, extra: object = {}): Entry =>
  ({ id: row.id, owner: row.owner ?? null, name: row.name ?? null, ...extra });
const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const PARALLEL = 8;
const PAGE = 100; // objects per request of purge, sweep and forget: each request bounded in work and subrequests

/** Where a page's rows come from: one user or tenant shard, or ROOTS (the root shards' copies of every home row). */
const ROOTS_SOURCE = "roots";

/** One page of rows after AFTER in id order, from several (shard, filter) sources (an object listed by
 *  two of them once), and the cursor of the next page (null: this was the last). At most 16 subrequests
 *  for the roots and one per other source, whatever the number of users and tenants. */
async function pageOf(env: IndexEnv, sources: [string, Filter][], after: string): Promise<{ rows: IndexRow[]; next: string | null }> {
  const lists = await Promise.all(sources.map(([s, f]) => s === ROOTS_SOURCE ? rootsPage(env, f, after, PAGE)
    : ask<IndexRow[]>(env, s, "list", { filter: { ...f, after_id: after, limit: PAGE } })));
  const seen = new Map<string, IndexRow>();
  for (const r of lists.flat()) if (!seen.has(r.id)) seen.set(r.id, r);
  const all = [...seen.values()].sort(byId);
  const rows = all.slice(0, PAGE);
  // the first PAGE ids of the union are all among what was fetched: a shard that had more gave PAGE ids
  const more = all.length > PAGE || lists.some((l) => l.length === PAGE);
  return { rows, next: more && rows.length ? rows[rows.length - 1].id : null };
}

/** Run a page of a write across objects at most once per client request id: a retried request (its
 *  answer lost with a dropped connection) gets the first answer, kept by a root shard for a day; while
 *  the first attempt still runs, a retry is told busy (the client waits and retries). */
async function once<T>(env: IndexEnv, who: Who, run: () => Promise<T>): Promise<T> {
  const id = who.request_id;
  if (!id) return run();
  const root = rootOf(`page:${id}`);
  const claim = await ask<{ body?: string; pending?: boolean }>(env, root, "claim", { id });
  if (claim.body !== undefined) return JSON.parse(claim.body) as T;
  if (claim.pending) throw Object.assign(new DurableError("this request is still running; try again shortly", "busy"), { retryable: true });
  let result: T;
  try {
    result = await run();
  } catch (e) {
    await ask(env, root, "unclaim", { id }).catch(() => undefined);
    throw e;
  }
  await ask(env, root, "settle", { id, body: JSON.stringify(result) });
  return result;
}

function asUser(who: Who, user: string | null | undefined): string {
  const u = user ?? who.actor;
  if (!who.admin && u !== who.token_user) {
    throw denied(`this token acts as user "${who.token_user}", not "${u}"; use an admin token to act as another user`);
  }
  return u;
}

function adminOnly(who: Who, what: string) {
  if (!who.admin) throw denied(`'${what}' covers the whole installation and needs an admin token`);
}

/** FN over ROWS, PARALLEL at a time, results in the rows' order. */
async function each<T, R>(rows: T[], fn: (row: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(rows.length);
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const i = next++;
      out[i] = await fn(rows[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, rows.length) }, worker));
  return out;
}

type Outcome = { deleted?: Entry; changed?: Entry; absent?: boolean } | null;

/** A system operation on ROW's object under the many-object policy: busy or unreadable -> skipped; absent -> its index rows dropped. */
async function onObject(env: IndexEnv, row: IndexRow, op: string, args: object, out: Receipt): Promise<Outcome> {
  let r: Outcome;
  try {
    r = await system<Outcome>(env, row, op, args);
  } catch (e) {
    const reason = e instanceof DurableError && e.code !== "busy" ? e.message : "busy";
    out.skipped.push(entry(row, { reason }));
    return null;
  }
  if (r && r.absent) {
    await dropGhost(env, row);
    return null;
  }
  return r;
}

/** The index rows of an object that no longer exists (a removal that failed after deleteAll). */
async function dropGhost(env: IndexEnv, row: IndexRow) {
  const where = new Set([...shardsOf(row), homeShard(row.scope, row.owner)]);
  await Promise.all([...where].map((s) => ask(env, s, "drop", { id: row.id })));
  await ask(env, `root:${row.id[0]}`, "unregister", { id: row.id });
}

function record(out: Receipt, r: Outcome) {
  if (r?.deleted) out.deleted.push(r.deleted);
  if (r?.changed) out.changed.push(r.changed);
}

/** `ls --tag`, `usage --tag` (docs/reference/retention.md §7): [KEY, VALUE or null] pairs, each KEY and VALUE checked with the client's
 *  rules (rules/tags.ts; a crafted body is 400 -> exit 2). */
function tagFilter(given: unknown[][] | null | undefined): [string, string | null][] {
  return (given ?? []).map((pair) => {
    if (pair.length !== 2) throw invalid("a tag filter is [KEY, VALUE or null]");
    const key = validKey(pair[0]);
    return [key, pair[1] == null ? null : validValue(key, pair[1])];
  });
}

/** OP of the index scope with its arguments A, checked against the contract (rules/args.ts) by index.ts. */
export async function across(env: IndexEnv, who: Who, op: string, given: unknown): Promise<unknown> {
  const args = <Op extends keyof IndexArgs>(_: Op) => given as IndexArgs[Op];
  switch (op) {
    case "ls": { // one page, newest first; the client follows `next`
      const a = args("ls");
      const user = asUser(who, a.user);
      return select(env, { user }, { statuses: a.statuses ?? [], all_objects: !!a.all_objects, older_than: a.older_than ?? null,
        tenant: who.tenant, limit: a.limit ?? null, tags: tagFilter(a.tags) }, (a.before ?? null) as Before);
    }
    case "rows": { // RemoteStore._index_rows: what `ls --all` lists (or every object, admin), one page
      const a = args("rows");
      if (a.all) adminOnly(who, "--all");
      const filter: Filter = { reserved: !!a.reserved, expired: !!a.expired, tenant: who.tenant };
      if (!a.all) return select(env, { user: asUser(who, a.user) }, filter, (a.before ?? null) as Before);
      // every object (export --all): in id order, the root shards read in turn (a page reads ~200 rows from
      // one or two of them, not 200 from each); the cursor is {after: the last id}
      const before = a.before as { after?: unknown } | null | undefined;
      const after = before != null && typeof before === "object" && typeof before.after === "string" ? before.after : "";
      const rows = await rootsPage(env, { ...filter, home_only: true }, after, LIST_PAGE);
      return { rows, next: rows.length === LIST_PAGE ? { after: rows[rows.length - 1].id } : null };
    }
    case "pending": { // `work --all` (docs/reference/sessions.md §5.1): the sessions `ls` lists with a startable pending prompt, oldest first
      const limit = Math.min(Math.max(Number(args("pending").limit) || 8, 1), 100);
      const lists = await memberLists(env, who.actor, { pending_due: now(), tenant: who.tenant, all_objects: true, limit });
      return lists.flat().sort((x, y) => (x.pending_at ?? 0) - (y.pending_at ?? 0) || byId(x, y)).slice(0, limit);
    }
    case "usage": return usage(env, who, args("usage"));
    case "purge": { const a = args("purge"); return a.dry_run ? purge(env, who, a) : once(env, who, () => purge(env, who, a)); }
    case "sweep": return once(env, who, () => sweep(env, who, args("sweep")));
    case "forget": { const a = args("forget"); return a.dry_run ? forget(env, who, a) : once(env, who, () => forget(env, who, a)); }
    case "reindex": return once(env, who, () => reindex(env, who, args("reindex")));
    case "fault": { // tests only: `durable remote dev` with DURABLE_DEV_FAULTS=1
      const a = args("fault");
      adminOnly(who, "fault");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("faults are a test hook of 'durable remote dev' only");
      // the revocation list (auth.ts): reads of it fail (refuse), this isolate's copy taken as stale_seconds old
      if (a.shard === "auth:0" && a.stale_seconds != null) return devRevocationFault(!!a.refuse, a.stale_seconds * 1000, Date.now()), null;
      return ask(env, a.shard, a.wipe ? "wipe" : "fault", { refuse: !!a.refuse });
    }
    case "seed": return seed(env, who, args("seed")); // tests only, as "fault"
    case "census": { // tests only: the rows each named index shard holds (docs/reference/remote.md §13's member rows, counted)
      adminOnly(who, "census");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("census is a test hook of 'durable remote dev' only");
      return Promise.all(args("census").shards.map((s) => ask(env, s, "census")));
    }
    case "subrequests": { // tests only: the most subrequests one request made since the last ask (and reset)
      adminOnly(who, "subrequests");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("subrequest counts are a test hook of 'durable remote dev' only");
      return takeMaxSubrequests();
    }
    case "served": { // tests only: the requests the Worker served since the last ask (a follower that polls shows here)
      adminOnly(who, "served");
      if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("request counts are a test hook of 'durable remote dev' only");
      return takeServed();
    }
    default:
      throw invalid(`unknown index operation '${op}'`);
  }
}

export const USAGE_PAGE = 500; // objects per page of `usage` (docs/reference/remote.md §13: one page of groups a request)
const USAGE_SHARDS = 16; // shards one page reads at most (the 16 root shards; a user's own and their tenants')

/** One page of usage: the groups of at most USAGE_PAGE objects, read from the shards that hold them (disjoint:
 *  the root shards for --all, else the user's own shard and their tenants') in shard then id order after the
 *  cursor {shard, after}; the page's total; NEXT, the cursor of the next page or null. The client merges the
 *  pages' groups and totals as `export --all` gathers its pages of rows. */
async function usage(env: IndexEnv, who: Who, a: IndexArgs["usage"]) {
  const everyone = !!a.everyone;
  if (everyone) adminOnly(who, "usage --all");
  const user = everyone ? null : asUser(who, a.user);
  const filter: Filter = { tenant: who.tenant, tags: tagFilter(a.tags) };
  // the root shards hold a copy of every home row; a user's rows are in their shard and their tenants' (memberShards)
  const shardsToAsk = (everyone ? ROOT_SHARDS : await memberShards(env, user!, who.tenant)).slice().sort();
  const scoped = (f: Filter): Filter => (everyone ? { ...f, home_only: true } : { ...f, member: user, home_only: true });
  const given = a.cursor as { shard?: unknown; after?: unknown } | null | undefined; // the next of the previous page
  const c = given != null && typeof given === "object" && typeof given.shard === "string" && typeof given.after === "string"
    ? { shard: given.shard, after: given.after } : null;
  if (a.session != null) {
    filter.name = a.session;
    if (c === null) {
      const found = await Promise.all(shardsToAsk.map((s) => ask<IndexRow[]>(env, s, "list", { filter: scoped({ ...filter, limit: 1 }) })));
      if (!found.flat().length) throw notFound(say("search_session_not_found", { session: a.session }));
    }
  }
  const parts: { groups: Group[]; total: Usage }[] = [];
  let i = c === null ? 0 : shardsToAsk.findIndex((s) => s >= c.shard);
  if (i < 0) i = shardsToAsk.length;
  let after = c !== null && shardsToAsk[i] === c.shard ? c.after : "";
  let count = 0;
  for (let asked = 0; i < shardsToAsk.length && count < USAGE_PAGE && asked < USAGE_SHARDS; asked++) {
    const want = USAGE_PAGE - count;
    const p = await ask<{ groups: Group[]; total: Usage; objects: number; last: string | null }>(env, shardsToAsk[i], "usage",
      { filter: scoped({ ...filter, after_id: after, limit: want }), by: a.by, newer_day: a.newer_day ?? null });
    parts.push(p);
    count += p.objects;
    if (p.objects === want && p.last !== null) after = p.last; // this shard may have more: the next page goes on here
    else [i, after] = [i + 1, ""];
  }
  const next = i < shardsToAsk.length ? { shard: shardsToAsk[i], after } : null;
  const total: Usage = { sessions: 0, turns: "0", tokens: "0", input_tokens: "0", output_tokens: "0", cost_usd: 0,
    cache_read_tokens: "0", cache_write_tokens: "0" };
  const add = (into: Usage, from: Usage) => {
    for (const k of USAGE) into[k] = typeof total[k] === "string" ? addCount(into[k] as string, from[k] as string) : (into[k] as number) + (from[k] as number);
  };
  for (const p of parts) add(total, p.total);
  let groups: Group[];
  if (a.by === "session") {
    groups = parts.flatMap((p) => p.groups); // each with its last_active_at: the client orders the pages' groups
  } else {
    const merged = new Map<string | null, Group>();
    for (const g of parts.flatMap((p) => p.groups)) {
      const m = merged.get(g.key);
      if (!m) merged.set(g.key, { ...g, priced: [...(g.priced ?? [])] });
      else {
        add(m, g);
        m.priced!.push(...(g.priced ?? [])); // the client sums them per model as it prices them
      }
    }
    groups = [...merged.values()].sort((x, y) => (x.key === null ? 1 : 0) - (y.key === null ? 1 : 0) || ((x.key ?? "") < (y.key ?? "") ? -1 : (x.key ?? "") > (y.key ?? "") ? 1 : 0));
  }
  return { groups, total, next };
}

type Paged = Receipt & { next: unknown };
type Before = [number, string] | null; // the next of an ls page: [last_active_at, id] (indexes.ts select)
// The sums an index shard's usage answers (indexes.ts): counts past 2^53 as decimal text (addCount).
const USAGE = ["sessions", "turns", "tokens", "input_tokens", "output_tokens", "cost_usd", "cache_read_tokens", "cache_write_tokens"] as const;
type Usage = Record<(typeof USAGE)[number], number | string>;
// priced: [model, rows, base, cache reads, cache writes, output] of the rows without a given cost (the client prices them)
type Group = Usage & { key: string | null; last_active_at?: number; priced?: unknown[][] };

/** One page (PAGE objects in id order after the cursor); the cutoff is the first page's, carried by the cursor. */
async function purge(env: IndexEnv, who: Who, a: IndexArgs["purge"]): Promise<Paged> {
  const user: string | null = a.user ?? null;
  if (user === null) adminOnly(who, "purge without --user");
  else asUser(who, user);
  const out = receipt(!!a.dry_run);
  const c = (a.cursor ?? {}) as { after?: string; cutoff?: number }; // the next of the previous page
  const cutoff: number = c.cutoff ?? now() - a.older_than * 1000;
  const filter: Filter = { cutoff, owner: user, tenant: who.tenant, statuses: a.statuses ?? [], expired: true, home_only: true };
  const where = user !== null ? [`user:${user}`] : who.tenant !== null ? [`tenant:${who.tenant}`] : [ROOTS_SOURCE];
  const { rows, next } = await pageOf(env, where.map((s) => [s, filter] as [string, Filter]), c.after ?? "");
  if (a.dry_run) out.deleted = rows.map((r) => entry(r));
  else for (const r of await each(rows, (row) => onObject(env, row, "purge_if", { cutoff, statuses: a.statuses ?? [] }, out))) record(out, r);
  return { ...out, next: next === null ? null : { after: next, cutoff } };
}

/** Pages of due alarms, then pages of expired drafts (the times are the first page's, carried by the cursor). */
async function sweep(env: IndexEnv, who: Who, a: IndexArgs["sweep"]): Promise<Paged> {
  adminOnly(who, "sweep");
  const out = receipt();
  const c = (a.cursor ?? {}) as { after?: string; t?: number; draft_before?: number; phase?: string }; // the previous page's next
  const t: number = c.t ?? now();
  const draftBefore: number = c.draft_before ?? t - a.draft_expiry! * 1000;
  const phase: string = c.phase ?? "alarm";
  const filter: Filter = phase === "alarm" ? { alarm_due: t, reserved: true } : { draft_before: draftBefore };
  const { rows, next } = await pageOf(env, [[ROOTS_SOURCE, { ...filter, home_only: true, expired: true }]], c.after ?? "");
  const args = phase === "alarm" ? { kind: "alarm" } : { kind: "draft", draft_before: draftBefore };
  for (const r of await each(rows, (row) => onObject(env, row, "sweep", args, out))) record(out, r);
  const cursor = next !== null ? { phase, after: next, t, draft_before: draftBefore } : phase === "alarm" ? { phase: "draft", after: "", t, draft_before: draftBefore } : null;
  return { ...out, next: cursor };
}

/** Pages of USER's objects in id order; the last page also takes their memory object and, if nothing
 *  was skipped on any page (counted in the cursor), wipes their shard. */
async function forget(env: IndexEnv, who: Who, a: IndexArgs["forget"]): Promise<Paged> {
  const user = asUser(who, a.user);
  const out = receipt(!!a.dry_run);
  const c = (a.cursor ?? {}) as { after?: string; skipped?: number }; // the next of the previous page
  const wanted = (r: IndexRow) => (r.owner === user && ["user", "session", "reserved"].includes(r.scope))
    || (r.scope === "tenant" && r.members.some(([u]) => u === user));
  const sources: [string, Filter][] = [[`user:${user}`, { reserved: true, expired: true }]];
  for (const home of (await memberShards(env, user)).slice(1)) sources.push([home, { member: user, home_only: true, expired: true }]);
  if (who.admin) { // a tenant membership the user's own shard missed (index lag): the home rows' copies list members too
    sources.push([ROOTS_SOURCE, { member: user, home_only: true, expired: true }]);
  }
  const page = await pageOf(env, sources, c.after ?? "");
  const found = new Map<string, IndexRow>();
  for (const r of page.rows) if (wanted(r)) found.set(r.id, r);
  const reserved = await who.reservedId(user); // the memory object, even if the index never heard of it
  if (page.next === null && !found.has(reserved)) { // (met on an earlier page, it is gone now and answers absent)
    found.set(reserved, { id: reserved, scope: "reserved", owner: user, name: "", members: [] } as unknown as IndexRow);
  }
  const rows = [...found.values()].sort(byId);
  const next = (skipped: number) => (page.next === null ? null : { after: page.next, skipped });
  if (a.dry_run) {
    for (const r of rows) {
      if (r.scope === "reserved" && r.id === reserved && !r.status) continue; // not known to exist: nothing to say
      const others = r.scope === "tenant" && r.members.some(([u]) => u !== user);
      if (others) out.changed.push(entry(r, { what: "participant removed" }));
      else out.deleted.push(entry(r));
    }
    return { ...out, next: next(0) };
  }
  for (const r of await each(rows, (row) => onObject(env, row, row.scope === "tenant" ? "leave" : "erase", { user }, out))) record(out, r);
  const skipped = (c.skipped ?? 0) + out.skipped.length;
  if (page.next === null && !skipped) await ask(env, `user:${user}`, "wipe"); // nothing of USER stays in the index
  return { ...out, next: next(skipped) };
}

const REINDEX_PAGE = 200; // objects per request: one request stays far below the Worker's subrequest limit

/** Rebuild the index from the objects it knows, one page per request (the client follows `next`): every
 *  registered object re-sends its row (absent ones are dropped from the registry and their home shard),
 *  then every row of every shard is kept only if its object exists and still lists that shard. */
async function reindex(env: IndexEnv, who: Who, a: IndexArgs["reindex"]) {
  adminOnly(who, "reindex");
  const step: number = a.step ?? 0;
  const after: string = a.after ?? "";
  const skipped: Entry[] = [];
  let removed = 0;
  let reindexed = 0;
  const visit = async (id: string, hint: IndexRow | null): Promise<IndexRow | null | undefined> => {
    const placeholder = hint ?? ({ id, scope: "user", owner: "", name: "" } as IndexRow);
    let row: IndexRow | null;
    try {
      const r = await system<IndexRow | { absent: true } | null>(env, placeholder, "reindex");
      row = r && !("absent" in r) ? r : null;
    } catch (e) {
      skipped.push(entry(placeholder, { reason: e instanceof DurableError && e.code !== "busy" ? e.message : "busy" }));
      return undefined;
    }
    if (row) reindexed++; // its row re-sent to its shards and its root shard (object.ts syncIndex)
    return row;
  };
  let last: string | null = null;
  if (step < ROOTS.length) {
    const root = `root:${ROOTS[step]}`;
    const page = await ask<{ id: string; home: string }[]>(env, root, "registry", { after, limit: REINDEX_PAGE });
    await each(page, async (e) => {
      if ((await visit(e.id, null)) === null) {
        await ask(env, e.home, "drop", { id: e.id });
        await ask(env, root, "unregister", { id: e.id });
        removed++;
      }
    });
    last = page.length === REINDEX_PAGE ? page[page.length - 1].id : null;
  } else { // the shards each root shard knows, one shard's page per request
    const k = step - ROOTS.length;
    if (k >= ROOTS.length) return { reindexed, removed, skipped, next: null };
    const shard: string | undefined = a.shard ?? (await ask<string[]>(env, ROOT_SHARDS[k], "shards", { after: a.shard_after ?? "", limit: 1 }))[0];
    if (shard === undefined) return { reindexed, removed, skipped, next: { step: step + 1, after: "" } };
    const rows = await ask<IndexRow[]>(env, shard, "list", { filter: { reserved: true, expired: true, after_id: after, limit: REINDEX_PAGE } });
    await each(rows, async (r) => {
      const row = await visit(r.id, r);
      if (row === undefined) return;
      if (row === null || !shardsOf(row).includes(shard)) {
        await ask(env, shard, "drop", { id: r.id });
        if (row === null) await ask(env, `root:${r.id[0]}`, "unregister", { id: r.id });
        removed++;
      }
    });
    const next = rows.length === REINDEX_PAGE ? { step, shard, after: rows[rows.length - 1].id } : { step, shard_after: shard, after: "" };
    return { reindexed, removed, skipped, next };
  }
  const next = last !== null ? { step, after: last } : { step: step + 1, after: "" };
  return { reindexed, removed, skipped, next };
}

/** Tests only (`durable remote dev` with DURABLE_DEV_FAULTS=1): an installation of USERS more users, made in
 *  16 requests: each user's shard name in its root shard, and the home row of their memory object (no
 *  object behind it; a memory object matches no filter of purge, sweep, ls, usage or forget of another user). */
async function seed(env: IndexEnv, who: Who, a: IndexArgs["seed"]) {
  adminOnly(who, "seed");
  if (env.DURABLE_DEV_FAULTS !== "1") throw invalid("seeding is a test hook of 'durable remote dev' only");
  const per = new Map<string, { shards: string[]; rows: IndexRow[] }>(ROOT_SHARDS.map((s) => [s, { shards: [], rows: [] }]));
  const t = now();
  for (let i = 0; i < a.users; i++) {
    const user = `${a.prefix ?? "seed"}${i}`;
    per.get(rootOf(`user:${user}`))!.shards.push(`user:${user}`);
    const id = [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
    // with USAGE: a session of the user's with one turn's usage instead (usage --all's pages, counted without objects)
    const row: IndexRow = { id, scope: "reserved", owner: user, name: "", title: null, status: "active", created_at: t,
      updated_at: t, last_active_at: t, turns: 0, tokens: 0, expires_at: null, next_alarm_at: null, external_id: null, members: [] };
    if (a.usage) Object.assign(row, { scope: "user", name: "s", turns: 1, tokens: 5, members: [[user, "owner"]],
      usage: [[new Date(t).toISOString().slice(0, 10), "m", 1, 1, 5, 2, 3, 0.001, 0, 0, 0, 0, 0, 0, 0]] });
    per.get(`root:${id[0]}`)!.rows.push(row);
  }
  await Promise.all([...per].map(([s, v]) => ask(env, s, "seed", v)));
  return { users: a.users };
}
