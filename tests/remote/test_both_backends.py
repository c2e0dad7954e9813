"""The same command lines against files and against workerd: same stdout, stderr and exit statuses.

Each scenario runs twice, in this process: once on the local data directory, once with --remote
semantics (DURABLE_REMOTE and an admin token) against a real workerd. Times and object ids differ
by nature (another clock reading, another secret) and are normalized; everything else must match.
"""

import json
import re
import shlex
import sys
import time

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import unique

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ID = re.compile(r"\b[0-9a-f]{64}\b")

BATCH = "\n".join(json.dumps(r) for r in [
    {"role": "system", "content": "be brief"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "ls", "arguments": "{\"a\": 1}"}]},
    {"role": "tool", "content": "files", "call_id": "c1", "name": "ls"},
    {"role": "assistant", "content": "done", "meta": {"model": "m", "usage": {"input_tokens": 3, "output_tokens": 4}}, "data": {"k": [1, "x"]}},
]) + "\n"

SESSIONS = [
    ["session", "create", "s", "--title", "First", "--json"],
    ["session", "create", "s"],
    ["session", "show", "s", "--json"],
    ["session", "show", "missing"],
    ["session", "prompt", "s", "one", "--json"],
    ["session", "prompt", "s", "two", "--request-id", "r1"],
    ["session", "prompt", "s", "two", "--request-id", "r1"],
    ["session", "prompt", "s", "other", "--request-id", "r1"],
    ["session", "queue", "s", "--json"],
    ["session", "next", "s", "--json"],
    ["session", "next", "s"],
    ["session", "renew", "s", "1", "--lease", "1h", "--json"],
    ["session", "finish", "s", "2", "--reply", "x"],
    ["session", "finish", "s", "1", "--reply", "the answer", "--json"],
    ["session", "next", "s", "--context", "100", "--format", "anthropic", "--json"],
    ["session", "stop", "s", "--json"],
    ["session", "queue", "s", "--pending"],
    ["session", "prompt", "s", "three"],
    ["session", "dequeue", "s", "3", "--json"],
    ["session", "dequeue", "s", "3"],
    ["session", "title", "s", "Second"],
    ["session", "title", "s", " "],
    ["session", "archive", "s", "--json"],
    ["session", "archive", "s"],
    ["session", "prompt", "s", "refused"],
    ["session", "unarchive", "s", "--json"],
    ["session", "unarchive", "s"],
    ["session", "cancel", "s", "--json"],
    ["session", "cancel", "s"],
    ["session", "archive", "s"],
    ["session", "invite", "s", "bob"],
    ["session", "events", "s", "--json"],
    ["session", "events", "s", "--since", "5"],
    ["session", "participants", "s", "--json"],
    ["session", "next", "nothing-here"],
    ["session", "prompt", "q", "-", "--json"],
    ["session", "next", "q", "--wait", "1s"],
    ["session", "next", "q"],
    ["ttl", "q", "1h", "--json"],
    ["ttl", "q"],
    ["ttl", "q", "--clear", "--json"],
]

TRANSCRIPT = [
    ["transcript", "append", "t", "--role", "user", "hello world"],
    ["transcript", "append", "t", "--role", "assistant", "--tool-calls", '[{"id": "a", "name": "f"}]', "--json"],
    ["transcript", "append", "t", "--role", "tool", "--call-id", "a", "result", "--json"],
    ["transcript", "append", "t", "--role", "tool", "no call id"],
    ["transcript", "append", "t", "--role", "user", "--meta", '{"usage": {"input_tokens": -1}}', "x"],
    ["transcript", "append", "t", "--role", "wizard", "x"],
    ["transcript", "append", "t", "--role", "user", ""],
    ["transcript", "append", "t", "--role", "user", "--request-id", "k", "same"],
    ["transcript", "append", "t", "--role", "user", "--request-id", "k", "same"],
    ["transcript", "append", "t", "--role", "user", "--request-id", "k", "different"],
    ["transcript", "append", "t", "--batch", "-", "--json"],
    ["transcript", "append", "t", "--batch", "-"],
    ["transcript", "append", "t", "--role", "user", "--no-create", "x"],
    ["transcript", "append", "nope", "--role", "user", "--no-create", "x"],
    ["transcript", "show", "t"],
    ["transcript", "show", "t", "--json"],
    ["transcript", "show", "t", "--jsonl", "--since", "3"],
    ["transcript", "show", "t", "--last", "2", "--json"],
    # 2^63 - 1, the largest --last: JSON.parse reads it as 2^63, which the Worker bound as a REAL (internal error)
    ["transcript", "show", "t", "--last", "9223372036854775807", "--json"],
    ["transcript", "show", "t", "--all"],
    ["transcript", "recent", "t", "--json"],
    ["transcript", "recent", "t", "--tokens", "30", "--json"],
    ["transcript", "recent", "t", "--limit", "2", "--format", "messages"],
    ["transcript", "recent", "t", "--format", "responses"],
    ["transcript", "recent", "t", "--format", "anthropic"],
    ["transcript", "recent", "t", "--format", "gemini"],
    ["transcript", "recent", "t"],
    ["transcript", "redact", "t", "2", "--json"],
    ["transcript", "redact", "t", "99"],
    ["transcript", "pop", "t", "--json"],
    ["transcript", "pop", "t", "--count", "2"],
    ["session", "show", "t", "--json"],
    ["transcript", "clear", "t", "--yes", "--json"],
    ["transcript", "clear", "t", "--yes", "--json"],
    ["transcript", "pop", "t"],
    ["transcript", "show", "missing"],
]

HITL = [
    ["session", "create", "h"],
    ["elicit", "ask", "h", "--prompt", "Deploy?", "--choice", "yes", "--choice", "no", "--json"],
    ["elicit", "ask", "h", "--prompt", "Free text?"],
    ["elicit", "list", "h", "--pending", "--json"],
    ["elicit", "answer", "h", "1", "--choice", "maybe"],
    ["elicit", "answer", "h", "1", "--choice", "yes", "--comment", "ok", "--json"],
    ["elicit", "answer", "h", "1", "--choice", "no"],
    ["elicit", "answer", "h", "7", "--choice", "no"],
    ["elicit", "wait", "h", "1", "--json"],
    ["elicit", "wait", "h", "2", "--wait", "0", "--json"],
    ["elicit", "list", "h"],
    ["memory", "list", "--json"],
    ["memory", "get", "tz"],
    ["memory", "set", "tz", "Europe/Paris", "--confirmed", "--json"],
    ["memory", "set", "guess", "cats", "--source", "model", "--json"],
    ["memory", "set", "bad", "x", "--source", "model", "--confirmed"],
    ["memory", "get", "guess"],
    ["memory", "get", "guess", "--all", "--json"],
    ["memory", "confirm", "guess", "--json"],
    ["memory", "list"],
    ["memory", "forget", "tz", "--json"],
    ["memory", "forget", "tz"],
    ["limit", "hit", "api", "--rate", "2/1h", "--json"],
    ["limit", "hit", "api", "--rate", "2/1h", "--json"],
    ["limit", "hit", "api", "--rate", "2/1h", "--json"],
    ["limit", "hit", "api", "--rate", "2/1h"],
    ["session", "show", "h", "--json"],
]


RACE = ["transcript", "summarize", "r", "--through", "12", "--command",
        f"{shlex.quote(sys.executable)} -m durable_cli transcript redact r 12 >/dev/null && echo S"]
AGED = ["(wait until every row written so far is more than 1s old)"]

REWRITE = [
    ["transcript", "append", "r", "--role", "system", "be brief"],
    ["session", "prompt", "r", "first question"],
    ["session", "next", "r", "--json"],
    ["session", "finish", "r", "1", "--reply", "first answer"],
    ["transcript", "append", "r", "--role", "assistant", "--tool-calls", '[{"id": "c1", "name": "ls"}]'],
    ["transcript", "append", "r", "--role", "tool", "--call-id", "c1", "files"],
    ["transcript", "append", "r", "--role", "user", "second question"],
    ["transcript", "append", "r", "--role", "assistant", "second answer"],
    ["transcript", "summarize", "r", "--through", "4", "--text", "x"],
    ["transcript", "summarize", "r", "--through", "1", "--text", "x"],
    ["transcript", "summarize", "r", "--through", "99", "--text", "x"],
    ["transcript", "summarize", "r", "--through", "3", "--text", ""],
    ["transcript", "summarize", "missing", "--through", "3", "--text", "x"],
    ["session", "archive", "r"],
    ["transcript", "summarize", "r", "--through", "3", "--text", "x"],
    ["transcript", "compact", "r", "--max-tokens", "1", "--keep-tokens", "0", "--text", "x"],
    ["session", "unarchive", "r"],
    ["transcript", "summarize", "r", "--through", "5", "--text", "the first exchange", "--json"],
    ["transcript", "compact", "r", "--max-tokens", "1000", "--keep-tokens", "0", "--text", "x", "--json"],
    ["transcript", "compact", "r", "--max-tokens", "1", "--keep-tokens", "1", "--text", "everything so far", "--json"],
    ["transcript", "compact", "r", "--max-tokens", "1", "--keep-tokens", "2", "--text", "x"],
    ["transcript", "append", "r", "--role", "user", "third question"],
    ["transcript", "summarize", "r", "--through", "9", "--command", "tr a-z A-Z", "--json"],
    ["transcript", "append", "r", "--role", "user", "fourth question"],
    ["transcript", "compact", "r", "--max-tokens", "1", "--keep-tokens", "1", "--command", "wc -l", "--input", "jsonl", "--json"],
    ["transcript", "summarize", "r", "--through", "12", "--command", "exit 3"],
    # a covered row changes while the command runs (nothing is held meanwhile): exit 4, nothing changed
    RACE,
    ["transcript", "show", "r", "--all", "--json"],
    ["session", "show", "r", "--json"],
    ["transcript", "prune", "r", "--older-than", "1h", "--json"],
    AGED,  # every row above is now more than 1s old; nothing is written until the prunes are done, so
    # rows only get older meanwhile and a stalled machine cannot make the two backends disagree
    ["transcript", "prune", "r", "--older-than", "1s", "--dry-run", "--json"],
    ["transcript", "prune", "r", "--older-than", "1s"],
    ["transcript", "prune", "r", "--older-than", "1s", "--json"],
    ["session", "prompt", "r", "fresh question"],
    ["session", "next", "r", "--json"],
    ["session", "queue", "r", "--json"],
    ["transcript", "prune", "r", "--older-than", "soon"],
    ["transcript", "prune", "missing", "--older-than", "1d"],
    ["transcript", "show", "r", "--all", "--json"],
    ["session", "show", "r", "--json"],
    ["session", "events", "r", "--since", "10", "--json"],
    ["delete", "r", "--yes", "--json"],
    ["session", "show", "r"],
    ["delete", "r", "--yes"],
    ["transcript", "append", "r", "--role", "user", "a new start"],
    ["transcript", "show", "r", "--all", "--json"],
    ["delete", "r", "--yes"],
]


FORK = [
    ["transcript", "append", "f", "--role", "system", "be brief"],
    ["transcript", "append", "f", "--role", "user", "first question"],
    ["transcript", "append", "f", "--role", "assistant", "--tool-calls", '[{"id": "c1", "name": "ls"}]'],
    ["transcript", "append", "f", "--role", "tool", "--call-id", "c1", "--name", "ls", "files"],
    ["transcript", "append", "f", "--role", "assistant", "done", "--meta", '{"model": "m"}', "--data", '{"k": [1]}'],
    ["transcript", "summarize", "f", "--through", "4", "--text", "asked and listed"],
    ["transcript", "append", "f", "--role", "user", "second question"],
    ["transcript", "append", "f", "--role", "assistant", "--tool-calls", '[{"id": "c2", "name": "cat"}]'],
    ["transcript", "append", "f", "--role", "tool", "--call-id", "c2", "text"],
    ["session", "title", "f", "Source"],
    ["session", "fork", "f", "g", "--json"],
    ["transcript", "show", "g", "--all", "--json"],
    ["session", "events", "g", "--json"],
    ["session", "fork", "f", "h", "--at", "5", "--title", "Retry"],
    ["session", "show", "h", "--json"],
    ["transcript", "show", "h", "--json"],
    ["session", "fork", "g", "i", "--at", "1"],
    ["transcript", "show", "i", "--all", "--json"],
    # refusals: nothing is created
    ["session", "fork", "f", "g"],
    ["session", "fork", "f", "j", "--at", "2"],
    ["session", "fork", "f", "j", "--at", "8"],
    ["session", "fork", "f", "k", "--at", "6", "--json"],
    ["transcript", "show", "k", "--all", "--json"],
    ["session", "fork", "f", "j", "--at", "3"],
    ["session", "fork", "f", "j", "--at", "99"],
    ["session", "fork", "f", "j", "--at", "0"],
    ["session", "fork", "missing", "j"],
    ["session", "fork", "f", " j"],
    ["session", "fork", "f", "j", "--title", ""],
    ["session", "show", "j"],
    ["session", "events", "f", "--json"],
    ["session", "create", "empty"],
    ["session", "fork", "empty", "empty2", "--json"],
    ["transcript", "show", "empty2", "--json"],
]


# Characters where the runtimes' own Unicode databases and white-space sets disagree (issue 24): both
# backends follow durable_cli/contract/unicode.json (tests/test_vectors.py runs the rules themselves).
UNICODE = [
    ["session", "create", "u", "--title", "\x1cabc\x85", "--json"],
    ["session", "title", "u", "a\u00a0b"],
    ["session", "title", "u", "\ufeffabc"],
    ["session", "title", "u", "x\U0001f6dc"],
    ["session", "title", "u", "\u3000x\u2028", "--json"],
    ["session", "create", "a\u2028b"],
    ["session", "create", "x\U0001f6dc"],
    ["session", "create", "\u3000"],
    ["session", "prompt", "u", "hi", "--request-id", "r\u3000"],
    ["session", "prompt", "u", "hi", "--request-id", "r\u00a0"],
    ["elicit", "ask", "u", "--prompt", "\ufeff", "--json"],
    ["elicit", "ask", "u", "--prompt", "\x1c\x85"],
    ["elicit", "ask", "u", "--prompt", "Ship?", "--choice", "yes", "--choice", "no"],
    ["elicit", "answer", "u", "2", "--choice", "it's not"],
    ["elicit", "answer", "u", "2", "--choice", "a\xa0b"],
    ["transcript", "append", "u", "--role", "user", "a\ufeffb c\u3000d\x1ce", "--json"],
    ["transcript", "append", "u", "--role", "wizard", "x"],
    ["transcript", "append", "u", "--role", "it's", "x"],
    ["session", "show", "u", "--json"],
]


def tenant_scenario(tenant):
    return [
        ["--tenant", tenant, "session", "create", "shared", "--json"],
        ["--tenant", tenant, "session", "invite", "shared", "bob", "--json"],
        ["--tenant", tenant, "session", "invite", "shared", "b\U0001f6dc"],
        ["--tenant", tenant, "session", "invite", "shared", "bob\u00a0"],
        ["--tenant", tenant, "--as", "bob", "session", "show", "shared", "--json"],
        ["--tenant", tenant, "--as", "bob", "session", "archive", "shared"],
        ["--tenant", tenant, "--as", "carol", "session", "show", "shared"],
        ["--tenant", tenant, "--as", "carol", "transcript", "append", "shared", "--role", "user", "x"],
        ["--tenant", tenant, "--as", "carol", "session", "create", "shared"],
        ["--tenant", tenant, "--as", "bob", "transcript", "append", "shared", "--role", "user", "from bob", "--json"],
        ["--tenant", tenant, "session", "participants", "shared"],
        ["--tenant", tenant, "--as", "bob", "session", "fork", "shared", "mine", "--json"],
        ["--as", "bob", "transcript", "show", "mine", "--json"],
        ["--tenant", tenant, "--as", "carol", "session", "fork", "shared", "theirs"],
        ["--as", "bob", "delete", "mine", "--yes"],
        ["--tenant", tenant, "--as", "bob", "transcript", "summarize", "shared", "--through", "1", "--text", "x"],
        ["--tenant", tenant, "--as", "carol", "transcript", "prune", "shared", "--older-than", "1s"],
        ["--tenant", tenant, "--as", "carol", "delete", "shared", "--yes"],
        ["--tenant", tenant, "--as", "bob", "delete", "shared", "--yes"],
        ["--tenant", tenant, "delete", "shared", "--yes", "--json"],
        ["--tenant", tenant, "--as", "bob", "session", "show", "shared"],
    ]


def normalize(text: str) -> str:
    return ID.sub("<id>", ISO.sub("<time>", text))


def run_scenario(commands, monkeypatch, env):
    for key in ("DURABLE_REMOTE", "DURABLE_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out, done = [], time.time()
    for args in commands:
        if args is AGED:  # a condition on the clock both backends read, not a guess: wait until it holds
            while time.time() < done + 1.05:
                time.sleep(done + 1.05 - time.time())
            continue
        stdin = BATCH if "--batch" in args else ("queued from stdin\n" if "-" in args else None)
        r = run_inprocess(*args, input=stdin)
        out.append((args, r.status, normalize(r.out), normalize(r.err), r.out))
        done = time.time()
    return out


SCENARIOS = {"sessions": SESSIONS, "transcript": TRANSCRIPT, "hitl": HITL, "rewrite": REWRITE, "fork": FORK, "unicode": UNICODE, "tenant": None}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_results_local_and_remote(scenario, remote_dev, monkeypatch):
    user = unique("alice")
    commands = SCENARIOS[scenario] or tenant_scenario(unique("acme"))
    local = run_scenario(commands, monkeypatch, {"DURABLE_USER": user})
    remote = run_scenario(commands, monkeypatch, {"DURABLE_USER": user, "DURABLE_REMOTE": remote_dev.url,
                                                  "DURABLE_TOKEN": remote_dev.admin_token})
    assert any(status != 0 for _, status, _, _, _ in local)  # the scenario exercises refusals too
    for (args, *want, _), (_, *got, _) in zip(local, remote):
        assert got == want, f"durable {' '.join(args)}"
    if scenario == "fork":  # each refusal is really there, on both backends
        statuses = {" ".join(args): status for args, status, _, _, _ in remote}
        assert statuses["session fork f g"] == 4 and statuses["session fork f j --at 8"] == 2
        assert statuses["session fork f j --at 3"] == 3 and statuses["session fork missing j"] == 3
    if scenario == "rewrite":  # the refusals that matter here are really there, on both backends
        got = {id(args): (status, out, err) for args, status, out, err, _ in remote}
        assert got[id(RACE)][0] == 4 and "changed while summarizing" in got[id(RACE)][2]
        queue = next(out for args, _, out, _, _ in remote if args == ["session", "queue", "r", "--json"])
        assert '"content":"[pruned]"' in queue
    # the two runs really went to two backends: the object ids differ (another secret)
    local_ids = {i for *_, raw in local for i in ID.findall(raw)}
    remote_ids = {i for *_, raw in remote for i in ID.findall(raw)}
    assert local_ids and remote_ids and not local_ids & remote_ids


def test_commands_without_remote_meaning_are_exit_2(remote_dev, monkeypatch):
    monkeypatch.setenv("DURABLE_TOKEN", remote_dev.admin_token)
    for args in (["backup", "/tmp/nowhere-h14"], ["doctor"], ["path"]):
        r = run_inprocess("--remote", remote_dev.url, *args)
        assert (r.status, r.out) == (2, ""), args
        assert "not available with --remote" in r.err
    # every command across objects is remote now: export and import (tests/remote/test_remote_rights.py) too
    r = run_inprocess("--remote", remote_dev.url, "import", "-", input="")
    assert (r.status, r.err) == (0, "")
