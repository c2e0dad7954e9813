// A write whose body is over DURABLE_MAX_BODY_BYTES comes in parts under one request id (docs/reference/remote.md §13). The
// op table (durable_cli/contract/contract.json "ops", `parts`) names the lists of an op's arguments that may be
// split: "rows" (append_many, finish), "record.*" (import: every list of the record). Every part has the
// op's own arguments with those lists cut to its share, and `part: {batch, index, count, first}` (`first`:
// how many items of each list the earlier parts sent). The object stages each earlier part's items, one
// row of _durable_parts each, and the last part puts them back in front of its own and runs the op, in
// one transaction: all or nothing, as the whole body would have been.
import { Db, DurableError, invalid, now } from "./rules/state";

export const PARTS_SCHEMA = [
  "DROP TABLE IF EXISTS _durable_staged", // the former staging table (rows of append_many only)
  "CREATE TABLE IF NOT EXISTS _durable_parts (batch TEXT NOT NULL, path TEXT NOT NULL, n INTEGER NOT NULL, item TEXT NOT NULL," +
    " at INTEGER NOT NULL, PRIMARY KEY (batch, path, n))",
  // an item over a Cloudflare row is stored in chunks (rules/state.ts): they go with it
  "CREATE TRIGGER IF NOT EXISTS _durable_chunks_part_gone AFTER DELETE ON _durable_parts BEGIN" +
    " DELETE FROM _durable_chunks WHERE key = OLD.item; END",
];

const ABANDONED_MS = 86400000; // a batch whose last part never came is dropped a day later

export type Part = { batch: string; index: number; count: number; first: Record<string, number> };

const int = (v: unknown, lo: number, hi: number) => Number.isSafeInteger(v) && (v as number) >= lo && (v as number) <= hi;

/** PATH names a list the op may send in parts (PATTERNS: "rows", or "record.*" for any list of args.record). */
function allowed(path: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => p === path || (p.endsWith(".*") && path.startsWith(p.slice(0, -1)) && /^[a-z_]{1,40}$/.test(path.slice(p.length - 1))));
}

export function checkPart(p: any, patterns: readonly string[] | undefined): Part {
  if (!patterns) throw invalid("this operation is not sent in parts");
  const firsts = p && typeof p === "object" ? p.first : null;
  if (!p || typeof p !== "object" || typeof p.batch !== "string" || !/^[0-9a-f]{1,64}$/.test(p.batch) || !int(p.count, 1, 1000000)
      || !int(p.index, 0, p.count - 1) || !firsts || typeof firsts !== "object" || Array.isArray(firsts)
      || Object.entries(firsts).some(([k, n]) => !allowed(k, patterns) || !int(n, 0, 100000000))) {
    throw invalid("part must be {batch: hex id, index, count, first: {list: items sent before}} with 0 <= index < count");
  }
  return p as Part;
}

/** The list at PATH of ARGS ("rows", "record.turns"), or undefined. */
function listAt(args: any, path: string): unknown {
  const [head, key] = path.split(".");
  const v = key === undefined ? args[head] : args[head]?.[key];
  return v;
}

/** The lists of ARGS the op may split (its PATTERNS expanded over what ARGS hold). */
function lists(args: any, patterns: readonly string[]): [string, unknown[]][] {
  const out: [string, unknown[]][] = [];
  for (const p of patterns) {
    if (p.endsWith(".*")) {
      const holder = args[p.slice(0, -2)];
      if (holder && typeof holder === "object" && !Array.isArray(holder)) {
        for (const [k, v] of Object.entries(holder)) if (Array.isArray(v)) out.push([`${p.slice(0, -1)}${k}`, v]);
      }
    } else {
      const v = listAt(args, p);
      if (v !== undefined && v !== null) {
        if (!Array.isArray(v)) throw invalid(`${p} must be a list`);
        out.push([p, v]);
      }
    }
  }
  return out;
}

/** An earlier part: its items kept until the last part comes. */
export function stage(db: Db, part: Part, args: any, patterns: readonly string[]): { staged: number } {
  if (part.index === 0) dropAbandoned(db);
  let staged = 0;
  for (const [path, items] of lists(args, patterns)) {
    const first = part.first[path] ?? 0;
    items.forEach((item, i) => db.run("INSERT OR REPLACE INTO _durable_parts (batch, path, n, item, at) VALUES (?, ?, ?, ?, ?)",
      part.batch, path, first + i, JSON.stringify(item), now()));
    staged += items.length;
  }
  return { staged };
}

/** Batches whose last part never came, ABANDONED_MS after their first, dropped; then when the oldest batch
 *  left will be abandoned, or null when nothing is staged. Batches are judged by their first items: reading
 *  `at` walks the overflow pages of the `item` stored before it, so no other item is read (else each part of
 *  an 80 MB fork in 80 parts would read what the earlier ones staged: 3 GB). */
export function dropAbandoned(db: Db): number | null {
  db.run("DELETE FROM _durable_parts WHERE batch IN (SELECT batch FROM _durable_parts WHERE n = 0 AND at < ?)", now() - ABANDONED_MS);
  return abandonedAt(db);
}

/** When the oldest batch staged will be abandoned (the object's alarm drops it then), or null. */
export function abandonedAt(db: Db): number | null {
  const r = db.one("SELECT min(at) FROM _durable_parts WHERE n = 0");
  return r && r[0] !== null ? Number(r[0]) + ABANDONED_MS : null;
}

/** The last part: ARGS with every staged item back in front of its own lists (and no longer staged); a
 *  conflict (exit 4) when an earlier part is missing. LAZY (an op that takes its lists as iterables: fork,
 *  append_many, finish): each list is an iterable that reads the staged items one at a time as the op goes,
 *  from the start again on each pass over it (a request holds one row: docs/reference/remote.md §13), and they stay staged
 *  until dropStaged, after the op ran. */
export function unstage(db: Db, part: Part, args: any, lazy = false): any {
  const out = { ...args };
  const counts = new Map<string, number>();
  for (const r of db.iter("SELECT path, count(*), max(n) FROM _durable_parts WHERE batch = ? GROUP BY path", part.batch)) {
    counts.set(r[0], r[1]);
    if (r[2] !== r[1] - 1) counts.set(r[0], -1);
  }
  const want = Object.entries(part.first).filter(([, n]) => n > 0);
  if (want.length !== counts.size || want.some(([path, n]) => counts.get(path) !== n)) {
    const have = [...counts.values()].reduce((a, n) => a + Math.max(n, 0), 0);
    const sent = want.reduce((a, [, n]) => a + n, 0);
    throw new DurableError(`a part of batch ${part.batch} is missing (${have} of ${sent} items staged); send the batch again`, "conflict");
  }
  for (const [path] of want) {
    const own = listAt(out, path);
    const mine = Array.isArray(own) ? own : [];
    const sql = "SELECT item FROM _durable_parts WHERE batch = ? AND path = ? ORDER BY n";
    const items = lazy
      ? { *[Symbol.iterator]() { // read again from the start by each pass (append_many: one to check, one to insert)
        for (const r of db.iter(sql, part.batch, path)) yield JSON.parse(r[0]);
        yield* mine;
      } }
      : [...db.all(sql, part.batch, path).map((r) => JSON.parse(r[0])), ...mine];
    const [head, key] = path.split(".");
    if (key === undefined) out[head] = items;
    else out[head] = { ...out[head], [key]: items };
  }
  if (!lazy) dropStaged(db, part);
  return out;
}

/** PART's batch no longer staged (its last part ran the op). */
export function dropStaged(db: Db, part: Part) {
  db.run("DELETE FROM _durable_parts WHERE batch = ?", part.batch);
}
