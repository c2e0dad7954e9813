// Human-in-the-loop requests (mirrors durable_cli/core/elicit.py, docs/reference/hitl.md §8).
import { createHash } from "node:crypto";
import { Opened, conflict, denied, event, invalid, iso, notFound, now, say, touch, validName, Row } from "./state";
import { printable, strip } from "./text";
import { check, requireSession, validRequestId } from "./lifecycle";
import type { ObjectArgs } from "../generated/ops";

export const COLS = "id, status, prompt, choices, created_at, expires_at, answer, comment, answered_by, answered_at,"
  + " approvers, call_id, args, args_sha256, approve";
const MAX_APPROVERS = 32;

export const requestJson = (r: Row) => {
  const approve = r[14] === null || r[14] === undefined ? null : JSON.parse(r[14]) as string[];
  let approved: boolean | null = null; // docs/reference/hitl.md §8: null while pending or when not bound to a call
  if (r[11] !== null && r[11] !== undefined && r[1] === "answered") approved = r[6] !== null && approve!.includes(r[6]);
  else if (r[11] !== null && r[11] !== undefined && r[1] === "expired") approved = false;
  return {
    id: r[0], status: r[1], prompt: r[2], choices: JSON.parse(r[3]), created_at: iso(r[4]), expires_at: iso(r[5]),
    answer: r[6], comment: r[7], answered_by: r[8], answered_at: iso(r[9]),
    approvers: r[10] === null || r[10] === undefined ? [] : JSON.parse(r[10]), call_id: r[11] ?? null,
    args: r[12] === null || r[12] === undefined ? null : JSON.parse(r[12]), args_sha256: r[13] ?? null, approve, approved,
  };
};

/** RFC 8785 (JCS): object keys sorted by UTF-16 code units, no white space, numbers and strings as ECMAScript writes
 *  them (core/steps.py args_sha256 computes the same with the rfc8785 package). */
export function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  const o = value as Record<string, unknown>;
  return "{" + Object.keys(o).sort().map((k) => JSON.stringify(k) + ":" + canonical(o[k])).join(",") + "}";
}

export const argsSha256 = (value: unknown): string => createHash("sha256").update(canonical(value)).digest("hex");

/** A request bound to one tool call (core/elicit.py check_binding): exit 2 for a binding that breaks a rule. */
function checkBinding(obj: Opened, a: ObjectArgs["ask"], choices: string[]) {
  const approvers = [...new Set((a.approvers ?? []) as string[])];
  if ((a.approvers ?? []).length > MAX_APPROVERS) throw invalid(`at most ${MAX_APPROVERS} --approver users may be named`);
  for (const u of approvers) validName(u, "user");
  let approve = [...((a.approve ?? []) as string[])];
  const callId = a.call_id ?? null;
  const hasArgs = a.args !== null && a.args !== undefined;
  if ((callId === null) !== !hasArgs) throw invalid("--call-id and --args go together: give both, or neither");
  if (callId === null) {
    if (approve.length) throw invalid("--approve needs --call-id and --args: it names the choices that approve a tool call");
    return { choices, approve: null, argsText: null, sha: null, approvers };
  }
  if (typeof callId !== "string" || [...callId].length < 1 || [...callId].length > 128 || !printable(callId)) {
    throw invalid("invalid --call-id: use 1-128 printable characters");
  }
  if (!choices.length) { choices = ["approve", "decline"]; if (!approve.length) approve = ["approve"]; }
  else if (!approve.length) throw invalid("say which choices approve the call with --approve");
  for (const c of approve) {
    if (!choices.includes(c)) throw invalid(say("choice_not_offered", { choice: c, choices: choices.join(", ") }));
  }
  approve = [...new Set(approve)];
  const argsText = JSON.stringify(a.args);
  const enc = new TextEncoder();
  const size = enc.encode(a.prompt).length + enc.encode(pyJson(choices)).length + enc.encode(argsText).length;
  const limit = obj.config.max_turn_bytes;
  if (size > limit) {
    throw invalid(`the request is ${size} bytes with its choices and arguments, more than transcript.max_turn_bytes (${limit})`);
  }
  return { choices, approve, argsText, sha: argsSha256(a.args), approvers };
}

function visible(obj: Opened) {
  requireSession(obj);
  obj.requireVisible();
}

export function get(obj: Opened, a: ObjectArgs["request"]) {
  visible(obj);
  const r = obj.db.one(`SELECT ${COLS} FROM requests WHERE id = ?`, a.request_id);
  if (!r) throw notFound(say("request_not_found", { id: a.request_id, what: obj.what, name: obj.name }));
  return requestJson(r);
}

/** Python's json.dumps of a list of strings (", " between items, non-ASCII escaped): the stored text equals
 *  the file backend's, so an export of the object is the same either way. */
function pyJson(items: string[]): string {
  const str = (s: string) => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  return "[" + items.map(str).join(", ") + "]";
}

/** A request's input (exit 2), checked before the object is reached (core/elicit.py check_ask). */
export function checkAsk(prompt: unknown, choices: unknown): string[] {
  if (typeof prompt !== "string" || !prompt || !strip(prompt)) throw invalid(say("empty_prompt"));
  if (!Array.isArray(choices)) throw invalid(say("empty_choice"));
  for (const c of choices) if (typeof c !== "string" || !c) throw invalid(say("empty_choice"));
  if (new Set(choices).size !== choices.length) throw invalid(say("duplicate_choice"));
  return choices;
}

/** REQUEST_ID: the caller's key (docs/reference/mcp.md §14 ask_human): the same key with the same question returns the request
 *  it made, as it stands now; with another question, a conflict. Kept in the `elicit.asked` event. */
export function ask(obj: Opened, a: ObjectArgs["ask"]) {
  const key = (validRequestId(a.request_id) as string | null | undefined) ?? null;
  const b = checkBinding(obj, a, checkAsk(a.prompt, a.choices ?? []));
  const choices = b.choices;
  visible(obj);
  if (key !== null) {
    const made = obj.db.one("SELECT json_extract(data, '$.request_id') FROM events WHERE type = 'elicit.asked'"
      + " AND json_extract(data, '$.key') = ? ORDER BY seq LIMIT 1", key);
    if (made) {
      const asked = get(obj, { request_id: made[0] });
      const sameApprovers = JSON.stringify([...asked.approvers].sort()) === JSON.stringify([...b.approvers].sort());
      if (asked.prompt !== a.prompt || JSON.stringify(asked.choices) !== JSON.stringify(choices)
          || asked.call_id !== (a.call_id ?? null) || asked.args_sha256 !== b.sha || !sameApprovers) {
        throw conflict(say("ask_request_id_reused", { request_id: key, what: obj.what }));
      }
      return asked;
    }
  }
  const t = now();
  check(obj, "write");
  const id = obj.db.one("INSERT INTO requests (status, prompt, choices, created_at, expires_at, approvers, call_id, args,"
    + " args_sha256, approve) VALUES ('pending', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    a.prompt, pyJson(choices), t, a.timeout_seconds ? t + a.timeout_seconds * 1000 : null,
    b.approvers.length ? pyJson(b.approvers) : null, a.call_id ?? null, b.argsText, b.sha,
    b.approve === null ? null : pyJson(b.approve))![0];
  event(obj, "elicit.asked", key === null ? { request_id: id } : { request_id: id, key });
  touch(obj);
  return get(obj, { request_id: id });
}

/** The person's answer through an MCP client's elicitation (core/elicit.py decline): decline or cancel (answered, answer
 *  null, the action as the comment), or accept with a choice; accepted whatever the approvers, answered_by the first
 *  approver (the acting user when there are none). */
export function decline(obj: Opened, a: ObjectArgs["decline"]) {
  if (a.action !== "decline" && a.action !== "cancel" && a.action !== "accept") {
    throw invalid(say("invalid_elicit_action", { action: a.action }));
  }
  const request = get(obj, a);
  const choice = a.choice ?? null;
  if (a.action === "accept") {
    if (!choice) throw invalid(say("empty_choice"));
    if (request.choices.length && !request.choices.includes(choice)) {
      throw invalid(say("choice_not_offered", { choice, choices: request.choices.join(", ") }));
    }
  }
  if (request.status !== "pending") throw conflict(say("request_not_pending", { id: a.request_id, what: obj.what, status: request.status }));
  const [answer, comment] = a.action === "accept" ? [choice, null] : [null, a.action];
  obj.db.run("UPDATE requests SET status = 'answered', answer = ?, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
    answer, comment, request.approvers.length ? request.approvers[0] : obj.actor, now(), a.request_id);
  event(obj, "elicit.answered", { request_id: a.request_id, answer });
  touch(obj);
  return get(obj, a);
}

export function listRequests(obj: Opened, a: ObjectArgs["requests"]) {
  visible(obj);
  const where = a.pending_only ? "WHERE status = 'pending'" : "";
  return obj.db.all(`SELECT ${COLS} FROM requests ${where} ORDER BY id`).map(requestJson);
}

export function answer(obj: Opened, a: ObjectArgs["answer"]) {
  const request = get(obj, a);
  if (request.choices.length && !request.choices.includes(a.choice)) {
    throw invalid(say("choice_not_offered", { choice: a.choice, choices: request.choices.join(", ") }));
  }
  if (!a.choice) throw invalid(say("empty_choice"));
  if (request.approvers.length && !request.approvers.includes(obj.actor)) {
    throw denied(`${obj.actor} may not answer request ${a.request_id} of ${obj.what}: only ${request.approvers.join(", ")} may (its --approver)`);
  }
  if (request.status !== "pending") throw conflict(say("request_not_pending", { id: a.request_id, what: obj.what, status: request.status }));
  obj.db.run("UPDATE requests SET status = 'answered', answer = ?, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
    a.choice, a.comment ?? null, obj.actor, now(), a.request_id);
  event(obj, "elicit.answered", { request_id: a.request_id, answer: a.choice });
  touch(obj);
  return get(obj, a);
}

export function expire(obj: Opened, t: number) {
  const ids = obj.db.all("SELECT id FROM requests WHERE status = 'pending' AND expires_at <= ?", t).map((r) => r[0]);
  for (const id of ids) {
    obj.db.run("UPDATE requests SET status = 'expired' WHERE id = ?", id);
    event(obj, "elicit.expired", { request_id: id }, null);
  }
  if (ids.length) touch(obj, false);
  return ids.length;
}
