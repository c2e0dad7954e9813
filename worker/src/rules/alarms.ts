// Alarms (mirrors durable_cli/core/alarms.py): TTL expiry deletes the object, lease expiry fails the
// prompt "timed out", elicitation expiry marks the request expired, a due schedule enqueues its prompt
// (docs/reference/sessions.md §5.3). Fired on wake and by the DO alarm; deliveries are the alarm's to send (../deliver.ts).
import { Opened, nextAlarmAt, now } from "./state";
import { expireLeases } from "./sessions";
import { expire } from "./elicit";
import * as schedules from "./schedules";

/** "absent" (no object row), "expired" (TTL due: the caller deletes the storage), "fired" or "ok". */
export function fireDue(obj: Opened): string {
  const meta = obj.meta();
  if (meta === null) return "absent";
  const t = now();
  const due = nextAlarmAt(obj.db, false);
  if (due === null || due > t) return "ok";
  if (meta.expires_at !== null && meta.expires_at <= t) return "expired";
  expireLeases(obj, t);
  expire(obj, t);
  if (obj.db.one("SELECT 1 FROM schedules WHERE next_at <= ? LIMIT 1", t)) schedules.fireDue(obj, t);
  return "fired";
}
