// Schedules (mirrors durable_cli/core/schedules.py, docs/reference/sessions.md §5.3): prompts that enqueue themselves
// later. Created, listed and deleted by requests; fired by any wake and by the object's one Durable Object alarm
// (alarms.ts, object.ts). One firing enqueues at most one prompt, for the latest due time that has passed (the
// catch-up rule), never while the schedule's last prompt is unfinished (the overlap rule), never while the session
// is archived. Cron expressions are parsed and stepped by `croner` (the Python side's `cronsim`), time zones by the
// runtime's Intl (IANA zones); both pass the due times of durable_cli/contract/vectors.json "cron".
import { createHash } from "node:crypto";
import { Cron } from "croner";
import { Opened, conflict, createObject, denied, event, invalid, iso, notFound, now, pyRepr, say, touch } from "./state";
import { check, requireSession, validRequestId } from "./lifecycle";
import { checkText } from "./transcript/row";
import { strip, words } from "./text";
import * as durations from "./durations";
import type { ObjectArgs } from "../generated/ops";

const COLUMNS = ["id", "kind", "content", "source", "author", "at", "every", "cron", "tz", "next_at", "last_fired_at",
  "last_prompt_id", "fired", "missed", "request_id", "created_at"];
const TIMES = ["at", "next_at", "last_fired_at", "created_at"];
export const RESERVED_PREFIX = "schedule:";
const MAX_SCHEDULES = 20;
const MIN_EVERY = 60; // seconds: `--every` is at least 1m
const MAX_AHEAD_MS = 36500 * 86400 * 1000;
const CRON_HORIZON_DAYS = 3653; // "no due time in the next 10 years" is exit 2
const DEFAULT_SOURCE = "schedule";

// RFC 3339 with an explicit offset (docs/reference/sessions.md §5.3 TIME)
const TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;
const ALIASES: Record<string, string> = { "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *" };
const NAMES: Record<string, string> = { month: "JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC", dow: "SUN|MON|TUE|WED|THU|FRI|SAT" };
const RANGES: [number, number, string | null][] = [[0, 59, null], [0, 23, null], [1, 31, null], [1, 12, "month"], [0, 7, "dow"]];

/** TIME as epoch ms (kept to the millisecond); exit 2 for anything but RFC 3339 with an explicit offset. */
export function parseTime(text: unknown, what = "--at"): number {
  const m = typeof text === "string" ? TIME.exec(text) : null;
  if (m === null) {
    throw invalid(`invalid ${what} ${pyRepr(text)}: use an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00Z or 2026-12-01T09:00:00+01:00`);
  }
  const [, year, month, day, hour, minute, second, frac, offset] = m;
  const bad = (why: string) => invalid(`invalid ${what} ${pyRepr(text)}: ${why}`);
  let offsetMin = 0;
  if (offset !== "Z" && offset !== "z") {
    const sign = offset[0] === "-" ? -1 : 1;
    if (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4, 6)) > 59) {
      throw bad(`the offset ${offset} is out of range (hours 00-23, minutes 00-59)`);
    }
    offsetMin = sign * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6)));
  }
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number);
  if (y < 1) throw bad(`year ${y} is out of range`);
  if (mo < 1 || mo > 12) throw bad("month must be in 1..12");
  const days = new Date(Date.UTC(2000, mo, 0)).getUTCDate() - (mo === 2 && !(y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) ? 1 : 0);
  if (d < 1 || d > days) throw bad("day is out of range for month");
  if (h > 23) throw bad("hour must be in 0..23");
  if (mi > 59) throw bad("minute must be in 0..59");
  if (s > 59) throw bad("second must be in 0..59");
  const utc = new Date(0);
  utc.setUTCFullYear(y, mo - 1, d);
  utc.setUTCHours(h, mi, s, 0);
  return utc.getTime() - offsetMin * 60000 + Number((frac ?? "0").padEnd(3, "0").slice(0, 3));
}

const ZONE_BAD = (tz: unknown) => `unknown time zone ${pyRepr(tz)}: use an IANA name such as UTC, Europe/Paris or America/New_York`;

/** An IANA zone name the runtime's zone database knows (Intl), spelled as the database spells it; exit 2 else. */
export function validTz(tz: unknown): string {
  if (typeof tz !== "string" || !tz || [...tz].length > 255 || !/^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+)*$/.test(tz)) throw invalid(ZONE_BAD(tz));
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw invalid(ZONE_BAD(tz));
  }
  // Intl takes any case ("europe/paris"); the zone database's names are case-sensitive
  if (resolved.toLowerCase() === tz.toLowerCase() && resolved !== tz && !(tz === "UTC" || tz === "Etc/UTC")) throw invalid(ZONE_BAD(tz));
  return tz;
}

function fieldOk(field: string, low: number, high: number, names: string | null): boolean {
  const value = `(?:\\d{1,2}${names ? `|${NAMES[names]}` : ""})`;
  const item = new RegExp(`^(?:\\*|${value}(?:-${value})?)(?:/\\d{1,2})?$`, "i");
  for (const part of field.split(",")) {
    if (!item.test(part)) return false;
    for (const n of part.split("/")[0].match(/\d+/g) ?? []) if (Number(n) < low || Number(n) > high) return false;
    if (part.includes("/") && Number(part.split("/")[1]) < 1) return false;
    if (part.includes("/") && !part.startsWith("*") && !part.includes("-")) return false; // `a/n` is not in the dialect
  }
  return true;
}

/** The five fields croner is given (an alias resolved); exit 2 for anything outside the dialect. */
export function validCron(expr: unknown): string {
  const bad = `invalid --cron ${pyRepr(expr)}: use five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly`;
  if (typeof expr !== "string" || [...expr].length > 256) throw invalid(bad);
  const text = strip(expr);
  if (text.startsWith("@")) {
    const alias = ALIASES[text.toLowerCase()];
    if (alias === undefined) throw invalid(bad);
    return alias;
  }
  const fields = words(text);
  if (fields.length !== 5 || !fields.every((f, i) => fieldOk(f, ...RANGES[i]))) throw invalid(bad);
  return fields.join(" ");
}

/** The due times (epoch ms) strictly after AFTER_MS, in order, from croner; stops where croner finds none. A
 *  wall time skipped by a spring-forward fires at the first instant after the gap and a repeated one once, unless
 *  the minute or hour field is a wildcard or a step ("no-wildcard": cronsim's rule on the vectors). */
export function* cronTimes(fields: string, tz: string, afterMs: number): Generator<number> {
  const cron = new Cron(fields, { timezone: tz, mode: "5-part", domAndDow: false, fixedTimeRule: "no-wildcard" });
  let last = afterMs;
  for (;;) {
    const next = cron.nextRun(new Date(last));
    if (next === null) return;
    const ms = next.getTime();
    if (ms <= last) return; // never loop on a time that does not move
    last = ms;
    yield ms;
  }
}

export function cronNext(fields: string, tz: string, afterMs: number, horizonMs: number | null = null): number | null {
  for (const ms of cronTimes(fields, tz, afterMs)) return horizonMs !== null && ms > horizonMs ? null : ms;
  return null;
}

type Options = { at?: unknown; after?: unknown; every?: unknown; cron?: unknown; tz?: unknown };
export type Planned = { kind: string; at: number | null; every: number | null; cron: string | null; tz: string | null; next_at: number };

/** The schedule's kind and times for the options as given; exit 2 for a bad combination or value. */
export function plan(t: number, o: Options): Planned {
  const { at = null, after = null, every = null, cron = null, tz = null } = o;
  let given = ([["--at", at], ["--in", after], ["--every", every], ["--cron", cron]] as [string, unknown][])
    .filter(([, v]) => v !== null).map(([k]) => k);
  if (given.join() === "--at,--every") given = ["--every"];
  if (given.length !== 1) {
    throw invalid("give one of --at TIME, --in DUR, --every DUR (with --at TIME for its first time) or --cron EXPR" +
      (given.length ? ` (not ${given.join(" and ")})` : ""));
  }
  if (tz !== null && cron === null) throw invalid("--tz is for --cron only");
  let first: number | null = null;
  if (at !== null) {
    first = parseTime(at);
    if (first <= t) throw invalid(`--at ${at} is in the past`);
    if (first - t > MAX_AHEAD_MS) throw invalid(`--at ${at} is more than 36500 days ahead`);
  }
  if (after !== null) {
    first = t + durations.parse(after, "--in") * 1000;
    return { kind: "at", at: first, every: null, cron: null, tz: null, next_at: first };
  }
  if (every !== null) {
    const seconds = durations.parse(every, "--every");
    if (seconds < MIN_EVERY) throw invalid(`--every ${every} is too short: the minimum is 1m`);
    first = first !== null ? first : t + seconds * 1000;
    return { kind: "every", at: first, every: seconds, cron: null, tz: null, next_at: first };
  }
  if (cron !== null) {
    const zone = tz === null ? "UTC" : tz;
    const fields = validCron(cron);
    const due = cronNext(fields, validTz(zone), t, t + CRON_HORIZON_DAYS * 86400 * 1000);
    if (due === null) throw invalid(`--cron ${pyRepr(cron)} has no due time in the next 10 years`);
    return { kind: "cron", at: null, every: null, cron: cron as string, tz: zone as string, next_at: due };
  }
  return { kind: "at", at: first, every: null, cron: null, tz: null, next_at: first! };
}

function scheduleJson(r: unknown[]) {
  const s: Record<string, unknown> = {};
  COLUMNS.forEach((k, i) => (s[k] = r[i]));
  for (const k of TIMES) s[k] = iso(s[k] as number | null);
  return s;
}

const row = (obj: Opened, id: number) => obj.db.one(`SELECT ${COLUMNS.join(", ")} FROM schedules WHERE id = ?`, id);

/** core/schedules._request_hash: json.dumps(..., separators=(",", ":"), ensure_ascii=False), hashed. */
function requestHash(a: ObjectArgs["schedule"]): string {
  const text = JSON.stringify([a.content, a.source ?? null, a.at ?? null, a.after ?? null, a.every ?? null, a.cron ?? null, a.tz ?? null]);
  return createHash("sha256").update(text).digest("hex");
}

/** `session prompt NAME TEXT --at/--in/--every/--cron`: store a schedule (nothing is queued, the status does not
 *  change); event `schedule.created`. */
export function create(obj: Opened, a: ObjectArgs["schedule"]) {
  checkText(obj, a.content);
  validRequestId(a.request_id);
  if (typeof a.request_id === "string" && a.request_id.startsWith(RESERVED_PREFIX)) throw invalid(say("reserved_request_id", { request_id: a.request_id }));
  const t = now();
  const planned = plan(t, a);
  const digest = requestHash(a);
  let meta = obj.meta();
  if (meta === null) {
    if (!a.created) throw notFound(obj.missing);
    createObject(obj, "created");
    meta = obj.meta()!;
  } else obj.requireVisible();
  if (a.request_id != null) {
    const found = obj.db.one("SELECT id, request_hash FROM schedules WHERE request_id = ?", a.request_id);
    if (found) {
      if (found[1] !== digest) throw conflict(`request id ${pyRepr(a.request_id)} was already used with another schedule in ${obj.what}`);
      return scheduleJson(row(obj, found[0])!);
    }
  }
  check(obj, "prompt", meta.status); // archived: exit 4, nothing stored
  const count = Number(obj.db.one("SELECT count(*) FROM schedules")![0]);
  if (count >= MAX_SCHEDULES) throw conflict(`too many schedules: ${obj.what} has ${count} (at most ${MAX_SCHEDULES}); unschedule one first`);
  const id = obj.db.one(
    "INSERT INTO schedules (kind, content, source, author, at, every, cron, tz, next_at, request_id, request_hash, created_at)" +
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    planned.kind, a.content, a.source ?? DEFAULT_SOURCE, obj.actor, planned.at, planned.every, planned.cron, planned.tz,
    planned.next_at, a.request_id ?? null, digest, t)![0];
  event(obj, "schedule.created", { schedule_id: id, kind: planned.kind, next_at: iso(planned.next_at) });
  touch(obj);
  return scheduleJson(row(obj, id)!);
}

export function schedules(obj: Opened, _a: ObjectArgs["schedules"]) {
  requireSession(obj);
  obj.requireVisible();
  return obj.db.all(`SELECT ${COLUMNS.join(", ")} FROM schedules ORDER BY id`).map(scheduleJson);
}

export function unschedule(obj: Opened, a: ObjectArgs["unschedule"]) {
  requireSession(obj);
  obj.requireVisible();
  const r = row(obj, a.schedule_id);
  if (!r) throw notFound(say("schedule_not_found", { id: a.schedule_id, what: obj.what, name: obj.name }));
  const found = scheduleJson(r);
  if (found.author !== obj.actor && obj.role() !== "owner") throw denied(say("unschedule_denied", { id: a.schedule_id, what: obj.what }));
  obj.db.run("DELETE FROM schedules WHERE id = ?", a.schedule_id);
  event(obj, "schedule.deleted", { schedule_id: a.schedule_id });
  touch(obj);
  return found;
}

/** A schedule's row as stored (COLUMNS; times in ms). */
type Stored = { id: number; kind: string; content: string; source: string; author: string; at: number; every: number; cron: string;
  tz: string; next_at: number; last_fired_at: number | null; last_prompt_id: number | null; fired: number; missed: number;
  request_id: string | null; created_at: number };

/** [latest due time <= T, how many due times <= T from next_at on, the first due time after T or null]. */
function dueTimes(s: Stored, t: number): [number, number, number | null] {
  if (s.kind === "at") return [s.next_at, 1, null];
  if (s.kind === "every") {
    const step = s.every * 1000;
    const k = Math.floor((t - s.at) / step);
    const latest = s.at + k * step;
    return [latest, Math.floor((latest - s.next_at) / step) + 1, latest + step];
  }
  const [fields, tz] = [validCron(s.cron), validTz(s.tz)];
  let [latest, count, n] = [s.next_at as number, 1, 0];
  for (const due of cronTimes(fields, tz, s.next_at)) {
    if (due > t) return [latest, count, due];
    if (n++ >= 100000) return [latest, count, cronNext(fields, tz, t)]; // an every-minute expression after a very long gap
    [latest, count] = [due, count + 1];
  }
  return [latest, count, null];
}

/** The alarm (inside the caller's transaction): each schedule with next_at <= T fires once; returns how many
 *  prompts were queued (core/schedules.fire_due). */
export function fireDue(obj: Opened, t: number): number {
  let queued = 0;
  const due = obj.db.all(`SELECT ${COLUMNS.join(", ")} FROM schedules WHERE next_at <= ? ORDER BY next_at, id`, t);
  for (const r of due) {
    const s = Object.fromEntries(COLUMNS.map((k, i) => [k, r[i]])) as unknown as Stored;
    const [latest, count, following] = dueTimes(s, t);
    const meta = obj.meta()!;
    let reason: string | null = null;
    if (meta.status === "archived") reason = "archived";
    else if (s.kind !== "at" && s.last_prompt_id !== null &&
      obj.db.one("SELECT 1 FROM prompts WHERE id = ? AND status IN ('pending', 'processing')", s.last_prompt_id)) reason = "unfinished";
    else if (Number(obj.db.one("SELECT count(*) FROM prompts WHERE status IN ('pending', 'processing')")![0]) >= obj.config.max_unfinished) reason = "queue_full";
    const requestId = `${RESERVED_PREFIX}${s.id}:${iso(latest)}`;
    if (reason === null && obj.db.one("SELECT 1 FROM prompts WHERE request_id = ?", requestId)) reason = "unfinished"; // never twice
    if (reason !== null) {
      event(obj, "schedule.missed", { schedule_id: s.id, due_at: iso(latest), reason, count }, null);
      if (following === null) obj.db.run("DELETE FROM schedules WHERE id = ?", s.id);
      else obj.db.run("UPDATE schedules SET next_at = ?, missed = missed + ? WHERE id = ?", following, count, s.id);
      touch(obj, false);
      continue;
    }
    const to = check(obj, "prompt", meta.status)!;
    const promptId = obj.db.one("INSERT INTO prompts (status, content, author, source, request_id, created_at, schedule_id)" +
      " VALUES ('pending', ?, ?, ?, ?, ?, ?) RETURNING id", s.content, s.author, s.source, requestId, t, s.id)![0];
    event(obj, "prompt.queued", { prompt_id: promptId }, s.author);
    event(obj, "schedule.fired", { schedule_id: s.id, prompt_id: promptId, due_at: iso(latest), missed: count - 1 }, s.author);
    if (following === null) obj.db.run("DELETE FROM schedules WHERE id = ?", s.id);
    else {
      obj.db.run("UPDATE schedules SET next_at = ?, last_fired_at = ?, last_prompt_id = ?, fired = fired + 1, missed = missed + ? WHERE id = ?",
        following, latest, promptId, count - 1, s.id);
    }
    if (to !== meta.status) {
      obj.db.run("UPDATE object SET status = ?", to);
      event(obj, "session.status", { from: meta.status, to }, s.author);
    }
    touch(obj);
    queued++;
  }
  return queued;
}
