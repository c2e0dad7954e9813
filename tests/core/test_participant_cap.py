"""docs/reference/sessions.md §5: at most 1,000 participants per object (the file backend; tests/remote/test_remote_members.py
holds the Worker to the same): one more is exit 4 "too many participants", and nothing is added."""

import json

from durable_cli.library import Store
from tests.conftest import run_inprocess

T = ["--as", "alice", "--tenant", "acme"]


def test_a_thousand_and_first_participant_is_exit_4():
    assert run_inprocess(*T, "session", "create", "crowd").status == 0
    with Store(user="alice").open("crowd", tenant="acme") as obj, obj.handle.transaction():  # 999 members at once
        obj.db.executemany("INSERT INTO participants (user, role, joined_at) VALUES (?, 'member', 0)", [(f"p{i:04d}",) for i in range(999)])
    r = run_inprocess(*T, "session", "invite", "crowd", "one-more")
    assert r.status == 4, r.err
    assert r.err == 'durable: error: too many participants: session "crowd" of tenant "acme" already has 1000, the most a session may have\n'
    # a participant's role still changes at the cap
    assert run_inprocess(*T, "session", "invite", "crowd", "p0000", "--role", "owner").status == 0
    assert len(json.loads(run_inprocess(*T, "session", "participants", "crowd", "--json").out)) == 1000
