"""A TCP proxy between the client and workerd that misbehaves on purpose (fault tests)."""

import select
import socket
import threading


class Proxy:
    """MODE: "pass" forwards; "drop_once" forwards the first request, waits for the Worker's answer
    (so the write is committed) and closes the client's connection without passing it on, then
    passes; "hold" reads requests and never answers (a slow Worker); "delay" forwards but holds each
    answer for DELAY seconds (the write is committed, its answer late); "hold_request" keeps the first
    request until `go` is set, then forwards it (to whatever answers at the upstream address then) and
    passes; "hold_answer" forwards the first request, keeps its answer until `go` is set and then closes
    the client's connection without it, then passes; "hold_nth" passes, but keeps the NTH request whose
    first bytes hold MATCH (e.g. b'"op":"fork_plan"') until `go` is set, then forwards it and passes (a
    held request of a client killed meanwhile is never forwarded once the proxy is closed); "drop_nth" passes, but
    forwards the NTH request whose first bytes hold MATCH, waits for its answer (the write is committed) and closes
    the client's connection without it."""

    def __init__(self, upstream_url: str, mode: str, delay: float = 0.0, match: bytes = b"", nth: int = 1):
        host, port = upstream_url.split("//", 1)[1].split(":")
        self.upstream = (host, int(port))
        self.mode = mode
        self.delay = delay
        self.answered = 0
        self.dropped = 0
        self.requests = 0
        self.match, self.nth, self.matched = match, nth, 0
        self.drop_next = False  # drop_nth: the answer now coming is the one to throw away
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.stopping = False
        self.go = threading.Event()
        self.held = threading.Event()  # the first request (hold_request) or its answer (hold_answer) is held
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stopping:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        up = None
        try:
            if self.mode == "hold_request" and not self.held.is_set():
                data = client.recv(65536)
                self.requests += 1
                self.held.set()
                self.go.wait()
                up = socket.create_connection(self.upstream)
                up.sendall(data)
            elif self.mode != "hold":
                up = socket.create_connection(self.upstream)
            head, counted = b"", True  # hold_nth: the current request's first bytes, and whether it was counted
            while not self.stopping:
                ready, _, _ = select.select([client] + ([up] if up else []), [], [], 0.2)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        self.requests += 1
                        if self.mode in ("hold_nth", "drop_nth"):
                            if data.startswith(b"POST "):
                                head, counted = b"", False
                            if not counted:
                                head += data[:8192]
                                if self.match in head:
                                    counted = True
                                    self.matched += 1
                                    if self.matched == self.nth and self.mode == "drop_nth":
                                        self.drop_next = True
                                    elif self.matched == self.nth:
                                        self.held.set()
                                        self.go.wait()
                                        if self.stopping:
                                            return
                        if up:
                            up.sendall(data)
                    elif self.mode == "hold_answer" and not self.held.is_set():
                        self.held.set()
                        self.go.wait()
                        self.dropped += 1
                        return  # the answer (the write committed) never reaches the client
                    elif self.mode == "drop_nth" and self.drop_next:
                        self.drop_next = False
                        self.dropped += 1
                        return  # the answer arrived (the write is committed) and is thrown away
                    elif self.mode == "drop_once" and not self.dropped:
                        self.dropped += 1
                        return  # the answer arrived (the write is committed) and is thrown away
                    else:
                        if self.mode == "delay":
                            self.answered += 1
                            import time

                            time.sleep(self.delay)
                        client.sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            if up:
                up.close()

    def close(self):
        self.stopping = True
        self.server.close()
