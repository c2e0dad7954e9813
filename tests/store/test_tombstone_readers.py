"""A LangGraph thread's tombstone answers only who may see the thread, on the file backend as on the Worker
(docs/reference/integrations.md §12): the participants it had when it was deleted; anyone else naming it gets exactly what a name never
made gets."""

import sqlite3

from durable_cli import Store


def _put_thread(store, name, tenant=None, invite=()):
    with store.open(name, create=True, tenant=tenant) as s:
        s.put_checkpoint(external_id=name, ns="", checkpoint_id="0001", parent_id=None, type_="bytes", blob=b"x", metadata="{}")
        for user in invite:
            s.invite(user)


def _delete(store, name, tenant=None):
    with store.open(name, tenant=tenant) as s:
        s.delete_thread()


def test_a_tombstone_answers_only_the_participants_the_thread_had(home):
    alice = Store(home=str(home), user="alice")
    _put_thread(alice, "t", tenant="acme", invite=["carol"])
    _delete(alice, "t", tenant="acme")
    _put_thread(alice, "mine")
    _delete(alice, "mine")
    for user in ("alice", "carol"):
        grave = Store(home=str(home), user=user).tombstone("t", tenant="acme")
        assert grave is not None and grave["last_checkpoint"] == "0001", user
        assert set(grave) == {"id", "owner", "last_checkpoint", "deleted_at"}
    assert alice.tombstone("mine")["last_checkpoint"] == "0001"
    bob = Store(home=str(home), user="bob")
    # bob names the tenant thread he never took part in: what a name never made answers (it used to be the
    # thread's id, last checkpoint and time of deletion)
    assert bob.tombstone("t", tenant="acme") is None == bob.tombstone("never", tenant="acme")
    # a thread made again under that name by bob and deleted: its readers join the first thread's
    _put_thread(bob, "t", tenant="acme")
    _delete(bob, "t", tenant="acme")
    for user in ("alice", "bob", "carol"):
        assert Store(home=str(home), user=user).tombstone("t", tenant="acme") is not None, user
    assert Store(home=str(home), user="dave").tombstone("t", tenant="acme") is None


def test_a_tombstone_buried_before_its_readers_were_kept_answers_its_owner_only(home):
    alice = Store(home=str(home), user="alice")
    _put_thread(alice, "mine")
    _delete(alice, "mine")
    _put_thread(alice, "t", tenant="alice")  # a tenant spelled as the user: not hers alone
    _delete(alice, "t", tenant="alice")
    alice.close()
    db = sqlite3.connect(str(home / "index.db"))
    with db:
        db.execute("UPDATE tombstones SET members = NULL")
    db.close()
    assert Store(home=str(home), user="alice").tombstone("mine") is not None
    assert Store(home=str(home), user="alice").tombstone("t", tenant="alice") is None
