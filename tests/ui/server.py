"""A real `durable ui` process for the UI tests, on its own data directory, with raw HTTP helpers
(http.client: any Host, Origin or body, as another web page or local process could send)."""

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
from urllib.parse import urlencode

from tests.conftest import run_inprocess


class UI:
    def __init__(self, root, *args, user="alice", env=None, wait=True):
        self.root = str(root)
        self.env = {"DURABLE_HOME": os.path.join(self.root, "home"), "DURABLE_CONFIG": os.path.join(self.root, "config.toml"),
                    "DURABLE_USER": user}
        full = dict(os.environ)
        for var in ("DURABLE_TENANT", "DURABLE_LOCK_TIMEOUT", "DURABLE_DEBUG", "DURABLE_REMOTE", "DURABLE_TOKEN"):
            full.pop(var, None)
        full.update(self.env, **(env or {}))  # ENV may choose remote mode (DURABLE_REMOTE, DURABLE_TOKEN)
        self.proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "ui", "--no-browser", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full, text=True)
        self._csrf = None
        if wait:
            self.ready()

    def ready(self):
        """Wait for the one line (a server started with wait=False)."""
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"durable ui printed no line: {self.proc.stderr.read()}")
        self.line = json.loads(line)
        self.port, self.token = self.line["port"], self.line["token"]
        self.cookie = f"durable_ui_{self.port}={self.token}"
        return self

    def cli(self, *args, input=None, user=None):
        """`durable ARGS` in this process, on the server's data directory."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        if user:
            os.environ["DURABLE_USER"] = user
        try:
            return run_inprocess(*args, input=input)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def request(self, method, path, *, host=None, headers=None, body=None, cookie=True):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            if host is not False:
                conn.putheader("Host", host or f"127.0.0.1:{self.port}")
            if cookie:
                conn.putheader("Cookie", self.cookie)
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            data = body.encode() if isinstance(body, str) else body
            if data is not None:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
            r = conn.getresponse()
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.getheaders(), r.read().decode("utf-8"))
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    @property
    def csrf(self):
        if self._csrf is None:
            import re

            page = self.get("/memory").body + self.get("/").body
            found = re.search(r'name="csrf" value="([^"]+)"', page)
            if found is None:  # no form on those pages yet: a fact makes one
                self.cli("memory", "set", "__csrf_probe", "x", "--source", "model")
                found = re.search(r'name="csrf" value="([^"]+)"', self.get("/memory").body)
                self.cli("memory", "forget", "__csrf_probe")
            self._csrf = found.group(1)
        return self._csrf

    def post(self, path, fields, *, headers=None, **kw):
        h = {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{self.port}",
             "Sec-Fetch-Site": "same-origin"}
        h.update(headers or {})
        return self.request("POST", path, headers={k: v for k, v in h.items() if v is not None}, body=urlencode(fields), **kw)

    def stop(self, sig=signal.SIGTERM) -> int:
        """Send SIG, wait for the exit; the status (self.stderr: what it wrote there)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            status = self.proc.wait(timeout=15)
            self.stderr = self.proc.stderr.read()
            return status
        finally:
            with contextlib.suppress(Exception):
                self.proc.stdout.close()
                self.proc.stderr.close()


class Response:
    def __init__(self, status, headers, header_list, body):
        self.status, self.headers, self.header_list, self.body = status, headers, header_list, body
