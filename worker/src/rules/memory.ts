// Remembered facts with provenance, in the user's reserved object (mirrors durable_cli/core/memory.py).
import { DurableError, Opened, createObject, invalid, iso, notFound, now, say, validName, Row } from "./state";
import type { ObjectArgs } from "../generated/ops";

const SOURCES = ["user", "model", "external"];
export const COLS = "key, value, source, confirmed, created_at, confirmed_at, expires_at";

export const factJson = (r: Row) => ({
  key: r[0], value: r[1], source: r[2], confirmed: !!r[3], created_at: iso(r[4]), confirmed_at: iso(r[5]), expires_at: iso(r[6]),
});
const visible = (r: Row, t: number) => !!r[3] && (r[6] === null || r[6] > t);

function checkSet(key: string, value: string, source: string, confirmed: boolean) {
  validName(key, "memory key");
  if (!SOURCES.includes(source)) throw invalid(say("invalid_memory_source", { source }));
  if (source === "model" && confirmed) throw invalid(say("model_fact_confirmed"));
  if (value === "") throw invalid(say("empty_value"));
}

export function setFact(obj: Opened, a: ObjectArgs["set_fact"]) {
  const source = a.source ?? "user", confirmed = !!a.confirmed;
  checkSet(a.key, a.value, source, confirmed);
  const t = now();
  if (obj.meta() === null) createObject(obj, "active");
  // the old row deleted first (its value's chunks with it: REPLACE's delete fires no trigger), then the new one
  obj.db.run("DELETE FROM facts WHERE key = ?", a.key);
  obj.db.run(`INSERT INTO facts (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    a.key, a.value, source, confirmed ? 1 : 0, t, confirmed ? t : null, a.expires_seconds ? t + a.expires_seconds * 1000 : null);
  return factJson(obj.db.one(`SELECT ${COLS} FROM facts WHERE key = ?`, a.key)!);
}

function row(obj: Opened, key: string) {
  validName(key, "memory key");
  return obj.meta() ? obj.db.one(`SELECT ${COLS} FROM facts WHERE key = ?`, key) : null;
}

export function getFact(obj: Opened, a: ObjectArgs["get_fact"]) {
  const r = row(obj, a.key);
  if (!r) throw notFound(say("fact_not_found", { key: a.key }));
  if (!a.all_facts && !r[3]) throw notFound(say("fact_unconfirmed", { key: a.key }));
  if (!a.all_facts && !visible(r, now())) throw notFound(say("fact_expired", { key: a.key }));
  return factJson(r);
}

export function listFacts(obj: Opened, a: ObjectArgs["facts"]) {
  if (obj.meta() === null) return [];
  const t = now();
  return obj.db.all(`SELECT ${COLS} FROM facts ORDER BY key`).filter((r) => a.all_facts || visible(r, t)).map(factJson);
}

export function confirm(obj: Opened, a: ObjectArgs["confirm_fact"]) {
  const r = row(obj, a.key);
  if (!r) throw notFound(say("fact_not_found", { key: a.key }));
  if (!r[3]) {
    // an expired fact is not confirmed (docs/reference/ui.md §16.4)
    if (r[6] !== null && r[6] <= now()) throw new DurableError(say("fact_expired_confirm", { key: a.key }), "conflict");
    obj.db.run("UPDATE facts SET confirmed = 1, confirmed_at = ? WHERE key = ?", now(), a.key);
  }
  return factJson(obj.db.one(`SELECT ${COLS} FROM facts WHERE key = ?`, a.key)!);
}

export function forgetFact(obj: Opened, a: ObjectArgs["forget_fact"]) {
  const r = row(obj, a.key);
  if (!r) throw notFound(say("fact_not_found", { key: a.key }));
  obj.db.run("DELETE FROM facts WHERE key = ?", a.key);
  return factJson(r);
}
