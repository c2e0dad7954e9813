"""Remote `export`, `import` and `search` (docs/reference/retention.md §7, §13): the same command lines against files and against
workerd give the same records, receipts, hits, messages and exit statuses; records move between the two
backends with every field; refusals change nothing; another user's objects never show.
"""

import json
import os
import re

import pytest

from durable_cli.core import rights
from tests.conftest import run_inprocess
from tests.remote.conftest import ALICE_TOKEN, unique

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ID = re.compile(r"\b[0-9a-f]{64}\b")
MS = re.compile(r"(?<![\d.])1\d{12}(?![\d.])")  # a time in ms since 1970 (2001-2286)


def normalize(text: str) -> str:
    return MS.sub("<ms>", ID.sub("<id>", ISO.sub("<time>", text)))


BUILD = [
    ["transcript", "append", "s", "--role", "system", "be brief"],
    ["session", "prompt", "s", "what is in the folder"],
    ["session", "next", "s"],
    ["session", "finish", "s", "1", "--reply", "let me look"],
    ["transcript", "append", "s", "--role", "assistant", "--tool-calls", '[{"id": "c1", "name": "ls", "arguments": "{\\"dir\\": \\"/tmp\\"}"}]'],
    ["transcript", "append", "s", "--role", "tool", "--call-id", "c1", "--name", "ls", "notes.txt budget.xlsx"],
    ["transcript", "append", "s", "--role", "assistant", "the folder holds notes and a budget", "--meta",
     '{"model": "m1", "usage": {"input_tokens": 12, "output_tokens": 7}, "cost_usd": 0.25, "extra": [1]}', "--data", '{"sdk": {"k": 1}}'],
    ["transcript", "summarize", "s", "--through", "5", "--text", "the user asked about the folder"],
    ["transcript", "append", "s", "--role", "user", "and the budget numbers?"],
    ["elicit", "ask", "s", "--prompt", "Open the budget?", "--choice", "yes", "--choice", "no"],
    ["elicit", "answer", "s", "1", "--choice", "yes"],
    ["session", "title", "s", "Folder talk"],
    ["ttl", "s", "30d"],
    ["transcript", "append", "other", "--role", "user", "a budget for the trip"],
    ["session", "archive", "other"],
    ["memory", "set", "tz", "Europe/Paris", "--confirmed"],
    ["limit", "hit", "api", "--rate", "5/1h"],
    # an event's data is Python's json.dumps on both backends ("d\u00e9j\u00e0"; the Worker wrote "déjà")
    ["elicit", "ask", "s", "--prompt", "Déjà vu?", "--choice", "déjà"],
    ["elicit", "answer", "s", "2", "--choice", "déjà"],
]


def tenant_build(tenant):
    return [
        ["--tenant", tenant, "transcript", "append", "shared", "--role", "user", "the shared budget plan"],
        ["--tenant", tenant, "session", "invite", "shared", "bob"],
        ["--tenant", tenant, "--as", "bob", "transcript", "append", "shared", "--role", "assistant", "budget noted by bob"],
    ]


def run(commands, monkeypatch, env, stdin=None):
    """Each command line in this process; STDIN: {index: function(raw outputs so far) -> text}."""
    for key in ("DURABLE_REMOTE", "DURABLE_TOKEN", "DURABLE_TENANT"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out, raw = [], []
    for i, args in enumerate(commands):
        text = (stdin or {}).get(i)
        r = run_inprocess(*args, input=text(raw) if text else None)
        raw.append(r.out)
        text = normalize(r.out)
        if "export" in args:  # one record per object, in the order of their ids (another secret, another order)
            text = "".join(sorted(text.splitlines(keepends=True)))
        out.append((args, r.status, text, normalize(r.err)))
    return out, raw


def both(commands, monkeypatch, remote_dev, user, stdin=None):
    local, local_raw = run(commands, monkeypatch, {"DURABLE_USER": user}, stdin)
    remote, remote_raw = run(commands, monkeypatch, {"DURABLE_USER": user, "DURABLE_REMOTE": remote_dev.url,
                                                      "DURABLE_TOKEN": remote_dev.admin_token}, stdin)
    for (args, *want), (_, *got) in zip(local, remote):
        if args[:1] == ["search"]:
            want, got = _ranked_alike(args, want), _ranked_alike(args, got)
        assert got == want, f"durable {' '.join(args)}"
    return local, remote, local_raw, remote_raw


def _ranked_alike(args, result):
    """docs/reference/retention.md §7 ranks by bm25 over the index searched: per object remotely, the owner's side file locally,
    so hits of equal standing may come in another order (and --limit may keep another of them): compare
    the hits as a set (their number only under --limit)."""
    status, out, err = result
    lines = out.splitlines()
    if "--json" in args or "--jsonl" in args:
        hits = json.loads(out) if "--json" in args else [json.loads(line) for line in lines]
        if "--limit" in args:
            return [status, len(hits), err]
        return [status, sorted(json.dumps(h, sort_keys=True) for h in hits), err]
    return [status, sorted(lines), err]


def _foreign(text):
    """The record of TEXT as if another user owned it."""
    record = json.loads(text)
    record["owner"] = record["object"]["owner"] = "someone-else"
    record["participants"] = [dict(record["participants"][0], user="someone-else")]
    return json.dumps(record) + "\n"


def _export_of(raw, name):
    return next(line for line in raw.splitlines() if json.loads(line)["name"] == name) + "\n"


def test_worker_records_table_is_generated():
    """The Worker checks imports with records.py's rules, generated into worker/src/generated/records.json."""
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("gen", os.path.join(ROOT, "scripts", "gen_worker_records.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(module.TARGET, encoding="utf-8") as f:
        assert f.read() == module.render(), "run: python scripts/gen_worker_records.py"


def test_export_import_search_same_both_ways(remote_dev, monkeypatch):
    user, tenant = unique("alice"), unique("acme")
    commands = BUILD + tenant_build(tenant) + [
        ["export", "s"],                                         # 20
        ["export", "--user", user],
        ["--tenant", tenant, "export", "shared"],
        ["search", "budget", "--json"],
        ["search", "budget"],
        ["search", "budget", "--role", "user", "--jsonl"],      # 25
        ["search", "folder", "--superseded", "--json"],
        ["search", "fold*", "--json"],
        ["search", "budget", "--session", "other", "--json"],
        ["search", "budget", "--limit", "1", "--json"],
        ["search", "budget", "--newer-than", "1h", "--json"],   # 30
        ["search", "\"unclosed", "--fts"],
        ["search", "budget", "--session", "missing"],
        ["search", "budget", "--role", "wizard"],
        ["search", "tmp", "--superseded", "--json"],            # tool call arguments are searched too
        ["delete", "s", "--yes"],                               # 35
        ["import", "-", "--json"],                              # restores s (stdin: the export of line 20)
        ["export", "s"],
        ["import", "-", "--json"],                              # again: already imported, not exit 4
        ["transcript", "append", "s", "--role", "user", "a change"],
        ["import", "-"],                                        # 40: exists with other content: exit 4
        ["import", "-", "--replace", "--json"],
        ["export", "s"],
        ["transcript", "show", "s", "--all", "--json"],
        ["session", "show", "s", "--json"],
        ["--tenant", tenant, "delete", "shared", "--yes"],      # 45
        ["--tenant", tenant, "import", "-", "--json"],          # a tenant record the acting user owns
        ["--tenant", tenant, "--as", "bob", "session", "show", "shared", "--json"],
        ["search", "budget", "--json"],
        ["import", "-", "--json"],                              # another user's record: exit 5, the same receipt
        ["import", "-", "--json"],                              # a record breaking a rule: exit 2, the same receipt
        # the largest --limit (2^63 - 1): the Worker bound it as a REAL, LIMIT's datatype mismatch (exit 2)
        ["search", "budget", "--limit", "9223372036854775807", "--json"],
    ]
    first = len(BUILD) + 3
    assert commands[first] == ["export", "s"]
    export_s = {first + 16: lambda raw: raw[first], first + 18: lambda raw: raw[first],
                first + 20: lambda raw: raw[first], first + 21: lambda raw: raw[first],
                first + 26: lambda raw: raw[first + 2], first + 29: lambda raw: _foreign(raw[first]),
                first + 30: lambda raw: raw[first].replace('"role":"user"', '"role":"wizard"', 1)}
    local, remote, local_raw, remote_raw = both(commands, monkeypatch, remote_dev, user, export_s)
    statuses = {" ".join(a): s for a, s, *_ in remote}
    assert [remote[first + i][1] for i in (16, 18, 20, 21, 26, 29, 30)] == [0, 0, 4, 0, 0, 5, 2]
    assert '"id":"<id>"' in remote[first + 30][2] and "turns[1].role 'wizard'" in remote[first + 30][3]
    assert "belongs to another user" in remote[first + 29][3] and '"id":"<id>"' in remote[first + 29][2]
    assert statuses["search \"unclosed --fts"] == 2 and statuses["search budget --session missing"] == 3
    assert statuses["search budget --limit 9223372036854775807 --json"] == 0
    # the export after delete + import is the export before, byte for byte (ids too: the same installation)
    assert remote_raw[first + 17] == remote_raw[first] and local_raw[first + 17] == local_raw[first]
    record = json.loads(remote_raw[first])
    assert record["version"] == rights.VERSION and record["object"]["ttl_seconds"] == 30 * 86400
    kinds = {t["kind"] for t in record["turns"]}
    assert kinds == {"turn", "summary"} and any(t["tool_calls"] for t in record["turns"])
    assert any(t["superseded_by"] for t in record["turns"]) and record["turns"][0]["role"] == "system"
    assert record["requests"][0]["answer"] == "yes" and record["prompts"][0]["status"] == "completed"
    memory = [json.loads(x) for x in remote_raw[first + 1].splitlines() if json.loads(x)["scope"] == "reserved"]
    assert memory and memory[0]["buckets"][0]["tokens"] == 4.0 and memory[0]["facts"][0]["value"] == "Europe/Paris"
    hits = json.loads(remote_raw[first + 3])
    assert {h["name"] for h in hits} == {"s", "other", "shared"} and all("[budget]" in h["snippet"].lower() for h in hits)
    assert json.loads(remote_raw[first + 14])[0]["role"] == "assistant"  # found in the tool call's arguments


def test_round_trip_between_the_backends_keeps_every_field(remote_dev, monkeypatch):
    """remote export -> local import -> local export: the same records but for the ids (another secret);
    that local export -> remote import (after the remote objects are gone) -> remote export: the first one."""
    user = unique("alice")
    remote_env = {"DURABLE_USER": user, "DURABLE_REMOTE": remote_dev.url, "DURABLE_TOKEN": remote_dev.admin_token}
    _, _ = run(BUILD, monkeypatch, remote_env)
    (_, status, _, err), = run([["export", "--user", user]], monkeypatch, remote_env)[0]
    assert status == 0, err
    exported = run([["export", "--user", user]], monkeypatch, remote_env)[1][0]
    assert len(exported.splitlines()) == 3

    (_, status, _, err), = run([["import", "-"]], monkeypatch, {"DURABLE_USER": user}, {0: lambda raw: exported})[0]
    assert status == 0, err
    local_export = run([["export", "--user", user]], monkeypatch, {"DURABLE_USER": user})[1][0]

    def by_name(text):
        return {json.loads(line)["name"]: json.loads(line) for line in text.splitlines()}

    def without_ids(record):
        record = json.loads(json.dumps(record))
        record.pop("id")
        record["object"].pop("id")
        return record

    remote_records, local_records = by_name(exported), by_name(local_export)
    assert remote_records.keys() == local_records.keys() == {"s", "other", ""}
    for name in remote_records:
        assert without_ids(local_records[name]) == without_ids(remote_records[name]), name
    # the local copies carry the local ids; the remote ones come back with the remote ids
    assert all(local_records[n]["id"] != remote_records[n]["id"] for n in remote_records)

    for args in (["delete", "s", "--yes"], ["delete", "other", "--yes"]):
        assert run([args], monkeypatch, remote_env)[0][0][1] == 0
    (_, status, out, err), = run([["import", "-", "--json"]], monkeypatch, remote_env, {0: lambda raw: local_export})[0]
    assert status == 0, err
    assert sorted(c["what"] for c in json.loads(out)["changed"]) == ["imported", "imported"]
    assert sorted(s["reason"] for s in json.loads(out)["skipped"]) == ["already imported"]  # the memory object
    again = run([["export", "--user", user]], monkeypatch, remote_env)[1][0]
    assert by_name(again) == remote_records


@pytest.fixture
def alice(remote_dev, monkeypatch):
    """Alice with her own (non-admin) token, on the remote backend."""
    monkeypatch.delenv("DURABLE_USER", raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    for args in (["transcript", "append", "mine", "--role", "user", "alice private budget"], ["memory", "set", "k", "v"]):
        assert run_inprocess(*args).status == 0
    return remote_dev


def _snapshot():
    r = run_inprocess("export", "--user", "alice")
    assert r.status == 0, r.err
    return r.out


def test_import_refusals_change_nothing(alice, monkeypatch):
    before = _snapshot()
    record = json.loads(_export_of(before, "mine"))
    foreign = dict(record, owner="bob", object=dict(record["object"], owner="bob"), participants=[
        {"user": "bob", "role": "owner", "joined_at": 1}])
    bad_role = json.loads(json.dumps(record))
    bad_role["turns"][0]["role"] = "wizard"
    too_big = json.loads(json.dumps(record))
    too_big["turns"][0]["content"] = "x" * 3_000_000
    tenant = dict(record, scope="tenant", owner=unique("org"), object=dict(record["object"], scope="tenant"),
                  participants=[{"user": "zoe", "role": "owner", "joined_at": 1}])
    tenant["object"]["owner"] = tenant["owner"]
    cases = [(foreign, 5, "belongs to another user"), (bad_role, 2, "turns[0].role"), (too_big, 2, "over the limit"),
             (tenant, 5, "does not list you ('alice') as an owner")]
    for bad, status, words in cases:
        r = run_inprocess("import", "-", "--json", input=json.dumps(bad) + "\n")
        assert r.status == status and words in r.err, (words, r.err)
        assert json.loads(r.out)["skipped"][0]["reason"].startswith("line 1: ")
    r = run_inprocess("import", "-", "--all-users", input=json.dumps(foreign) + "\n")
    assert (r.status, r.out) == (5, "") and "needs an admin token" in r.err
    for args in (["export", "--all"], ["export", "--user", "bob"], ["search", "x", "--user", "bob"]):
        r = run_inprocess(*args)
        assert (r.status, r.out) == (5, ""), args
    # a mixed file: the good record is (re)imported, the bad ones are listed; the exit is the first failure's
    mixed = "".join(json.dumps(x) + "\n" for x in (bad_role, record, foreign))
    r = run_inprocess("import", "-", "--json", input=mixed)
    doc = json.loads(r.out)
    assert r.status == 2 and [s["reason"][:7] for s in doc["skipped"]] == ["line 1:", "already", "line 3:"]
    assert _snapshot() == before

    # a client that skips the checks: the Worker checks the record again, and nothing is created
    from durable_cli import Store
    from durable_cli.core import records
    from durable_cli.errors import DurableError

    store = Store(remote=alice.url, token=ALICE_TOKEN)
    checked = records.check_record(record, line=1, max_turn_bytes=2 ** 21, columns=records.current_columns())
    content = {k: v for k, v in checked.content.items() if k != "live"}
    name = unique("forged")
    target = {"scope": "user", "owner": "alice", "name": name}
    forged_rows = [dict(content["turns"][0], role="wizard")]
    lone = [dict(content["turns"][0], meta='{"model": "\\ud800"}')]  # an escaped lone surrogate in a JSON column
    for forged in (dict(content, object=dict(content["object"], name=name), turns=forged_rows), dict(content, object=dict(content["object"], name=name, status="bogus")),
                   dict(content, object=dict(content["object"], name=name), turns=lone),
                   dict(content, object=dict(content["object"], name="not-this-one"))):
        with pytest.raises(DurableError) as e:
            store._object_call(target, "import", {"record": forged}, write=True, create=True)
        assert e.value.code == "invalid_input", e.value.message
    with pytest.raises(DurableError) as e:  # all_users from a user token: refused by the Worker
        store._object_call(dict(target, owner="bob"), "import", {"record": content}, write=True, create=True, all_users=True)
    assert e.value.code == "permission_denied"
    with pytest.raises(DurableError) as e, store.open(name) as s:
        s.show()
    assert e.value.code == "not_found"
    store.close()
    assert _snapshot() == before


def test_tenant_and_other_users_objects_never_show(alice, monkeypatch):
    org, bob, carol = unique("org"), unique("bob"), unique("carol")
    assert run_inprocess("--tenant", org, "transcript", "append", "plan", "--role", "user", "secret budget").status == 0
    monkeypatch.setenv("DURABLE_TOKEN", alice.admin_token)
    for user in (bob, carol):
        r = run_inprocess("--as", user, "transcript", "append", "theirs", "--role", "user", f"{user} budget")
        assert r.status == 0, r.err
    assert run_inprocess("--tenant", org, "--as", "alice", "session", "invite", "plan", bob).status == 0
    hits = {(h["name"]) for h in run_inprocess("--as", bob, "search", "budget", "--json").json()}
    assert hits == {"theirs", "plan"}  # his own and the tenant's he takes part in; never alice's "mine"
    found = run_inprocess("--as", carol, "search", "budget", "--json").json()
    assert [h["name"] for h in found] == ["theirs"] and f"{carol} budget" in found[0]["snippet"].replace("[", "").replace("]", "")
    r = run_inprocess("--as", carol, "--tenant", org, "export", "plan")
    assert (r.status, r.out) == (3, "")  # exactly "not found"
    record = run_inprocess("--tenant", org, "--as", "alice", "export", "plan").out
    fake = json.loads(record)
    fake["participants"] = [{"user": carol, "role": "owner", "joined_at": 1}]
    for text in (record, json.dumps(fake) + "\n"):
        r = run_inprocess("--as", carol, "--tenant", org, "import", "-", "--json", input=text)
        assert r.status == 4 and "the name is taken" in r.err  # it exists and carol cannot see it
    r = run_inprocess("--as", bob, "--tenant", org, "import", "-", "--replace", input=json.dumps(fake) + "\n")
    assert r.status == 5 and "only an owner" in r.err  # bob takes part but does not own it
    # an installation restore by an admin reaches any record
    r = run_inprocess("import", "-", "--all-users", "--replace", "--json", input=json.dumps(fake) + "\n")
    assert r.status == 0 and json.loads(r.out)["changed"][0]["what"] == "replaced", r.err
    assert [p["user"] for p in run_inprocess("--as", carol, "--tenant", org, "session", "participants", "plan", "--json").json()] == [carol]
    # another user's own session, restored by an admin: back under its owner, the same record
    theirs = run_inprocess("--as", carol, "export", "theirs").out
    assert run_inprocess("--as", carol, "delete", "theirs", "--yes").status == 0
    r = run_inprocess("import", "-", "--all-users", "--json", input=theirs)
    assert r.status == 0 and json.loads(r.out)["changed"][0]["owner"] == carol, r.err
    assert run_inprocess("--as", carol, "export", "theirs").out == theirs
    # the whole installation, by an admin: every user's and tenant's objects
    everything = [json.loads(line) for line in run_inprocess("export", "--all").out.splitlines()]
    assert {(r["owner"], r["name"]) for r in everything} >= {(carol, "theirs"), (bob, "theirs"), (org, "plan"), ("alice", "mine")}
    # alice, with her own token, finds nothing of bob's or carol's
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    r = run_inprocess("search", "budget", "--limit", "100", "--json")
    assert r.status == 0 and {h["name"] for h in r.json()} == {"mine"}, r.err  # "plan" is carol's alone since the restore


def test_import_from_llm_writes_remote_objects(real_logs, remote_dev, monkeypatch):
    user = unique("alice")
    monkeypatch.setenv("LLM_USER_PATH", str(real_logs))
    commands = [["import", "--from", "llm", "--json"], ["import", "--from", "llm", "--json"], ["ls", "--json"],
                ["search", "continued", "--json"]]
    local, remote, _, remote_raw = both(commands, monkeypatch, remote_dev, user)
    assert [s for _, s, *_ in remote] == [0, 0, 0, 0]
    assert len(json.loads(remote_raw[0])["changed"]) == 3 and len(json.loads(remote_raw[1])["skipped"]) == 3
    # with a user token: the token's user owns them
    monkeypatch.delenv("DURABLE_USER")
    monkeypatch.setenv("DURABLE_TOKEN", ALICE_TOKEN)
    r = run_inprocess("import", "--from", "llm", "--json")
    assert r.status == 0, r.err
    assert {c["owner"] for c in r.json()["changed"] + r.json()["skipped"]} == {"alice"}


def test_a_langgraph_thread_moves_to_the_remote_and_back_with_its_checkpoints(remote_dev, monkeypatch, home):
    """The adapters' tables (export version 4: checkpoints, pending writes, mirrored ids; BLOBs as base64)
    go into a Durable Object and come back out the same."""
    pytest.importorskip("langgraph.checkpoint.base")
    from durable_cli.integrations.langgraph import DurableSaver
    from tests.integrations.test_langgraph import three_turns

    user = unique("alice")
    three_turns(DurableSaver(home=str(home), user=user))
    local = run([["export", "calc"]], monkeypatch, {"DURABLE_USER": user})[1][0]
    record = json.loads(local)
    assert record["lg_checkpoints"] and record["lg_writes"]
    remote_env = {"DURABLE_USER": user, "DURABLE_REMOTE": remote_dev.url, "DURABLE_TOKEN": remote_dev.admin_token}
    (_, status, _, err), = run([["import", "-"]], monkeypatch, remote_env, {0: lambda raw: local})[0]
    assert status == 0, err
    again = json.loads(run([["export", "calc"]], monkeypatch, remote_env)[1][0])
    for r in (record, again):
        r.pop("id"), r["object"].pop("id")
    assert again == record
    (_, status, out, err), = run([["import", "-", "--json"]], monkeypatch, remote_env, {0: lambda raw: local})[0]
    assert status == 0 and json.loads(out)["skipped"][0]["reason"] == "already imported", err
    bad = dict(json.loads(local), lg_writes=[dict(record["lg_writes"][0], value="%%")])
    (_, status, _, err), = run([["import", "-", "--replace"]], monkeypatch, remote_env, {0: lambda raw: json.dumps(bad) + "\n"})[0]
    assert status == 2 and "lg_writes[0].value must be base64" in err


def test_a_langgraph_thread_is_exported_in_pages(remote_dev, monkeypatch):
    """A thread's checkpoints and writes (WITHOUT ROWID tables) come in pages by their key, as every other table:
    they came whole in one answer, a thread's every checkpoint with its bytes (docs/reference/remote.md §13: a request holds one row
    plus one page). The pages join into the record the file store writes: key order, every byte, and importing
    it again finds it identical."""
    from durable_cli import Store

    user, name = unique("alice"), unique("thread")
    store = Store(remote=remote_dev.url, token=remote_dev.admin_token, user=user)
    blobs = [os.urandom(200_000) for _ in range(6)]
    with store.open(name, create=True) as s:
        for i, blob in enumerate(blobs):
            s.put_checkpoint(external_id=name, ns="", checkpoint_id=f"{i:04}", parent_id=None, type_="bytes", blob=blob, metadata="{}")
            s.put_checkpoint_writes(external_id=name, ns="", checkpoint_id=f"{i:04}",
                                    writes=[("t", "", j, "ch", "bytes", blob[:60_000]) for j in (1, 0)], replace=False)
    pages, call = [], store.client.call
    store.client.call = lambda body, write: pages.append(call(body, write=write)) or pages[-1]
    [record] = store.export(name=name)
    store.client.call = call
    assert len(pages) > 3 and max(len(json.dumps(p)) for p in pages) < 1_000_000, [len(json.dumps(p)) for p in pages]
    import base64

    assert [(c["checkpoint_id"], base64.b64decode(c["checkpoint"])) for c in record["lg_checkpoints"]] == \
        [(f"{i:04}", blob) for i, blob in enumerate(blobs)]
    assert [(w["checkpoint_id"], w["idx"]) for w in record["lg_writes"]] == [(f"{i:04}", j) for i in range(6) for j in (0, 1)]
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)
    monkeypatch.setenv("DURABLE_TOKEN", remote_dev.admin_token)
    monkeypatch.setenv("DURABLE_USER", user)
    r = run_inprocess("import", "-", "--json", input=json.dumps(record) + "\n")
    assert r.status == 0 and json.loads(r.out)["skipped"][0]["reason"] == "already imported", (r.err, r.out)
    store.close()
