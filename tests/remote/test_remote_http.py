"""The client's HTTP/1.1 (remote/http11.py PlainConnection) meets a malformed answer the way it meets a
dropped connection (docs/reference/remote.md §13): reads are retried then exit 7; a write is `outcome_unknown` (exit 7, its
request id named), never an internal error."""

import socket
import threading

import pytest

from durable_cli.errors import DurableError
from durable_cli.remote.client import RemoteClient

ANSWERS = [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",  # a chunk size that is not hex
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",  # a chunk without its CRLF
    b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n{}",  # a Content-Length that is not a number
    b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n{}",
]


@pytest.fixture
def server(request):
    answer = request.param
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    listener.close()


@pytest.mark.parametrize("server", ANSWERS, indirect=True, ids=["chunk-size", "chunk-end", "length-text", "length-negative"])
def test_a_malformed_answer_is_outcome_unknown_for_a_write_and_exit_7_for_a_read(server):
    client = RemoteClient(server, "t", 0.4)
    with pytest.raises(DurableError) as e:
        client.call({"op": "append_many", "scope": "user", "name": "x", "args": {}}, write=True)
    assert (e.value.code, e.value.exit_status) == ("outcome_unknown", 7) and "request id" in e.value.message
    with pytest.raises(DurableError) as e:
        RemoteClient(server, "t", 0.4).call({"op": "show", "scope": "user", "name": "x", "args": {}}, write=False)
    assert (e.value.code, e.value.exit_status) == ("storage", 7)
