// Schedules (mirrors durable_cli/core/schedules.py, docs/reference/sessions.md §5.3). The Worker lists and deletes
// them; creating one, and firing them from the object's alarm, are not built remotely yet.
import { Opened, denied, event, invalid, iso, notFound, say, touch } from "./state";
import { requireSession } from "./lifecycle";
import type { ObjectArgs } from "../generated/ops";

const COLUMNS = ["id", "kind", "content", "source", "author", "at", "every", "cron", "tz", "next_at", "last_fired_at",
  "last_prompt_id", "fired", "missed", "request_id", "created_at"];
const TIMES = ["at", "next_at", "last_fired_at", "created_at"];

function scheduleJson(r: unknown[]) {
  const s: Record<string, unknown> = {};
  COLUMNS.forEach((k, i) => (s[k] = r[i]));
  for (const k of TIMES) s[k] = iso(s[k] as number | null);
  return s;
}

export function create(_obj: Opened, _a: ObjectArgs["schedule"]): never {
  throw invalid("schedules are not available on a remote store yet: create them on a local one");
}

export function schedules(obj: Opened, _a: ObjectArgs["schedules"]) {
  requireSession(obj);
  obj.requireVisible();
  return obj.db.all(`SELECT ${COLUMNS.join(", ")} FROM schedules ORDER BY id`).map(scheduleJson);
}

export function unschedule(obj: Opened, a: ObjectArgs["unschedule"]) {
  requireSession(obj);
  obj.requireVisible();
  const r = obj.db.one(`SELECT ${COLUMNS.join(", ")} FROM schedules WHERE id = ?`, a.schedule_id);
  if (!r) throw notFound(say("schedule_not_found", { id: a.schedule_id, what: obj.what, name: obj.name }));
  const found = scheduleJson(r);
  if (found.author !== obj.actor && obj.role() !== "owner") throw denied(say("unschedule_denied", { id: a.schedule_id, what: obj.what }));
  obj.db.run("DELETE FROM schedules WHERE id = ?", a.schedule_id);
  event(obj, "schedule.deleted", { schedule_id: a.schedule_id });
  touch(obj);
  return found;
}
