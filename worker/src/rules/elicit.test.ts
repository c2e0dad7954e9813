// Requests bound to one tool call over a real SQLite (../../test/sqlite.ts): what core/elicit.py promises
// (docs/reference/hitl.md §8), and the RFC 8785 hash both runtimes compute alike (core/steps.py args_sha256).
import { test } from "node:test";
import assert from "node:assert/strict";
import { open, session, storage } from "../../test/sqlite";
import { DurableError } from "./state";
import * as elicit from "./elicit";
import * as sessions from "./sessions";

const code = (c: string) => (e: unknown) => e instanceof DurableError && e.code === c;

test("args_sha256 is the SHA-256 of the RFC 8785 form, as Python's rfc8785 computes it", () => {
  // the values core/steps.py args_sha256 gives for the same arguments
  assert.equal(elicit.argsSha256({ to: "a", amount: 42 }), "97856378a1047bafb4642c5092c5829582a1bd0e655c9906d20f5c4d2bed22c3");
  assert.equal(elicit.argsSha256([1.5, 1e21, "é", { b: null, a: true }]), "6a48cc730c15bb55394127b8ef19073ee989105a7dcb938f4cc9016fade39e4e");
  assert.equal(elicit.argsSha256(2 ** 60), "fb2c76e2bae2715eba806c59577ddd5c0845a17edb83d31b0420ab960918fe1e");
  assert.equal(elicit.canonical({ b: [1, "x"], a: { d: 1, c: 2 } }), '{"a":{"c":2,"d":1},"b":[1,"x"]}');
});

test("a bound request offers approve/decline, and only its approvers may answer; the MCP answer is the person's", () => {
  const db = storage();
  const alice = open(db, "alice", { id_scope: "tenant", owner: "acme", scope: "tenant" });
  sessions.create(alice, {});
  sessions.invite(alice, { user: "bob", role: "member" });
  const req = elicit.ask(alice, { prompt: "Pay?", call_id: "c1", args: { to: "a", amount: 42 }, approvers: ["bob"] });
  assert.deepEqual([req.choices, req.approve, req.approvers, req.approved], [["approve", "decline"], ["approve"], ["bob"], null]);
  assert.throws(() => elicit.answer(alice, { request_id: req.id, choice: "approve" }), code("permission_denied"));
  const bob = open(db, "bob", { id_scope: "tenant", owner: "acme", scope: "tenant" });
  const done = elicit.answer(bob, { request_id: req.id, choice: "approve" });
  assert.deepEqual([done.approved, done.answered_by], [true, "bob"]);
  const other = elicit.ask(alice, { prompt: "Refund?", call_id: "c2", args: [1], approvers: ["bob"] });
  const declined = elicit.decline(alice, { request_id: other.id, action: "accept", choice: "decline" });
  assert.deepEqual([declined.approved, declined.answered_by, declined.answer], [false, "bob", "decline"]);
});

test("a binding that breaks a rule is invalid input", () => {
  const obj = session();
  sessions.create(obj, {});
  assert.throws(() => elicit.ask(obj, { prompt: "Pay?", call_id: "c1" }), code("invalid_input"));
  assert.throws(() => elicit.ask(obj, { prompt: "Pay?", approve: ["yes"], choices: ["yes"] }), code("invalid_input"));
  assert.throws(() => elicit.ask(obj, { prompt: "Pay?", call_id: "c1", args: {}, choices: ["yes", "no"] }), code("invalid_input"));
  assert.throws(() => elicit.ask(obj, { prompt: "Pay?", call_id: "c1", args: {}, approve: ["ok"] }), code("invalid_input"));
  assert.deepEqual(elicit.listRequests(obj, {}), []);
});
