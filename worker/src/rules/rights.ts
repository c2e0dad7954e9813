// Export, import and search of ONE object (mirrors durable_cli/core/rights.py, core/records.py and across/search.py,
// docs/reference/retention.md §7). The export format's tables, columns and checks come from durable_cli/core/records.py through
// worker/src/generated/records.json (scripts/gen_worker_records.py): a record is checked here again with
// the same rules, since the Worker cannot trust clients.
import records from "../generated/records.json";
import { CONSTANTS, DictRow, DurableError, Opened, conflict, denied, invalid, notFound, now, pyRepr, say, validName } from "./state";
import { plainQuery, printable, strip } from "./text";
import * as strict from "./strict";
import { metaProblem, toolCalls } from "./transcript";
import { validKey, validValue } from "./tags";
import type { ObjectArgs, Given } from "../generated/ops";

type Rule = { check: string; optional: boolean; values?: string[] };
const TABLES = records.tables as unknown as Record<string, Record<string, Rule>>;
const COLUMNS = records.columns as Record<string, string[]>;
const KEYS = records.keys as Record<string, string>;
const SEQUENCED = records.sequenced as string[];
const DERIVED = records.derived as Record<string, string[]>;
const EXPORTED = records.tables_exported as string[];
const COMPOSITE = records.composite_keys as Record<string, string[]>;
const ADAPTER_TABLES = records.adapter_tables as Record<string, string>;
/** Canonical base64 (padded; records.py's pattern), checked in linear time: the pattern as one regular
 *  expression, `(?:[A-Za-z0-9+/]{4})*` and its padding, overflowed V8's stack on a value of a few MB. */
export function isBase64(s: string): boolean {
  if (s.length % 4 !== 0) return false;
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  return !/[^A-Za-z0-9+/]/.test(pad ? s.slice(0, -pad) : s);
}
const MAX_INT = 2 ** 63 - 1;

const utf8 = (s: string) => new TextEncoder().encode(s).length;
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);

// -- export --------------------------------------------------------------------------------------------

/** The object as one export record: every table as stored (`SELECT *`), as core/rights.py `dump`. */
const EXPORT_PAGE_ROWS = 1000; // a page of an export holds at most this many rows
const EXPORT_PAGE_BYTES = 524288; // ... and ends at the row that reaches this many bytes of text (as show's pages)

type ExportCursor = { t: number; after: number; highs: Record<string, number>; key?: unknown[] | null };
const COMPOSITE_KEYS = records.composite_keys as Record<string, string[]>;

/** One page of the object's export record (docs/reference/retention.md §7; docs/reference/remote.md §13: a request holds one row plus one page of
 *  its answer): {head (first page: format, version, id, scope, owner, name, object), tables (each table's
 *  rows in this page, in the record's order), sequences (last page), next}. The client joins the pages
 *  into the record the file backend writes. Rows are read in rowid order from lazy cursors, up to each
 *  table's highest rowid when the first page was read (a row written meanwhile is not half in); a
 *  WITHOUT ROWID table (LangGraph's) comes whole in one page. */
export function exportObject(obj: Opened, a: ObjectArgs["export"] & Given) {
  const meta = obj.meta();
  if (meta === null) throw notFound(obj.missing);
  if (!a.all_users) obj.requireVisible(); // an admin's export --all / --user U reaches every object
  let c = (a.cursor ?? null) as ExportCursor | null; // the client's copy of a page's next, checked here
  if (c !== null && (typeof c !== "object" || !Number.isSafeInteger(c.t) || c.t < 1 || c.t > EXPORTED.length
    || !Number.isSafeInteger(c.after) || c.highs === null || typeof c.highs !== "object"
    || (c.key != null && (!Array.isArray(c.key) || c.key.some((k) => typeof k !== "string" && !Number.isSafeInteger(k)))))) {
    throw invalid("cursor must be the `next` of the previous page");
  }
  const out: { tables: Record<string, unknown[]>; head?: unknown; sequences?: unknown } = { tables: {} };
  if (c === null) {
    const highs: Record<string, number> = {};
    for (const table of EXPORTED.slice(1)) {
      const ddl = obj.db.one("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table);
      if (ddl && !/WITHOUT ROWID/i.test(String(ddl[0]))) highs[table] = Number(obj.db.one(`SELECT coalesce(max(rowid), 0) FROM ${table}`)![0]);
    }
    const m = obj.db.dicts("SELECT * FROM object")[0];
    delete m.one;
    out.head = { format: records.format, version: records.version, id: m.id, scope: m.scope, owner: m.owner, name: m.name,
      object: withBlobsAsText([m])[0] };
    c = { t: 1, after: 0, highs };
  }
  let rows = 0, bytes = 0;
  for (let i = c.t; i < EXPORTED.length; i++) {
    const table = EXPORTED[i];
    const list: unknown[] = (out.tables[table] = []);
    const high = c.highs[table];
    if (high === undefined) { // WITHOUT ROWID (LangGraph's): in its key's order (as `SELECT *` reads it), paged by the key
      const keys = COMPOSITE_KEYS[table];
      if (!keys) {
        if (i !== c.t || c.after === 0) list.push(...withBlobsAsText(obj.db.dicts(`SELECT * FROM ${table}`)));
        continue;
      }
      // (it came whole in one page: a thread's checkpoints, each its whole state, are many MB and grow with it)
      const from = i === c.t && Array.isArray(c.key) && c.key.length === keys.length ? c.key : null;
      const sql = `SELECT * FROM ${table}${from ? ` WHERE (${keys.join(", ")}) > (${keys.map(() => "?").join(", ")})` : ""} ORDER BY ${keys.join(", ")}`;
      for (const d of obj.db.dictIter(sql, ...(from ?? []))) {
        list.push(withBlobsAsText([d])[0]);
        rows++;
        for (const v of Object.values(d)) if (typeof v === "string") bytes += v.length; else if (v instanceof ArrayBuffer) bytes += v.byteLength;
        if (rows >= EXPORT_PAGE_ROWS || bytes >= EXPORT_PAGE_BYTES) return { ...out, next: { t: i, after: 0, highs: c.highs, key: keys.map((k) => d[k]) } };
      }
      continue;
    }
    const after = i === c.t ? c.after : 0;
    for (const d of obj.db.dictIter(`SELECT rowid AS "__rowid", * FROM ${table} WHERE rowid > ? AND rowid <= ? ORDER BY rowid`, after, high)) {
      const rowid = d.__rowid;
      delete d.__rowid;
      list.push(withBlobsAsText([d])[0]);
      rows++;
      for (const v of Object.values(d)) if (typeof v === "string") bytes += v.length; else if (v instanceof ArrayBuffer) bytes += v.byteLength;
      if (rows >= EXPORT_PAGE_ROWS || bytes >= EXPORT_PAGE_BYTES) return { ...out, next: { t: i, after: rowid, highs: c.highs } };
    }
  }
  out.sequences = Object.fromEntries(obj.db.all("SELECT name, seq FROM sqlite_sequence").filter((r) => SEQUENCED.includes(r[0])).map((r) => [r[0], r[1]]));
  return { ...out, next: null };
}

/** A BLOB column (an adapter's serialized value) as the record's base64 text, and back. */
export function blobText(v: unknown): unknown {
  if (!(v instanceof ArrayBuffer) && !ArrayBuffer.isView(v)) return v;
  const bytes = v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
export function blobBytes(v: string): Uint8Array {
  const s = atob(v);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
const withBlobsAsText = (rows: Record<string, unknown>[]) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, blobText(v)])));

export function dump(obj: Opened) {
  const rec: DictRow = {};
  for (const table of EXPORTED) rec[table] = withBlobsAsText(obj.db.dicts(`SELECT * FROM ${table}`));
  rec.sequences = Object.fromEntries(obj.db.all("SELECT name, seq FROM sqlite_sequence").filter((r) => SEQUENCED.includes(r[0])).map((r) => [r[0], r[1]]));
  const meta = rec.object[0];
  delete rec.object;
  delete meta.one;
  return { format: records.format, version: records.version, id: meta.id, scope: meta.scope, owner: meta.owner,
    name: meta.name, object: meta, ...rec };
}

// -- checking a record (records.py check_record, on the current version's canonical form) ---------------

class Bad extends Error {}
/** A reason cut to 300 code points, as records.py cuts one that quotes a value. */
const clip = (s: string) => [...s].slice(0, 300).join("");

function text(v: unknown): string {
  if (typeof v !== "string") throw new Bad(say("record_not_string", { kind: kind(v) }));
  if (/\p{Cs}/u.test(v)) throw new Bad(say("record_surrogate"));
  return v;
}
function kind(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return "a boolean";
  if (isInt(v)) return "an integer";
  if (typeof v === "number") return "a number";
  if (typeof v === "string") return "a string";
  return Array.isArray(v) ? "an array" : "an object";
}
function int(v: unknown): number {
  if (!isInt(v) || Math.abs(v) > MAX_INT) throw new Bad(say("record_not_integer", { kind: kind(v) }));
  return v;
}
function jsonText(v: unknown, lexemes?: Map<string, string>): unknown {
  text(v);
  let value: unknown;
  try {
    value = JSON.parse(v as string);
  } catch {
    throw new Bad(say("record_not_json"));
  }
  const why = strict.scan(v as string, strict.MAX_DEPTH, lexemes, false, true);
  // an escaped lone surrogate ("\ud800") is no UTF-8 either (docs/reference/transcript.md §6): refused as in the text itself (records.py)
  if (why === strict.LONE_MESSAGE) throw new Bad(say("record_surrogate"));
  if (why !== null) throw new Bad(say("record_not_rfc_json", { why }));
  return value;
}
const plainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

const CHECKS: Record<string, (v: any, rule: Rule) => void> = {
  text: (v) => text(v),
  nonempty: (v) => { if (text(v) === "") throw new Bad(say("record_empty")); },
  name: (v) => {
    text(v);
    try { validName(v); } catch { throw new Bad(say("record_name", { value: v })); }
  },
  int: (v) => int(v),
  count: (v) => { if (int(v) < 0) throw new Bad(say("record_negative")); },
  positive: (v) => { if (int(v) < 1) throw new Bad(say("record_not_positive")); },
  time: (v) => { if (!isInt(v) || v < 0 || v > records.max_time) throw new Bad(clip(say("record_time", { max: records.max_time, value: v }))); },
  ttl: (v) => { if (int(v) < 1) throw new Bad(say("record_not_positive")); if (v > records.max_ttl) throw new Bad(say("record_ttl")); },
  title: (v) => {
    text(v);
    const n = [...v].length;
    if (n < 1 || n > 200 || !printable(v) || v !== strip(v)) throw new Bad(say("record_title"));
  },
  tag_key: (v) => { text(v); try { validKey(v); } catch (e) { throw new Bad((e as Error).message); } },
  tag_value: (v) => { text(v); try { validValue("", v); } catch { throw new Bad(say("record_tag_value")); } },
  request_id: (v) => { text(v); const n = [...v].length; if (n < 1 || n > 128 || !printable(v)) throw new Bad(say("record_request_id")); },
  hex_id: (v) => { text(v); if (!/^[0-9a-f]{64}$/.test(v)) throw new Bad(say("record_hex_id")); },
  flag: (v) => { if (v !== 0 && v !== 1) throw new Bad(say("record_flag")); },
  number: (v) => { if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw new Bad(say("record_number")); },
  one: (v) => { if (v !== 1) throw new Bad(say("record_one")); },
  blob: (v) => { text(v); if (!isBase64(v)) throw new Bad(say("record_blob")); },
  json: (v) => jsonText(v),
  json_object: (v) => { if (!plainObject(jsonText(v))) throw new Bad(say("record_json_object")); },
  choices: (v) => {
    const c = jsonText(v);
    if (!Array.isArray(c) || c.some((x) => typeof x !== "string" || x === "")) throw new Bad(say("record_choices"));
    if (new Set(c).size !== c.length) throw new Bad(say("record_duplicate_choice"));
  },
  json_tool_calls: (v) => {
    // the transcript's own check (records.py: `_json_text(_tool_calls)`), its message as the reason
    let calls: unknown[];
    try {
      calls = toolCalls(jsonText(v), "");
    } catch (e) {
      if (e instanceof DurableError) throw new Bad(clip(say("record_not_valid", { why: e.message })));
      throw e;
    }
    if (!calls.length) throw new Bad(say("record_no_tool_call"));
  },
  json_meta: (v) => {
    const lexemes = new Map<string, string>();
    const problem = metaProblem(jsonText(v, lexemes), lexemes);
    if (problem !== null) throw new Bad(clip(say("record_not_valid", { why: problem })));
  },
  enum: (v, rule) => { if (typeof v !== "string" || !rule.values!.includes(v)) throw new Bad(clip(say("record_enum", { value: v, values: rule.values!.join(", ") }))); },
};

/** A record in canonical form: each table name to its rows (DictRow[]), "object" to its one row, "sequences", "live". */
export type Content = DictRow;

/** A record in records.py's canonical form (the current version's columns, rows sorted by key), checked
 *  with every rule of the format; a violation is exit 2 naming the field. */
export function checkContent(c: unknown, address: { id_scope: string; owner: string; name: string }, limit: number): Content {
  let where = "record";
  try {
    if (!plainObject(c)) throw new Bad(say("record_not_object"));
    const out: Content = {};
    for (const table of Object.keys(TABLES)) {
      const spec = TABLES[table];
      if (table === "object") {
        where = "object";
        out.object = row(c.object, spec, COLUMNS.object, "object", (w) => (where = w));
        continue;
      }
      where = table;
      const rows = c[table] ?? [];
      if (!Array.isArray(rows)) throw new Bad(say("record_not_array"));
      const key = KEYS[table];
      const composite = COMPOSITE[table];
      const seen = new Set<unknown>();
      out[table] = rows.map((r: unknown, i: number) => {
        const got = row(r, spec, COLUMNS[table], `${table}[${i}]`, (w) => (where = w));
        if (key) {
          if (seen.has(got[key])) { where = `${table}[${i}].${key}`; throw new Bad(say("record_twice", { value: got[key] })); }
          seen.add(got[key]);
        } else if (composite) {
          const value = JSON.stringify(composite.map((c) => got[c]));
          if (seen.has(value)) { where = `${table}[${i}]`; throw new Bad(clip(say("record_repeats_key", { columns: composite.join(", "), value: `(${composite.map((c) => pyRepr(got[c])).join(", ")})` }))); }
          seen.add(value);
        }
        return got;
      });
      const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
      if (key) out[table].sort((a: DictRow, b: DictRow) => cmp(a[key], b[key]));
      else if (composite) out[table].sort((a: DictRow, b: DictRow) => composite.reduce((o, c) => o || cmp(a[c], b[c]), 0));
    }
    for (const k of Object.keys(c)) {
      if (!(k in TABLES) && k !== "sequences") { where = k.slice(0, 60); throw new Bad(say("record_unknown_field")); }
    }
    const meta = out.object;
    const scope = meta.scope === "session" ? "user" : meta.scope;
    if (scope !== address.id_scope || meta.owner !== address.owner || meta.name !== address.name) {
      where = "object";
      throw new Bad("disagrees with the record's scope, owner and name");
    }
    if (meta.scope !== "reserved") CHECKS.name(meta.name, { check: "name", optional: false });
    else if (meta.name !== "") { where = "name"; throw new Bad(say("record_reserved_name")); }
    if ((meta.ttl_seconds === null) !== (meta.expires_at === null)) { where = "object.expires_at"; throw new Bad(say("record_ttl_expiry")); }
    if (meta.scope === "reserved" && meta.title !== null) { where = "object.title"; throw new Bad(say("record_reserved_title")); }
    relations(out, meta.scope, meta.owner, limit, (w) => (where = w));
    out.sequences = sequences(c.sequences ?? {}, out, (w) => (where = w));
    const live = out.turns.filter((t: DictRow) => t.superseded_by === null);
    out.live = { live_turns: live.length, live_tokens: live.reduce((s: number, t: DictRow) => s + t.tokens, 0) };
    return out;
  } catch (e) {
    if (e instanceof Bad) throw invalid(say("record_invalid", { where, why: e.message }));
    throw e;
  }
}

function row(r: unknown, spec: Record<string, Rule>, current: string[], label: string, at: (w: string) => void): DictRow {
  at(label);
  if (!plainObject(r)) throw new Bad(say("record_not_object"));
  for (const column of Object.keys(r)) {
    if (!(column in spec)) { at(`${label}.${column.slice(0, 60)}`); throw new Bad(say("record_unknown_column")); }
  }
  const out: DictRow = {};
  for (const column of current) {
    const rule = spec[column];
    at(`${label}.${column}`);
    const v = r[column] === undefined ? null : r[column];
    if (rule === undefined) { out[column] = null; continue; }
    if (v === null) {
      if (!rule.optional) throw new Bad(say("record_missing"));
    } else CHECKS[rule.check](v, rule);
    out[column] = v;
  }
  return out;
}

function relations(c: Content, scope: string, owner: string, limit: number, at: (w: string) => void) {
  const people = c.participants;
  at("participants");
  if (scope === "user" || scope === "session") {
    if (people.length !== 1 || people[0].user !== owner || people[0].role !== "owner") throw new Bad(say("record_user_participants", { owner }));
  } else if (scope === "tenant") {
    if (!people.some((p: DictRow) => p.role === "owner")) throw new Bad(say("record_tenant_owner"));
  } else {
    for (const t of ["participants", "prompts", "turns", "events", "requests"]) if (c[t].length) { at(t); throw new Bad(say("record_reserved_empty")); }
  }
  if (scope !== "reserved") for (const t of ["facts", "buckets"]) if (c[t].length) { at(t); throw new Bad(say("record_reserved_only")); }
  if ((c.tags?.length ?? 0) > CONSTANTS.limits.tags) { at("tags"); throw new Bad(say("record_too_many_tags", { limit: CONSTANTS.limits.tags })); } // docs/reference/sessions.md §5 Tags
  for (const [t, adapter] of Object.entries(ADAPTER_TABLES)) {
    if (c[t]?.length && c.object.adapter !== adapter) { at(t); throw new Bad(say("record_adapter_only", { adapter })); }
  }
  const turns = new Map<number, DictRow>(c.turns.map((t: DictRow) => [t.seq, t]));
  const tooLarge = (size: number) => { if (size > limit) throw new Bad(say("record_too_large", { size, limit })); };
  c.turns.forEach((t: DictRow, i: number) => {
    const label = `turns[${i}]`;
    at(`${label}.content`);
    if (t.content === "" && !(t.tool_calls || t.data !== null)) throw new Bad(say("record_empty"));
    let size = utf8(t.content);
    for (const k of ["tool_calls", "meta", "data"]) if (t[k] !== null) size += utf8(t[k]);
    tooLarge(size);
    at(`${label}.covers_first`);
    if (t.kind === "summary") {
      const [first, last] = [t.covers_first, t.covers_last];
      if (!(last === null && first === t.seq && t.forked_from !== null) && (first === null || last === null || !(first <= last && last < t.seq))) {
        throw new Bad(say("record_covers"));
      }
    } else if (t.covers_first !== null || t.covers_last !== null) throw new Bad(say("record_covers_null"));
    at(`${label}.call_id`);
    if (t.call_id !== null && t.role !== "tool") throw new Bad(say("record_call_id_tool"));
    at(`${label}.superseded_by`);
    const by = t.superseded_by;
    if (by === 0) { // a row of a LangGraph branch the thread left (docs/reference/integrations.md §12)
      if (t.kind === "summary" || c.object.adapter !== "langgraph") throw new Bad(say("record_superseded_by", { by }));
    } else if (by !== null && (!turns.has(by) || turns.get(by)!.kind !== "summary" || by <= t.seq)) throw new Bad(say("record_superseded_by", { by }));
  });
  unique(c.turns, "turns", "request_id", at);
  unique(c.prompts, "prompts", "request_id", at);
  c.prompts.forEach((p: DictRow, i: number) => { at(`prompts[${i}].content`); tooLarge(utf8(p.content)); });
  c.requests.forEach((r: DictRow, i: number) => {
    at(`requests[${i}].prompt`);
    tooLarge(utf8(r.prompt) + utf8(r.choices));
    at(`requests[${i}].answer`);
    const choices = JSON.parse(r.choices);
    if (r.status === "answered") {
      if (r.answer === null || (choices.length && !choices.includes(r.answer))) throw new Bad(say("record_answer", { answer: r.answer }));
    } else if (r.answer !== null) throw new Bad(say("record_answer_null", { status: r.status }));
  });
  c.events.forEach((e: DictRow, i: number) => { at(`events[${i}].data`); tooLarge(utf8(e.data)); });
  c.facts.forEach((f: DictRow, i: number) => { at(`facts[${i}].value`); tooLarge(utf8(f.value)); });
}

function unique(rows: DictRow[], table: string, column: string, at: (w: string) => void) {
  const seen = new Set<unknown>();
  rows.forEach((r, i) => {
    if (r[column] === null) return;
    if (seen.has(r[column])) { at(`${table}[${i}].${column}`); throw new Bad(say("record_twice", { value: r[column] })); }
    seen.add(r[column]);
  });
}

function sequences(given: unknown, c: Content, at: (w: string) => void): Record<string, number> {
  at("sequences");
  if (!plainObject(given)) throw new Bad(say("record_not_object"));
  const out: Record<string, number> = {};
  for (const [table, value] of Object.entries(given)) {
    at(`sequences.${table.slice(0, 60)}`);
    if (!SEQUENCED.includes(table)) throw new Bad(say("record_no_sequence"));
    if (int(value) < 0) throw new Bad(say("record_negative"));
    const top = Math.max(0, ...c[table].map((r: DictRow) => r[KEYS[table]]));
    if ((value as number) < top) throw new Bad(say("record_below_key", { value, top }));
    out[table] = value as number;
  }
  for (const table of SEQUENCED) {
    if (c[table].length && !(table in out)) out[table] = Math.max(...c[table].map((r: DictRow) => r[KEYS[table]]));
  }
  return out;
}

// -- import ----------------------------------------------------------------------------------------------

export type ImportArgs = ObjectArgs["import"] & Given;

function owners(c: Content): Set<string> {
  return new Set(c.participants.filter((p: DictRow) => p.role === "owner").map((p: DictRow) => p.user));
}

function label(obj: Opened): string {
  const a = obj.address;
  return a.id_scope === "user" ? say("owned_label", { what: obj.what, user: a.owner }) : obj.what;
}

/** Before any storage is touched: the record's rules, and whether the acting user could have made it. */
export function precheck(obj: Opened, a: ImportArgs, exists: boolean): Content {
  const checked = checkContent(a.record, obj.address, obj.config.max_turn_bytes);
  const listed = !!a.all_users || obj.address.id_scope !== "tenant" || owners(checked).has(obj.actor);
  if (!listed && !exists) throw denied(refusal(obj));
  return checked;
}

function refusal(obj: Opened): string {
  return say("import_not_listed", { label: label(obj), actor: obj.actor });
}

/** `import`: one record into this object, all or nothing (core/rights.py `import_locked`). */
export function importObject(obj: Opened, a: ObjectArgs["import"] & Given) {
  const checked = precheck(obj, a, true);
  const listed = !!a.all_users || obj.address.id_scope !== "tenant" || owners(checked).has(obj.actor);
  const entry = { id: obj.id, owner: obj.address.owner, name: obj.address.name };
  const stored = canonical(obj);
  const present = stored.object !== null && (stored.object.expires_at === null || stored.object.expires_at > now());
  if (present) {
    const role = stored.participants.find((p: DictRow) => p.user === obj.actor)?.role ?? null;
    if (obj.address.id_scope === "tenant" && !a.all_users) {
      if (role === null) throw conflict(say("import_name_taken", { label: label(obj) }));
      if (role !== "owner") throw denied(say("import_owner_only", { label: label(obj) }));
    }
    if (same(stored, checked, obj.id)) return { ...entry, already: "already imported" };
    if (!a.replace && a.keep_existing) return { ...entry, already: say("already_imported_changed") };
    if (!a.replace) throw conflict(say("import_exists", { label: label(obj) }));
    if (!listed) throw denied(say("import_takes_session", { label: label(obj), actor: obj.actor }));
  } else if (!listed) throw denied(refusal(obj));
  write(obj, checked);
  return { ...entry, what: present ? "replaced" : "imported" };
}

/** The stored object in the canonical form (records.py dump_object). */
function canonical(obj: Opened): Content {
  const c: Content = {};
  for (const table of Object.keys(COLUMNS)) {
    const keep = COLUMNS[table].filter((k) => !(DERIVED[table] ?? []).includes(k));
    const order = KEYS[table] ? ` ORDER BY ${KEYS[table]}` : COMPOSITE[table] ? ` ORDER BY ${COMPOSITE[table].join(", ")}` : "";
    c[table] = withBlobsAsText(obj.db.dicts(`SELECT ${keep.join(", ")} FROM ${table}${order}`));
  }
  c.object = c.object.length ? c.object[0] : null;
  c.sequences = Object.fromEntries(obj.db.all("SELECT name, seq FROM sqlite_sequence").filter((r) => SEQUENCED.includes(r[0])).map((r) => [r[0], r[1]]));
  return c;
}

function same(stored: Content, checked: Content, id: string): boolean {
  const norm = (c: Content, withId: boolean) => {
    const out: Content = {};
    for (const table of Object.keys(COLUMNS)) {
      const keep = COLUMNS[table].filter((k) => !(DERIVED[table] ?? []).includes(k));
      const rows = table === "object" ? [withId ? { ...c.object, id } : c.object] : c[table];
      out[table] = rows.map((r: DictRow) => keep.map((k) => r[k] ?? null));
    }
    out.sequences = SEQUENCED.filter((t) => t in c.sequences).map((t) => [t, c.sequences[t]]);
    return JSON.stringify(out);
  };
  return norm(stored, false) === norm(checked, true);
}

/** Replace every row of the object with the record's (records.py write_object), in the caller's transaction. */
function write(obj: Opened, c: Content) {
  for (const table of Object.keys(COLUMNS)) obj.db.run(`DELETE FROM ${table}`);
  obj.db.run("DELETE FROM sqlite_sequence");
  const insert = (table: string, rows: DictRow[]) => {
    const cols = COLUMNS[table];
    const sql = `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`;
    const blob = (k: string) => TABLES[table]?.[k]?.check === "blob";
    for (const r of rows) obj.db.run(sql, ...cols.map((k) => (r[k] === undefined || r[k] === null ? null : blob(k) ? blobBytes(r[k]) : r[k])));
  };
  insert("object", [{ ...c.object, id: obj.id, one: 1, ...c.live }]);
  for (const table of Object.keys(COLUMNS)) if (table !== "object") insert(table, c[table]);
  obj.db.run("DELETE FROM sqlite_sequence");
  for (const [name, seq] of Object.entries(c.sequences)) obj.db.run("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", name, seq);
}

// -- search ---------------------------------------------------------------------------------------------

const ROLES: string[] = CONSTANTS.row_roles;
const SNIPPET = "snippet(turns_fts, -1, '[', ']', '…', 16)";

/** A plain-text QUERY (docs/reference/retention.md §7) as the FTS5 expression it asks for; exit 2 when it is empty or holds no word
 *  (across/search.py plain_query; the vectors' "search_query"). */
export function searchMatch(query: string): string {
  if (!strip(query)) throw invalid(say("empty_search"));
  const match = plainQuery(query);
  if (match === null) throw invalid(say("search_no_word", { query }));
  return match;
}

/** One object's best LIMIT hits by bm25 rank, then seq (across/search.py's per-object query), with what the
 *  merge across objects orders by: rank, the object's last_active_at, NAME, seq. An invisible or absent
 *  object has no hits. */
export function searchObject(obj: Opened, a: ObjectArgs["search_object"]) {
  const meta = obj.meta();
  if (meta === null || (obj.address.id_scope === "tenant" && obj.role() === null)) return { hits: [], last_active_at: null };
  if (typeof a.query !== "string" || !strip(a.query)) throw invalid(say("empty_search"));
  const match = a.fts ? a.query : searchMatch(a.query);
  if (a.role != null && !ROLES.includes(a.role)) throw invalid(say("invalid_search_role", { role: a.role, roles: ROLES.join(", ") }));
  if (!isInt(a.limit) || a.limit < 0) throw invalid(say("limit_negative"));
  if (a.cutoff != null && !isInt(a.cutoff)) throw invalid("--newer-than must be a duration");
  const where = ["turns_fts MATCH ?"];
  const args: unknown[] = [match];
  if (!a.superseded) where.push("t.superseded_by IS NULL");
  if (a.role != null) { where.push("t.role = ?"); args.push(a.role); }
  if (a.cutoff != null) { where.push("t.created_at >= ?"); args.push(a.cutoff); }
  // (any integer up to 2^63 - 1, as locally; JSON.parse reads one from 2^63 - 512 up as 2^63, which SQLite binds as
  // a REAL and LIMIT refuses: no object holds 2^53 rows, so the limit is taken at most that)
  args.push(Math.min(a.limit, Number.MAX_SAFE_INTEGER));
  let rows;
  try {
    // the snippet in the same statement: a second `MATCH ? AND rowid = ?` statement answers another row's
    // snippet in workerd's SQLite (external-content FTS5 read through a view)
    rows = obj.db.all(`SELECT t.seq, t.role, t.created_at, turns_fts.rank, ${SNIPPET} FROM turns_fts JOIN turns t ON t.seq = turns_fts.rowid` +
      ` WHERE ${where.join(" AND ")} ORDER BY turns_fts.rank, t.seq LIMIT ?`, ...args);
  } catch (e) {
    throw invalid(say("invalid_search_query", { query: a.query, why: (e as Error).message }));
  }
  const hits = rows.map(([seq, role, created, rank, snippet]) => ({ rank, seq, role, created_at: created, snippet }));
  return { hits, last_active_at: meta.last_active_at, id: meta.id, name: meta.name };
}

export { DurableError };
