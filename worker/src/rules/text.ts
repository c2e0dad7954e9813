// Printable text and white space as durable_cli/contract/unicode.json defines them (mirrors
// durable_cli/contract/text.py). Never `\p{C}`, `trim()` or `\s`: those follow V8's Unicode version and
// JavaScript's white-space set, and a NAME, title or token count would differ from the file backend.
import table from "../../../durable_cli/contract/unicode.json";

const hex = (c: number) => `\\u{${c.toString(16)}}`;
const pairs = table.printable as number[];
let klass = "";
for (let i = 0; i < pairs.length; i += 2) klass += `${hex(pairs[i])}-${hex(pairs[i + 1])}`;
const WS = (table.white_space as number[]).map(hex).join("");

const UNPRINTABLE = new RegExp(`[^${klass}]`, "u");
const LEADING = new RegExp(`^[${WS}]+`, "u");
const TRAILING = new RegExp(`[${WS}]+$`, "u");
const WORD = new RegExp(`[^${WS}]+`, "gu");

/** Python's str.isprintable() by the contract's table (an empty text is printable). */
export const printable = (text: string): boolean => !UNPRINTABLE.test(text);
/** Python's str.strip() by the contract's white space. */
export const strip = (text: string): string => text.replace(LEADING, "").replace(TRAILING, "");
export const rstrip = (text: string): string => text.replace(TRAILING, "");
/** len(text.split()) in Python. */
export const wordCount = (text: string): number => (text.match(WORD) ?? []).length;
/** any(c.isspace() for c in text) in Python (by the contract's white space). */
export const hasSpace = (text: string): boolean => new RegExp(`[${WS}]`, "u").test(text);
/** text.split() in Python (by the contract's white space). */
export const words = (text: string): string[] => text.match(WORD) ?? [];

/** Python's repr() of a str, so a message quotes a value as the file backend does. */
export function quote(v: unknown): string {
  if (typeof v !== "string") return v === null || v === undefined ? "None" : String(v);
  const q = v.includes("'") && !v.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of v) {
    if (ch === "\\") out += "\\\\";
    else if (ch === q) out += "\\" + q;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (!printable(ch)) {
      const c = ch.codePointAt(0)!;
      out += c < 0x100 ? "\\x" + c.toString(16).padStart(2, "0") : c < 0x10000 ? "\\u" + c.toString(16).padStart(4, "0") : "\\U" + c.toString(16).padStart(8, "0");
    } else out += ch;
  }
  return q + out + q;
}

const TERMS = new RegExp(`"([^"]*)"(\\**)|([^${WS}]+)`, "gu");
const HAS_WORD = /[\p{L}\p{N}\p{Co}]/u;

/** docs/reference/retention.md §7's plain-text search QUERY as an FTS5 expression (durable_cli/across/search.py plain_query; the
 *  vectors' "search_query"): terms split at white space, `"…"` one phrase, a trailing `*` a prefix, every other
 *  character matched as written (each term an FTS5 string: the phrase of its own tokens), all terms must match;
 *  a term with no letter or digit is left out. Returns null when no term is left (the caller's exit 2). */
export function plainQuery(query: string): string | null {
  const out: string[] = [];
  for (const m of query.matchAll(TERMS)) {
    let stem: string;
    let prefix: boolean;
    if (m[3] !== undefined) {
      stem = m[3].replace(/\*+$/u, "");
      prefix = stem !== m[3];
    } else {
      stem = m[1];
      prefix = m[2] !== "";
    }
    if (!HAS_WORD.test(stem)) continue;
    out.push(`"${stem.replace(/"/gu, '""')}"${prefix ? " *" : ""}`);
  }
  return out.length ? out.join(" ") : null;
}
