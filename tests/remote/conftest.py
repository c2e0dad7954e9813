"""A real workerd serving the Worker (`durable remote dev`), one per test module, with its own storage.

Skipped with the reason where workerd is absent (`npm ci` in worker/, or `durable remote install`); under
CI=true its absence is a failure, so CI always runs both backends. The Worker is the committed bundle
(durable_cli/remote/worker.js; `npm run build` in worker/ after a change to worker/src).
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

WORKER = os.path.join(ROOT, "worker")
# Every test Worker signs tokens with this key (docs/reference/remote.md §13: tokens are signed, not listed): a `remote dev`
# finds it in its --storage DIR, a Fleet's slots are configured with it; so one token serves them all.
TOKEN_KEY = "durable-tests-token-key-" + "0123456789abcdef" * 2


def token(user: str, *, admin: bool = False, expires: int = 30 * 86400) -> str:
    from durable_cli.remote import tokens

    return tokens.issue(TOKEN_KEY.encode(), user, admin=admin, expires=expires)


ALICE_TOKEN = token("alice")


def post_call(url: str, bearer: str, body, timeout: float = 30) -> tuple:
    """BODY (bytes as they are, or a JSON value) to the Worker's /v1/call with token BEARER, as no client
    would send it: (HTTP status, the JSON answer), an error's too."""
    import urllib.error
    import urllib.request

    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + "/v1/call", data=data, method="POST",
                                     headers={"authorization": f"Bearer {bearer}", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _missing():
    from durable_cli.errors import DurableError
    from durable_cli.remote import dev

    try:
        dev.workerd_binary()
        dev.built_worker()
    except DurableError as e:
        return e.message
    return None


class Dev:
    """One `durable remote dev` process: its URL, admin token, process and storage."""

    def __init__(self, storage, *extra, wait=True):
        self.storage = str(storage)
        key_file = os.path.join(self.storage, "durable-token-key")
        if not os.path.exists(key_file):  # the tests' key (a restart on the same storage keeps it)
            with open(key_file, "w") as f:
                f.write(TOKEN_KEY)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", self.storage, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        )
        if wait:
            self.wait_ready()

    def wait_ready(self):
        """Block until `remote dev` printed its JSON line (the Worker answers); sets url and admin_token."""
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.stop()
            raise RuntimeError(f"durable remote dev did not start: {self.proc.stderr.read().decode()}")
        doc = json.loads(line)
        self.url, self.admin_token, self.token_key_file = doc["url"], doc["admin_token"], doc["token_key_file"]

    def workerd_pid(self) -> int:
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return int(f.read().split()[0])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def require_workerd():
    """Skip (fail under CI=true) where workerd or the built Worker is absent."""
    reason = _missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"remote tests cannot run under CI: {reason}")
        pytest.skip(reason)


def start_dev(tmp_path_factory, *extra) -> Dev:
    require_workerd()
    return Dev(tmp_path_factory.mktemp("remote-storage"), *extra)


class Slot:
    """One independent Worker of a Fleet: its URL, admin token and storage (its objects, its secret)."""

    def __init__(self, url, admin_token, storage):
        self.url, self.admin_token, self.storage = url, admin_token, storage


class Fleet:
    """One workerd serving SLOTS independent copies of the Worker, each on its own 127.0.0.1 port with
    its own Durable Object storage directory and its own secret: as many fresh, empty backends as
    `durable remote dev --storage NEW-DIR` would give, for the price of one process (each slot's Worker
    is the one durable_cli/remote/dev.py configures, taken from its config_text)."""

    def __init__(self, root, slots: int, variables=None, v8_flags=()):
        import secrets
        import shutil
        import socket

        from durable_cli.remote.dev import OUTBOUND, _capnp_string, built_worker, config_text, workerd_binary

        root = str(root)
        shutil.copy(built_worker(), os.path.join(root, "index.js"))
        services, sockets, workers, self.free, listeners = [], [], [], [], []
        for i in range(slots):
            storage = os.path.join(root, f"slot{i}")
            os.makedirs(storage)
            # the listening socket is made here and handed to workerd (--socket-fd): no other process on
            # the machine can take the port between choosing it and workerd binding it
            listener = socket.create_server(("127.0.0.1", 0))
            listener.set_inheritable(True)
            listeners.append(listener)
            port, admin = listener.getsockname()[1], token("admin", admin=True)
            services += [f'(name = "main{i}", worker = .worker{i})',
                         f'(name = "storage{i}", disk = (path = {_capnp_string(storage)}, writable = true))']
            sockets.append(f'(name = "http{i}", address = "127.0.0.1:{port}", http = (), service = "main{i}")')
            text = config_text(port=port, storage=storage, module="index.js", secret=secrets.token_hex(32),
                               token_key=TOKEN_KEY, variables=variables)
            worker = text[text.index("const durableWorker :Workerd.Worker"):]  # remote dev's Worker, as it is
            assert worker.count('localDisk = "storage"') == 1, worker
            workers.append(worker.replace("durableWorker", f"worker{i}").replace('localDisk = "storage"', f'localDisk = "storage{i}"'))
            self.free.append(Slot(f"http://127.0.0.1:{port}", admin, storage))
        services.append(OUTBOUND)  # the Workers' globalOutbound, as remote dev has it
        config = os.path.join(root, "config.capnp")
        with open(config, "w", encoding="utf-8") as f:
            f.write('using Workerd = import "/workerd/workerd.capnp";\n\nconst config :Workerd.Config = (\n'
                    f'  services = [{", ".join(services)}],\n  sockets = [{", ".join(sockets)}],\n'
                    + (f'  v8Flags = [{", ".join(_capnp_string(f) for f in v8_flags)}],\n' if v8_flags else "") + ');\n\n'
                    + "\n".join(workers) + "\n")
        self.log = open(os.path.join(root, "workerd.log"), "w+b")
        fds = [arg for i, listener in enumerate(listeners) for arg in ("--socket-fd", f"http{i}={listener.fileno()}")]
        self.proc = subprocess.Popen([workerd_binary(), "serve", config, *fds], stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL, pass_fds=[listener.fileno() for listener in listeners])
        for listener in listeners:
            listener.close()  # workerd has its own copy
        self.free.reverse()

    def wait_ready(self):
        from durable_cli.remote.dev import _answers

        deadline = time.monotonic() + 60
        for slot in self.free:
            while not _answers(slot.url):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.log.seek(0)
                    raise RuntimeError(f"workerd did not start: {self.log.read().decode()[-2000:]}")
                time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


class DevPool:
    """Fresh, empty backends for the tests of both backends (tests/conftest.py): each test gets a slot
    of its own (its own storage and secret: the isolation of a fresh data directory); a Fleet of
    SLOTS is started when the previous one is used up, and the used one stopped.

    Under pytest-xdist each worker has its own pool (a session fixture lives in its process), its own
    ports (bound to 0 and handed to workerd) and its own storage under its own basetemp, so workers
    share nothing. Sharing one fleet across workers would save at most one part-used fleet per worker:
    a 16-slot fleet answers in ~0.4 s of CPU (1.75 s on a machine loaded 8x), against ~0.1 s of CPU per
    remote test, and every test takes a fresh slot either way."""

    SLOTS = 16

    def __init__(self, tmp_path_factory):
        self.factory = tmp_path_factory
        self.fleet = None

    def take(self) -> Slot:
        if self.fleet is None or not self.fleet.free:
            if self.fleet is not None:
                self.fleet.stop()  # every test that had one of its slots has finished
            self.fleet = Fleet(self.factory.mktemp("remote-fleet"), self.SLOTS)
            self.fleet.wait_ready()
        return self.fleet.free.pop()

    def close(self):
        if self.fleet is not None:
            self.fleet.stop()
            self.fleet = None


@pytest.fixture(scope="module")
def remote_dev(tmp_path_factory):
    dev = start_dev(tmp_path_factory)
    yield dev
    dev.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{time.time_ns()}"
