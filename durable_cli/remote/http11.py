"""A stand-in for `http.client` on plain http:// (loopback, a tunnel): just enough HTTP/1.1 for the Worker's API
over one kept-alive socket, since importing http.client (email, ssl) costs more than the request on loopback
(docs/benchmarks.md, "Private-API shims"). A malformed answer raises ProtocolError, which the client treats as a
dropped connection (tests/remote/test_remote_http.py)."""

from typing import Any


class ProtocolError(Exception):
    """An answer that is not HTTP/1.1 as expected (treated like a dropped connection)."""


class PlainConnection:
    """Just enough HTTP/1.1 for the Worker's API over one kept-alive socket: request(), getresponse()."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.sock: Any = None  # the socket, connected on first use
        self.timeout = 10.0
        self._buffer = b""

    def request(self, method: str, path: str, body: bytes, headers: dict) -> None:
        import socket

        if self.sock is None:
            # an ASCII host as bytes: getaddrinfo would otherwise import the idna codec (unicodedata, stringprep)
            host = self.host.encode("ascii") if self.host.isascii() else self.host
            self.sock = socket.create_connection((host, self.port), timeout=self.timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._buffer = b""
        self.sock.settimeout(self.timeout)
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ProtocolError("the connection was closed before the answer")
        self._buffer += chunk

    def _until(self, mark: bytes) -> bytes:
        while mark not in self._buffer:
            self._fill()
        line, self._buffer = self._buffer.split(mark, 1)
        return line

    def _exactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            self._fill()
        data, self._buffer = self._buffer[:n], self._buffer[n:]
        return data

    def getresponse(self):
        head = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        parts = head[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP answer: {head[0][:60]!r}")
        headers = {}
        for line in head[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = _number(self._until(b"\r\n").split(b";")[0].strip(), 16, "chunk size")
                if size == 0:
                    self._until(b"\r\n")
                    break
                body += self._exactly(size)
                if self._exactly(2) != b"\r\n":
                    raise ProtocolError("a chunk does not end with CRLF")
        elif "content-length" in headers:
            body = self._exactly(_number(headers["content-length"].encode("latin-1"), 10, "Content-Length"))
        else:
            while True:  # delimited by the end of the connection
                try:
                    self._fill()
                except ProtocolError:
                    break
            body, self._buffer = self._buffer, b""
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return _Response(int(parts[1]), body, headers)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _number(text: bytes, base: int, what: str) -> int:
    """A chunk size or Content-Length; anything else is a malformed answer (retried, or for a write
    outcome_unknown: docs/reference/remote.md §13), never an internal error."""
    digits = b"0123456789abcdefABCDEF"[: 22 if base == 16 else 10]
    if not text or len(text) > 16 or any(c not in digits for c in text):
        raise ProtocolError(f"malformed {what} {text[:20]!r}")
    return int(text, base)


class _Response:
    def __init__(self, status: int, body: bytes, headers: dict):
        self.status, self._body, self._headers = status, body, headers

    def read(self) -> bytes:
        return self._body

    def getheader(self, name: str, default=None):
        return self._headers.get(name.lower(), default)
