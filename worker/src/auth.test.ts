// The Worker's configuration check (docs/reference/remote.md §13, docs/remote.md "Configuration"): DURABLE_HOOK_ALLOW_HOSTS is a
// comma-separated list of hosts, as text; anything else is `misconfigured` naming it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkConfig } from "./auth";
import { DurableError } from "./rules/state";

const KEYS = { DURABLE_SECRET: "s".repeat(32), DURABLE_TOKEN_KEY: "k".repeat(32) };

test("auth: DURABLE_HOOK_ALLOW_HOSTS is checked with the rest of the configuration", () => {
  for (const ok of [undefined, "", "127.0.0.1", "127.0.0.1,localhost,::1", "hooks.internal, [fd00::1]"]) {
    assert.doesNotThrow(() => checkConfig({ ...KEYS, DURABLE_HOOK_ALLOW_HOSTS: ok }), String(ok));
  }
  for (const bad of [["127.0.0.1"], 7, "http://127.0.0.1/", "a;b"]) {
    assert.throws(() => checkConfig({ ...KEYS, DURABLE_HOOK_ALLOW_HOSTS: bad }),
      (e: unknown) => e instanceof DurableError && e.code === "misconfigured" && e.message.includes("DURABLE_HOOK_ALLOW_HOSTS"), String(bad));
  }
});
