// A big request body goes to its object unparsed (docs/reference/remote.md §13; docs/remote.md "Bodies"). The Worker used to hold
// a 16 MiB body 4-5 times at once (its chunks, their concatenation, the decoded text, the parsed value and the
// JSON of the call sent on); past RAW_AT bytes it now reads only the envelope (every top-level field but
// `args`, each a few bytes) from the body's bytes and forwards the bytes as they came to the object's Durable
// Object, which decodes, checks (strict JSON, the arguments' types and ranges) and parses them once.
import { invalid, say } from "./rules/state";
import * as strict from "./rules/strict";
import { checkArgs } from "./rules/args";

/** Bodies of at least this many bytes to an object are forwarded unparsed (smaller ones are parsed by the Worker). */
export const RAW_AT = 1024 * 1024;

const QUOTE = 0x22, BACKSLASH = 0x5c, COLON = 0x3a, COMMA = 0x2c;
const OPEN = new Set([0x7b, 0x5b]), CLOSE = new Set([0x7d, 0x5d]);
const notJson = () => invalid("the request body is not JSON");
const decoder = () => new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function space(b: Uint8Array, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}

/** The index just past the string starting at I (a quote). */
function skipString(b: Uint8Array, i: number): number {
  for (i++; i < b.length; i++) {
    if (b[i] === BACKSLASH) i++;
    else if (b[i] === QUOTE) return i + 1;
  }
  throw notJson();
}

/** The index just past the JSON value starting at I (JSON.parse checks it later: this only finds its end). */
function skipValue(b: Uint8Array, i: number): number {
  if (b[i] === QUOTE) return skipString(b, i);
  if (OPEN.has(b[i])) {
    let depth = 0;
    while (i < b.length) {
      if (b[i] === QUOTE) { i = skipString(b, i); continue; }
      if (OPEN.has(b[i])) depth++;
      else if (CLOSE.has(b[i]) && --depth === 0) return i + 1;
      i++;
    }
    throw notJson();
  }
  const start = i;
  while (i < b.length && b[i] !== COMMA && !CLOSE.has(b[i]) && space(b, i) === i) i++;
  if (i === start) throw notJson();
  return i;
}

function text(b: Uint8Array): string {
  try {
    return decoder().decode(b);
  } catch {
    throw invalid("the request body is not valid UTF-8"); // docs/reference/transcript.md §6: never text with U+FFFD in its place
  }
}

/** BODY's top-level fields but `args`, parsed (a duplicate is refused), without reading `args`. */
export function envelope(body: Uint8Array): Record<string, unknown> {
  let i = space(body, 0);
  if (body[i] !== 0x7b) throw invalid("the request body is not a JSON object");
  const out: Record<string, unknown> = {};
  let sawArgs = false;
  i = space(body, i + 1);
  if (body[i] === 0x7d) i++;
  else for (;;) {
    if (body[i] !== QUOTE) throw notJson();
    const keyEnd = skipString(body, i);
    const key = JSON.parse(text(body.subarray(i, keyEnd))) as string;
    if (Object.prototype.hasOwnProperty.call(out, key) || (key === "args" && sawArgs)) {
      throw invalid(`invalid request body: ${say("json_duplicate_key", { key })}`);
    }
    i = space(body, keyEnd);
    if (body[i] !== COLON) throw notJson();
    const start = space(body, i + 1);
    const end = skipValue(body, start);
    if (key === "args") sawArgs = true;
    else {
      const value = text(body.subarray(start, end));
      const why = strict.scan(value, strict.MAX_DEPTH, undefined, true);
      if (why !== null) throw invalid(`invalid request body: ${why}`);
      try {
        out[key] = JSON.parse(value);
      } catch {
        throw notJson();
      }
    }
    i = space(body, end);
    if (body[i] === COMMA) { i = space(body, i + 1); continue; }
    if (body[i] !== 0x7d) throw notJson();
    i++;
    break;
  }
  if (space(body, i) !== body.length) throw notJson();
  return out;
}

/** In the object's Durable Object: the arguments of a call whose body came unparsed, checked as the Worker checks
 *  a small one (strict JSON over the whole body, then the arguments' types and ranges of OP). */
export function rawArgs(bytes: Uint8Array, op: string): unknown {
  const body = text(bytes);
  const why = strict.scan(body, strict.MAX_DEPTH + strict.ENVELOPE_DEPTH, undefined, true);
  if (why !== null) throw invalid(`invalid request body: ${why}`);
  let parsed: { args?: unknown };
  try {
    parsed = JSON.parse(body);
  } catch {
    throw notJson();
  }
  checkArgs("object", op, parsed.args);
  return parsed.args ?? {};
}
