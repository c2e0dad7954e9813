// What a write remembers for a retry of its request id (docs/reference/remote.md §13: "a write's remembered answer holds ids
// and seqs, never row contents"): the answer reduced to the ids and seqs it names, and rebuilt from
// storage when a retry comes. A batch of any size is one small row in _durable_requests, and text a
// later redact, pop or prune removed is not kept for a day in the request table. An answer without
// row contents (a session's state, a receipt, a count) is remembered as it is.
import { DictRow, Opened } from "./rules/state";
import * as transcript from "./rules/transcript";
import * as sessions from "./rules/sessions";
import * as elicit from "./rules/elicit";
import * as memory from "./rules/memory";
import * as steps from "./rules/steps";

type Recall = { recall: string; [k: string]: unknown };

const PROMPT_OPS = new Set(["prompt", "next_prompt", "renew", "finish", "release"]);
const ROW_FIELDS = ["content", "tool_calls", "meta", "data"];

/** RESULT of OP reduced to a Recall, or null when it holds no row contents (remembered as answered). */
export function reduce(op: string, args: any, result: any): Recall | null {
  if (result === null || result === undefined) return null;
  if (args.part != null && typeof result === "object" && !Array.isArray(result) && "staged" in result) return null; // an earlier part (parts.ts)
  if (op === "append_many") {
    if (args.seqs_only) return null; // seqs already
    const rows = Array.isArray(result) ? result : [result];
    // its rows, or (more than a page of them) their seqs
    return { recall: "rows", seqs: rows.map((r: number | { seq: number }) => (typeof r === "number" ? r : r.seq)), one: !Array.isArray(result) };
  }
  if (op === "redact") return { recall: "rows", seqs: [result.seq], one: true };
  if (op === "pop") { // gone from storage: the replay says which rows went, without their text
    return { recall: "popped", rows: result.map((r: object) => Object.fromEntries(Object.entries(r).filter(([k]) => !ROW_FIELDS.includes(k)))) };
  }
  if ((op === "summarize" || op === "compact" || op === "commit_summary") && result.summary) {
    return { recall: "summary", seq: result.summary.seq, superseded: result.superseded };
  }
  if (PROMPT_OPS.has(op) && typeof result === "object" && "id" in result) {
    return { recall: "prompt", id: result.id, window: result.window !== undefined ? { budget: args.context, keep: result.turn_seq } : null };
  }
  // a step's stdout (up to 1 MiB) is row contents too: a redaction erases it, so no answer keeps it
  if (op === "step_begin" && typeof result === "object" && "action" in result) {
    return { recall: "step_begin", action: result.action, prompt: result.prompt, start: result.start, step_id: result.step_id, key: args.key };
  }
  if ((op === "step_commit" || op === "step_abandon") && typeof result === "object" && "key" in result) {
    return { recall: "step", prompt: result.prompt, key: result.key };
  }
  if ((op === "ask" || op === "answer" || op === "decline") && typeof result === "object" && "id" in result) return { recall: "request", id: result.id };
  if ((op === "set_fact" || op === "confirm_fact") && typeof result === "object" && "key" in result) return { recall: "fact", key: result.key };
  // a forgotten fact: the replay says which fact went, without its value (as pop's rows)
  if (op === "forget_fact" && typeof result === "object" && "key" in result) return { recall: "forgotten", fact: { ...result, value: null } };
  return null;
}

/** The answer a retry gets: rebuilt from storage as it is now (a row since redacted reads redacted). */
export function rebuild(obj: Opened, r: Recall): unknown {
  switch (r.recall) {
    case "rows": { // as the first answer: the rows when they are one page, else their seqs (read one row at a time)
      const seqs = r.seqs as number[];
      const rows: unknown[] = [];
      let bytes = 0;
      for (const seq of seqs) {
        const row = obj.db.one(`SELECT ${transcript.COLS} FROM turns WHERE seq = ?`, seq);
        if (!row) continue;
        bytes += transcript.rowBytes(row);
        if (!r.one && (rows.length >= transcript.PAGE_ROWS || (bytes > transcript.PAGE_BYTES && rows.length))) {
          return seqs.filter((s) => obj.db.one("SELECT 1 FROM turns WHERE seq = ?", s) !== null);
        }
        rows.push(transcript.rowJson(row));
      }
      return r.one ? rows[0] ?? null : rows;
    }
    case "popped":
      return (r.rows as DictRow[]).map((row) => ({ ...row, content: null, tool_calls: null, meta: null, data: null }));
    case "summary": {
      const row = obj.db.one(`SELECT ${transcript.COLS} FROM turns WHERE seq = ?`, r.seq);
      return { summary: row ? transcript.rowJson(row) : null, superseded: r.superseded };
    }
    case "prompt": {
      const p: DictRow = sessions.getPrompt(obj, { prompt_id: r.id as number });
      const w = r.window as { budget: number; keep: number } | null;
      if (w) p.window = transcript.contextWindow(obj, { budget: w.budget, keep: w.keep });
      return p;
    }
    case "request":
      return elicit.get(obj, { request_id: r.id as number });
    case "step_begin": {
      const step = r.action === "replay" ? steps.stepNow(obj, r.prompt as number, r.key as string) : null;
      return { action: r.action, prompt: r.prompt, start: r.start, step_id: r.step_id, step };
    }
    case "step":
      return steps.stepNow(obj, r.prompt as number, r.key as string);
    case "forgotten":
      return r.fact;
    case "fact": {
      const row = obj.db.one(`SELECT ${memory.COLS} FROM facts WHERE key = ?`, r.key);
      return row ? memory.factJson(row) : null;
    }
    default:
      return null;
  }
}
