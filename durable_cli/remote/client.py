"""HTTP to the durable Worker: one keep-alive connection per run, a request id on every call, retries.

Reads and writes are both retried after a dropped connection, a timeout or an error the Worker marks
`retryable` (never an `overloaded` object: exit 6 at once, as Cloudflare advises); a write is retried
with the SAME request id, which the object answers with its first result, so it is
applied once. A write whose outcome is still unknown when the time (remote.timeout) runs out is exit 7
with the code `outcome_unknown` and its request id, never a success the object did not commit.
Standard library only. Plain http:// (loopback, a tunnel) speaks HTTP/1.1 over one socket directly,
since importing http.client (email, ssl) costs more than the request on loopback (measured: ~45% of
the CLI's own import time, docs/benchmarks.md); https:// uses http.client. A malformed answer counts as
a dropped connection (tests/remote/test_remote_http.py).
"""

import json
import os
import time
from typing import Any

from ..errors import DurableError
from .http11 import PlainConnection, ProtocolError

RETRY_DELAYS = (0.05, 0.2, 0.5, 1.0)


class RemoteClient:
    def __init__(self, url: str, token, timeout: float):
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DurableError(f"invalid remote URL {url!r}: use http(s)://HOST[:PORT]", "invalid_input")
        self.url = url
        self.secure = parts.scheme == "https"
        self.host = parts.hostname
        try:
            self.port = parts.port
        except ValueError:
            raise DurableError(f"invalid remote URL {url!r}: bad port", "invalid_input") from None
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._conn: Any = None  # a PlainConnection or an http.client connection, made on first use

    def _connection(self, timeout: float):
        if not self.secure:
            if self._conn is None:
                self._conn = PlainConnection(self.host, self.port or 80)
            self._conn.timeout = timeout
            return self._conn
        import http.client

        if self._conn is None:
            cls = http.client.HTTPSConnection if self.secure else http.client.HTTPConnection
            self._conn = cls(self.host, self.port, timeout=timeout)
        else:
            self._conn.timeout = timeout
            if self._conn.sock is not None:
                self._conn.sock.settimeout(timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def call(self, body: dict, *, write: bool) -> object:
        """POST BODY to /v1/call; the result, or the Worker's error as a DurableError (its code and exit).

        A write runs inside the CLI's commit guard (docs/reference/remote.md §13): once it may have been sent, SIGINT and
        SIGTERM wait for its answer (up to remote.timeout), so 130/143 still mean nothing changed. An
        answer that the write failed delivers a waiting signal then; an unknown outcome stays exit 7.
        """
        from .. import guard as _guard

        wakes = _guard.wakes
        if wakes is not None:  # an operation span's durable.remote.duration and object id (docs/reference/traces.md §15.6)
            began = time.perf_counter()
            self.object_seen = None
            try:
                return self._guarded(body, write=write, guard=_guard.commit_guard if write else None)
            finally:
                seen = wakes.setdefault("remote", [0, 0.0, set()])
                seen[0] += 1
                seen[1] += time.perf_counter() - began
                if self.object_seen is not None:
                    seen[2].add(self.object_seen)
        return self._guarded(body, write=write, guard=_guard.commit_guard if write else None)

    def _guarded(self, body: dict, *, write: bool, guard) -> object:
        if guard is None:
            return self._call(body, write=write)
        unknown = None
        with guard():
            try:
                return self._call(body, write=write)
            except DurableError as e:
                if e.code != "outcome_unknown":
                    raise
                unknown = e  # not "nothing changed": raised after the guard, so no signal replaces it
        raise unknown

    def _call(self, body: dict, *, write: bool) -> object:
        import socket

        HTTPException = ProtocolError
        if self.secure:
            import http.client

            HTTPException = http.client.HTTPException

        request_id = body.setdefault("request_id", os.urandom(16).hex())
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        headers = {"content-type": "application/json", "x-durable-request-id": request_id}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        deadline = time.monotonic() + self.timeout
        sent = False  # whether any attempt may have reached the object
        why = ""
        for attempt in range(len(RETRY_DELAYS) + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            conn = self._connection(left)
            try:
                conn.request("POST", self.prefix + "/v1/call", body=payload, headers=headers)
                sent = True
                response = conn.getresponse()
                status, data = response.status, response.read()
                seen = response.getheader("x-durable-object-id")  # an object the call woke, as this caller may see it
                if seen is not None and len(seen) == 64 and all(c in "0123456789abcdef" for c in seen):
                    self.object_seen = seen
            except (ConnectionRefusedError, socket.gaierror) as e:
                self.close()
                why = f"cannot connect to {self.url} ({e.strerror or e})"
                if not sent and isinstance(e, socket.gaierror):
                    break
            except (OSError, HTTPException, ProtocolError) as e:  # reset, dropped, timed out
                self.close()
                sent = True
                why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            else:
                doc = self._decode(status, data)
                if "error" not in doc:
                    return doc.get("result")
                err = doc["error"]
                # only an error the Worker marks retryable is retried (an overloaded object is not: exit 6 at once)
                if err.get("code") == "busy" and err.get("retryable") is True and attempt < len(RETRY_DELAYS):
                    why = err.get("message", "busy")
                    time.sleep(min(RETRY_DELAYS[attempt], max(deadline - time.monotonic(), 0)))
                    continue
                # a token over its rate (docs/reference/remote.md §13): nothing was done; wait retry_after if remote.timeout allows, the
                # same request id kept, else exit 8 at once
                wait = err.get("retry_after")
                if err.get("code") == "rate_limited" and isinstance(wait, (int, float)) and attempt < len(RETRY_DELAYS) \
                        and time.monotonic() + wait < deadline:
                    time.sleep(wait)
                    continue
                refused = DurableError(err.get("message", "the Worker refused the request"), err.get("code", "internal"),
                                       document=err.get("document"))
                if isinstance(wait, (int, float)):
                    refused.retry_after = wait  # a rate_limited error's wait (durable ui's Retry-After)
                raise refused
            if attempt < len(RETRY_DELAYS):
                time.sleep(min(RETRY_DELAYS[attempt], max(deadline - time.monotonic(), 0)))
        if write and sent:
            raise DurableError(
                f"the outcome of the write is unknown ({why or 'no answer within remote.timeout'}); it is safe to retry "
                f"it with request id {request_id}, which the object applies at most once", "outcome_unknown")
        raise DurableError(f"the remote {self.url} did not answer ({why or 'timed out'}); nothing was changed", "storage")

    def _decode(self, status: int, data: bytes) -> dict:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            doc = None
        if not isinstance(doc, dict) or not ("result" in doc or isinstance(doc.get("error"), dict)):
            raise DurableError(f"{self.url} answered HTTP {status} with something that is not a durable Worker's answer; "
                               "check remote.url", "storage")
        if status == 401 and "error" in doc:
            doc["error"]["code"] = "permission_denied"
        return doc
