"""`transcript show --follow` with --remote (docs/reference/remote.md §13 "Live follow"): one WebSocket to the object's
Durable Object, no polling.

The first rows come from one `follow_start` request (the rows `show` lists, the highest seq, the
status); then `GET /v1/follow` is upgraded to a WebSocket (the token in the Authorization header, the
call in the `x-durable-call` header, never in the URL) and the object pushes each newer row after the
commit that made it, one message a row: `{"row": {...}}`. The object closes the socket with
END_OF_STREAM (4000) when the session ends (archived, cancelled, deleted, forgotten, purged, expired,
no longer visible to the follower): the follower then returns (exit 0). At the first push after the
follower's token was revoked or expired it closes it with 4001 instead: the follower says which and exits 5. On 4002 ("session expired,
reconnect": the object had no mapping for the socket), on 4003 ("too far behind, reconnect": the rows it had
not read yet passed the object's 4 MiB bound) and on any close it was not told the reason of
(1001 going away, 1006 dropped, a Worker restart), it reconnects from the last seq it printed, for up
to remote.timeout (then exit 7), so no row is lost or repeated.

Imported only by `--follow --remote`: `websockets` (its sync client) is not loaded by any other command.
"""

import json
import time

from ..errors import DurableError

END_OF_STREAM = 4000
TOKEN_ENDED = 4001  # the token was revoked or expired since the follow began: exit 5, saying which
TOO_FAR_BEHIND = 4003  # the socket's backlog passed the object's bound (it was not reading): reconnect
RECONNECT = (4002, TOO_FAR_BEHIND, 1001, 1006, 1011, 1012, 1013, 1014)  # told to reconnect, or not told why
RECONNECT_DELAYS = (0.05, 0.1, 0.2, 0.5, 1.0)


def _ws_url(url: str) -> str:
    if url.startswith("https://"):
        return "wss://" + url[len("https://"):].rstrip("/") + "/v1/follow"
    return "ws://" + url[len("http://"):].rstrip("/") + "/v1/follow"


def _refusal(client, status: int, body: bytes) -> DurableError:
    doc = client._decode(status, body)
    err = doc.get("error") or {}
    return DurableError(err.get("message", "the Worker refused the follow request"), err.get("code", "internal"))


def follow_rows(store, name, *, all_rows=False, since=0, last=None, interval=None):
    """Batches of rows: the ones `show` lists, then each pushed row (a batch of one) until the stream ends."""
    from ..backends import FOLLOW_ENDS

    with store.open(name) as session:
        rows, high, status = session.follow_start(all_rows=all_rows, since=since, last=last)
        address = session.address
    yield rows
    if status in FOLLOW_ENDS:
        return
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
    from websockets.sync.client import connect

    client = store.client
    timeout = store.config.seconds("remote.timeout")
    headers = {"Authorization": f"Bearer {client.token}"} if client.token else {}
    call = {"op": "follow", "scope": address.id_scope, "label": address.scope, "name": address.name,
            "tenant": address.owner if address.id_scope == "tenant" else None, "actor": store.user,
            "args": {"since": high},
            "config": {"max_unfinished": store.config.get("queue.max_unfinished"),
                       "max_turn_bytes": store.config.get("transcript.max_turn_bytes"),
                       "token_budget": store.config.get("transcript.token_budget"), "tags_max": store.config.get("tags.max")}}
    failing_since = None  # when the connection was lost (reconnects go on until remote.timeout after it)
    attempt = 0
    why = ""
    while True:
        call["args"]["since"] = high
        ws = None
        try:
            ws = connect(_ws_url(client.url), additional_headers={**headers, "x-durable-call": json.dumps(call, ensure_ascii=True)},
                         open_timeout=timeout, close_timeout=1, max_size=None, ping_interval=None, compression=None)
        except InvalidStatus as e:
            err = _refusal(client, e.response.status_code, e.response.body or b"")
            if err.code == "not_found":
                return  # deleted (or expired, or no longer visible) while away: the stream has ended
            if err.code != "busy":
                raise err from e
            why = err.message
        except (OSError, TimeoutError, InvalidHandshake, ConnectionClosed) as e:
            # ConnectionClosed: the socket dropped while the handshake was being sent (a Worker restarting
            # accepts the TCP connection and closes it): as any lost connection, reconnect
            why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if ws is not None:
            failing_since, attempt = None, 0
            try:
                while True:
                    try:
                        message = ws.recv(timeout=1.0)  # a bounded wait, so that signals are seen at once
                    except TimeoutError:
                        continue
                    row = json.loads(message)["row"]
                    if row["seq"] > high:  # (never a repeat: the object sends each seq once per socket)
                        high = row["seq"]
                        yield [row]
            except ConnectionClosed as e:
                code = e.rcvd.code if e.rcvd is not None else 1006
                if code == END_OF_STREAM:
                    return
                if code == TOKEN_ENDED:
                    reason = (e.rcvd.reason if e.rcvd is not None else "") or "token revoked or expired"
                    raise DurableError(f"{reason}: the follow stream was closed; issue a new token ('durable remote token') "
                                       "and follow again", "permission_denied") from e
                if code not in RECONNECT:
                    reason = e.rcvd.reason if e.rcvd is not None else ""
                    raise DurableError(f"the follow stream was closed with code {code} ({reason or 'no reason'})", "storage") from e
                why = f"closed with code {code}"
            finally:
                ws.close()
        now = time.monotonic()
        if failing_since is None:
            failing_since = now
        if now - failing_since > timeout:
            raise DurableError(f"lost the follow stream of {client.url} and could not reconnect within remote.timeout ({why})", "storage")
        time.sleep(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)])
        attempt += 1
