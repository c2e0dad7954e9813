// Sessions: the lifecycle and the prompt queue of docs/reference/sessions.md §5 (mirrors durable_cli/core/sessions.py).
// The transition table and the checks every write shares are in lifecycle.ts.
import { CONSTANTS, Opened, conflict, createObject, event, invalid, iso, notFound, say, sessionJson, setStatus, touch, now, validName, Row, DictRow } from "./state";
import * as transcript from "./transcript";
import { check, requireSession, validRequestId, validTitle } from "./lifecycle";
import { put, validSet } from "./tags";
import * as hooks from "./hooks";
import * as elicit from "./elicit";
import type { Lazy, ObjectArgs } from "../generated/ops";

const PROMPT_COLUMNS = ["id", "status", "content", "author", "source", "request_id", "turn_seq", "attempts", "start", "created_at", "started_at",
  "lease_expires_at", "completed_at", "error", "schedule_id"];
// Queue order (docs/reference/sessions.md §5): released and retried prompts first, in the order they were handed back, then FIFO by id.
const ORDER_KEY = "coalesce(handed_back, 9223372036854775807)";
const QUEUE_ORDER = `${ORDER_KEY}, id`;
const MAX_INT = 9223372036854775807n;
const isPositive = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 1) || (typeof v === "bigint" && v >= 1n && v <= MAX_INT);
const TIMES = ["created_at", "started_at", "lease_expires_at", "completed_at"];


export function create(obj: Opened, a: ObjectArgs["create"]) {
  const given = validSet(a.tags); // input first (docs/reference/output.md §4)
  if (obj.meta() !== null) {
    obj.requireVisible();
    throw conflict(say("session_exists", { what: obj.what, name: obj.name }));
  }
  createObject(obj, "created", a.title != null ? validTitle(a.title) : null, a.ttl_seconds ?? null);
  put(obj, given); // its tags in the same transaction (docs/reference/sessions.md §5)
  return sessionJson(obj);
}

export function show(obj: Opened) {
  requireSession(obj);
  return sessionJson(obj);
}

// the prompt object's keys in the order of docs/reference/sessions.md §5 (contract.json "shapes"), which piped listings
// print as columns; `position` is filled in by the caller
const PROMPT_KEYS = ["id", "status", "content", "author", "source", "request_id", "turn_seq", "position", "attempts", "start",
  "schedule_id", "created_at", "started_at", "lease_expires_at", "completed_at", "error"];

function promptJson(r: Row): DictRow {
  const row: DictRow = {};
  PROMPT_COLUMNS.forEach((k, i) => (row[k] = r[i]));
  for (const k of TIMES) row[k] = iso(row[k]);
  const p: DictRow = {};
  for (const k of PROMPT_KEYS) p[k] = row[k] ?? null;
  return p;
}

function promptRow(obj: Opened, id: number) {
  const r = obj.db.one(`SELECT ${PROMPT_COLUMNS.join(", ")} FROM prompts WHERE id = ?`, id);
  if (!r) throw notFound(say("prompt_not_found", { id, what: obj.what, name: obj.name }));
  return r;
}

export function getPrompt(obj: Opened, a: ObjectArgs["get_prompt"]) {
  const p = promptJson(promptRow(obj, a.prompt_id));
  p.position = p.status === "pending"
    ? obj.db.one(`SELECT count(*) FROM prompts, (SELECT ${ORDER_KEY} AS k FROM prompts WHERE id = ?1) AS me` +
      ` WHERE status = 'pending' AND (${ORDER_KEY} < me.k OR (${ORDER_KEY} = me.k AND id <= ?1))`, a.prompt_id)![0] : null;
  return p;
}

export function recompute(obj: Opened, current: string) {
  let to: string;
  if (obj.db.one("SELECT 1 FROM prompts WHERE status IN ('pending', 'processing') LIMIT 1")) to = "active";
  else {
    const last = obj.db.one("SELECT status FROM prompts WHERE status IN ('completed', 'failed') ORDER BY completed_at DESC, id DESC LIMIT 1");
    to = last ? last[0] : "created";
  }
  setStatus(obj, to, current);
}

export function prompt(obj: Opened, a: ObjectArgs["prompt"]) {
  transcript.checkText(obj, a.content);
  validRequestId(a.request_id);
  // docs/reference/sessions.md §5.3: the schedules' own request ids
  if (typeof a.request_id === "string" && a.request_id.startsWith("schedule:")) throw invalid(say("reserved_request_id", { request_id: a.request_id }));
  let meta = obj.meta();
  if (meta === null) {
    if (!a.created) throw notFound(obj.missing);
    createObject(obj, "active");
    meta = obj.meta()!;
  } else obj.requireVisible();
  if (a.request_id != null) {
    const row = obj.db.one("SELECT id, content FROM prompts WHERE request_id = ?", a.request_id);
    if (row) {
      if (row[1] !== a.content) throw conflict(say("prompt_request_id_reused", { request_id: a.request_id, what: obj.what }));
      return getPrompt(obj, { prompt_id: row[0] });
    }
  }
  const to = check(obj, "prompt", meta.status)!;
  const unfinished = obj.db.one("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')")![0];
  const limit = obj.config.max_unfinished;
  if (unfinished >= limit) {
    if (a.waiting) return null;
    throw conflict(say("queue_full", { what: obj.what, unfinished, limit }));
  }
  const id = obj.db.one("INSERT INTO prompts (status, content, author, source, request_id, created_at) VALUES ('pending', ?, ?, ?, ?, ?) RETURNING id",
    a.content, obj.actor, a.source ?? null, a.request_id ?? null, now())![0];
  event(obj, "prompt.queued", { prompt_id: id });
  setStatus(obj, to, meta.status);
  touch(obj);
  return getPrompt(obj, { prompt_id: id });
}

export function validPolicy(onExpiry: unknown, maxAttempts: unknown): [string, number] {
  if (onExpiry !== "fail" && onExpiry !== "retry") throw invalid(say("invalid_on_lease_expiry", { value: onExpiry }));
  if (!isPositive(maxAttempts)) throw invalid(say("invalid_max_attempts", { value: maxAttempts }));
  return [onExpiry, maxAttempts as number];
}

export function validAttempt(attempt: unknown): number | null {
  if (attempt == null) return null;
  if (!isPositive(attempt)) throw invalid(say("invalid_attempt", { attempt }));
  return attempt as number;
}

export function nextPrompt(obj: Opened, a: ObjectArgs["next_prompt"]) {
  const [onExpiry, maxAttempts] = validPolicy(a.on_expiry ?? "fail", a.max_attempts ?? 3);
  const meta = requireSession(obj);
  obj.requireVisible();
  check(obj, "next", meta.status);
  const busy = obj.db.one("SELECT id FROM prompts WHERE status = 'processing' LIMIT 1");
  if (busy) {
    if (a.waiting) return null;
    throw conflict(say("prompt_still_processing", { id: busy[0], what: obj.what, name: obj.name }));
  }
  const t = now();
  const row = obj.db.one(`SELECT id, content, author, turn_seq FROM prompts WHERE status = 'pending' AND (not_before IS NULL OR not_before <= ?) ORDER BY ${QUEUE_ORDER} LIMIT 1`, t);
  if (!row) return null;
  const [id, content, author] = row;
  let seq = row[3];
  if (seq === null || obj.db.one("SELECT max(seq) FROM turns WHERE superseded_by IS NULL")![0] !== seq) seq = transcript.insertTurn(obj, "user", content, author);
  obj.db.run("UPDATE prompts SET status = 'processing', started_at = ?, lease_expires_at = ?, turn_seq = ?, attempts = attempts + 1, start = start + 1," +
    " handed_back = NULL, not_before = NULL, on_expiry = ?, max_attempts = ? WHERE id = ?",
    t, t + a.lease_seconds * 1000, seq, onExpiry, maxAttempts, id);
  event(obj, "prompt.started", { prompt_id: id, turn_seq: seq });
  touch(obj);
  const window = a.context != null ? transcript.contextWindow(obj, { budget: a.context, keep: seq }) : undefined;
  const p = getPrompt(obj, { prompt_id: id });
  if (a.context != null) p.window = window;
  return p;
}

function processing(obj: Opened, id: number, doing: string, attempt: number | null = null) {
  requireSession(obj);
  obj.requireVisible();
  const r = promptRow(obj, id);
  if (r[1] !== "processing") throw conflict(say("prompt_not_processing", { id, what: obj.what, status: r[1], doing }));
  const current = r[PROMPT_COLUMNS.indexOf("start")]; // docs/reference/sessions.md §5: a start is named by its start number, never attempts
  if (attempt !== null && Number(attempt) !== Number(current)) {
    throw conflict(say("prompt_lease_lost", { id, what: obj.what, current, attempt, doing }));
  }
}

export function renew(obj: Opened, a: ObjectArgs["renew"]) {
  processing(obj, a.prompt_id, "renewed", validAttempt(a.attempt));
  obj.db.run("UPDATE prompts SET lease_expires_at = ? WHERE id = ?", now() + a.lease_seconds * 1000, a.prompt_id);
  touch(obj, false);
  return getPrompt(obj, a);
}

const FINISH_ROLES = ["assistant", "tool"];

/** As core/sessions.finish: the turn's rows (checked by the client's plan_finish, and again here as append
 *  checks them), then the prompt completed or failed, in this one transaction. */
export function finish(obj: Opened, a: Lazy<ObjectArgs["finish"], "rows">) {
  const attempt = validAttempt(a.attempt);
  const failed = !!a.failed || a.error != null;
  // the rows an iterable read again from the start by each pass (a body in parts holds one row at a time:
  // parts.ts): every row checked first, then inserted, in this one transaction
  const given = transcript.eachRow(a.rows);
  const fields = function* () {
    yield* given;
    if (a.reply != null) yield { role: "assistant", content: a.reply };
  };
  const prepared = function* () {
    let i = 0;
    for (const r of fields()) yield transcript.prepare(obj, r, `line ${++i}: `);
  };
  let count = 0, last: transcript.Prepared | null = null, badRole: [number, string] | null = null;
  for (const r of prepared()) {
    count++;
    if (badRole === null && !FINISH_ROLES.includes(r.role)) badRole = [count, r.role];
    last = r;
  }
  if (badRole !== null) throw invalid(say("finish_row_role", { line: badRole[0], role: badRole[1] }));
  if (last !== null && !failed && (last.role !== "assistant" || last.tool_calls != null)) {
    throw invalid(say("finish_unended", { line: count }));
  }
  processing(obj, a.prompt_id, "finished", attempt);
  const meta = obj.meta()!;
  if (count) transcript.insertRows(obj, prepared(), obj.actor);
  obj.db.run("UPDATE prompts SET status = ?, completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?",
    failed ? "failed" : "completed", now(), failed ? a.error ?? null : null, a.prompt_id);
  event(obj, failed ? "prompt.failed" : "prompt.completed", failed ? { prompt_id: a.prompt_id, error: a.error ?? null } : { prompt_id: a.prompt_id });
  outcome(obj, a.prompt_id, failed ? "failed" : "completed");
  recompute(obj, meta.status);
  touch(obj);
  return getPrompt(obj, a);
}

function handBack(obj: Opened, id: number, delaySeconds = 0, notAnAttempt = false) {
  obj.db.run("UPDATE prompts SET status = 'pending', lease_expires_at = NULL, started_at = NULL," +
    " handed_back = (SELECT coalesce(max(handed_back), 0) + 1 FROM prompts), not_before = ?, attempts = max(attempts - ?, 0) WHERE id = ?",
    delaySeconds ? now() + delaySeconds * 1000 : null, notAnAttempt ? 1 : 0, id);
}

export function release(obj: Opened, a: ObjectArgs["release"]) {
  const attempt = validAttempt(a.attempt);
  const delay = a.delay_seconds ?? 0;
  if (!Number.isSafeInteger(delay) || delay < 0 || delay > 36500 * 86400) throw invalid(say("invalid_delay", { delay }));
  processing(obj, a.prompt_id, "released", attempt);
  const meta = obj.meta()!;
  handBack(obj, a.prompt_id, delay, !!a.not_an_attempt);
  const attempts = obj.db.one("SELECT attempts FROM prompts WHERE id = ?", a.prompt_id)![0];
  event(obj, "prompt.released", { prompt_id: a.prompt_id, attempts, delay });
  recompute(obj, meta.status);
  touch(obj);
  return getPrompt(obj, a);
}

/** docs/reference/sessions.md §5.3: the outcome's deliveries, in its own transaction (only when the object has hooks). */
function outcome(obj: Opened, id: number, kind: string) {
  if (obj.db.one("SELECT 1 FROM hooks LIMIT 1")) hooks.outcome(obj, getPrompt(obj, { prompt_id: id }), kind);
}

export function failProcessing(obj: Opened, error: string, type = "prompt.failed", where = "status = 'processing'", params: unknown[] = [],
  actor: string | null | undefined = undefined, kind = "failed") {
  const t = now();
  const ids = obj.db.all(`SELECT id FROM prompts WHERE ${where} ORDER BY id`, ...params).map((r) => r[0]);
  for (const id of ids) {
    obj.db.run("UPDATE prompts SET status = 'failed', completed_at = ?, lease_expires_at = NULL, error = ? WHERE id = ?", t, error, id);
    event(obj, type, { prompt_id: id, error }, actor);
    outcome(obj, id, kind);
  }
  return ids.length;
}

export function stop(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  if (!obj.db.one("SELECT 1 FROM prompts WHERE status = 'processing'")) return sessionJson(obj);
  failProcessing(obj, "stopped", "prompt.failed", "status = 'processing'", [], undefined, "cancelled");
  recompute(obj, meta.status);
  touch(obj);
  return sessionJson(obj);
}

export function cancel(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  const to = check(obj, "cancel", meta.status)!;
  failProcessing(obj, "cancelled", "prompt.failed", "status IN ('pending', 'processing')", [], undefined, "cancelled");
  setStatus(obj, to, meta.status);
  touch(obj);
  return sessionJson(obj);
}

export function archive(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  if (check(obj, "archive", null, meta.status === "archived") === null) return sessionJson(obj);
  const to = check(obj, "archive", meta.status)!;
  const queued = obj.db.one("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')")![0];
  if (queued) throw conflict(say("archive_busy", { what: obj.what, queued }));
  setStatus(obj, to, meta.status);
  touch(obj);
  return sessionJson(obj);
}

export function unarchive(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  const to = check(obj, "unarchive", meta.status)!;
  setStatus(obj, to, meta.status);
  touch(obj);
  return sessionJson(obj);
}

export function setTitle(obj: Opened, a: ObjectArgs["set_title"]) {
  const title = validTitle(a.title);
  const meta = requireSession(obj);
  obj.requireVisible();
  if (meta.title !== title) {
    obj.db.run("UPDATE object SET title = ?", title);
    event(obj, "session.title", { title });
    touch(obj);  // a title is activity (docs/reference/storage.md §3)
  }
  return sessionJson(obj);
}

/** An invitation's input (exit 2), checked before the object is reached (core/sessions.py check_invite). */
export function checkInvite(user: unknown, role: unknown) {
  validName(user, "user");
  if (role !== "owner" && role !== "member") throw invalid(say("invalid_participant_role", { role }));
}

export function invite(obj: Opened, a: ObjectArgs["invite"]) {
  const role = a.role ?? "member";
  checkInvite(a.user, role);
  requireSession(obj);
  obj.requireVisible();
  check(obj, "invite");
  if (obj.address.id_scope !== "tenant") throw conflict(say("participants_tenant_only", { what: obj.what }));
  const current = obj.db.one("SELECT role FROM participants WHERE user = ?", a.user);
  if (!current) {
    const count = Number(obj.db.one("SELECT count(*) FROM participants")![0]);
    if (count >= CONSTANTS.limits.participants) throw conflict(say("too_many_participants", { what: obj.what, count })); // docs/reference/sessions.md §5
  }
  if (!current || current[0] !== role) {
    obj.db.run("INSERT INTO participants (user, role, joined_at) VALUES (?, ?, ?) ON CONFLICT (user) DO UPDATE SET role = excluded.role", a.user, role, now());
    event(obj, "participant.added", { user: a.user, role });
    touch(obj, false);
  }
  return sessionJson(obj);
}

export function dequeue(obj: Opened, a: ObjectArgs["dequeue"]) {
  const meta = requireSession(obj);
  obj.requireVisible();
  const r = promptRow(obj, a.prompt_id);
  if (r[1] !== "pending") throw conflict(say("prompt_not_pending", { id: a.prompt_id, what: obj.what, status: r[1] }));
  obj.db.run("DELETE FROM prompts WHERE id = ?", a.prompt_id);
  event(obj, "prompt.dequeued", { prompt_id: a.prompt_id });
  recompute(obj, meta.status);
  touch(obj);
  return sessionJson(obj);
}

export function queue(obj: Opened, a: ObjectArgs["queue"]) {
  requireSession(obj);
  obj.requireVisible();
  const positions = new Map<number, number>();
  obj.db.all(`SELECT id FROM prompts WHERE status = 'pending' ORDER BY ${QUEUE_ORDER}`).forEach((r, i) => positions.set(Number(r[0]), i + 1));
  const [where, order] = a.pending_only ? ["WHERE status = 'pending'", QUEUE_ORDER] : ["", "id"];
  return obj.db.all(`SELECT ${PROMPT_COLUMNS.join(", ")} FROM prompts ${where} ORDER BY ${order}`).map((r) => {
    const p = promptJson(r);
    p.position = positions.get(Number(p.id)) ?? null;
    return p;
  });
}

export function events(obj: Opened, a: ObjectArgs["events"]) {
  requireSession(obj);
  obj.requireVisible();
  return obj.db.all("SELECT seq, type, actor, data, at FROM events WHERE seq > ? ORDER BY seq", a.since ?? 0)
    .map(([seq, type, actor, data, at]) => ({ seq, type, actor, data: JSON.parse(data), at: iso(at) }));
}

const UI_EVENTS = 50; // the web view's page sizes (docs/reference/ui.md §16.7): newest events, finished prompts and answered questions
const UI_FINISHED = 20;

/** What the web view's session page shows but the transcript (docs/reference/ui.md §16.3), read in one go (core/sessions.py session_page). */
export function sessionPage(obj: Opened, a: ObjectArgs["session_page"]) {
  requireSession(obj);
  obj.requireVisible();
  const pending = obj.db.all(`SELECT ${elicit.COLS} FROM requests WHERE status = 'pending' ORDER BY id`).map(elicit.requestJson);
  const answered = obj.db.all(`SELECT ${elicit.COLS} FROM requests WHERE status != 'pending' ORDER BY id DESC LIMIT ?`, UI_FINISHED).map(elicit.requestJson);
  const columns = PROMPT_COLUMNS.join(", ");
  const active = obj.db.all(`SELECT ${columns} FROM prompts WHERE status = 'processing' ORDER BY id`).map(promptJson);
  obj.db.all(`SELECT ${columns} FROM prompts WHERE status = 'pending' ORDER BY ${QUEUE_ORDER}`).forEach((r, i) => {
    const p = promptJson(r);
    p.position = i + 1;
    active.push(p);
  });
  const finished = obj.db.all(`SELECT ${columns} FROM prompts WHERE status NOT IN ('pending', 'processing') ORDER BY id DESC LIMIT ?`, UI_FINISHED).map(promptJson);
  const where = a.events_before != null ? "WHERE seq < ?" : "";
  const params: unknown[] = a.events_before != null ? [a.events_before] : [];
  let events = obj.db.all(`SELECT seq, type, actor, data, at FROM events ${where} ORDER BY seq DESC LIMIT ?`, ...params, UI_EVENTS + 1)
    .map(([seq, type, actor, data, at]) => ({ seq, type, actor, data: JSON.parse(data), at: iso(at) }));
  const more = events.length > UI_EVENTS;
  events = events.slice(0, UI_EVENTS);
  return { info: sessionJson(obj), pending, answered, queue: { active, finished }, events,
    events_before: more ? events[events.length - 1].seq : null };
}

export function participants(obj: Opened) {
  requireSession(obj);
  obj.requireVisible();
  return sessionJson(obj).participants;
}

export function expireLeases(obj: Opened, t: number) {
  const meta = obj.meta()!;
  const retried = obj.db.all("SELECT id, attempts FROM prompts WHERE status = 'processing' AND lease_expires_at <= ?" +
    " AND on_expiry = 'retry' AND attempts < coalesce(max_attempts, 1) ORDER BY id", t);
  for (const [id, attempts] of retried) {
    handBack(obj, id);
    event(obj, "prompt.lease_expired", { prompt_id: id, retry: true, attempts }, null);
  }
  const n = retried.length + failProcessing(obj, "timed out", "prompt.lease_expired", "status = 'processing' AND lease_expires_at <= ?", [t], null);
  if (n) {
    recompute(obj, meta.status);
    touch(obj, false);
  }
  return n;
}
