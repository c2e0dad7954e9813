"""Real processes for the concurrency and crash tests."""

import http.server
import os
import subprocess
import sys
import threading

HOLD = """
import sys, time
from durable_cli import Store
with Store().open(sys.argv[1]) as obj:
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold_lock(name: str, seconds: float, user=None, tenant=None) -> subprocess.Popen:
    """A process that holds NAME's lock for SECONDS; returns once the lock is held."""
    env = dict(os.environ, **({"DURABLE_USER": user} if user else {}), **({"DURABLE_TENANT": tenant} if tenant else {}))
    proc = subprocess.Popen([sys.executable, "-c", HOLD, name, str(seconds)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def faketime_env(when: str) -> dict:
    """Environment that runs a process under libfaketime directly (no `faketime` wrapper process,
    whose own pid would take a SIGKILL meant for durable), its clock starting at WHEN."""
    import glob

    from tests.cli.tools import require

    require("faketime")
    libs = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    assert libs, "Debian's faketime is installed but its libfaketime.so.1 is not where Debian puts it"
    return dict(os.environ, LD_PRELOAD=libs[0], FAKETIME=f"@{when}", FAKETIME_DONT_FAKE_MONOTONIC="1")


def leaf_commands():
    """(path, click command) for every leaf command of the full CLI."""
    import typer

    from durable_cli.cli.app import build_app

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, path + [name])
        else:
            yield path, cmd

    return list(walk(typer.main.get_command(build_app(full=True)), []))


def downgrade_to(db, sql: str, version: int) -> None:
    """Make the SQLite connection DB hold exactly what schema SQL (an early migration step) made: later
    indexes, tables and columns are dropped, and user_version is set to VERSION. Whatever later steps add."""
    import sqlite3 as _sqlite3

    old = _sqlite3.connect(":memory:")
    old.executescript(sql)
    kinds = lambda c, kind: {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'", (kind,))}
    for kind in ("trigger", "view", "index", "table"):
        # sorted: a virtual table (turns_fts) goes before its shadow tables (turns_fts_data, ...), which go with it
        for name in sorted(kinds(db, kind) - kinds(old, kind)):
            db.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
    # a trigger a later step made again (over columns it added) goes back to the early definition
    defined = lambda c, name: c.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)).fetchone()[0]
    redefined = [defined(old, n) for n in sorted(kinds(db, "trigger") & kinds(old, "trigger")) if defined(db, n) != defined(old, n)]
    for name in sorted(n for n in kinds(db, "trigger") & kinds(old, "trigger") if defined(db, n) != defined(old, n)):
        db.execute(f'DROP TRIGGER "{name}"')
    for table in kinds(old, "table"):
        columns = lambda c: [r[1] for r in c.execute(f'PRAGMA table_xinfo("{table}")')]
        for column in [c for c in columns(db) if c not in columns(old)]:
            db.execute(f'ALTER TABLE "{table}" DROP COLUMN "{column}"')
    for sql in redefined:
        db.execute(sql)
    old.close()
    db.execute(f"PRAGMA user_version={version}")
    db.commit()


def files_under(root, *, suffixes=None) -> list:
    """Every file under ROOT (walked, symlinks not followed), as sorted paths relative to ROOT; only those
    ending in one of SUFFIXES when given. What a refused command must leave as it was, or a deleted object
    must leave behind (nothing)."""
    root = str(root)
    found = (os.path.relpath(os.path.join(base, name), root) for base, _, names in os.walk(root) for name in names)
    return sorted(p for p in found if suffixes is None or p.endswith(tuple(suffixes)))


def file_stats(root) -> dict:
    """{path: (size, mtime_ns)} of every file under ROOT: a reader that must write nothing (a read-only home)."""
    out = {}
    for base, _, names in os.walk(str(root)):
        for name in names:
            st = os.lstat(os.path.join(base, name))
            out[os.path.join(base, name)] = (st.st_size, st.st_mtime_ns)
    return out


def export_snapshot(home, user="alice") -> str:
    """Every object of HOME as `export --all` writes it (one JSON text): what a refused command must not change."""
    import json

    from durable_cli import Store

    store = Store(home=str(home), user=user)
    try:
        return json.dumps(list(store.export(all_objects=True)), sort_keys=True)
    finally:
        store.close()


def prose() -> str:
    """README.md and every page of docs/, as one text: the sections and examples tests read, wherever they stand."""
    import glob

    from tests.conftest import ROOT

    pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return "\n".join(open(p, encoding="utf-8").read() for p in pages)


class Receiver:
    """A real local HTTP server (a webhook receiver, docs/reference/sessions.md §5.3): records each request and answers with
    `status`."""

    def __init__(self):
        self.requests, self.status = [], 204
        self.on_request = None  # called (in the server's thread) as each request arrives
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                if outer.on_request is not None:
                    outer.on_request()
                body = self.rfile.read(int(self.headers["content-length"]))
                outer.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(outer.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/done"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# the variables tests/conftest.py's `home` fixture sets or clears for every test
HOME_CLEARED = ("DURABLE_TENANT", "DURABLE_LOCK_TIMEOUT", "DURABLE_DEBUG", "NO_COLOR", "DURABLE_REMOTE", "DURABLE_TOKEN")


def home_made_once(tmp_path_factory, make):
    """A data directory for a module-scoped fixture: MAKE(home) runs once, in this process, with DURABLE_HOME,
    DURABLE_CONFIG and DURABLE_USER=alice set as `home` sets them for a test; returns (home, what MAKE
    answered). A test takes its own copy (`copy_home`): the cost of making it is paid once, not per test."""
    import pytest

    where = tmp_path_factory.mktemp("made-once")
    home = where / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DURABLE_HOME", str(home))
        mp.setenv("DURABLE_CONFIG", str(where / "config.toml"))
        mp.setenv("DURABLE_USER", "alice")
        for var in HOME_CLEARED:
            mp.delenv(var, raising=False)
        made = make(home)
    return home, made


def copy_home(made, home):
    """A copy of a data directory made once (home_made_once) as this test's HOME (its files as they are)."""
    import shutil

    shutil.copytree(made, home, symlinks=True)
    return home
