// docs/reference/sessions.md §5.3 URLs: the hosts a remote Worker refuses to call, judged after WHATWG URL host
// parsing, unless DURABLE_HOOK_ALLOW_HOSTS lists them (the client's own rules are the vectors' "hook_url").
import { test } from "node:test";
import assert from "node:assert/strict";
import { allowHosts, validUrl } from "./hooks";
import { DurableError } from "./state";

const refused = (url: string) => {
  try {
    validUrl(url);
    return false;
  } catch (e) {
    assert.ok(e instanceof DurableError && e.code === "invalid_input");
    return true;
  }
};

test("hooks: local, private and reserved hosts are refused remotely, public ones taken", () => {
  allowHosts(undefined);
  for (const url of ["http://localhost/", "http://LOCALHOST./x", "http://a.localhost/", "http://printer.local/", "http://db.internal:8080/",
    "http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://10.1.2.3/", "http://172.16.0.1/",
    "http://172.31.255.255/", "http://192.168.1.1/", "http://169.254.169.254/latest", "http://100.64.0.1/", "http://0.0.0.0/",
    "http://224.0.0.1/", "http://255.255.255.255/", "http://[::1]/", "http://[::]/", "http://[fd00::1]/", "http://[fe80::1]/",
    "http://[ff02::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/", "http://[0:0:0:0:0:0:0:1]/"]) {
    assert.ok(refused(url), url);
  }
  for (const url of ["https://example.com/hook", "http://8.8.8.8/", "http://172.32.0.1/", "http://100.128.0.1/", "http://[2001:db8::1]/",
    "http://[::ffff:8.8.8.8]/", "http://localhost.example.com/", "http://internal.example/"]) {
    assert.ok(!refused(url), url);
  }
});

test("hooks: DURABLE_HOOK_ALLOW_HOSTS lets the hosts it lists through, compared as parsed", () => {
  allowHosts("127.0.0.1, localhost,::1");
  try {
    for (const url of ["http://127.0.0.1:9/", "http://2130706433/", "http://LOCALHOST./", "http://[::1]:80/"]) assert.ok(!refused(url), url);
    for (const url of ["http://127.0.0.2/", "http://10.0.0.1/", "http://a.localhost/"]) assert.ok(refused(url), url);
  } finally {
    allowHosts(undefined);
  }
});
