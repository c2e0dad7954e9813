// Human-in-the-loop requests (mirrors durable_cli/core/elicit.py, docs/reference/hitl.md §8).
import { Opened, conflict, event, invalid, iso, notFound, now, say, touch, Row } from "./state";
import { strip } from "./text";
import { check, requireSession, validRequestId } from "./lifecycle";
import type { ObjectArgs } from "../generated/ops";

const COLS = "id, status, prompt, choices, created_at, expires_at, answer, comment, answered_by, answered_at";

const requestJson = (r: Row) => ({
  id: r[0], status: r[1], prompt: r[2], choices: JSON.parse(r[3]), created_at: iso(r[4]), expires_at: iso(r[5]),
  answer: r[6], comment: r[7], answered_by: r[8], answered_at: iso(r[9]),
});

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
  const choices = checkAsk(a.prompt, a.choices ?? []);
  visible(obj);
  if (key !== null) {
    const made = obj.db.one("SELECT json_extract(data, '$.request_id') FROM events WHERE type = 'elicit.asked'"
      + " AND json_extract(data, '$.key') = ? ORDER BY seq LIMIT 1", key);
    if (made) {
      const asked = get(obj, { request_id: made[0] });
      if (asked.prompt !== a.prompt || JSON.stringify(asked.choices) !== JSON.stringify(choices)) {
        throw conflict(say("ask_request_id_reused", { request_id: key, what: obj.what }));
      }
      return asked;
    }
  }
  const t = now();
  check(obj, "write");
  const id = obj.db.one("INSERT INTO requests (status, prompt, choices, created_at, expires_at) VALUES ('pending', ?, ?, ?, ?) RETURNING id",
    a.prompt, pyJson(choices), t, a.timeout_seconds ? t + a.timeout_seconds * 1000 : null)![0];
  event(obj, "elicit.asked", key === null ? { request_id: id } : { request_id: id, key });
  touch(obj);
  return get(obj, { request_id: id });
}

/** The person would not answer (an MCP client's decline or cancel): answered, answer null, the action as the comment. */
export function decline(obj: Opened, a: ObjectArgs["decline"]) {
  if (a.action !== "decline" && a.action !== "cancel") throw invalid(say("invalid_elicit_action", { action: a.action }));
  const request = get(obj, a);
  if (request.status !== "pending") throw conflict(say("request_not_pending", { id: a.request_id, what: obj.what, status: request.status }));
  obj.db.run("UPDATE requests SET status = 'answered', answer = NULL, comment = ?, answered_by = ?, answered_at = ? WHERE id = ?",
    a.action, obj.actor, now(), a.request_id);
  event(obj, "elicit.answered", { request_id: a.request_id, answer: null });
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
