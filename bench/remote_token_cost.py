"""Token verification cost on loopback workerd (docs/benchmarks.md "Signed tokens"): the median of
`/v1/health` (no token) against `whoami` (a signed token verified, the revocation list's cached copy
checked, the body read and parsed), N keep-alive requests each, best of 3 rounds. The difference bounds
what a token costs a request. `node bench/token_verify.mjs` times decode + crypto.subtle.verify alone.

    python bench/remote_token_cost.py
"""
import json
import statistics
import subprocess
import sys
import tempfile
import time

from durable_cli.remote import tokens
from durable_cli.remote.client import RemoteClient
from durable_cli.remote.http11 import PlainConnection

d = tempfile.mkdtemp()
p = subprocess.Popen([sys.executable, "-m", "durable_cli", "remote", "dev", "--storage", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
doc = json.loads(p.stdout.readline())
tok = tokens.issue(tokens.read_key(doc["token_key_file"]), "alice", expires=600)
c = RemoteClient(doc["url"], tok, 10)
host, port = doc["url"].split("//")[1].split(":")
h = PlainConnection(host, int(port))
N = 400
def health():
    h.request("GET", "/v1/health", body=b"", headers={})
    h.getresponse().read()
def whoami():
    c.call({"op": "whoami", "scope": "none"}, write=False)
def bad():
    c.token = tok[:-2] + ("AA" if tok[-2:] != "AA" else "BB")
    try:
        c.call({"op": "whoami", "scope": "none"}, write=False)
    except Exception:
        pass
    c.token = tok
for f in (health, whoami):
    for _ in range(50):
        f()
res = {}
for rnd in range(3):
    for name, f in (("health (no token)", health), ("whoami (token verified)", whoami)):
        ts = []
        for _ in range(N):
            t = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t)
        res.setdefault(name, []).append(statistics.median(ts) * 1000)
for k, v in res.items():
    print(f"{k}: median {min(v):.3f} ms (best of 3 rounds of {N}; rounds {', '.join(f'{x:.3f}' for x in v)})")
p.terminate()
p.wait()
