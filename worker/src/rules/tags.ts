// Tags (docs/reference/sessions.md §5): labels KEY -> VALUE a caller puts on a session to find it again (mirrors
// durable_cli/core/tags.py). The object's `tags` table is the source of truth; the index shards keep a copy
// (indexes.ts) that `ls --tag` and `usage --tag` read without asking objects.
import { CONSTANTS, Opened, conflict, event, invalid, say, sessionJson, touch } from "./state";
import { printable, strip } from "./text";
import { requireSession } from "./lifecycle";
import type { ObjectArgs } from "../generated/ops";

const KEY = /^[A-Za-z0-9][A-Za-z0-9._:/-]*$/;

/** A KEY: 1-64 characters from A-Z a-z 0-9 . _ - : /, beginning with a letter or a digit. */
export function validKey(key: unknown): string {
  if (typeof key !== "string" || key.length < 1 || key.length > CONSTANTS.limits.tag_key || !KEY.test(key)) {
    throw invalid(say("invalid_tag_key", { key: typeof key === "string" ? key : String(key) }));
  }
  return key;
}

/** A VALUE: 1-256 code points, printable, equal to its own strip(). */
export function validValue(key: string, value: unknown): string {
  const n = typeof value === "string" ? [...value].length : 0;
  if (typeof value !== "string" || n < 1 || n > CONSTANTS.limits.tag_value || !printable(value) || value !== strip(value)) {
    throw invalid(say("invalid_tag_value", { key }));
  }
  return value;
}

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0); // code unit order: keys are ASCII

/** A mapping KEY -> VALUE as an op takes it (each KEY and VALUE checked), keys sorted. */
export function validSet(tags: unknown): Record<string, string> {
  if (tags == null) return {};
  if (typeof tags !== "object" || Array.isArray(tags)) throw invalid("tags must be a JSON object of KEY -> VALUE");
  const out: Record<string, string> = {};
  for (const k of Object.keys(tags).sort(byKey)) out[validKey(k)] = validValue(k, (tags as Record<string, unknown>)[k]);
  return out;
}

/** (set, untag) of one tag change, checked: every KEY and VALUE, and no KEY named twice. */
export function validChange(set: unknown, untag: unknown): [Record<string, string>, string[]] {
  const changes = validSet(set);
  if (untag == null) untag = [];
  if (!Array.isArray(untag)) throw invalid("untag must be a JSON array of KEYs");
  const removed: string[] = [];
  for (const key of untag) {
    validKey(key);
    if (Object.prototype.hasOwnProperty.call(changes, key) || removed.includes(key)) throw invalid(say("tag_twice", { key }));
    removed.push(key);
  }
  return [changes, removed.sort(byKey)];
}

function current(obj: Opened): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of obj.db.all("SELECT key, value FROM tags ORDER BY key")) out[k] = v;
  return out;
}

/** A new object's tags (inside create's transaction): more than tags.max is exit 2. */
export function put(obj: Opened, tags: Record<string, string>) {
  const n = Object.keys(tags).length;
  if (n > obj.config.tags_max) throw invalid(say("too_many_tags", { what: obj.what, count: n, limit: obj.config.tags_max }));
  if (!n) return;
  for (const [k, v] of Object.entries(tags)) obj.db.run("INSERT INTO tags (key, value) VALUES (?, ?)", k, v);
  event(obj, "session.tagged", { set: tags, unset: [] });
}

/** Set each KEY of SET to its VALUE and remove each KEY of UNTAG; only what changes is written (an event
 *  `session.tagged` and updated_at, never last_active_at). Any participant, whatever the status. */
export function tag(obj: Opened, a: ObjectArgs["tag"]) {
  const [changes, removed] = validChange(a.set, a.untag);
  requireSession(obj);
  obj.requireVisible();
  const had = current(obj);
  const changed: Record<string, string> = {};
  for (const [k, v] of Object.entries(changes)) if (had[k] !== v) changed[k] = v;
  const unset = removed.filter((k) => k in had);
  const added = Object.keys(changed).filter((k) => !(k in had)).length;
  if (Object.keys(changed).length || unset.length) {
    const before = Object.keys(had).length;
    const count = before + added - unset.length;
    if (count > before && count > obj.config.tags_max) {
      throw conflict(say("too_many_tags", { what: obj.what, count, limit: obj.config.tags_max }));
    }
    for (const [k, v] of Object.entries(changed)) obj.db.run("INSERT OR REPLACE INTO tags (key, value) VALUES (?, ?)", k, v);
    for (const k of unset) obj.db.run("DELETE FROM tags WHERE key = ?", k);
    event(obj, "session.tagged", { set: changed, unset });
    touch(obj, false); // a tag is not activity (docs/reference/storage.md §3)
  }
  return sessionJson(obj);
}

/** The session's tags, KEY -> VALUE, keys sorted. */
export function tags(obj: Opened) {
  requireSession(obj);
  obj.requireVisible();
  return current(obj);
}
