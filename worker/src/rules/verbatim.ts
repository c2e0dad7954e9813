// JSON text kept verbatim (SPEC §6: a row's `data` is "stored and returned verbatim"; `meta` and `tool_calls`
// likewise). JavaScript's JSON.parse/JSON.stringify would round numbers to doubles (12345678901234567890,
// 9007199254740993), print 1.0 as 1 and -0.0 as 0, and put integer-like keys first; so the Worker never
// re-serializes such a field. Requests carry it as text (rules/transcript.ts `prepare`: `data_json`, ...),
// parsed only to be checked; responses carry the stored text as is, through `stringify` below.
import { invalid } from "./state";

/** JSON text to be emitted as is in a response (a row's stored tool_calls, meta or data). Internal code that
 *  needs the value reads `.value` (parsed each time). A plain JSON.stringify of it gives the parsed value
 *  (valid JSON, but a double's rounding of it): responses go through `stringify`. */
export class Raw {
  constructor(readonly text: string) {}
  get value(): unknown {
    return JSON.parse(this.text);
  }
  toJSON() {
    return this.value;
  }
}

/** The stored JSON text of a column as a Raw (null stays null). */
export function raw(text: string | null | undefined): Raw | null {
  return text === null || text === undefined ? null : new Raw(text);
}

/** JSON.stringify of DOC where every Raw is spliced in as its text: each Raw becomes a placeholder string
 *  holding a nonce random per call (no string of DOC can guess it), then each quoted placeholder is replaced
 *  by the text. The text is valid JSON (checked when it was stored), so the result is. */
export function stringify(doc: unknown): string {
  const texts: string[] = [];
  let nonce = "";
  const out = JSON.stringify(doc, function (this: any, key: string, value: unknown) {
    const given = this[key]; // before toJSON: a Raw is seen here, whatever its toJSON returns
    if (!(given instanceof Raw)) return value;
    if (!nonce) nonce = crypto.randomUUID().replace(/-/g, "");
    texts.push(given.text);
    return `${nonce}:${texts.length - 1}`;
  });
  if (!texts.length) return out;
  return out.replace(new RegExp(`"${nonce}:(\\d+)"`, "g"), (_m, i: string) => texts[Number(i)]);
}

/** A request's JSON field given as text (F[KEY_json], as the Python client sends what it stored locally) or as
 *  a value (F[KEY], other callers): [the parsed value, the text to store] -- the text as given, or the value
 *  serialized here when it came as a value. Absent or null: [null, null]. */
export function field(f: any, key: string, where: string): [any, string | null] {
  const text = f[`${key}_json`];
  if (text !== undefined && text !== null) {
    if (f[key] !== undefined && f[key] !== null) throw invalid(`${where}give ${key} or ${key}_json, not both`);
    if (typeof text !== "string") throw invalid(`${where}${key}_json must be JSON text`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw invalid(`${where}${key}_json is not valid JSON text`);
    }
    return value === null ? [null, null] : [value, text];
  }
  const value = f[key] === undefined ? null : f[key];
  return value === null ? [null, null] : [value, JSON.stringify(value)];
}
