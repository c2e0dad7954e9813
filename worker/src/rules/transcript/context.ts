// The context window (mirrors durable_cli/core/transcript/context.py): pinned turns, then the longest suffix
// of the other live rows within the budget, tool calls and their results kept together.
import { Opened, invalid, say, Row } from "../state";
import { CALLS, CALL_ID, COLS, KIND, PINNED, POS, ROLE, SEQ, TOKENS, requireVisible, rowJson } from "./row";
import type { ObjectArgs } from "../../generated/ops";

/** The leading system and developer turns of ROWS (live rows in logical order, read until the first other row). */
export function pinnedPrefix(rows: Iterable<Row>): Row[] {
  const out: Row[] = [];
  for (const r of rows) {
    if (PINNED.includes(r[ROLE]) && r[KIND] === "turn") out.push(r);
    else break;
  }
  return out;
}

export function pinned(obj: Opened) {
  // lazily: stops at the first unpinned row
  return pinnedPrefix(obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos LIMIT 1000`));
}

export function callIds(r: Row): string[] {
  return r[CALLS] ? JSON.parse(r[CALLS]).map((c: { id: string }) => c.id) : [];
}

function checkBounds(budget: number, limit: number | null) {
  if (budget < 0 || (limit !== null && limit < 0)) throw invalid(say("window_negative"));
}

/** The window's rule over rows (mirrors core/transcript/context.py `choose`): PIN, then the longest suffix
 *  of the other live rows (NEWER_FIRST, read only as far as needed) within BUDGET tokens and LIMIT rows;
 *  tool calls and their results as one group, KEEP's row forced in. contract/vectors.json "window". */
export function choose(pin: Row[], newerFirst: Iterable<Row>, budget: number, limit: number | null = null, keep: number | null = null) {
  checkBounds(budget, limit);
  let total = pin.reduce((s, r) => s + r[TOKENS], 0);
  if (total > budget && keep === null) return { rows: [] as Row[], tokens: 0 };
  const tail: Row[] = [];
  let count = 0;
  const waiting = new Map<string, Row[]>();
  for (const r of newerFirst) {
    if (r[ROLE] === "tool" && r[KIND] === "turn") {
      if (!waiting.has(r[CALL_ID])) waiting.set(r[CALL_ID], []);
      waiting.get(r[CALL_ID])!.push(r);
      continue;
    }
    const group = [r];
    for (const id of callIds(r)) {
      group.push(...(waiting.get(id) ?? []));
      waiting.delete(id);
    }
    const cost = group.reduce((s, g) => s + g[TOKENS], 0);
    if (r[SEQ] !== keep && (total + cost > budget || (limit !== null && count + group.length > limit))) break;
    tail.push(...group);
    total += cost;
    count += group.length;
  }
  tail.sort((x, y) => x[POS] - y[POS]);
  return { rows: [...pin, ...tail], tokens: total };
}

export function contextWindow(obj: Opened, a: ObjectArgs["context_window"]) {
  const budget = a.budget ?? obj.config.token_budget;
  const limit = a.limit ?? null;
  checkBounds(budget, limit);
  requireVisible(obj);
  const pin = pinned(obj);
  const boundary = pin.length ? pin[pin.length - 1][POS] : 0;
  // a lazy cursor (docs/reference/remote.md §13): the rows are read newest first only until the budget is spent, one at a time,
  // so a window of a long transcript holds the window, not the transcript
  const cursor = obj.db.iter(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL AND pos > ? ORDER BY pos DESC`, boundary);
  const { rows, tokens } = choose(pin, cursor, budget, limit, a.keep ?? null);
  return { turns: rows.map(rowJson), tokens, budget };
}
