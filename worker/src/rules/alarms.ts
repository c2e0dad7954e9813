// Alarms (mirrors durable_cli/core/alarms.py): TTL expiry deletes the object, lease expiry fails the
// prompt "timed out", elicitation expiry marks the request expired. Fired on wake and by the DO alarm.
import { Opened, nextAlarmAt, now } from "./state";
import { expireLeases } from "./sessions";
import { expire } from "./elicit";

/** "absent" (no object row), "expired" (TTL due: the caller deletes the storage), "fired" or "ok". */
export function fireDue(obj: Opened): string {
  const meta = obj.meta();
  if (meta === null) return "absent";
  const t = now();
  const due = nextAlarmAt(obj.db);
  if (due === null || due > t) return "ok";
  if (meta.expires_at !== null && meta.expires_at <= t) return "expired";
  expireLeases(obj, t);
  expire(obj, t);
  return "fired";
}
