"""docs/reference/output.md §4/§10: every command that prints data takes --json (config and doctor included), listings also
--jsonl; the documents keep their §10 shape, on the exits that still print one."""

import json

import pytest

from tests.helpers import leaf_commands

pytestmark = pytest.mark.both_backends

# §10's array documents: these take --jsonl too
LISTINGS = {"ls", "session queue", "session events", "session participants", "transcript show", "transcript pop",
            "elicit list", "memory list", "search"}
RECEIPT = {"deleted", "skipped", "changed", "dry_run"}


def _options(cmd):
    return {o for p in cmd.params for o in getattr(p, "opts", [])}


def test_every_command_takes_json_and_every_listing_jsonl():
    commands = {" ".join(path): cmd for path, cmd in leaf_commands()}
    # `remote dev` prints its one line of JSON ({"url", "admin_token", "token_key_file"}, docs/reference/remote.md §13) whatever the options;
    # so does `ui` ({"url", "port", "token", "user", "remote"}, docs/reference/ui.md §16.1)
    missing = [name for name, cmd in commands.items() if "--json" not in _options(cmd) and name not in ("remote dev", "ui")]
    assert missing == [], f"commands without --json: {missing}"
    no_lines = [name for name in LISTINGS if name in commands and "--jsonl" not in _options(commands[name])]
    assert no_lines == [], f"listings without --jsonl: {no_lines}"


@pytest.mark.local_only("runs backup, doctor and path (no remote meaning) and cross-object commands")
def test_receipts_and_documents_on_every_exit(durable, tmp_path):
    durable("session", "create", "s")
    backup = durable("backup", tmp_path / "b", "--json")
    assert backup.status == 0 and RECEIPT <= set(backup.json())
    assert [c["name"] for c in backup.json()["changed"]] == ["s"]
    for args in (("delete", "nope-never", "--yes"), ("purge", "--older-than", "1d", "--dry-run"), ("sweep",),
                 ("forget", "bob", "--yes")):
        r = durable(*args, "--json")
        if r.status == 0:
            assert RECEIPT <= set(r.json()), args
    export = durable("export", "s", "--json")
    assert export.status == 0
    assert json.loads(export.out.splitlines()[0])["name"] == "s"  # stdout: the records
    receipt = json.loads(export.err.splitlines()[0])  # stderr: the receipt
    assert RECEIPT <= set(receipt) and [c["name"] for c in receipt["changed"]] == ["s"]

    nothing = durable("session", "next", "s", "--json")  # exit 9 prints null
    assert nothing.status == 9 and nothing.out == "null\n"
    assert json.loads(nothing.err)["error"]["exit_status"] == 9
    assert durable("session", "next", "s").out == ""
    durable("elicit", "ask", "s", "--prompt", "ok?", "--choice", "yes")
    waited = durable("elicit", "wait", "s", "1", "--wait", "1s", "--json")  # exit 9 prints the request
    assert waited.status == 9 and waited.json()["status"] == "pending" and waited.json()["id"] == 1
    durable("limit", "hit", "k", "--rate", "1/1m")
    limited = durable("limit", "hit", "k", "--rate", "1/1m", "--json")  # exit 8 prints the bucket
    assert limited.status == 8 and limited.json()["allowed"] is False and limited.json()["retry_after"] == 60
    doctor = durable("doctor", "--json")
    assert doctor.status == 0 and doctor.json() == {"healthy": True, "problems": []}


@pytest.mark.parametrize("args, shape", [
    (("config", "set", "queue.lease", "1h"), {"key": "queue.lease", "value": "1h"}),
    (("config", "get", "queue.lease"), {"key": "queue.lease", "value": "2h"}),
    (("config", "unset", "queue.lease"), {"key": "queue.lease", "value": "2h"}),
])
def test_config_commands_print_key_and_value(durable, args, shape):
    if args[1] == "unset":
        durable("config", "set", "queue.lease", "1h")
    r = durable(*args, "--json")
    assert r.status == 0 and r.json() == shape
    assert durable(*args).out in ("", "2h\n")
