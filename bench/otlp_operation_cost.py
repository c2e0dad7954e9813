#!/usr/bin/env python
"""Operation span cost (traces.md §15.6): `transcript append` with telemetry.traces = all and a loopback OTLP
endpoint beside the same with off, whole processes alternating."""
import os, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.getcwd())
from tests.cli.test_traces_operations import Receiver
r = Receiver()
home = tempfile.mkdtemp()
base = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="bench")
base.pop("DURABLE_CONFIG", None)
on = dict(base, DURABLE_TRACES="all", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=r.url)
off = dict(base, DURABLE_TRACES="off")
cmd = [sys.executable, "-m", "durable_cli", "transcript", "append", "s", "--role", "user", "hi"]
subprocess.run(cmd, env=off, check=True, capture_output=True)
a, b = [], []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 11):
    for env, out in ((on, a), (off, b)):
        import resource; c0 = resource.getrusage(resource.RUSAGE_CHILDREN); subprocess.run(cmd, env=env, check=True, capture_output=True); c1 = resource.getrusage(resource.RUSAGE_CHILDREN); out.append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
print("CPU:", f"on {statistics.median(a):.3f} s  off {statistics.median(b):.3f} s  extra {statistics.median(x - y for x, y in zip(a, b)):.3f} s; spans received {len(r.spans)}; load {os.getloadavg()[0]:.1f}")
r.close()
