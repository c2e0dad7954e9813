// One object's retention: its TTL (mirrors durable_cli/core/retention.py ttl()).
import { Opened, event, iso, touch } from "./state";
import { requireSession } from "./lifecycle";
import type { ObjectArgs } from "../generated/ops";

export function ttl(obj: Opened, a: ObjectArgs["ttl"]) {
  let meta = requireSession(obj);
  obj.requireVisible();
  if (a.clear || a.seconds != null) {
    const next = a.clear ? null : a.seconds!;
    if (next !== meta.ttl_seconds) {
      obj.db.run("UPDATE object SET ttl_seconds = ?, expires_at = CASE WHEN ? IS NULL THEN NULL ELSE last_active_at + ? * 1000 END", next, next, next);
      event(obj, "ttl.set", { ttl_seconds: next });
      touch(obj, false);
    }
    meta = obj.meta()!;
  }
  return { name: meta.name, ttl_seconds: meta.ttl_seconds, expires_at: iso(meta.expires_at) };
}

/** `delete NAME` (mirrors across/retention.py delete): the receipt; the DO then erases the whole storage
 *  (deleteAll) once this transaction has committed. A tenant object is deleted by an owner only. */
export function remove(obj: Opened) {
  const meta = requireSession(obj);
  obj.requireVisible();
  if (obj.address.id_scope === "tenant") obj.requireOwner("delete it");
  return { deleted: [{ id: meta.id, owner: meta.owner, name: meta.name }], skipped: [], changed: [], dry_run: false };
}
