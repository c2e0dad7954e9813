"""`durable remote dev`: the Worker served by a local workerd on 127.0.0.1 (no network), for trying
remote mode and for the tests.

The bare `workerd` binary comes from the npm package `workerd` (`npm ci` in worker/), the Worker from
`npm run build` there (worker/dist/index.js). A capnp config is generated into a private temporary
directory: one SQLite-backed Durable Object namespace stored in --storage DIR (a temporary directory
when not given), a random admin token, and a Worker secret kept in DIR so ids stay stable across
restarts. Once the Worker answers, one JSON line {"url", "admin_token"} goes to stdout.
"""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ..errors import DurableError

WORKER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "worker")
INSTALL = "install it with 'npm ci && npm run build' in {}"


def workerd_binary() -> str:
    found = os.environ.get("DURABLE_WORKERD") or os.path.join(WORKER_DIR, "node_modules", ".bin", "workerd")
    if not os.path.exists(found):
        raise DurableError(f"workerd is not installed ({found} is missing); " + INSTALL.format(WORKER_DIR), "invalid_input")
    return found


def built_worker() -> str:
    path = os.path.join(WORKER_DIR, "dist", "index.js")
    if not os.path.exists(path):
        raise DurableError(f"the Worker is not built ({path} is missing); " + INSTALL.format(WORKER_DIR), "invalid_input")
    return path


def _capnp_string(text: str) -> str:
    return json.dumps(text)  # capnp text literals take the same escapes as JSON strings here


def config_text(*, port: int, storage: str, module: str, secret: str, tokens: dict, admin_tokens: list) -> str:
    bindings = [
        '(name = "OBJECTS", durableObjectNamespace = "DurableObjectSession")',
        '(name = "INDEX", durableObjectNamespace = "DurableIndex")',
        f'(name = "DURABLE_SECRET", text = {_capnp_string(secret)})',
        f'(name = "DURABLE_TOKENS", text = {_capnp_string(json.dumps(tokens))})',
        f'(name = "DURABLE_ADMIN_TOKENS", text = {_capnp_string(json.dumps(admin_tokens))})',
    ]
    if os.environ.get("DURABLE_DEV_FAULTS") == "1":  # the tests' hook: an admin may make an index shard fail or lose its rows
        bindings.append('(name = "DURABLE_DEV_FAULTS", text = "1")')
    joined = ",\n    ".join(bindings)
    return f"""using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .durableWorker),
    (name = "storage", disk = (path = {_capnp_string(storage)}, writable = true)),
  ],
  sockets = [(name = "http", address = "127.0.0.1:{port}", http = (), service = "main")],
);

const durableWorker :Workerd.Worker = (
  modules = [(name = "index.js", esModule = embed {_capnp_string(module)})],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["nodejs_compat"],
  durableObjectNamespaces = [
    (className = "DurableObjectSession", uniqueKey = "durable-session", enableSql = true),
    (className = "DurableIndex", uniqueKey = "durable-index", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "storage"),
  bindings = [
    {joined},
  ],
);
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    import http.client

    try:
        conn = http.client.HTTPConnection(url.split("//", 1)[1], timeout=1)
        conn.request("GET", "/v1/health")
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


class Stop(BaseException):
    pass


def serve(*, port=None, storage=None, tokens=None, out=sys.stdout) -> int:
    """Run workerd until SIGTERM/SIGINT; print {"url", "admin_token"} once it answers. Returns the exit status."""
    binary, worker = workerd_binary(), built_worker()
    scratch = tempfile.mkdtemp(prefix="durable-remote-dev-")
    owned_storage = storage is None
    storage = os.path.abspath(storage) if storage else os.path.join(scratch, "storage")
    os.makedirs(storage, mode=0o700, exist_ok=True)
    secret_file = os.path.join(storage, "durable-worker-secret")
    if not os.path.exists(secret_file):
        fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, secrets.token_hex(32).encode())
        os.close(fd)
    with open(secret_file) as f:
        secret = f.read().strip()
    admin = "admin-" + secrets.token_hex(16)
    module = os.path.join(scratch, "index.js")
    with open(worker, "rb") as src, open(module, "wb") as dst:
        dst.write(src.read())
    port = port or free_port()
    config = os.path.join(scratch, "config.capnp")
    with open(config, "w", encoding="utf-8") as f:
        f.write(config_text(port=port, storage=os.path.join(storage, "objects"), module="index.js", secret=secret,
                            tokens=tokens or {}, admin_tokens=[admin]))
    os.makedirs(os.path.join(storage, "objects"), mode=0o700, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(scratch, "workerd.log"), "w+b")

    def stop(signum, _frame):
        raise Stop()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    proc = None
    try:
        proc = subprocess.Popen([binary, "serve", config], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not _answers(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                tail = log.read().decode("utf-8", "replace").strip().splitlines()[-3:]
                raise DurableError(f"workerd did not start ({'; '.join(tail) or 'no output'})", "storage")
            time.sleep(0.02)
        out.write(json.dumps({"url": url, "admin_token": admin}) + "\n")
        out.flush()
        while proc.poll() is None:
            time.sleep(0.2)
        raise DurableError(f"workerd exited with status {proc.returncode}", "storage")
    except Stop:
        return 0
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
        log.close()
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
        if owned_storage:
            shutil.rmtree(storage, ignore_errors=True)
