"""`durable remote dev`: the Worker served by a local workerd on 127.0.0.1 (no network), for trying
remote mode and for the tests.

The Worker is the bundle shipped with the package (durable_cli/remote/worker.js, built by `npm run build`
in worker/ and committed), the bare `workerd` binary is found as docs/reference/remote.md §13 says (DURABLE_WORKERD, PATH, the
copy `durable remote install` puts in the user cache with npm at the bundle's version). A capnp config is generated into a private temporary
directory: one SQLite-backed Durable Object namespace stored in --storage DIR (a temporary directory
when not given), and the Worker's two secrets kept in DIR so ids and tokens stay valid across restarts:
DURABLE_SECRET (durable-worker-secret) and DURABLE_TOKEN_KEY (durable-token-key, the key `durable remote
token --key-file` signs with). Once the Worker answers, one JSON line {"url", "admin_token",
"token_key_file"} goes to stdout (the admin token: user "admin", signed with that key).
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

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "worker")  # a checkout's sources (absent in a wheel)
BUNDLE = os.path.join(HERE, "worker.js")  # `npm run build` in worker/ writes it; committed, and package data of the wheel


def workerd_version() -> str:
    """The workerd version the bundled Worker was built and tested with (worker.json, written by the build)."""
    with open(os.path.join(HERE, "worker.json"), encoding="utf-8") as f:
        return json.load(f)["workerd"]


def cache_dir() -> str:
    """Where `durable remote install` puts workerd: the user cache directory, per version."""
    import sys as _sys

    if _sys.platform.startswith("linux"):
        base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
        root = os.path.join(base, "durable")
    else:
        import platformdirs

        root = platformdirs.user_cache_dir("durable")
    return os.path.join(root, "workerd", workerd_version())


def _cached_binary() -> str:
    return os.path.join(cache_dir(), "node_modules", ".bin", "workerd")


def workerd_binary() -> str:
    """docs/reference/remote.md §13: DURABLE_WORKERD, then `workerd` on PATH, then the copy `durable remote install` put in the
    user cache (then, in a checkout, worker/node_modules); none: exit 2 naming the command that installs it."""
    import shutil

    given = os.environ.get("DURABLE_WORKERD")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise DurableError(f"DURABLE_WORKERD={given} is not an executable file; unset it or point it at workerd", "invalid_input")
        return given
    for found in (shutil.which("workerd"), _cached_binary(), os.path.join(WORKER_DIR, "node_modules", ".bin", "workerd")):
        if found and os.path.isfile(found) and os.access(found, os.X_OK):
            return found
    raise DurableError(f"workerd is not installed: run 'durable remote install' (npm installs workerd {workerd_version()} "
                       "into the user cache), or put workerd on PATH, or set DURABLE_WORKERD", "invalid_input")


def install(out=sys.stdout) -> dict:
    """`durable remote install`: workerd at the bundle's version into the user cache, with npm."""
    import shutil

    npm = shutil.which("npm")
    if npm is None:
        raise DurableError("npm is not on PATH: install Node.js (with npm), or put a workerd binary on PATH or in "
                           "DURABLE_WORKERD instead", "invalid_input")
    target = cache_dir()
    os.makedirs(target, exist_ok=True)
    version = workerd_version()
    proc = subprocess.run([npm, "install", "--prefix", target, "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
                           f"workerd@{version}"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    binary = _cached_binary()
    if proc.returncode != 0 or not os.path.exists(binary):
        tail = "; ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:]) or f"npm exited {proc.returncode}"
        raise DurableError(f"npm could not install workerd {version} into {target}: {tail}", "storage")
    return {"workerd": binary, "version": version}


def built_worker() -> str:
    if not os.path.exists(BUNDLE):
        raise DurableError(f"the Worker is not built ({BUNDLE} is missing); run 'npm ci && npm run build' in {WORKER_DIR}",
                           "invalid_input")
    return BUNDLE


def _capnp_string(text: str) -> str:
    return json.dumps(text)  # capnp text literals take the same escapes as JSON strings here


# The Worker's outbound network (its hooks' deliveries, docs/reference/remote.md §13): the public internet and loopback
# (127.0.0.1, ::1), where a local receiver listens; never the private ranges (DURABLE_HOOK_ALLOW_HOSTS lists the loopback
# hosts the Worker lets a hook name)
OUTBOUND = '(name = "internet", network = (allow = ["public", "local"], tlsOptions = (trustBrowserCas = true)))'


def config_text(*, port: int, storage: str, module: str, secret: str, token_key: str, variables=None) -> str:
    """The capnp config of one Worker. VARIABLES: more text bindings (name -> text; None leaves one out, so
    a test can serve a misconfigured Worker)."""
    # no per-token rate limit unless asked (`remote dev --rate-limit N`), so test suites under one token run
    # hooks may name loopback receivers (docs/reference/remote.md §13), which the outbound network below lets workerd reach
    values = {"DURABLE_SECRET": secret, "DURABLE_TOKEN_KEY": token_key, "DURABLE_RATE_LIMIT": "0",
              "DURABLE_HOOK_ALLOW_HOSTS": "127.0.0.1,localhost,::1", **(variables or {})}
    bindings = [
        '(name = "OBJECTS", durableObjectNamespace = "DurableObjectSession")',
        '(name = "INDEX", durableObjectNamespace = "DurableIndex")',
    ] + [f'(name = "{name}", text = {_capnp_string(text)})' for name, text in values.items() if text is not None]
    # Cloudflare's per-request subrequest limit, enforced by the Worker (docs/remote.md "Limits"): the
    # strictest plan's (Workers Free: 1,000 to Cloudflare services) unless DURABLE_SUBREQUEST_LIMIT says
    bindings.append(f'(name = "DURABLE_SUBREQUEST_LIMIT", text = {_capnp_string(os.environ.get("DURABLE_SUBREQUEST_LIMIT") or "1000")})')
    if os.environ.get("DURABLE_DEV_FAULTS") == "1":  # the tests' hook: an admin may make an index shard fail or lose its rows
        bindings.append('(name = "DURABLE_DEV_FAULTS", text = "1")')
    joined = ",\n    ".join(bindings)
    return f"""using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .durableWorker),
    (name = "storage", disk = (path = {_capnp_string(storage)}, writable = true)),
    {OUTBOUND},
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
  globalOutbound = "internet",
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


def _kept(path: str) -> str:
    """A random secret kept in PATH (made on first use, mode 0600): its text."""
    if not os.path.exists(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, secrets.token_hex(32).encode())
        os.close(fd)
    with open(path) as f:
        return f.read().strip()


ADMIN_TOKEN_LIFE = 365 * 86400
MAX_RATE_LIMIT = 10_000_000  # the most DURABLE_RATE_LIMIT the Worker takes (worker/src/auth.ts)


def serve(*, port=None, storage=None, rate_limit=0, out=sys.stdout) -> int:
    """Run workerd until SIGTERM/SIGINT; print {"url", "admin_token", "token_key_file"} once it answers.
    RATE_LIMIT: each token's requests a minute (DURABLE_RATE_LIMIT; 0, the default: no limit). Returns the exit status."""
    from . import tokens

    if storage is not None and "\0" in storage:  # (only an in-process caller can pass one)
        raise DurableError(f"cannot keep the Worker's storage in {storage!r}: not a directory name", "invalid_input")
    binary, worker = workerd_binary(), built_worker()
    scratch = tempfile.mkdtemp(prefix="durable-remote-dev-")
    owned_storage = storage is None
    storage = os.path.abspath(storage) if storage else os.path.join(scratch, "storage")
    os.makedirs(storage, mode=0o700, exist_ok=True)
    secret = _kept(os.path.join(storage, "durable-worker-secret"))
    key_file = os.path.join(storage, "durable-token-key")
    token_key = _kept(key_file)
    admin = tokens.issue(tokens.read_key(key_file), "admin", admin=True, expires=ADMIN_TOKEN_LIFE)
    module = os.path.join(scratch, "index.js")
    with open(worker, "rb") as src, open(module, "wb") as dst:
        dst.write(src.read())
    port = port or free_port()
    config = os.path.join(scratch, "config.capnp")
    with open(config, "w", encoding="utf-8") as f:
        f.write(config_text(port=port, storage=os.path.join(storage, "objects"), module="index.js", secret=secret,
                            token_key=token_key, variables={"DURABLE_RATE_LIMIT": str(rate_limit)}))
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
        out.write(json.dumps({"url": url, "admin_token": admin, "token_key_file": key_file}) + "\n")
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
