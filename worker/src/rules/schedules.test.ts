// Firing schedules in the Worker (docs/reference/sessions.md §5.3, as core/schedules.fire_due), over a real SQLite
// (../../test/sqlite.ts), at chosen times: one prompt per firing, for the latest due time (the catch-up rule), the
// reserved request id of that due time, never while the schedule's last prompt is unfinished, nothing while archived.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../test/sqlite";
import * as schedules from "./schedules";
import * as sessions from "./sessions";

const HOUR = 3600000;
// what these tests read of a schedule, a prompt or a schedule.missed event
type Row = { id: number; next_at: string; content: string; source: string; request_id: string; schedule_id: number;
  fired: number; missed: number; last_fired_at: string; reason: string };
const missed = (obj: ReturnType<typeof session>): Row[] =>
  obj.db.all("SELECT data FROM events WHERE type = 'schedule.missed' ORDER BY seq").map((r: unknown[]) => JSON.parse(r[0] as string));

test("after a gap an every-hour schedule queues one prompt, for the latest due time, and counts the rest", () => {
  const obj = session();
  sessions.create(obj, {});
  const made = schedules.create(obj, { content: "tick", every: "1h" }) as unknown as Row;
  const first = Date.parse(made.next_at);
  const t = first + 9 * HOUR + 60000; // ten due times have passed
  assert.equal(schedules.fireDue(obj, t), 1);
  const [p] = sessions.queue(obj, {}) as unknown as Row[];
  const latest = new Date(first + 9 * HOUR).toISOString();
  assert.deepEqual([p.content, p.source, p.request_id, p.schedule_id], ["tick", "schedule", `schedule:${made.id}:${latest}`, made.id]);
  const [s] = schedules.schedules(obj, {}) as unknown as Row[];
  assert.deepEqual([s.fired, s.missed, s.last_fired_at, s.next_at], [1, 9, latest, new Date(first + 10 * HOUR).toISOString()]);
  assert.equal(sessions.show(obj).status, "active"); // a firing reopens the session

  // its prompt still pending at the next due time: missed, "unfinished", and the series moves on
  assert.equal(schedules.fireDue(obj, first + 10 * HOUR + 1), 0);
  assert.deepEqual(missed(obj), [{ schedule_id: made.id, due_at: new Date(first + 10 * HOUR).toISOString(), reason: "unfinished", count: 1 }]);
  assert.equal((sessions.queue(obj, {}) as unknown as Row[]).length, 1);
});

test("a one-shot fires once and is deleted; an archived session's due times are missed, not queued later", () => {
  const obj = session();
  sessions.create(obj, {});
  const once = schedules.create(obj, { content: "once", after: "1m" }) as unknown as Row;
  const every = schedules.create(obj, { content: "again", every: "1h" }) as unknown as Row;
  assert.equal(schedules.fireDue(obj, Date.parse(once.next_at)), 1);
  assert.deepEqual((schedules.schedules(obj, {}) as unknown as Row[]).map((s) => s.id), [every.id]);
  const [p] = sessions.queue(obj, {}) as unknown as Row[];
  sessions.dequeue(obj, { prompt_id: p.id });
  sessions.archive(obj);
  const due = Date.parse(every.next_at);
  assert.equal(schedules.fireDue(obj, due + 1), 0);
  assert.deepEqual(missed(obj).map((m: Row) => m.reason), ["archived"]);
  assert.equal(Date.parse((schedules.schedules(obj, {}) as unknown as Row[])[0].next_at), due + HOUR);
});

test("a cron schedule fires at the wall-clock time croner names in its zone", () => {
  const obj = session();
  sessions.create(obj, {});
  const made = schedules.create(obj, { content: "standup", cron: "30 2 * * *", tz: "Europe/Paris" }) as unknown as Row;
  const due = Date.parse(made.next_at);
  assert.equal(new Date(due).toLocaleString("en-GB", { timeZone: "Europe/Paris", hour: "2-digit", minute: "2-digit" }).slice(-5), "02:30");
  assert.equal(schedules.fireDue(obj, due), 1);
  const [s] = schedules.schedules(obj, {}) as unknown as Row[];
  assert.ok([23, 24, 25].includes((Date.parse(s.next_at) - due) / HOUR)); // the next day's 02:30 (a daylight-saving night: an hour off)
});
