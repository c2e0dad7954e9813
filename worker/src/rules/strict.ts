// RFC 8259 JSON in (docs/reference/transcript.md §6; core/strict_json.py): what JSON.parse takes but durable refuses wherever JSON comes
// in -- a duplicate key in one object (JSON.parse keeps the last, SQLite's json_extract the first), a number that
// overflows a double (`1e400` parses as Infinity) and nesting deeper than 200 levels counted from each field's own
// value. NaN and Infinity are not JSON to JSON.parse already. `scan` reads text JSON.parse has accepted.
import { CONSTANTS, invalid, say } from "./state";

export const MAX_DEPTH = 200;
// a request's own levels around a field's value (body, args, rows, row): the body may nest this much more
export const ENVELOPE_DEPTH = 16;
const USAGE_KEYS: string[] = CONSTANTS.usage_keys;
const LONE_SURROGATE = /\p{Cs}/u;
export const LONE_MESSAGE = "a string holds a lone surrogate, which is not valid UTF-8";

const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_OBJECT = 0x7b, CLOSE_OBJECT = 0x7d, OPEN_ARRAY = 0x5b, CLOSE_ARRAY = 0x5d, COMMA = 0x2c;

/** Why TEXT (JSON text JSON.parse accepted) is not durable's JSON, or null. LEXEMES, when given, receives the text
 *  of every number at most two object levels down, keyed by its path ("cost_usd", "usage.input_tokens"): JSON.parse
 *  reads `1.0` as 1, and a usage count must be written as an integer (docs/reference/transcript.md §6). BODY: TEXT is a request body, where a
 *  row's meta may come as a value: a usage count written `5.0` there (under meta.usage, not inside a `data`) is refused. */
export function scan(text: string, limit = MAX_DEPTH, lexemes?: Map<string, string>, body = false, lone = body): string | null {
  const keys: (Set<string> | null)[] = []; // per open container: the keys of an object, null for an array
  const path: string[] = [];
  let expectKey = false;
  const n = text.length;
  let escape = lone ? text.indexOf("\\u") : -1; // LONE: a lone surrogate written as an escape is refused
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      for (;;) {
        end = text.indexOf('"', end);
        let k = end - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break; // not escaped
        end++;
      }
      // a request body's strings (LONE): a lone surrogate written as an escape ("\ud800") is not UTF-8 (docs/reference/transcript.md §6),
      // refused as the file store refuses it, never stored as U+FFFD or as an escape in a JSON column
      // (escapes are rare: the client writes UTF-8, so ESCAPE, the next "\\u", moves on at most once per string)
      if (escape !== -1 && escape < i) escape = text.indexOf("\\u", i);
      if (escape !== -1 && escape < end && LONE_SURROGATE.test(JSON.parse(text.slice(i, end + 1)) as string)) {
        return LONE_MESSAGE;
      }
      if (expectKey) {
        const raw = text.slice(i + 1, end);
        const key = raw.includes("\\") ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        const seen = keys[keys.length - 1]!;
        if (seen.has(key)) return say("json_duplicate_key", { key });
        seen.add(key);
        path[keys.length - 1] = key;
        expectKey = false;
      }
      i = end + 1;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (keys.length >= limit) return say("json_nested", { max: limit });
      keys.push(c === OPEN_OBJECT ? new Set() : null);
      expectKey = c === OPEN_OBJECT;
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      keys.pop();
      path.length = keys.length;
      expectKey = false;
      i++;
    } else if (c === COMMA) {
      expectKey = keys[keys.length - 1] != null;
      i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1, plain = true; // plain: digits only (a minus first), so short ones cannot overflow
      for (; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d >= 0x30 && d <= 0x39) continue;
        if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) { plain = false; continue; } // . e E + -
        break;
      }
      if (!plain || j - i > 300) {
        const lexeme = text.slice(i, j);
        const value = Number(lexeme);
        if (!Number.isFinite(value)) return say("json_overflow", { number: lexeme.slice(0, 40) });
        const L = keys.length;
        if (body && !plain && Number.isInteger(value) && L >= 3 && USAGE_KEYS.includes(path[L - 1]) && path[L - 2] === "usage" &&
          path[L - 3] === "meta" && keys[L - 2] !== null && keys[L - 3] !== null && !path.slice(0, L - 3).includes("data")) {
          // a row's meta sent as a value, not as text: JSON.parse would read 5.0 as 5 (docs/reference/transcript.md §6: not an integer)
          return say("meta_usage_count", { key: path[L - 1] });
        }
      }
      if (lexemes !== undefined && keys.length <= 2 && keys.every((k) => k !== null)) lexemes.set(path.slice(0, keys.length).join("."), text.slice(i, j));
      i = j;
    } else i++; // white space, ':', true, false, null
  }
  return null;
}

/** TEXT parsed as durable's JSON (exit 2 naming WHAT otherwise); LEXEMES as `scan`. */
export function parse(text: string, what: string, lexemes?: Map<string, string>): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(`${what} is not valid JSON text`);
  }
  const why = scan(text, MAX_DEPTH, lexemes);
  if (why !== null) throw invalid(say("not_json", { what, why }));
  return value;
}

/** Whether VALUE (already parsed) nests arrays and objects deeper than LIMIT levels (a scalar is level 0). */
export function tooDeep(value: unknown, limit = MAX_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return true;
    for (const c of Array.isArray(v) ? v : Object.values(v)) if (c !== null && typeof c === "object") stack.push([c, depth + 1]);
  }
  return false;
}

/** A number written as an integer: LEXEME (its text, when known) without a fraction or an exponent. */
export function integerLexeme(lexeme: string | undefined): boolean {
  return lexeme === undefined || !/[.eE]/.test(lexeme);
}
