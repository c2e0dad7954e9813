// Edits that remove or rewrite rows (mirrors durable_cli/core/transcript/edits.py): pop, clear, redact, prune,
// and the Agents SDK's replaceTail.
import { Opened, conflict, event, invalid, notFound, now, say, touch, dumps, DictRow } from "../state";
import { approx } from "../tokens";
import { check } from "../lifecycle";
import { CALLS, COLS, KIND, REDACTED, SEQ, SUPERSEDED, TOKENS, isInt, marks, prepare, refuseRewriteIfOwned, requireVisible, rowJson } from "./row";
import { checkOrigin, insertRows } from "./appends";
import { pinned } from "./context";
import { dropRemovedReplies } from "../hooks";
import type { ObjectArgs } from "../../generated/ops";

export function pop(obj: Opened, a: ObjectArgs["pop"]) {
  const count = a.count ?? 1;
  if (!isInt(count) || count < 1) throw invalid(say("pop_count"));
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be popped");
  check(obj, "write", meta.status);
  if (!obj.db.one("SELECT 1 FROM turns WHERE superseded_by IS NULL LIMIT 1")) throw conflict(say("pop_empty", { what: obj.what }));
  const removed: DictRow[] = [];
  for (let i = 0; i < count; i++) {
    const r = obj.db.one(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT 1`);
    if (!r) break;
    obj.db.run("DELETE FROM turns WHERE seq = ?", r[SEQ]);
    let restored = [0, 0];
    if (r[KIND] === "summary") {
      restored = obj.db.one("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by = ?", r[SEQ])!;
      obj.db.run("UPDATE turns SET superseded_by = NULL WHERE superseded_by = ?", r[SEQ]);
    } else obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", r[SEQ]);
    obj.db.run("UPDATE object SET live_turns = live_turns - 1 + ?, live_tokens = live_tokens - ? + ?", restored[0], r[TOKENS], restored[1]);
    removed.push(rowJson(r));
  }
  dropRemovedReplies(obj); // docs/reference/sessions.md §5.3
  event(obj, "transcript.popped", { seqs: removed.map((r) => r.seq) });
  touch(obj);
  return removed;
}

export function clear(obj: Opened) {
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be cleared");
  const n = obj.db.one("SELECT count(*) FROM turns")![0];
  if (n === 0) return { deleted: 0 };
  check(obj, "write", meta.status);
  obj.db.run("DELETE FROM turns");
  obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq IS NOT NULL");
  obj.db.run("UPDATE object SET live_turns = 0, live_tokens = 0");
  dropRemovedReplies(obj); // docs/reference/sessions.md §5.3
  event(obj, "transcript.cleared", { deleted: n });
  touch(obj);
  return { deleted: n };
}

export function redact(obj: Opened, a: ObjectArgs["redact"]) {
  const meta = requireVisible(obj);
  const row = obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, a.seq);
  if (!row) throw notFound(say("row_not_found", { seq: a.seq, what: obj.what, name: obj.name }));
  refuseRewriteIfOwned(obj, meta, "be redacted");
  const calls = row[CALLS] ? JSON.parse(row[CALLS]).map((c: Record<string, unknown>) => ({ ...c, arguments: "{}" })) : null;
  const parts = [REDACTED];
  for (const c of calls ?? []) parts.push(c.name, c.arguments);
  const count = approx(parts.join("\n"));
  obj.db.run("UPDATE turns SET content = ?, tokens = ?, tool_calls = ?, data = NULL WHERE seq = ?", REDACTED, count, calls ? dumps(calls) : null, a.seq);
  if (row[SUPERSEDED] === null) obj.db.run("UPDATE object SET live_tokens = live_tokens - ? + ?", row[TOKENS], count);
  obj.db.run("UPDATE prompts SET content = ? WHERE turn_seq = ?", REDACTED, a.seq);
  // docs/reference/sessions.md §5.2: a prompt's user turn redacted redacts its steps' stdout (key, status, exit status stay)
  obj.db.run("UPDATE steps SET stdout = NULL, redacted = 1 WHERE prompt_id IN (SELECT id FROM prompts WHERE turn_seq = ?)", a.seq);
  dropRemovedReplies(obj); // docs/reference/sessions.md §5.3
  event(obj, "transcript.redacted", { seq: a.seq });
  touch(obj);  // a redaction is activity (docs/reference/storage.md §3)
  return rowJson(obj.db.one(`SELECT ${COLS} FROM turns WHERE seq = ?`, a.seq)!);
}

const PRUNED = "[pruned]"; // what a prompt's text becomes when prune deletes the turn it became

/** Removals rewrite the search index: merge it so no segment keeps a token of what was removed. */
function dropRemovedTokens(obj: Opened) {
  obj.db.run("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')");
  dropRemovedReplies(obj);
}

export function prune(obj: Opened, a: ObjectArgs["prune"]) {
  const olderThan = a.older_than;
  if (!isInt(olderThan) || olderThan < 0) throw invalid("--older-than must be a non-negative number of seconds");
  refuseRewriteIfOwned(obj, requireVisible(obj), "be pruned");
  const dryRun = !!a.dry_run;
  const cutoff = now() - olderThan * 1000;
  const pin = new Set(pinned(obj).map((r) => r[SEQ]));
  const doomed = new Set<number>();
  for (const [s] of obj.db.all("SELECT seq FROM turns WHERE created_at < ?", cutoff)) if (!pin.has(s)) doomed.add(s);
  let frontier = obj.db.all("SELECT seq FROM turns WHERE kind = 'summary' AND created_at < ?", cutoff).map((r) => r[0]).filter((s) => doomed.has(s));
  // IN lists of at most 100 bound parameters (Cloudflare's limit, enforced by Db everywhere)
  const inParts = (sql: (m: string) => string, seqs: number[]) => {
    const out: number[] = [];
    for (let i = 0; i < seqs.length; i += 100) {
      const part = seqs.slice(i, i + 100);
      for (const r of obj.db.all(sql(marks(part.length)), ...part)) out.push(r[0]);
    }
    return out;
  };
  while (frontier.length) {
    const more = inParts((m) => `SELECT seq FROM turns WHERE superseded_by IN (${m})`, frontier).filter((s) => !doomed.has(s));
    for (const s of more) doomed.add(s);
    frontier = more.length ? inParts((m) => `SELECT seq FROM turns WHERE kind = 'summary' AND seq IN (${m})`, more) : [];
  }
  if (dryRun || doomed.size === 0) return { deleted: doomed.size, dry_run: dryRun };
  for (const s of [...doomed].sort((x, y) => x - y)) {
    // docs/reference/sessions.md §5.2: the steps of the finished prompts whose text goes, all of a prompt's steps at once
    obj.db.run("DELETE FROM steps WHERE prompt_id IN (SELECT id FROM prompts WHERE turn_seq = ? AND status NOT IN ('pending', 'processing'))", s);
    obj.db.run("DELETE FROM turns WHERE seq = ?", s);
    obj.db.run("UPDATE prompts SET content = ?, turn_seq = NULL WHERE turn_seq = ?", PRUNED, s);
  }
  const live = obj.db.one("SELECT count(*), coalesce(sum(tokens), 0) FROM turns WHERE superseded_by IS NULL")!;
  obj.db.run("UPDATE object SET live_turns = ?, live_tokens = ?", live[0], live[1]);
  dropRemovedTokens(obj);
  event(obj, "transcript.pruned", { deleted: doomed.size, older_than_seconds: olderThan });
  touch(obj, false);
  return { deleted: doomed.size, dry_run: false };
}

/** Replace the newest live rows by ROWS in this one transaction, if they are still EXPECTED (their seqs, in logical
 *  order): the Agents SDK's compaction of a suffix (core/transcript/edits.py replace_tail). False, and nothing
 *  changed, when another writer has added, popped or rewritten rows since they were read, or one is a summary. */
export function replaceTail(obj: Opened, a: ObjectArgs["replace_tail"]) {
  const rows = (a.rows ?? []).map((r, i) => prepare(obj, r, `item ${i + 1}: `));
  const origin = checkOrigin(a.origin);
  const meta = requireVisible(obj);
  refuseRewriteIfOwned(obj, meta, "be compacted");
  check(obj, "write", meta.status);
  const expected = a.expected ?? [];
  if (!expected.length) return false;
  const tail = obj.db.all(`SELECT ${COLS} FROM turns WHERE superseded_by IS NULL ORDER BY pos DESC LIMIT ?`, expected.length).reverse();
  if (tail.length !== expected.length || tail.some((r, i) => r[SEQ] !== expected[i] || r[KIND] !== "turn")) return false;
  for (const r of tail) {
    obj.db.run("DELETE FROM turns WHERE seq = ?", r[SEQ]);
    obj.db.run("UPDATE prompts SET turn_seq = NULL WHERE turn_seq = ?", r[SEQ]);
  }
  obj.db.run("UPDATE object SET live_turns = live_turns - ?, live_tokens = live_tokens - ?", tail.length,
    tail.reduce((sum, r) => sum + r[TOKENS], 0));
  dropRemovedTokens(obj);
  event(obj, "transcript.popped", { seqs: [...expected].reverse() });
  if (origin !== null && meta.external_id === null) obj.db.run("UPDATE object SET external_id = ?, adapter = ?", origin[0], origin[1]);
  if (rows.length) insertRows(obj, rows, obj.actor);
  touch(obj);
  return true;
}
