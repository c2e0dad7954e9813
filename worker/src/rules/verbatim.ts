// JSON text kept verbatim (docs/reference/transcript.md §6: a row's `data` is "stored and returned verbatim"; `meta` and `tool_calls`
// likewise). JavaScript's JSON.parse/JSON.stringify would round numbers to doubles (12345678901234567890,
// 9007199254740993), print 1.0 as 1 and -0.0 as 0, and put integer-like keys first; so the Worker never
// re-serializes such a field. Requests carry it as text (rules/transcript/row.ts `prepare`: `data_json`, ...),
// parsed only to be checked; responses carry the stored text as is, through `stringify` below.
import { invalid, say } from "./state";
import * as strict from "./strict";

let splicing: { mark: string; texts: string[] } | null = null; // the `stringify` under way (it is synchronous)

/** JSON text to be emitted as is in a response (a row's stored tool_calls, meta or data). Internal code that
 *  needs the value reads `.value` (parsed each time). Outside `stringify`, JSON.stringify of it gives the parsed
 *  value (valid JSON, but a double's rounding of it): responses go through `stringify`. */
export class Raw {
  constructor(readonly text: string) {}
  get value(): unknown {
    return JSON.parse(this.text);
  }
  toJSON(): unknown {
    if (splicing === null) return this.value;
    splicing.texts.push(this.text);
    return splicing.mark;
  }
}

/** The stored JSON text of a column as a Raw (null stays null). */
export function raw(text: string | null | undefined): Raw | null {
  return text === null || text === undefined ? null : new Raw(text);
}

/** JSON.stringify of DOC where every Raw is spliced in as its text. Each Raw serializes as a placeholder
 *  string, a nonce random per call (no string of DOC can hold it: it is made after DOC), in the order of the
 *  output; the quoted placeholders are then replaced by the texts, in that order. The texts are valid JSON
 *  (checked when stored), so the result is. A toJSON rather than a replacer function: a replacer runs for
 *  every value of the document (5x the time of a 10,000-row `show`); this costs what parsing the fields did. */
export function stringify(doc: unknown): string {
  const mark = crypto.randomUUID().replace(/-/g, "");
  const outer = splicing;
  const state = (splicing = { mark, texts: [] as string[] });
  let out: string;
  try {
    out = JSON.stringify(doc);
  } finally {
    splicing = outer;
  }
  const texts = state.texts;
  if (!texts.length) return out;
  const parts = out.split(`"${mark}"`);
  if (parts.length !== texts.length + 1) throw new Error("a verbatim field could not be placed in the response");
  let s = parts[0];
  for (let i = 0; i < texts.length; i++) s += texts[i] + parts[i + 1];
  return s;
}

/** A request's JSON field given as text (F[KEY_json], as the Python client sends what it stored locally) or as
 *  a value (F[KEY], other callers): [the parsed value, the text to store] -- the text as given, or the value
 *  serialized here when it came as a value. Absent or null: [null, null]. */
export function field(f: any, key: string, where: string, lexemes?: Map<string, string>): [any, string | null] {
  const text = f[`${key}_json`];
  if (text !== undefined && text !== null) {
    if (f[key] !== undefined && f[key] !== null) throw invalid(`${where}give ${key} or ${key}_json, not both`);
    if (typeof text !== "string") throw invalid(`${where}${key}_json must be JSON text`);
    const value = strict.parse(text, `${where}${key}`, lexemes); // RFC 8259: no duplicate key, 1e400 or 201 levels
    return value === null ? [null, null] : [value, text];
  }
  const value = f[key] === undefined ? null : f[key];
  if (strict.tooDeep(value)) throw invalid(where + say("json_too_deep", { what: key, max: strict.MAX_DEPTH }));
  return value === null ? [null, null] : [value, JSON.stringify(value)];
}
