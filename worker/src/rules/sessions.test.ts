// The prompt queue and the lifecycle over a real SQLite (../../test/sqlite.ts): what core/sessions.py promises.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../test/sqlite";
import { DurableError, now } from "./state";
import * as sessions from "./sessions";
import * as transcript from "./transcript";

const code = (c: string) => (e: unknown) => e instanceof DurableError && e.code === c;

test("the queue hands out one prompt at a time, oldest first, and a released prompt before the others", () => {
  const obj = session();
  for (const content of ["first", "second", "third"]) sessions.prompt(obj, { content, created: true });
  const a = sessions.nextPrompt(obj, { lease_seconds: 60 })!;
  assert.equal(a.content, "first");
  assert.throws(() => sessions.nextPrompt(obj, { lease_seconds: 60 }), code("conflict")); // one is processing
  assert.equal(sessions.nextPrompt(obj, { lease_seconds: 60, waiting: true }), null);
  sessions.release(obj, { prompt_id: a.id, not_an_attempt: true });
  assert.deepEqual(sessions.queue(obj, { pending_only: true }).map((p) => [p.content, p.position, p.attempts]),
    [["first", 1, 0], ["second", 2, 0], ["third", 3, 0]]);
  const again = sessions.nextPrompt(obj, { lease_seconds: 60 })!;
  assert.equal(again.id, a.id);
  sessions.finish(obj, { prompt_id: again.id, reply: "done" });
  assert.equal(sessions.nextPrompt(obj, { lease_seconds: 60 })!.content, "second");
});

test("finish stores the prompt and its reply as the turn, and the session completes once nothing is queued", () => {
  const obj = session();
  sessions.prompt(obj, { content: "fix the login bug", created: true });
  assert.equal(sessions.show(obj).status, "active");
  const p = sessions.nextPrompt(obj, { lease_seconds: 60 })!;
  assert.throws(() => sessions.finish(obj, { prompt_id: p.id, rows: [{ role: "user", content: "no" }] }), code("invalid_input"));
  const done = sessions.finish(obj, { prompt_id: p.id, reply: "fixed", attempt: 1 });
  assert.equal(done.status, "completed");
  const shown = transcript.show(obj, { all_rows: true }) as { rows: { role: string; content: string }[] };
  assert.deepEqual(shown.rows.map((r) => [r.role, r.content]), [["user", "fix the login bug"], ["assistant", "fixed"]]);
  assert.equal(sessions.show(obj).status, "completed");
  assert.throws(() => sessions.finish(obj, { prompt_id: p.id, reply: "twice" }), code("conflict"));
});

test("an expired lease is retried up to max_attempts, then the prompt fails as timed out", () => {
  const obj = session();
  sessions.prompt(obj, { content: "flaky", created: true });
  const first = sessions.nextPrompt(obj, { lease_seconds: 1, on_expiry: "retry", max_attempts: 2 })!;
  assert.equal(sessions.expireLeases(obj, now() + 2000), 1);
  assert.equal(sessions.getPrompt(obj, { prompt_id: first.id }).status, "pending");
  const second = sessions.nextPrompt(obj, { lease_seconds: 1, on_expiry: "retry", max_attempts: 2 })!;
  assert.equal(second.attempts, 2);
  assert.throws(() => sessions.renew(obj, { prompt_id: second.id, lease_seconds: 60, attempt: 1 }), code("conflict")); // a lost lease
  sessions.expireLeases(obj, now() + 2000);
  const failed = sessions.getPrompt(obj, { prompt_id: first.id });
  assert.deepEqual([failed.status, failed.error], ["failed", "timed out"]);
  assert.equal(sessions.show(obj).status, "failed");
});

test("archive waits for an empty queue; cancel fails what is queued and a cancelled session is not archived", () => {
  const obj = session();
  sessions.prompt(obj, { content: "one", created: true });
  assert.throws(() => sessions.archive(obj), code("conflict"));
  const cancelled = sessions.cancel(obj);
  assert.equal(cancelled.status, "cancelled");
  assert.deepEqual(sessions.queue(obj, {}).map((p) => [p.status, p.error]), [["failed", "cancelled"]]);
  assert.throws(() => sessions.archive(obj), (e) => e instanceof DurableError && e.code === "conflict" && /cancelled/.test(e.message));
  sessions.prompt(obj, { content: "again" }); // a prompt reopens it
  assert.equal(sessions.show(obj).status, "active");
});

test("only an owner invites, into a tenant session only; a member cannot archive", () => {
  const tenant = { id_scope: "tenant", owner: "acme", scope: "tenant" };
  const obj = session("alice", tenant);
  sessions.create(obj, {});
  assert.throws(() => sessions.invite(obj, { user: "bob", role: "admin" as "owner" }), code("invalid_input"));
  sessions.invite(obj, { user: "bob" });
  assert.deepEqual(sessions.participants(obj).map((p: { user: string; role: string }) => [p.user, p.role]), [["alice", "owner"], ["bob", "member"]]);
  const bob = Object.assign(Object.create(Object.getPrototypeOf(obj)), obj, { actor: "bob" });
  assert.throws(() => sessions.archive(bob), code("permission_denied"));
  assert.throws(() => sessions.invite(session(), { user: "bob" }), code("not_found"));
});
