"""docs/reference/ui.md §16.7: the first page of `/` over 10,000 sessions and `/session` of a 100,000-row session
each under 300 ms of server time (median of 5 after one first request), the session page under 2 MB; the
list pages by keyset (Next page). A soak: making 10,000 objects takes minutes (python -m pytest -m soak)."""

import json
import re
import statistics
import time

import pytest

from tests.ui.server import UI

pytest.importorskip("starlette", reason="the ui extra is not installed")
pytestmark = pytest.mark.soak


def _timed(ui, path):
    ui.get(path)
    times, body = [], None
    for _ in range(5):
        started = time.perf_counter()
        r = ui.get(path)
        times.append(time.perf_counter() - started)
        assert r.status == 200
        body = r.body
    return statistics.median(times), body


def test_ten_thousand_sessions_and_a_hundred_thousand_rows(tmp_path):
    ui = UI(tmp_path)
    try:
        rows = "\n".join(json.dumps({"role": "user" if i % 2 else "assistant", "content": f"row {i} of a long session"})
                         for i in range(100_000))
        ui.cli("transcript", "append", "big", "--batch", "-", input=rows)
        import os

        saved = {k: os.environ.get(k) for k in ui.env}
        os.environ.update(ui.env)
        try:
            from durable_cli import Store

            store = Store()
            for i in range(10_000):
                with store.open(f"s{i:05d}", create=True) as s:
                    s.create(title=f"session {i}")
            store.close()
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        took, body = _timed(ui, "/")
        assert took < 0.3 and body.count('<td data-label="Name">') == 100
        seen = set(re.findall(r'>(s\d{5})</a>', body))
        following = re.search(r'href="(/\?[^"]*after=[^"]*)">Next page', body).group(1).replace("&amp;", "&")
        second = ui.get(following).body
        assert len(seen) == 100 and not seen & set(re.findall(r'>(s\d{5})</a>', second))
        took, body = _timed(ui, "/session?name=big")
        assert took < 0.3 and len(body.encode()) < 2_000_000 and body.count('class="row ') == 200
    finally:
        ui.stop()
