"""What both backends of library.Store share (the file one in library.py, the remote one in
remote/backend.py): the plan of a `session create`, and the loops of every wait and of `--follow`."""

from . import clock
from .core import sessions
from .errors import DurableError


def plan_create(store, name, title, ttl_seconds, ephemeral, tags=None):
    """What `session create` makes, checked before anything is (either backend): the address (a fresh
    random NAME with retention.ephemeral_ttl for --ephemeral), the valid title, the TTL and the tags (each
    KEY and VALUE, at most tags.max of them: exit 2)."""
    from .contract.messages import say
    from .core.tags import valid_set
    from .errors import invalid

    tags = valid_set(tags)

    if ephemeral:
        if name is not None:
            raise invalid("give either NAME or --ephemeral, not both")
        import uuid

        name = uuid.uuid4().hex
        if ttl_seconds is None:
            ttl_seconds = store.config.seconds("retention.ephemeral_ttl")
        address = store.address(name, scope="session")
    elif name is None:
        raise invalid("missing NAME: give a session NAME, or --ephemeral for a random one")
    else:
        address = store.address(name)
    if title is not None:
        title = sessions.valid_title(title)  # input first: a rejected create makes nothing, not even a secret
    if len(tags) > store.config.get("tags.max"):
        from .core.state import Address

        what = Address(address.id_scope, address.owner, address.name, address.scope).what  # either backend's address
        raise invalid(say("too_many_tags", what=what, count=len(tags), limit=store.config.get("tags.max")))
    return address, title, ttl_seconds, tags


GIVE_UP = object()  # what a poll answers to end the wait with None (the deadline came while it waited)
FOLLOW_ENDS = ("archived", "cancelled")


def poll_loop(once, wait_seconds):
    """The polling loop of `Store.poll` and the remote backend's: ONCE(left, looked) until it answers
    non-None or WAIT_SECONDS pass (GIVE_UP ends the wait with None).

    WAIT_SECONDS bounds the whole run: time is read from a monotonic clock (or the time slept, if more:
    a frozen clock cannot stall it). LEFT is what is left of it; LOOKED whether a poll has run before.
    Polls back off from 20 ms to 250 ms."""
    import time

    start, slept, delay, looked = time.monotonic(), 0.0, 0.02, False
    while True:
        left = max(wait_seconds - max(time.monotonic() - start, slept), 0.0)
        result = once(left, looked)
        if result is GIVE_UP:
            return None
        looked = True
        spent = max(time.monotonic() - start, slept)
        if result is not None or spent >= wait_seconds:
            return result
        step = min(delay, wait_seconds - spent)
        clock.sleep(step)
        slept += step
        delay = min(delay * 1.5, 0.25)


def follow_rows(store, name, *, all_rows=False, since=0, last=None, interval=0.1):
    """The loop of `transcript show --follow` for either backend: the rows `show` lists, then each batch
    of newer rows, polling every INTERVAL seconds until the session is archived, cancelled or gone; a
    poll that finds the object busy is tried again."""
    with store.open(name) as session:
        rows, high, status = session.follow_start(all_rows=all_rows, since=since, last=last)
    yield rows
    while status not in FOLLOW_ENDS:
        clock.sleep(interval)
        try:
            with store.open(name) as session:
                rows, status = session.rows_after(high)
        except DurableError as e:
            if e.code == "busy":
                continue
            if e.code == "not_found":
                return  # deleted (or expired): the session has ended
            raise
        if rows:
            high = rows[-1]["seq"]
            yield rows
