"""docs/reference/sessions.md §5.3 schedules: prompts that enqueue themselves later (--at, --in, --every, --cron),
fired at any wake, by sweep and by work; the catch-up, overlap and archive rules; cron's daylight-saving days."""

import json
import os
import subprocess
import sys
import time

import pytest
from freezegun import freeze_time

from tests.conftest import run_inprocess as durable
from tests.helpers import faketime_env

SCHEDULE_KEYS = ["id", "kind", "content", "source", "author", "at", "every", "cron", "tz", "next_at", "last_fired_at",
                 "last_prompt_id", "fired", "missed", "request_id", "created_at"]


def events(name, type_):
    return [e for e in durable("session", "events", name, "--json").json() if e["type"] == type_]


def test_each_kind_is_stored_not_queued_and_listed(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        assert durable("session", "prompt", "n", "once", "--at", "2026-12-05T12:00:00.1234+01:00").out == "1\n"
        doc = durable("session", "prompt", "n", "soon", "--in", "90m", "--source", "ops", "--json").json()
        every = durable("session", "prompt", "n", "tick", "--every", "1h", "--at", "2026-12-06T00:00:00Z", "--json").json()
        cron = durable("session", "prompt", "n", "standup", "--cron", "0 9 * * MON-FRI", "--tz", "Europe/Paris", "--json").json()
        assert list(doc) == SCHEDULE_KEYS
        assert (doc["kind"], doc["at"], doc["next_at"], doc["source"], doc["author"]) == (
            "at", "2026-12-05T11:30:00.000Z", "2026-12-05T11:30:00.000Z", "ops", "alice")
        assert (every["kind"], every["every"], every["at"], every["next_at"]) == (
            "every", 3600, "2026-12-06T00:00:00.000Z", "2026-12-06T00:00:00.000Z")
        # 2026-12-05 is a Saturday: 09:00 in Paris (UTC+1) on Monday the 7th
        assert (cron["kind"], cron["cron"], cron["tz"], cron["at"], cron["next_at"]) == (
            "cron", "0 9 * * MON-FRI", "Europe/Paris", None, "2026-12-07T08:00:00.000Z")
        listed = durable("session", "schedules", "n", "--json").json()
        assert [s["id"] for s in listed] == [1, 2, 3, 4]
        assert listed[0]["at"] == "2026-12-05T11:00:00.123Z"  # kept to the millisecond
        show = durable("session", "show", "n", "--json").json()
        assert (show["status"], show["queue"]["pending"], show["schedules"], show["hooks"]) == ("created", 0, 4, 0)
        assert [e["data"]["kind"] for e in events("n", "schedule.created")] == ["at", "at", "every", "cron"]
        piped = durable("session", "schedules", "n").out.splitlines()
        assert piped[3].split("\t")[:3] == ["4", "cron", "standup"]


BAD = [
    ["--tz", "UTC", "--source", "x"],  # none of the four
    ["--tz", "UTC"],
    ["--at", "2027-01-01T00:00:00Z", "--in", "1h"],
    ["--in", "1h", "--cron", "* * * * *"],
    ["--in", "1h", "--tz", "UTC"],
    ["--in", "1h", "--wait", "5s"],
    ["--at", "2027-01-01T00:00:00"],  # no offset
    ["--at", "2027-01-01"],  # a date alone
    ["--at", "2026-12-01T00:00:00Z"],  # in the past
    ["--at", "2126-12-01T00:00:00Z"],  # more than 36,500 days ahead
    ["--at", "2027-02-30T00:00:00Z"],
    ["--every", "30s"],  # below 1m
    ["--in", "soon"],
    ["--cron", "0 9 * * *", "--tz", "Mars/Olympus"],
    ["--cron", "0 0 9 * * *"],  # seconds
    ["--cron", "0 9 * * * 2027"],
    ["--cron", "@reboot"],
    ["--cron", "0 9 ? * *"],
    ["--cron", "0 9 L * *"],
    ["--cron", "0 9 * * 1#2"],
    ["--cron", "0 9 15W * *"],
    ["--cron", "60 9 * * *"],
    ["--cron", "0 24 * * *"],
    ["--cron", "0 9 * 13 *"],
    ["--cron", "0 9 * * 8"],
    ["--cron", "0 0 30 2 *"],  # no due time in the next 10 years
    ["--in", "1h", "--request-id", "schedule:1:x"],
]


def test_bad_input_is_exit_2_and_creates_nothing(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        for args in BAD:
            r = durable("session", "prompt", "n", "hello", *args)
            assert r.status == 2, (args, r.err)
            assert r.err.startswith("durable: error: ") and len(r.err.strip().splitlines()) == 1, (args, r.err)
        assert not home.exists() or durable("session", "show", "n").status == 3  # no object created


def test_cron_dialect_accepts_names_lists_steps_and_aliases(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        for expr, first in [("*/15 * * * *", "2026-12-05T10:15:00.000Z"), ("0 0 * jan,Jul sun", "2027-01-03T00:00:00.000Z"),
                            ("0 12 1-10/3 * *", "2026-12-07T12:00:00.000Z"), ("@weekly", "2026-12-06T00:00:00.000Z"),
                            ("@Hourly", "2026-12-05T11:00:00.000Z"), ("0 0 13 * 5", "2026-12-11T00:00:00.000Z"),
                            ("0 0 * * 7", "2026-12-06T00:00:00.000Z")]:
            r = durable("session", "prompt", "c", "x", "--cron", expr, "--json")
            assert r.status == 0, (expr, r.err)
            assert r.json()["next_at"] == first, expr
            assert r.json()["cron"] == expr  # as given


def test_reserved_request_ids_and_idempotent_creation(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        r = durable("session", "prompt", "n", "now", "--request-id", "schedule:1:2026-12-05T11:00:00.000Z")
        assert r.status == 2 and "reserved" in r.err
        first = durable("session", "prompt", "n", "x", "--in", "1h", "--request-id", "k1", "--json").json()
    with freeze_time("2026-12-05T10:05:00Z"):
        again = durable("session", "prompt", "n", "x", "--in", "1h", "--request-id", "k1", "--json").json()
        assert again == first  # compared as written: --in 1h is the same request five minutes later
        other = durable("session", "prompt", "n", "x", "--in", "2h", "--request-id", "k1")
        assert other.status == 4
        assert len(durable("session", "schedules", "n", "--json").json()) == 1


def test_a_due_schedule_fires_at_any_wake_once_per_due_time(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "once", "--at", "2026-12-05T11:00:00Z")
        durable("session", "prompt", "n", "hourly", "--every", "1h")
        durable("session", "prompt", "n", "other", "--source", "x")
        assert durable("session", "queue", "n", "--json").json()[0]["schedule_id"] is None
        durable("session", "next", "n")
        durable("session", "finish", "n", "1", "--reply", "ok")
        assert durable("session", "show", "n", "--json").json()["status"] == "completed"
    with freeze_time("2026-12-05T11:00:00Z"):
        show = durable("session", "show", "n", "--json").json()  # a read wakes it
        assert (show["status"], show["queue"]["pending"], show["schedules"]) == ("active", 2, 1)  # the one-shot is gone
        queue = durable("session", "queue", "n", "--pending", "--json").json()
        assert [(p["content"], p["source"], p["author"], p["schedule_id"], p["request_id"]) for p in queue] == [
            ("once", "schedule", "alice", 1, "schedule:1:2026-12-05T11:00:00.000Z"),
            ("hourly", "schedule", "alice", 2, "schedule:2:2026-12-05T11:00:00.000Z")]
        fired = [e["data"] for e in events("n", "schedule.fired")]
        assert fired == [{"schedule_id": 1, "prompt_id": 2, "due_at": "2026-12-05T11:00:00.000Z", "missed": 0},
                         {"schedule_id": 2, "prompt_id": 3, "due_at": "2026-12-05T11:00:00.000Z", "missed": 0}]
        s = durable("session", "schedules", "n", "--json").json()[0]
        assert (s["fired"], s["last_fired_at"], s["last_prompt_id"], s["next_at"]) == (
            1, "2026-12-05T11:00:00.000Z", 3, "2026-12-05T12:00:00.000Z")
        durable("session", "queue", "n")
        assert len(durable("session", "queue", "n", "--json").json()) == 3  # never queued twice


def test_catch_up_queues_one_prompt_after_a_gap_and_counts_the_rest(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "hourly", "--every", "1h")
    with freeze_time("2026-12-05T20:30:00Z"):  # due at 11:00 ... 20:00: ten due times
        queue = durable("session", "queue", "n", "--json").json()
        assert [p["request_id"] for p in queue] == ["schedule:1:2026-12-05T20:00:00.000Z"]  # the latest one
        s = durable("session", "schedules", "n", "--json").json()[0]
        assert (s["fired"], s["missed"], s["next_at"]) == (1, 9, "2026-12-05T21:00:00.000Z")  # no drift
        assert events("n", "schedule.fired")[0]["data"]["missed"] == 9
        assert events("n", "schedule.missed") == []


def test_overlap_queue_full_and_archived_miss_their_due_times(home, tmp_path):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "hourly", "--every", "1h")
    with freeze_time("2026-12-05T11:00:00Z"):
        assert len(durable("session", "queue", "n", "--json").json()) == 1
    with freeze_time("2026-12-05T13:10:00Z"):  # 12:00 and 13:00 find its 11:00 prompt still pending
        assert len(durable("session", "queue", "n", "--json").json()) == 1
        missed = [e["data"] for e in events("n", "schedule.missed")]
        assert missed == [{"schedule_id": 1, "due_at": "2026-12-05T13:00:00.000Z", "reason": "unfinished", "count": 2}]
        s = durable("session", "schedules", "n", "--json").json()[0]
        assert (s["fired"], s["missed"], s["next_at"]) == (1, 2, "2026-12-05T14:00:00.000Z")
        durable("session", "dequeue", "n", "1")
        (tmp_path / "config.toml").write_text("[queue]\nmax_unfinished = 1\n")
        durable("session", "prompt", "n", "fills the queue")
    with freeze_time("2026-12-05T14:00:00Z"):
        durable("session", "show", "n")
        assert events("n", "schedule.missed")[-1]["data"]["reason"] == "queue_full"
        durable("session", "dequeue", "n", "2")
        durable("session", "prompt", "n", "one-shot", "--in", "30m")
        assert durable("session", "archive", "n").status == 0
        r = durable("session", "prompt", "n", "x", "--in", "1h")
        assert r.status == 4 and len(durable("session", "schedules", "n", "--json").json()) == 2  # archived: nothing stored
    with freeze_time("2026-12-05T16:10:00Z"):
        assert durable("session", "show", "n", "--json").json()["status"] == "archived"
        reasons = [(e["data"]["schedule_id"], e["data"]["reason"], e["data"]["count"]) for e in events("n", "schedule.missed")]
        assert reasons[-2:] == [(2, "archived", 1), (1, "archived", 2)]  # by next_at
        assert [s["id"] for s in durable("session", "schedules", "n", "--json").json()] == [1]  # the one-shot deleted
        durable("session", "unarchive", "n")
        assert durable("session", "queue", "n", "--pending", "--json").json() == []  # no stale prompt comes back
    with freeze_time("2026-12-05T17:00:00Z"):
        queue = durable("session", "queue", "n", "--pending", "--json").json()
        assert [p["request_id"] for p in queue] == ["schedule:1:2026-12-05T17:00:00.000Z"]


@pytest.mark.parametrize("zone, expr, day_before, fires", [
    # spring forward: 02:30 does not exist; it fires once at 03:00+02:00
    ("Europe/Paris", "30 2 * * *", "2027-03-27T12:00:00Z", ["2027-03-28T01:00:00.000Z", "2027-03-29T00:30:00.000Z"]),
    # fall back: 02:30 happens twice; it fires at the first (02:30+02:00) only
    ("Europe/Paris", "30 2 * * *", "2027-10-30T12:00:00Z", ["2027-10-31T00:30:00.000Z", "2027-11-01T01:30:00.000Z"]),
    ("America/New_York", "30 2 * * *", "2027-03-13T12:00:00Z", ["2027-03-14T07:00:00.000Z", "2027-03-15T06:30:00.000Z"]),
    ("America/New_York", "30 1 * * *", "2027-11-06T12:00:00Z", ["2027-11-07T05:30:00.000Z", "2027-11-08T06:30:00.000Z"]),
])
def test_cron_on_daylight_saving_days_fires_once(home, zone, expr, day_before, fires):
    with freeze_time(day_before):
        assert durable("session", "prompt", "d", "x", "--cron", expr, "--tz", zone, "--json").json()["next_at"] == fires[0]
    with freeze_time(fires[0]):
        durable("session", "show", "d")
        assert durable("session", "schedules", "d", "--json").json()[0]["next_at"] == fires[1]
        durable("session", "dequeue", "d", "1")


def test_every_real_hour_fires_on_a_fall_back_night(home, tmp_path):
    # faketime, not freezegun (freezegun's datetime loses the fold of a repeated wall time): one process whose
    # clock is read from a file it moves itself
    with freeze_time("2027-10-30T23:00:00Z"):  # 01:00+02:00 in Paris
        durable("session", "prompt", "h", "x", "--cron", "30 * * * *", "--tz", "Europe/Paris")
    clock_file = tmp_path / "faketime"
    clock_file.write_text("@2027-10-30 23:00:00\n")
    env = dict(faketime_env("2027-10-30 23:00:00"), FAKETIME_TIMESTAMP_FILE=str(clock_file), FAKETIME_NO_CACHE="1", TZ="UTC")
    del env["FAKETIME"]
    proc = subprocess.run([sys.executable, "-c", DEQUEUE_EACH_HOUR, "h", str(clock_file)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # 23:30Z, 00:30Z (02:30+02:00), 01:30Z (02:30+01:00), 02:30Z: both repeated ones
    assert proc.stdout.split() == ["2027-10-30T23:30:00.000Z", "2027-10-31T00:30:00.000Z", "2027-10-31T01:30:00.000Z",
                                   "2027-10-31T02:30:00.000Z"]


DEQUEUE_EACH_HOUR = """
import sys
from durable_cli import Store
for when in ("2027-10-30 23:30:01", "2027-10-31 00:30:01", "2027-10-31 01:30:01", "2027-10-31 02:30:01"):
    open(sys.argv[2], "w").write("@" + when + "\\n")
    with Store().open(sys.argv[1]) as s:
        for p in s.queue(pending_only=True):
            print(p["request_id"].split(":", 2)[2])
            s.dequeue(p["id"])
"""


def test_unschedule_by_its_author_or_an_owner(home, monkeypatch):
    with freeze_time("2026-12-05T10:00:00Z"):
        monkeypatch.setenv("DURABLE_TENANT", "acme")
        durable("session", "create", "t")
        durable("session", "invite", "t", "bob")
        durable("session", "invite", "t", "carol")
        monkeypatch.setenv("DURABLE_USER", "bob")
        durable("session", "prompt", "t", "bob's", "--in", "1h")
        durable("session", "prompt", "t", "bob's too", "--in", "1h")
        monkeypatch.setenv("DURABLE_USER", "carol")
        assert durable("session", "unschedule", "t", "1").status == 5
        assert durable("session", "unschedule", "t", "9").status == 3
        monkeypatch.setenv("DURABLE_USER", "bob")
        assert durable("session", "unschedule", "t", "1").status == 0
        monkeypatch.setenv("DURABLE_USER", "alice")  # an owner
        assert durable("session", "unschedule", "t", "2").status == 0
        assert [e["data"] for e in events("t", "schedule.deleted")] == [{"schedule_id": 1}, {"schedule_id": 2}]
        assert durable("session", "show", "t", "--json").json()["schedules"] == 0


def test_at_most_twenty_schedules(home):
    from durable_cli import Store

    with freeze_time("2026-12-05T10:00:00Z"):
        with Store().open("n", create=True) as s:
            for _ in range(20):
                s.schedule("x", after="1h", created=True)
        r = durable("session", "prompt", "n", "x", "--in", "1h")
        assert r.status == 4 and "too many schedules" in r.err


def test_sweep_fires_schedules_and_a_scheduled_session_is_no_draft(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "daily", "--cron", "@daily")
        durable("session", "prompt", "m", "later", "--in", "300d")
    with freeze_time("2026-12-06T00:00:01Z"):
        assert durable("sweep").status == 0
        assert events("n", "schedule.fired")[0]["data"]["due_at"] == "2026-12-06T00:00:00.000Z"
        assert durable("session", "show", "m", "--json").json()["status"] == "created"  # not archived as a draft


def test_faketime_moves_schedules_in_real_processes(home):
    assert durable("session", "prompt", "n", "x", "--in", "2h").status == 0
    later = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + 3 * 3600))
    env = dict(faketime_env(later), TZ="UTC")
    proc = subprocess.run([sys.executable, "-m", "durable_cli", "session", "queue", "n", "--json"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [p["schedule_id"] for p in json.loads(proc.stdout)] == [1]


@pytest.mark.parametrize("which", [["w"], ["--all"]])
def test_work_takes_a_prompt_that_comes_due_while_it_waits(home, which):
    assert durable("session", "prompt", "w", "ping", "--in", "1s").status == 0
    due = time.time() + 1
    proc = subprocess.run([sys.executable, "-m", "durable_cli", "work", *which, "--once", "--wait", "30s", "--json",
                           "--command", "cat >/dev/null; date +%s.%N"], capture_output=True, text=True,
                          env=dict(os.environ), timeout=60)
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout)
    assert line["outcome"] == "completed"
    reply = durable("transcript", "show", "w", "--json").json()[-1]["content"]
    assert float(reply) >= due - 0.05  # not before it was due


def test_export_and_import_carry_schedules_exactly_and_fork_copies_none(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "daily", "--cron", "0 9 * * *", "--tz", "Europe/Paris", "--request-id", "k")
        durable("session", "prompt", "n", "hourly", "--every", "1h")
        durable("session", "unschedule", "n", "1")
        before = durable("session", "schedules", "n", "--json").json()
        dump = durable("export", "n").out
        assert json.loads(dump)["version"] == 8
        assert durable("session", "fork", "n", "f").status == 0
        assert durable("session", "schedules", "f", "--json").json() == []
        durable("delete", "n", "--yes")
        assert durable("import", "-", input=dump).status == 0
        assert durable("session", "schedules", "n", "--json").json() == before
        assert durable("session", "prompt", "n", "next", "--in", "1h", "--json").json()["id"] == 3  # ids never reused
    with freeze_time("2026-12-05T13:30:00Z"):  # a schedule already due fires under the catch-up rule at the next wake
        assert {p["request_id"] for p in durable("session", "queue", "n", "--json").json()} == {
            "schedule:2:2026-12-05T13:00:00.000Z", "schedule:3:2026-12-05T11:00:00.000Z"}


def test_forget_user_deletes_the_schedules_they_made_in_tenant_sessions_that_stay(home, monkeypatch):
    with freeze_time("2026-12-05T10:00:00Z"):
        monkeypatch.setenv("DURABLE_TENANT", "acme")
        durable("session", "create", "t")
        durable("session", "invite", "t", "bob")
        monkeypatch.setenv("DURABLE_USER", "bob")
        durable("session", "prompt", "t", "secret plan of bob", "--every", "1h")
        monkeypatch.setenv("DURABLE_USER", "alice")
        durable("session", "prompt", "t", "alice's", "--every", "1h")
        monkeypatch.delenv("DURABLE_TENANT")
        r = durable("forget", "bob", "--yes", "--json")
        assert r.status == 0, r.err
        assert [c["what"] for c in r.json()["changed"]] == ["participant removed, schedules"]
        monkeypatch.setenv("DURABLE_TENANT", "acme")
        assert [s["content"] for s in durable("session", "schedules", "t", "--json").json()] == ["alice's"]
    data = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"secret plan of bob" not in data


# -- found by the black-box audit of §5.3 against the contract ------------------------------------------------------

def test_unschedule_json_is_the_deleted_id(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "x", "--in", "1h")
        assert durable("session", "unschedule", "n", "1", "--json").json() == {"deleted": 1}
        assert durable("session", "schedules", "n", "--json").json() == []


def test_an_offset_out_of_range_is_a_plain_exit_2(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        for offset in ("+24:00", "-25:30", "+05:60", "+01:75"):
            r = durable("session", "prompt", "n", "x", "--at", f"2026-12-06T09:00:00{offset}")
            assert r.status == 2, (offset, r.out)
            assert r.err == (f"durable: error: invalid --at '2026-12-06T09:00:00{offset}': the offset {offset} is out of"
                             " range (hours 00-23, minutes 00-59)\n")
        assert durable("session", "prompt", "n", "x", "--at", "2026-12-07T09:00:00+23:59").status == 0


def test_a_prompt_lists_its_fields_in_the_contracts_order(home):
    """Piped `session queue` prints a prompt's fields in §5's order: `position` after `turn_seq`, `schedule_id`
    after `start`."""
    from durable_cli.contract.ops import contract

    order = contract()["shapes"]["prompt"]
    with freeze_time("2026-12-05T10:00:00Z") as clock:
        durable("session", "prompt", "n", "tick", "--in", "1m", "--source", "cronjob")
        clock.tick(61)
        [p] = durable("session", "queue", "n", "--json").json()
        assert list(p) == order == [
            "id", "status", "content", "author", "source", "request_id", "turn_seq", "position", "attempts", "start",
            "schedule_id", "created_at", "started_at", "lease_expires_at", "completed_at", "error"]
        row = durable("session", "queue", "n").out.rstrip("\n").split("\t")
        assert row[:11] == ["1", "pending", "tick", "alice", "cronjob", "schedule:1:2026-12-05T10:01:00.000Z", "", "1",
                            "0", "0", "1"]
        assert list(durable("session", "next", "n", "--json").json())[:16] == order


def test_sweep_says_where_a_schedule_fired(home):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "x", "--in", "1m")
        durable("session", "create", "idle")
    with freeze_time("2026-12-05T10:02:00Z"):
        receipt = durable("sweep", "--json").json()
        assert [(c["name"], c["what"]) for c in receipt["changed"]] == [("n", "schedule fired")]


@pytest.mark.parametrize("field,value,says", [
    ("cron", "@reboot", "schedules[0].cron is not valid: invalid --cron '@reboot'"),
    ("cron", "0 0 30 2 *", "schedules[0].cron has no due time"),
    ("tz", "Mars/Olympus", "schedules[0].tz is not valid: unknown time zone 'Mars/Olympus'"),
    ("tz", None, "schedules[0].tz is missing"),
    ("at", 1796544000000, "schedules[0].at must be null"),
    ("content", "", "schedules[0].content must not be empty"),
    ("request_id", "schedule:9:x", "schedules[0].request_id starts with 'schedule:'"),
])
def test_import_holds_schedules_to_the_rules_that_made_them(home, tmp_path, field, value, says):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "standup", "--cron", "0 9 * * *", "--tz", "Europe/Paris")
        durable("session", "prompt", "n", "tick", "--every", "1h")
        durable("export", "n", "--output", str(tmp_path / "n.jsonl"))
        record = json.loads((tmp_path / "n.jsonl").read_text())
        before = durable("session", "schedules", "n", "--json").out
        record["schedules"][0][field] = value
        (tmp_path / "bad.jsonl").write_text(json.dumps(record) + "\n")
        r = durable("import", str(tmp_path / "bad.jsonl"), "--replace")
        assert r.status == 2 and says in r.err, r.err
        assert durable("session", "schedules", "n", "--json").out == before  # nothing of the record stored


def test_import_refuses_an_every_below_a_minute_and_more_than_20_schedules(home, tmp_path):
    with freeze_time("2026-12-05T10:00:00Z"):
        durable("session", "prompt", "n", "tick", "--every", "1h")
        durable("export", "n", "--output", str(tmp_path / "n.jsonl"))
        record = json.loads((tmp_path / "n.jsonl").read_text())
        for change, says in [({"every": 30}, "schedules[0].every must be from 60"), ({"at": None}, "schedules[0].at is missing")]:
            bad = dict(record, schedules=[dict(record["schedules"][0], **change)])
            (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n")
            r = durable("import", str(tmp_path / "bad.jsonl"), "--replace")
            assert r.status == 2 and says in r.err, r.err
        many = dict(record, schedules=[dict(record["schedules"][0], id=i, request_id=None) for i in range(1, 22)])
        (tmp_path / "bad.jsonl").write_text(json.dumps(many) + "\n")
        r = durable("import", str(tmp_path / "bad.jsonl"), "--replace")
        assert r.status == 2 and "schedules holds 21 schedules" in r.err, r.err
