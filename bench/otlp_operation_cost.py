#!/usr/bin/env python
"""An operation span's cost (docs/reference/traces.md §15.6): `durable transcript append` with
`telemetry.traces = all` and a loopback OTLP/HTTP receiver beside the same with `off`, whole processes
alternating; wall and CPU time (the child's user+sys), medians of the per-pair differences.

    PYTHONPATH=. python bench/otlp_operation_cost.py [PAIRS]     (from the repository's root; default 11)
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.getcwd())


def main(pairs: int) -> None:
    from tests.cli.test_traces_operations import Receiver  # the suite's loopback receiver (the SDK's own protobuf)

    receiver = Receiver()
    home = tempfile.mkdtemp()
    base = dict(os.environ, DURABLE_HOME=home, DURABLE_USER="bench")
    base.pop("DURABLE_CONFIG", None)
    on = dict(base, DURABLE_TRACES="all", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.url)
    off = dict(base, DURABLE_TRACES="off")
    cmd = [sys.executable, "-m", "durable_cli", "transcript", "append", "s", "--role", "user", "hi"]
    subprocess.run(cmd, env=off, check=True, capture_output=True)
    wall: dict = {"on": [], "off": []}
    cpu: dict = {"on": [], "off": []}
    for _ in range(pairs):
        for name, env in (("on", on), ("off", off)):
            before, began = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall[name].append(time.perf_counter() - began)
            cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    for what, d in (("wall", wall), ("CPU", cpu)):
        extra = statistics.median(a - b for a, b in zip(d["on"], d["off"]))
        print(f"{what}: on {statistics.median(d['on']):.3f} s, off {statistics.median(d['off']):.3f} s, "
              f"extra {extra:.3f} s")
    print(f"spans received {len(receiver.spans)} of {pairs}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    receiver.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 11)
