// A transcript row (mirrors durable_cli/core/transcript/row.py, docs/reference/transcript.md §6): its columns, the checks that turn input
// into one (`prepare`), the shape docs/reference/json.md §10 shows (`rowJson`), and the guards every transcript operation shares.
import { CONSTANTS, Meta, Opened, Row, conflict, invalid, iso, say, dumps } from "../state";
import { approx } from "../tokens";
import { quote } from "../text";
import { requireSession } from "../lifecycle";
import { field, raw } from "../verbatim";
import * as strict from "../strict";

const ROLES: string[] = CONSTANTS.row_roles;
export const PINNED: string[] = CONSTANTS.pinned_roles;
const USAGE_KEYS: string[] = CONSTANTS.usage_keys;
export const COLS = "seq, role, content, tokens, author, created_at, kind, superseded_by, covers_first, covers_last, call_id, pos, tool_calls, name, meta, data, forked_from";
export const [SEQ, ROLE, CONTENT, TOKENS, AUTHOR, CREATED, KIND, SUPERSEDED, FIRST, LAST, CALL_ID, POS, CALLS, NAME, META, DATA, FORKED] =
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
const MAX_USAGE = 1e12; // core/transcript/row.py MAX_USAGE: a usage count's ceiling
const MAX_COST = 1e9; // meta.cost_usd's ceiling, in dollars
const MAX_TOKENS = 1e9; // core/tokens.py MAX_TOKENS: one row's given count at most
export const REDACTED = "[redacted]";

const utf8 = (s: string) => new TextEncoder().encode(s).length;
export const isInt = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n);

export function checkText(obj: Opened, content: unknown, what = "content") {
  if (typeof content !== "string" || content === "") throw invalid(say("empty_text", { what }));
  const size = utf8(content);
  const limit = obj.config.max_turn_bytes;
  if (size > limit) throw invalid(say("text_too_large", { what, size, limit }));
}

export type Prepared = { role: string; content: string; tokens: number; tool_calls: string | null; call_id: string | null;
  name: string | null; meta: string | null; data: string | null; given: number | null };

type ToolCall = { id: string; name: string; arguments: string };

export function toolCalls(v: unknown, where: string): ToolCall[] {
  if (!Array.isArray(v)) throw invalid(where + say("tool_calls_not_array"));
  const seen = new Set<string>();
  return v.map((call: any, i: number) => {
    const n = i + 1;
    if (call === null || typeof call !== "object" || Array.isArray(call)) throw invalid(where + say("tool_call_not_object", { n }));
    const extra = Object.keys(call).filter((k) => !["id", "name", "arguments"].includes(k)).sort();
    if (extra.length) throw invalid(where + say("tool_call_unknown_keys", { n, keys: `[${extra.map(quote).join(", ")}]` }));
    for (const k of ["id", "name"]) if (typeof call[k] !== "string" || !call[k]) throw invalid(where + say("tool_call_needs", { n, key: k }));
    const args = call.arguments ?? "{}";
    if (typeof args !== "string") throw invalid(where + say("tool_call_arguments", { n }));
    if (seen.has(call.id)) throw invalid(where + say("tool_call_id_twice", { id: call.id }));
    seen.add(call.id);
    return { id: call.id, name: call.name, arguments: args };
  });
}

/** meta's rules (core/transcript/row.py _meta): usage counts integers from 0 to 10^12 (LEXEMES: as written, so `5.0`
 *  is refused as in Python), cost_usd a finite number from 0 to 10^9. The message without WHERE is the reason. */
export function metaProblem(v: any, lexemes?: Map<string, string>): string | null {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return say("meta_not_object");
  if ("model" in v && typeof v.model !== "string") return say("meta_model");
  if ("usage" in v) {
    const u = v.usage;
    if (u === null || typeof u !== "object" || Array.isArray(u)) return say("meta_usage");
    for (const k of USAGE_KEYS) {
      const required = k === "input_tokens" || k === "output_tokens";
      if (!(k in u) && !required) continue;
      if (!isInt(u[k]) || !(u[k] >= 0 && u[k] <= MAX_USAGE) || !strict.integerLexeme(lexemes?.get(`usage.${k}`))) {
        return say("meta_usage_count", { key: k });
      }
    }
  }
  if ("cost_usd" in v && (typeof v.cost_usd !== "number" || !(v.cost_usd >= 0 && v.cost_usd <= MAX_COST))) return say("meta_cost");
  if ("started_at" in v || "ended_at" in v) { // when the model call ran (docs/reference/traces.md §15.2)
    if (!("started_at" in v) || !("ended_at" in v)) return say("meta_times_both");
    const start = timeNs(v.started_at), end = timeNs(v.ended_at);
    if (start === null || end === null) return say("meta_time", { key: start === null ? "started_at" : "ended_at" });
    if (end < start) return say("meta_times_order");
  }
  return null;
}

const TIME = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):(\d\d))$/;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** core/transcript/row.py time_ns: an RFC 3339 time with a zone as epoch nanoseconds (a BigInt), or null. */
export function timeNs(text: unknown): bigint | null {
  if (typeof text !== "string") return null;
  const m = TIME.exec(text);
  if (m === null) return null;
  const [y, mo, d, h, mi, sec] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i]));
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (!(y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= DAYS[mo - 1] + (mo === 2 && leap ? 1 : 0) && h <= 23 && mi <= 59 && sec <= 59)) return null;
  let offset = 0;
  if (m[9]) {
    const oh = Number(m[10]), om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offset = (oh * 60 + om) * 60 * (m[9] === "+" ? 1 : -1);
  }
  const yy = y - (mo <= 2 ? 1 : 0);
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const days = era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
  const seconds = days * 86400 + h * 3600 + mi * 60 + sec - offset;
  return BigInt(seconds) * 1000000000n + BigInt((m[7] ?? "").padEnd(9, "0"));
}

function checkMeta(v: any, where: string, lexemes?: Map<string, string>) {
  const problem = metaProblem(v, lexemes);
  if (problem !== null) throw invalid(`${where}${problem}`);
  return v;
}

/** One input row checked as a whole (core/transcript/row.py prepare). Its JSON fields come as text (`tool_calls_json`,
 *  `meta_json`, `data_json`: what the Python client prepared, the text the file backend stores) or as values
 *  (`tool_calls`, `meta`, `data`); text is parsed only to be checked and is stored as given (rules/verbatim.ts). */
export function prepare(obj: Opened, f: any, where = ""): Prepared {
  const role = f.role;
  if (!ROLES.includes(role)) throw invalid(where + say("invalid_row_role", { role, roles: ROLES.join(", ") }));
  const content = f.content ?? "";
  if (typeof content !== "string") throw invalid(where + say("content_not_string"));
  let calls: ToolCall[] | null = null;
  let [givenCalls, callsText] = field(f, "tool_calls", where);
  if (givenCalls !== null) {
    if (role !== "assistant") throw invalid(where + say("tool_calls_not_assistant", { role }));
    calls = toolCalls(givenCalls, where);
    if (!calls.length) calls = null;
    else if (dumps(calls) !== dumps(givenCalls)) callsText = dumps(calls); // "arguments" filled in: the text stored is the calls'
  }
  const callId = f.call_id ?? null, name = f.name ?? null;
  if (role === "tool") {
    if (typeof callId !== "string" || !callId) throw invalid(where + say("tool_row_call_id"));
    if (name !== null && (typeof name !== "string" || !name)) throw invalid(where + say("tool_row_name"));
  } else {
    if (callId !== null) throw invalid(where + say("call_id_not_tool", { role }));
    if (name !== null) throw invalid(where + say("name_not_tool", { role }));
  }
  const lexemes = new Map<string, string>();
  const [meta, metaText] = field(f, "meta", where, lexemes);
  if (meta !== null) checkMeta(meta, where, lexemes);
  const [data, dataText] = field(f, "data", where);
  if (content === "" && !(calls && role === "assistant") && data === null) {
    throw invalid(where + say("empty_content"));
  }
  const given = f.tokens ?? null;
  if (given !== null && (!isInt(given) || given < 0 || given > MAX_TOKENS)) throw invalid(where + say("row_tokens", { max: MAX_TOKENS }));
  const p: Prepared = { role, content, call_id: callId, name, given, tokens: 0,
    tool_calls: calls ? callsText : null, meta: metaText, data: dataText };
  let size = utf8(content);
  for (const x of [p.tool_calls, p.meta, p.data]) if (x !== null) size += utf8(x);
  const limit = obj.config.max_turn_bytes;
  if (size > limit) throw invalid(where + say("row_too_large", { size, limit }));
  if (given === null) {
    const parts = [content];
    for (const c of calls ?? []) parts.push(c.name, c.arguments);
    p.tokens = approx(parts.join("\n"));
  } else p.tokens = given;
  return p;
}

/** A row as docs/reference/json.md §10 shows it; its JSON fields are the stored text, emitted as is (rules/verbatim.ts `stringify`). */
export function rowJson(r: Row) {
  const summary = r[KIND] === "summary";
  return {
    seq: r[SEQ], role: r[ROLE], content: r[CONTENT], tool_calls: raw(r[CALLS]), call_id: r[CALL_ID], name: r[NAME],
    meta: raw(r[META]), data: raw(r[DATA]), forked_from: r[FORKED], tokens: r[TOKENS], author: r[AUTHOR],
    created_at: iso(r[CREATED]), kind: r[KIND], superseded_by: r[SUPERSEDED], covers: summary && r[LAST] !== null ? [r[FIRST], r[LAST]] : null,
  };
}

export function requireVisible(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  return meta;
}

/** docs/reference/integrations.md §12: rows a LangGraph saver mirrors from its checkpoints are not rewritten behind its back. */
export function refuseRewriteIfOwned(obj: Opened, meta: Meta, doing: string) {
  if (meta.adapter === "langgraph") {
    throw conflict(say("langgraph_owned", { what: obj.what, doing, name: obj.name }));
  }
}

export const marks = (n: number) => new Array(n).fill("?").join(",");
