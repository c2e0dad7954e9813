"""Start-up is a feature: a hot command loads neither rich nor pydantic when piped."""

import subprocess
import sys

PROBE = """
import sys
from durable_cli.cli.app import run
status = run(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'pydantic', 'hashlib', '_hashlib', 'tomllib', 'platformdirs', 'dataclasses')
               or m in ('durable_cli.across.search', 'durable_cli.across.usage') or m.startswith('durable_cli.remote')
               or m.startswith('durable_cli.integrations') or m == 'http.client'
               or m.split('.')[0] in ('mcp', 'mcp_types', 'anyio', 'opentelemetry', 'google')
               or m in ('durable_cli.telemetry.otlp', 'durable_cli.telemetry.traces'))
print(status, ",".join(heavy))
"""


def probe(*args):
    import os

    env = dict(os.environ)
    env.pop("DURABLE_CONFIG")  # the default config lookup is part of the hot path
    env["XDG_CONFIG_HOME"] = env["DURABLE_HOME"] + "-config"
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env).stdout
    status, _, heavy = out.strip().splitlines()[-1].partition(" ")
    return int(status), heavy


def test_hot_commands_import_no_rich_no_pydantic(durable):
    assert probe("transcript", "append", "hot", "--role", "user", "hi") == (0, "")
    assert probe("transcript", "recent", "hot", "--limit", "20", "--json") == (0, "")
    assert probe("session", "prompt", "hot", "hi") == (0, "")
    assert probe("ls", "--json") == (0, "")


def test_work_imports_no_opentelemetry_while_traces_are_off(durable):
    """docs/reference/traces.md §15.1: the SDK (and protobuf) only in commands that send or write spans."""
    assert probe("session", "prompt", "hot", "hi") == (0, "")
    assert probe("work", "hot", "--once", "--command", "echo ok") == (0, "")


def test_piped_output_has_no_ansi(durable_proc):
    durable_proc("transcript", "append", "p", "--role", "user", "hi")
    for args in (["ls"], ["session", "show", "p"], ["transcript", "show", "p"], ["--help"]):
        r = durable_proc(*args)
        assert r.status == 0 and "\x1b[" not in r.out, args
