"""`durable ui`'s process: bind 127.0.0.1, print the one JSON line, open a browser through a launch file, serve
until SIGINT/SIGTERM, exit 130/143 (docs/reference/ui.md §16.1)."""

import asyncio
import errno
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import sys
from contextlib import contextmanager

from ..errors import DurableError, conflict, invalid


def bind(port):
    """A listening socket on 127.0.0.1:PORT (None: a free port the OS picks); exit 4 when PORT is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port or 0))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise conflict(f"port {port} is in use; leave out --port to get a free one") from None
        if e.errno == errno.EACCES:
            raise invalid(f"port {port} needs privileges this user does not have; leave out --port to get a free one") from None
        raise
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


class LaunchFile:
    """A 0600 HTML redirect to the URL (token included) in a new 0700 directory under the user's runtime
    directory: the browser is given this file's path, never the token on its command line."""

    def __init__(self):
        self.folder = None

    def write(self, url: str) -> str:
        import tempfile

        import platformdirs

        base = platformdirs.user_runtime_dir("durable")
        os.makedirs(base, mode=0o700, exist_ok=True)
        self.folder = tempfile.mkdtemp(prefix="ui-", dir=base)  # 0700
        path = os.path.join(self.folder, "open.html")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        from html import escape

        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                    f'<meta http-equiv="refresh" content="0; url={escape(url)}"><title>durable ui</title></head>'
                    "<body>Opening durable ui…</body></html>\n")
        return path

    def remove(self) -> None:
        folder, self.folder = self.folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _open_browser(launch: LaunchFile, url: str) -> None:
    try:
        path = launch.write(url)
        import webbrowser

        if not webbrowser.open("file://" + path):
            raise OSError("no browser could be started")
    except Exception as e:  # noqa: BLE001 - a browser that cannot be opened is a note, not an error (docs/reference/ui.md §16.1)
        launch.remove()
        sys.stderr.write(f"durable: note: could not open a browser ({e}); open the url printed on stdout\n")
        sys.stderr.flush()


def _quiet_logs() -> None:
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [logging.NullHandler()]
        logger.propagate = False


def serve(store, options, *, port=None, no_browser=False) -> int:
    """Run the server for STORE (the run's Store: checked the way `ls` checks at start), OPTIONS the run's
    global options (each request builds its own Store from them, in a worker thread)."""
    from .. import guard

    remote = getattr(store, "remote", False)
    list(store.ls(limit=1))  # what `ls` would refuse (secret, data directory; a bad token, an unreachable Worker) is refused before serving
    user = store.whoami()["user"] if remote else store.user  # with --remote: the token's user, or the one an admin token names
    # the CLI's commit guard speaks for one command in the main thread; here writes run in worker threads
    guard.commit_guard = guard.poll_settled = guard.signals_deferred = guard.signal_before = None
    sock = bind(port)
    port = sock.getsockname()[1]
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)

    import uvicorn

    from .app import Settings, make_app

    launch = LaunchFile()
    settings = Settings(port=port, token=token, csrf=csrf, user=user, home=options.home, as_user=options.user,
                        tenant=options.tenant, lock_timeout=options.lock_timeout, remote=store.url if remote else None,
                        on_token=launch.remove, shared=store if remote else None, units=getattr(options, "units", None))
    app = make_app(settings)
    _quiet_logs()
    config = uvicorn.Config(app, http=_protocol(port), ws="none", lifespan="off", log_config=None, access_log=False,
                            server_header=False, date_header=True, timeout_graceful_shutdown=3)
    server = _Server(config, settings)

    async def main():
        settings.hub.start()
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            url = f"http://127.0.0.1:{port}/?token={token}"
            line = {"url": url, "port": port, "token": token, "user": settings.user, "remote": settings.remote}
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
            if not no_browser and sys.stdout.isatty():
                await asyncio.get_running_loop().run_in_executor(None, _open_browser, launch, url)
        await task
        await settings.hub.stop()

    try:
        asyncio.run(main())
    finally:
        launch.remove()
        sock.close()
    if server.signum is None:
        raise DurableError("the server stopped on its own", "internal")
    return 128 + server.signum


def _protocol(port: int):
    """uvicorn's h11 protocol, but an HTTP/1.1 request with no Host header (or several), which h11 refuses before
    the app sees it, is answered 421 as every other wrong Host (docs/reference/ui.md §16.2), not 400."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    body = f"Misdirected Request: durable ui answers at http://127.0.0.1:{port}/ only\n".encode()

    class Protocol(H11Protocol):
        no_host = False

        def handle_events(self) -> None:
            conn = self.conn
            real = conn.next_event

            def next_event():
                try:
                    return real()
                except h11.RemoteProtocolError as e:
                    self.no_host = "Host" in str(e)
                    raise

            conn.next_event = next_event
            try:
                super().handle_events()
            finally:
                if conn.__dict__.get("next_event") is next_event:
                    del conn.next_event

        def send_400_response(self, msg: str) -> None:
            """421 for a missing Host, else uvicorn's 400; either with the headers every response carries."""
            status, reason, text = (421, b"Misdirected Request", body) if self.no_host else (400, b"Bad Request", msg.encode("ascii") + b"\n")
            headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                       (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                       (b"cache-control", b"no-store"), (b"content-length", str(len(text)).encode())]
            self.transport.write(self.conn.send(h11.Response(status_code=status, headers=headers, reason=reason)))
            self.transport.write(self.conn.send(h11.Data(data=text)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
            self.transport.close()

    return Protocol


class _Server:
    """uvicorn's Server with the run's own SIGINT/SIGTERM handling: the first signal stops accepting and ends
    the live streams; the exit status is 128 + that signal."""

    signum: "int | None"  # what the server made by __new__ holds (a subclass of uvicorn.Server)

    def __new__(cls, config, settings):
        import uvicorn

        class Server(uvicorn.Server):
            signum = None

            @contextmanager
            def capture_signals(self):
                def handler(sig, _frame):
                    if self.signum is None:
                        self.signum = sig
                    self.should_exit = True
                    settings.hub.stopping = True

                originals = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for s, h in originals.items():
                        signal.signal(s, h)

        return Server(config)
