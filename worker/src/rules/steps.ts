// The step journal (mirrors durable_cli/core/steps.py, docs/reference/sessions.md §5.2): a prompt's steps, each run at most
// once per (prompt, KEY) as long as a run reaches its commit, and replayed from the journal afterwards. CMD runs on the
// caller's machine (durable_cli/steps.py); the reservation, each renewal, the commit and each replay are one request
// here, one transaction, and liveness (a running step renewed within LIVE_MS, its start current) is judged by this
// object's clock. A step's stdout (at most MAX_STDOUT bytes) is one BLOB, under Cloudflare's 2,000,000-byte value.
import { createHash } from "node:crypto";
import { DictRow, DurableError, Opened, conflict, invalid, iso, notFound, now, touch } from "./state";
import { printable, quote, strip } from "./text";
import { requireSession } from "./lifecycle";
import { blobText, isBase64 } from "./rights";
import * as elicit from "./elicit";
import type { ObjectArgs } from "../generated/ops";

export const LIVE_MS = 30_000; // a running step not renewed for this long reads as abandoned
export const MAX_STDOUT = 1_048_576; // bytes of CMD's stdout a step keeps
const MAX_KEY = 200;
export const PAGE_ROWS = 1000; // a page of `session steps` holds at most this many steps
export const PAGE_BYTES = 1024 * 1024; // ... and ends with the step that reaches this many bytes of stdout

const COLUMNS = ["prompt_id", "key", "seq", "status", "attempt", "token", "renewed_at", "runs", "replays", "last_replay_attempt",
  "exit_status", "stdout", "stdout_bytes", "output_too_large", "redacted", "call_id", "args_sha256", "approval",
  "started_at", "ended_at"];
const SELECT = `SELECT ${COLUMNS.join(", ")} FROM steps`;

type Step = DictRow;

/** DURABLE_STEP_ID: the same in every start of the prompt, another for another prompt, KEY or object. */
export function stepId(objectId: string, promptId: number, key: string): string {
  return createHash("sha256").update(`${objectId}\n${promptId}\n${key}`).digest("hex").slice(0, 32);
}

/** KEY: the NAME rule of docs/reference/concepts.md §2 (1-200 code points, printable, its own strip()), not beginning with '-'. */
export function checkKey(key: unknown): string {
  const n = typeof key === "string" ? [...key].length : 0;
  if (typeof key !== "string" || n < 1 || n > MAX_KEY || !printable(key) || key !== strip(key) || key.startsWith("-")) {
    throw invalid(`invalid step KEY ${quote(key)}: use 1-${MAX_KEY} printable characters, without leading or trailing ` +
      "white space, not beginning with '-'");
  }
  return key;
}

function checkCall(key: unknown, token: unknown, callId: string | null = null, sha: string | null = null, approval: number | null = null) {
  checkKey(key);
  if (typeof token !== "string" || token.length < 1 || token.length > 64) throw invalid("invalid step token: 1-64 characters");
  if ((callId === null) !== (sha === null)) throw invalid("--call-id and --args go together: give both, or neither");
  if (approval !== null && callId === null) throw invalid("--approval needs --call-id and --args: an approval is bound to one tool call");
  if (callId !== null && ([...callId].length < 1 || [...callId].length > 128 || !printable(callId))) {
    throw invalid("invalid --call-id: use 1-128 printable characters");
  }
  if (sha !== null && !/^[0-9a-f]{64}$/.test(sha)) throw invalid("invalid args_sha256: 64 lowercase hex digits");
}

function stepOf(obj: Opened, promptId: number, key: string): Step | null {
  const r = obj.db.one(`${SELECT} WHERE prompt_id = ? AND key = ?`, promptId, key);
  return r === null ? null : Object.fromEntries(COLUMNS.map((c, i) => [c, r[i]]));
}

/** The prompt's current start, or null when it is not processing. */
function current(obj: Opened, promptId: number): number | null {
  const r = obj.db.one("SELECT status, start FROM prompts WHERE id = ?", promptId);
  return r !== null && r[0] === "processing" ? Number(r[1]) : null;
}

function live(obj: Opened, s: Step, t: number): boolean {
  return s.status === "running" && s.attempt === current(obj, s.prompt_id) && (s.renewed_at ?? 0) >= t - LIVE_MS;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }); // Python's bytes.decode("utf-8"): a BOM is kept

function bytesOf(v: unknown): Uint8Array {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return new Uint8Array(0);
}

export function stepJson(obj: Opened, s: Step, t: number = now()) {
  const status = s.status === "running" && !live(obj, s, t) ? "abandoned" : s.status;
  const kept = status === "done" && !s.output_too_large && !s.redacted;
  const out = kept ? bytesOf(s.stdout) : null;
  let text: string | null = null;
  if (out !== null) {
    try {
      text = UTF8.decode(out);
    } catch {
      text = null;
    }
  }
  const done = s.status === "done";
  return {
    prompt: s.prompt_id, key: s.key, seq: s.seq, step_id: stepId(obj.id, s.prompt_id, s.key), status, attempt: s.attempt,
    runs: s.runs, replays: s.replays, last_replay_attempt: s.last_replay_attempt,
    exit_status: done ? s.exit_status : null,
    stdout: text, stdout_base64: out !== null ? (blobText(out) as string) : null,
    stdout_bytes: done ? s.stdout_bytes : null,
    output_too_large: !!s.output_too_large, redacted: !!s.redacted,
    call_id: s.call_id, args_sha256: s.args_sha256, approval: s.approval,
    started_at: iso(s.started_at), ended_at: iso(s.ended_at),
  };
}

/** Step KEY of PROMPT_ID as it is now, or null (a retried request's answer: recall.ts). */
export function stepNow(obj: Opened, promptId: number, key: string) {
  const s = stepOf(obj, promptId, key);
  return s === null ? null : stepJson(obj, s);
}

function visible(obj: Opened) {
  requireSession(obj);
  obj.requireVisible();
}

const promptMissing = (obj: Opened, id: number) =>
  notFound(`prompt ${id} of ${obj.what} not found; list them with 'durable session queue ${obj.name}'`);

/** (prompt id, current start) of the step's prompt, after existence (3): exit 4 when it is not processing or
 *  ATTEMPT is not its current start (docs/reference/sessions.md §5.2 "Only the current start"). */
function promptOf(obj: Opened, promptId: number | null, attempt: number | null): [number, number] {
  let start: number;
  if (promptId === null) {
    const r = obj.db.one("SELECT id, start FROM prompts WHERE status = 'processing' ORDER BY id LIMIT 1");
    if (r === null) throw conflict(`no prompt of ${obj.what} is processing; a step belongs to a started prompt`);
    [promptId, start] = [Number(r[0]), Number(r[1])];
  } else {
    const r = obj.db.one("SELECT status, start FROM prompts WHERE id = ?", promptId);
    if (r === null) throw promptMissing(obj, promptId);
    if (r[0] !== "processing") {
      throw conflict(`prompt ${promptId} of ${obj.what} is ${r[0]}, not processing; a step belongs to a started ` +
        "prompt, and only its current start may run it");
    }
    start = Number(r[1]);
  }
  if (attempt !== null && attempt !== start) {
    throw conflict(`start ${attempt} of prompt ${promptId} of ${obj.what} is not its current start (${start}); ` +
      "a step acts only for the current start");
  }
  return [promptId, start];
}

/** Existence (3): NAME, the prompt, the --approval request. Returns the request (or null). */
function locate(obj: Opened, promptId: number | null, approval: number | null) {
  visible(obj);
  if (promptId !== null && obj.db.one("SELECT 1 FROM prompts WHERE id = ?", promptId) === null) throw promptMissing(obj, promptId);
  return approval !== null ? elicit.get(obj, { request_id: approval }) : null;
}

/** Exit 10 (not_approved) or 11 (refused): the error's document carries `reason` and `request` (the client's
 *  §4 JSON error shows them, as the file backend's). */
function notApproved(message: string, code: string, reason: string, request: unknown) {
  return new DurableError(message, code, { reason, request });
}

type Request = ReturnType<typeof elicit.get>;

/** REQ approves this very call, or exit 10/11 (docs/reference/sessions.md §5.2 "Approvals", in that order). */
function approve(obj: Opened, request: Request, promptId: number, key: string, callId: string | null, sha: string | null) {
  const rid = request.id;
  const where = `request ${rid} of ${obj.what}`;
  if (request.call_id === null) {
    throw notApproved(`${where} is not bound to a tool call; ask it with --call-id and --args`, "not_approved", "unbound", request);
  }
  if (request.call_id !== callId || request.args_sha256 !== sha) {
    throw notApproved(`${where} approves another call (call id ${quote(request.call_id)}); this call was not approved`,
      "not_approved", "other_call", request);
  }
  const used = obj.db.one("SELECT prompt_id, key FROM steps WHERE approval = ? AND NOT (prompt_id = ? AND key = ?) LIMIT 1",
    rid, promptId, key);
  if (used !== null) {
    throw notApproved(`${where} was already used by step ${quote(used[1])} of prompt ${used[0]}; a request approves one step`,
      "not_approved", "used", request);
  }
  if (request.status === "pending") {
    throw notApproved(`${where} is pending; wait for the answer with 'durable elicit wait ${obj.name} ${rid}', then run ` +
      "the step again", "not_approved", "pending", request);
  }
  if (request.status === "expired") throw notApproved(`${where} expired without an answer; the call was refused`, "refused", "expired", request);
  if (!request.approved) {
    throw notApproved(`${where} was declined (answer ${quote(request.answer)}); the call was refused`, "refused", "declined", request);
  }
}

export function tooLarge(key: string, size: unknown): string {
  return `step ${quote(key)} wrote ${size} bytes, more than the 1 MiB a step keeps; it is not run again (write a large ` +
    "result to a file and print its path)";
}

const lostMessage = (key: string) =>
  `the start was lost while step ${quote(key)} ran; its result is not recorded and the next start runs it again`;

/** The start, then the recorded step (replay, wait), then the approval, then the reservation, in this request's one
 *  transaction: {action: "replay" | "wait" | "run", prompt, start, step_id, step}. */
export function begin(obj: Opened, a: ObjectArgs["step_begin"]) {
  const [callId, sha, approval] = [a.call_id ?? null, a.args_sha256 ?? null, a.approval ?? null];
  checkCall(a.key, a.token, callId, sha, approval);
  const key = a.key;
  const request = locate(obj, a.prompt_id ?? null, approval);
  const t = now();
  const [promptId, start] = promptOf(obj, a.prompt_id ?? null, a.attempt ?? null);
  const answer = (action: string, step: unknown = null) =>
    ({ action, prompt: promptId, start, step_id: stepId(obj.id, promptId, key), step });
  const s = stepOf(obj, promptId, key);
  if (s !== null) {
    if (s.call_id !== callId || s.args_sha256 !== sha) {
      throw conflict(`step ${quote(key)} was recorded for another call; its key is taken for prompt ${promptId}`);
    }
    if (s.status === "done") {
      if (s.redacted) throw conflict(`step ${quote(key)} was redacted; its output is gone (it is not run again)`);
      if (s.output_too_large) throw invalid(tooLarge(key, s.stdout_bytes));
      obj.db.run("UPDATE steps SET replays = replays + 1, last_replay_attempt = ? WHERE prompt_id = ? AND key = ?", start, promptId, key);
      touch(obj, false); // a commit of its own (the replay count): updated_at, not last_active_at (storage.md §3)
      s.replays += 1;
      s.last_replay_attempt = start;
      return answer("replay", stepJson(obj, s, t));
    }
    if (live(obj, s, t)) {
      if (a.inside === String(promptId)) throw conflict(`step ${quote(key)} is already running in this process tree`);
      return answer("wait");
    }
  }
  if (request !== null) approve(obj, request, promptId, key, callId, sha);
  if (s === null) {
    const seq = Number(obj.db.one("SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE prompt_id = ?", promptId)![0]);
    obj.db.run("INSERT INTO steps (prompt_id, key, seq, status, attempt, token, renewed_at, runs, call_id, args_sha256," +
      " approval, started_at) VALUES (?, ?, ?, 'running', ?, ?, ?, 1, ?, ?, ?, ?)",
      promptId, key, seq, start, a.token, t, callId, sha, approval, t);
  } else {
    obj.db.run("UPDATE steps SET status = 'running', attempt = ?, token = ?, renewed_at = ?, runs = runs + 1," +
      " approval = coalesce(?, approval), started_at = ?, ended_at = NULL WHERE prompt_id = ? AND key = ?",
      start, a.token, t, approval, t, promptId, key);
  }
  touch(obj, false);
  return answer("run");
}

/** Whether step KEY of PROMPT_ID is running and live: what a caller that got "wait" polls, reading only. */
export function stillLive(obj: Opened, a: ObjectArgs["step_live"]): boolean {
  visible(obj);
  const s = stepOf(obj, a.prompt_id, a.key);
  return s !== null && live(obj, s, now());
}

function held(obj: Opened, promptId: number, key: string, token: string, start: number): boolean {
  const s = stepOf(obj, promptId, key);
  return s !== null && s.status === "running" && s.token === token && s.attempt === start && current(obj, promptId) === start;
}

/** Keep the reservation live; exit 4 when the start (or the reservation) is gone. */
export function renew(obj: Opened, a: ObjectArgs["step_renew"]) {
  checkCall(a.key, a.token);
  if (!held(obj, a.prompt_id, a.key, a.token, a.start)) throw conflict(lostMessage(a.key));
  obj.db.run("UPDATE steps SET renewed_at = ? WHERE prompt_id = ? AND key = ?", now(), a.prompt_id, a.key);
  touch(obj, false); // a renewal is a commit: updated_at, not last_active_at (docs/reference/storage.md §3)
  return null;
}

/** The bytes a commit stores (null for a step over the cap): more than MAX_STDOUT not marked output_too_large is
 *  exit 2 (HTTP 400), as is a size that does not match (core/steps.py _stdout_of). */
export function stdoutOf(key: string, stdout: string | null, size: number, tooBig: boolean): Uint8Array | null {
  if (stdout !== null && !isBase64(stdout)) throw invalid(`the stdout of step ${quote(key)} is not base64`);
  const data = stdout === null ? new Uint8Array(0) : bytesFrom(stdout);
  if (tooBig) {
    if (size <= MAX_STDOUT) throw invalid(`step ${quote(key)} is marked output_too_large with ${size} bytes, within the 1 MiB a step keeps`);
    return null;
  }
  if (data.length > MAX_STDOUT) {
    throw invalid(`the stdout of step ${quote(key)} is ${data.length} bytes, more than the 1 MiB a step keeps; a commit ` +
      "over it is marked output_too_large and holds no stdout");
  }
  if (size !== data.length) throw invalid(`the stdout of step ${quote(key)} is ${data.length} bytes, not the ${size} stdout_bytes says`);
  return data;
}

function bytesFrom(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Record the result, only if the reservation is still this call's and its start is current (else exit 4). */
export function commit(obj: Opened, a: ObjectArgs["step_commit"]) {
  checkCall(a.key, a.token);
  const data = stdoutOf(a.key, a.stdout ?? null, a.stdout_bytes, !!a.output_too_large);
  if (!held(obj, a.prompt_id, a.key, a.token, a.start)) throw conflict(lostMessage(a.key));
  const t = now();
  obj.db.run("UPDATE steps SET status = 'done', token = NULL, exit_status = ?, stdout = ?, stdout_bytes = ?," +
    " output_too_large = ?, ended_at = ? WHERE prompt_id = ? AND key = ?",
    a.exit_status, data, a.stdout_bytes, data === null ? 1 : 0, t, a.prompt_id, a.key);
  touch(obj);
  return stepJson(obj, stepOf(obj, a.prompt_id, a.key)!, t);
}

/** CMD exited 75 or was ended by a signal: nothing recorded, the reservation given up (if still this call's). */
export function abandon(obj: Opened, a: ObjectArgs["step_abandon"]) {
  checkCall(a.key, a.token);
  const s = stepOf(obj, a.prompt_id, a.key);
  if (s !== null && s.status === "running" && s.token === a.token) {
    obj.db.run("UPDATE steps SET status = 'abandoned', token = NULL WHERE prompt_id = ? AND key = ?", a.prompt_id, a.key);
    touch(obj, false); // a commit (updated_at), not activity
  }
  const after = stepOf(obj, a.prompt_id, a.key);
  return after === null ? null : stepJson(obj, after);
}

/** `session steps`, one page: the steps by prompt id then seq (one prompt's with PROMPT_ID) after CURSOR ([prompt id,
 *  seq] of the last one read); `next` the cursor of the next page, or null (docs/reference/remote.md §13). */
export function listing(obj: Opened, a: ObjectArgs["steps"]) {
  visible(obj);
  const promptId = a.prompt_id ?? null;
  if (promptId !== null && obj.db.one("SELECT 1 FROM prompts WHERE id = ?", promptId) === null) throw promptMissing(obj, promptId);
  const cursor = a.cursor ?? null;
  if (cursor !== null && cursor.length !== 2) throw invalid("invalid cursor of steps: [prompt id, seq]");
  const after = cursor ?? [0, 0];
  let where = "WHERE (prompt_id > ? OR (prompt_id = ? AND seq > ?))";
  const params: unknown[] = [after[0], after[0], after[1]];
  if (promptId !== null) {
    where += " AND prompt_id = ?";
    params.push(promptId);
  }
  const t = now();
  const rows: ReturnType<typeof stepJson>[] = [];
  let size = 0;
  for (const r of obj.db.iter(`${SELECT} ${where} ORDER BY prompt_id, seq`, ...params)) {
    if (rows.length >= PAGE_ROWS || size >= PAGE_BYTES) {
      const last = rows[rows.length - 1];
      return { rows, next: [last.prompt, last.seq] };
    }
    const s: Step = Object.fromEntries(COLUMNS.map((c, i) => [c, r[i]]));
    size += bytesOf(s.stdout).length;
    rows.push(stepJson(obj, s, t));
  }
  return { rows, next: null };
}

/** `work --json`'s "steps": the keys this start committed (`ran`) and replayed (`replayed`), in seq order. */
export function ofStart(obj: Opened, a: ObjectArgs["step_report"]) {
  const ran: string[] = [];
  const replayed: string[] = [];
  for (const [key, status, attempt, lastReplay] of obj.db.all(
    "SELECT key, status, attempt, last_replay_attempt FROM steps WHERE prompt_id = ? ORDER BY seq", a.prompt_id)) {
    if (status === "done" && attempt === a.start) ran.push(key);
    else if (status === "done" && lastReplay === a.start) replayed.push(key);
  }
  return { ran, replayed };
}
