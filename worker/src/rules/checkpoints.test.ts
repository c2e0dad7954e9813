// A LangGraph thread's checkpoints in its object (rules/checkpoints.ts), over a real SQLite.
import { test } from "node:test";
import assert from "node:assert/strict";
import { session } from "../../test/sqlite";
import { DurableError } from "./state";
import { checkpointRows, deleteThread, putCheckpoint, putWrites, writeRows } from "./checkpoints";
import * as transcript from "./transcript";

const b64 = (s: string) => btoa(s);
const put = (obj: ReturnType<typeof session>, id: string, extra: Record<string, unknown> = {}) =>
  putCheckpoint(obj, { external_id: "thread-1", ns: "", checkpoint_id: id, type: "msgpack", blob: b64(`state ${id}`), metadata: "{}", ...extra });

test("the first put creates the thread's object; checkpoints read newest first, their bytes as base64", () => {
  const obj = session();
  put(obj, "0001");
  put(obj, "0002", { parent_id: "0001" });
  const meta = obj.meta()!;
  assert.deepEqual([meta.external_id, meta.adapter, meta.status], ["thread-1", "langgraph", "active"]);
  const rows = checkpointRows(obj, {}) as unknown[][];
  assert.deepEqual(rows.map((r) => [r[1], r[2], atob(r[4] as string)]), [["0002", "0001", "state 0002"], ["0001", null, "state 0001"]]);
  assert.deepEqual((checkpointRows(obj, { limit: 1 }) as unknown[][]).map((r) => r[1]), ["0002"]);
  assert.deepEqual((checkpointRows(obj, { before: "0002" }) as unknown[][]).map((r) => r[1]), ["0001"]);
});

test("keep drops the oldest checkpoints with their pending writes", () => {
  const obj = session();
  for (const id of ["01", "02", "03"]) {
    put(obj, id);
    putWrites(obj, { external_id: "thread-1", ns: "", checkpoint_id: id, writes: [["task", "", 0, "channel", "msgpack", b64("w")]] });
  }
  put(obj, "04", { keep: 2 });
  assert.deepEqual((checkpointRows(obj, {}) as unknown[][]).map((r) => r[1]), ["04", "03"]);
  assert.deepEqual(writeRows(obj, { ns: "", checkpoint_id: "01" }), []);
  assert.equal(writeRows(obj, { ns: "", checkpoint_id: "03" }).length, 1);
});

test("mirrored messages are appended to the transcript once, and the saver's rows are not rewritten by hand", () => {
  const obj = session();
  const mirror = [["m1", { role: "user", content: "hi" }], ["m2", { role: "assistant", content: "hello" }]];
  put(obj, "01", { mirror });
  put(obj, "02", { mirror: [...mirror, ["m3", { role: "user", content: "again" }]] });
  const shown = transcript.show(obj, { all_rows: true }) as { rows: { content: string }[] };
  assert.deepEqual(shown.rows.map((r) => r.content), ["hi", "hello", "again"]);
  assert.throws(() => transcript.pop(obj, {}), (e) => e instanceof DurableError && e.code === "conflict");
});

test("after delete_thread, a write carrying a checkpoint from before the delete is refused", () => {
  const obj = session();
  put(obj, "0005");
  const grave = deleteThread(obj);
  assert.deepEqual([grave.last_checkpoint, grave.members], ["0005", ["alice"]]);
  const fresh = session();
  const late = { __tomb: { last_checkpoint: "0005" }, __tomb_fetched: true };
  assert.throws(() => put(fresh, "0006", { parent_id: "0004", ...late }), (e) => e instanceof DurableError && e.code === "conflict");
  put(fresh, "0006", { parent_id: "0006", ...late }); // a new thread's own history goes on
  assert.equal((checkpointRows(fresh, {}) as unknown[][]).length, 1);
  assert.throws(() => put(fresh, "0007", { metadata: '{"a": 1, "a": 2}' }), (e) => e instanceof DurableError && e.code === "invalid_input");
});
