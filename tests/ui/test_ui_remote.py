"""`durable ui --remote` (docs/reference/ui.md §16.8) against a real workerd (`durable remote dev`): the list and
usage from the index Durable Objects, session pages and the two writes through the remote backend, a write
whose outcome is unknown shown with its request id, a refused token making every page the 403 and ending the
live streams, and the remote token never reaching the browser. Plain HTTP as another local process could
send it, and one click-through in a real browser (the browser tests' fixture)."""

import base64
import http.client
import json
import re
import time
from urllib.parse import urlencode

import pytest

from tests.remote.conftest import require_workerd, token, unique
from tests.ui.server import UI
from tests.ui.test_browser import browser, by_text  # noqa: F401 - the module's browser, for the click-through
from tests.waiting import wait_until

pytest.importorskip("starlette", reason="the ui extra is not installed")


@pytest.fixture
def remote_dev(request):
    """A fresh, empty Worker of this test's own (a slot of the suite's workerd fleet, tests/remote/conftest.py)."""
    require_workerd()
    return request.getfixturevalue("_remote_pool").take()


@pytest.fixture(scope="module")
def shared(request, tmp_path_factory):
    """One `durable ui --remote` for the tests that do not revoke its token: (Worker, ui, proxy). It talks to the
    Worker through a proxy that passes everything unless a test makes it misbehave; its CLI calls go straight."""
    from tests.remote.proxy import Proxy

    require_workerd()
    dev = request.getfixturevalue("_remote_pool").take()
    proxy = Proxy(dev.url, "pass")
    tok = token("uira")

    class Via:
        url = proxy.url

    ui = remote_ui(tmp_path_factory.mktemp("ui-remote"), Via, tok, config='[remote]\ntimeout = "2s"\n')
    ui.env["DURABLE_REMOTE"] = dev.url
    ui.remote_token = tok
    yield dev, ui, proxy
    proxy.mode = "pass"
    ui.stop()
    proxy.close()


def remote_ui(tmp_path, dev, tok, *args, config=None):
    """A `durable ui` on DEV with token TOK, acting as its user (the CLI calls of the helper use them too)."""
    if config is not None:
        (tmp_path / "config.toml").write_text(config)
    env = {"DURABLE_REMOTE": dev.url, "DURABLE_TOKEN": tok}
    user = json.loads(base64.urlsafe_b64decode(tok.split(".")[1] + "==="))["sub"]
    server = UI(tmp_path, *args, user=user, env=env)
    server.env.update(env)
    return server


def jti_of(tok: str) -> str:
    return json.loads(base64.urlsafe_b64decode(tok.split(".")[1] + "==="))["jti"]


def stream(server, path):
    """An open live stream (SSE) of SERVER: the connection and its response, the first event read."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}", "Cookie": server.cookie})
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("content-type").startswith("text/event-stream")
    assert response.readline().startswith(b"retry:")
    return conn, response


def test_pages_and_writes_go_to_the_worker_and_its_token_never_to_the_browser(shared):
    _, ui, proxy = shared
    tok = ui.remote_token
    assert (ui.line["user"], ui.line["remote"]) == ("uira", proxy.url)
    name = unique("deploy/a?b")  # a NAME with / and ?: addressed in the query string
    rows = [{"role": "user", "content": "Ship the fix?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "run_tests", "arguments": '{"all": true}'}]},
            {"role": "tool", "content": "412 passed", "call_id": "c1", "name": "run_tests"},
            {"role": "assistant", "content": "All green.",
             "meta": {"model": "gpt-4.1", "usage": {"input_tokens": 900, "output_tokens": 40}, "cost_usd": 0.25}}]
    assert ui.cli("transcript", "append", name, "--batch", "-", input="\n".join(json.dumps(r) for r in rows)).status == 0
    assert ui.cli("elicit", "ask", name, "--prompt", "Deploy to production?", "--choice", "yes", "--choice", "no").status == 0
    assert ui.cli("memory", "set", "region", "eu-west", "--source", "model").status == 0
    bodies = []

    listed = [r for r in ui.cli("ls", "--json").json() if r["name"] == name]  # what the index shard keeps, as index.db
    assert [(r["pending_requests"], r["cost_given_usd"]) for r in listed] == [(1, 0.25)]
    listing = ui.get("/")
    bodies.append(listing)
    assert listing.status == 200 and "1 question waiting" in listing.body and "$0.25" in listing.body
    assert f">{name}</a>" in listing.body.replace("&amp;", "&").replace("&#63;", "?")
    page = ui.get("/session?" + urlencode({"name": name}))
    bodies.append(page)
    assert page.status == 200, page.body
    assert all(f'id="row-{seq}"' in page.body for seq in (1, 2, 3, 4))
    call = page.body.index('id="row-2"')  # the result is nested under its call
    assert call < page.body.index("412 passed") < page.body.index('id="row-4"')
    assert "Deploy to production?" in page.body and "session.created" in page.body
    usage = ui.get("/usage")
    bodies.append(usage)
    assert usage.status == 200 and "gpt-4.1" in usage.body and '<svg role="img"' in usage.body
    total = ui.cli("usage", "--newer-than", "30d", "--json").json()["total"]
    assert (total["input_tokens"], total["cost_usd"]) == (900, 0.25) and "Total" in usage.body and "$0.25" in usage.body

    answered = ui.post("/session/answer", {"name": name, "tenant": "", "request": "1", "choice": "yes",
                                           "comment": "after 5pm", "csrf": ui.csrf})
    assert answered.status == 303, answered.body
    got = ui.cli("elicit", "list", name, "--json").json()[0]
    assert (got["status"], got["answer"], got["comment"], got["answered_by"]) == ("answered", "yes", "after 5pm", "uira")
    again = ui.post("/session/answer", {"name": name, "tenant": "", "request": "1", "choice": "no", "csrf": ui.csrf})
    bodies.append(again)
    assert again.status == 409 and 'role="alert"' in again.body  # the CLI's words, nothing changed
    assert ui.cli("elicit", "list", name, "--json").json()[0]["answer"] == "yes"
    confirmed = ui.post("/memory/confirm", {"key": "region", "csrf": ui.csrf})
    assert confirmed.status == 303
    assert ui.cli("memory", "get", "region", "--json").json()["confirmed"] is True
    missing = ui.get("/session?name=" + unique("nobody"))
    bodies.append(missing)
    assert missing.status == 404

    for path in ("/memory", "/search?q=green", "/static/ui.js", "/static/ui.css", "/?status=all"):
        bodies.append(ui.get(path))
    bodies.append(ui.get("/", cookie=False))  # the 403 of a request without the cookie
    for r in bodies:
        assert tok not in r.body and all(tok not in v for _, v in r.header_list), r.status
        assert tok.split(".")[2] not in r.body  # not even its signature


def test_a_page_of_200_rows_pages_back_and_big_rows_come_in_several_requests(shared):
    _, ui, _ = shared
    name = unique("long")
    batch = "\n".join(json.dumps({"role": "user", "content": f"row {i}"}) for i in range(1, 251))
    assert ui.cli("transcript", "append", name, "--batch", "-", input=batch).status == 0
    newest = ui.get(f"/session?name={name}").body
    assert 'id="row-250"' in newest and 'id="row-51"' in newest and 'id="row-50"' not in newest
    earlier = re.search(r'href="(/session\?[^"#]*before=\d+)[^"]*"[^>]*>Earlier rows', newest).group(1).replace("&amp;", "&")
    older = ui.get(earlier).body
    assert 'id="row-1"' in older and 'id="row-50"' in older and 'id="row-51"' not in older
    assert "Later rows" in older and "Newest rows" in older and "Earlier rows" not in older
    # three rows of 300,000 characters: past one request's page of text (524,288), so read in two requests
    big = unique("big")
    rows = "\n".join(json.dumps({"role": "user", "content": f"{i}" + "x" * 300_000}) for i in range(3))
    assert ui.cli("transcript", "append", big, "--batch", "-", input=rows).status == 0
    page = ui.get(f"/session?name={big}")
    assert page.status == 200 and all(f'id="row-{seq}"' in page.body for seq in (1, 2, 3)), page.body[:500]


def test_an_unknown_outcome_says_so_with_its_request_id_and_the_write_is_applied_once(shared):
    _, ui, proxy = shared
    name = unique("flaky")
    assert ui.cli("session", "create", name).status == 0
    assert ui.cli("elicit", "ask", name, "--prompt", "Go?", "--choice", "yes", "--choice", "no").status == 0
    csrf = re.search(r'name="csrf" value="([^"]+)"', ui.get(f"/session?name={name}").body).group(1)
    proxy.mode, proxy.delay = "delay", 2.5  # every answer held past remote.timeout: the write commits, its answer is lost
    try:
        sent = ui.post("/session/answer", {"name": name, "tenant": "", "request": "1", "choice": "yes", "csrf": csrf})
    finally:
        proxy.mode = "pass"
    assert sent.status == 503 and 'role="alert"' in sent.body, sent.body
    assert "outcome of the write is unknown" in sent.body and re.search(r"request id [0-9a-f]{32}", sent.body)
    got = ui.cli("elicit", "list", name, "--json").json()
    assert [(r["status"], r["answer"]) for r in got] == [("answered", "yes")]


def test_a_revoked_token_makes_every_page_the_403_and_ends_the_live_streams(remote_dev, tmp_path):
    tok = token("uird")
    ui = remote_ui(tmp_path, remote_dev, tok)
    try:
        name = unique("s")
        assert ui.cli("transcript", "append", name, "--role", "user", "hello").status == 0
        assert ui.get("/").status == 200
        conn, live = stream(ui, "/live?page=list")
        conn2, live2 = stream(ui, f"/live?page=session&name={name}")
        admin = {"DURABLE_TOKEN": remote_dev.admin_token}
        ui.env.update(admin)
        assert ui.cli("remote", "revoke", jti_of(tok)).status == 0
        ui.env["DURABLE_TOKEN"] = tok
        for path in ("/", f"/session?name={name}", "/usage", "/memory", "/search?q=hello"):
            wait_until(lambda p=path: ui.get(p).status == 403, f"{path} to be refused", timeout=30, step=0.2)
            page = ui.get(path)
            assert 'role="alert"' in page.body and "durable remote token" in page.body and "news" not in page.body
        started = time.monotonic()
        for response in (live, live2):
            while response.readline():  # the stream ends: the server closes it
                assert time.monotonic() - started < 30
        conn.close()
        conn2.close()
        again = UI(tmp_path / "again", user="uird", env={"DURABLE_REMOTE": remote_dev.url, "DURABLE_TOKEN": tok}, wait=False)
        assert again.proc.wait(timeout=60) == 5  # refused before serving, as `ls` would be: no line, one error
        assert again.proc.stdout.read() == "" and again.proc.stderr.read().startswith("durable: error: ")
        again.proc.stdout.close()
        again.proc.stderr.close()
    finally:
        ui.stop()


def test_a_person_answers_in_a_browser_and_the_cli_sees_it(browser, shared):  # noqa: F811
    from selenium.webdriver.common.by import By

    _, ui, _ = shared
    name = unique("browse")
    assert ui.cli("transcript", "append", name, "--role", "user", "Ready to ship.").status == 0
    assert ui.cli("elicit", "ask", name, "--prompt", "Ship it now?", "--choice", "yes", "--choice", "no").status == 0
    browser.get(ui.line["url"])
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sessions"
    by_text(browser, "a", name).click()
    assert browser.find_element(By.TAG_NAME, "h1").text == name
    browser.find_element(By.XPATH, "//label[normalize-space(.)='no']").click()
    by_text(browser, "button", "Send answer").click()
    wait_until(lambda: "No questions waiting" in browser.page_source, "the answered question to leave its form", timeout=15)
    got = ui.cli("elicit", "list", name, "--json").json()[0]
    assert (got["status"], got["answer"]) == ("answered", "no")
    seq = ui.cli("transcript", "append", name, "--role", "user", "Thanks!", "--json").json()["seq"]
    wait_until(lambda: browser.find_elements(By.ID, f"row-{seq}"), "the new row to appear", timeout=15, step=0.05)


def test_the_session_page_ops_answer_the_same_json_on_both_backends(remote_dev, tmp_path):
    """session_page and rows_before (docs/reference/ui.md §16.3) are one op each with a Python rule and its Worker
    twin: the same object written through the library on files and on the Worker reads back the same JSON."""
    from durable_cli import Store
    from tests.remote.test_both_backends import normalize

    calls = [{"id": f"c{i}", "name": "probe", "arguments": json.dumps({"n": i})} for i in range(95)]  # past one IN (...) list
    rows = [{"role": "user", "content": "start"}, {"role": "assistant", "content": "", "tool_calls": calls}]
    rows += [{"role": "tool", "content": f"result {i}", "call_id": f"c{i}", "name": "probe"} for i in range(95)]
    rows += [{"role": "assistant", "content": "1.0 and 12345678901234567890", "data": {"big": 12345678901234567890, "f": 1.0}}]
    answers = []
    for store in (Store(str(tmp_path / "home"), user="uirf"), Store(remote=remote_dev.url, token=token("uirf"), user="uirf")):
        try:
            with store.open("same", create=True) as s:
                s.append_many(rows)
                s.ask("Go on?", choices=["yes", "no"])
                s.prompt("next step")
            with store.open("same") as s:
                got = [s.session_page(), s.session_page(events_before=3), s.rows_before(limit=50), s.rows_before(before=50),
                       s.rows_before(before=60, limit=5), s.rows_before(before=3, superseded=True)]
            answers.append(normalize(json.dumps(got, sort_keys=True)))
        finally:
            store.close()
    local, remote = answers
    assert local == remote
    doc = json.loads(local)
    assert [r["seq"] for r in doc[2]["rows"]][:2] == [98, 97] and doc[2]["earlier"] is True and doc[2]["next"] is None
    assert len(doc[3]["rows"]) == 49 and doc[3]["earlier"] is False
    assert [r["seq"] for r in doc[3]["results"]] == list(range(50, 98))  # row 2's call: its results not on the page
    assert doc[4]["later"] is None and [r["key"] for r in doc[4]["rows"]] == [59, 58, 57, 56, 55]
    assert doc[1]["events"][0]["seq"] == 2 and doc[0]["pending"][0]["prompt"] == "Go on?"


@pytest.mark.soak  # a workerd of its own (a rate limit): ~5 s; run with -m soak
def test_over_the_tokens_rate_limit_a_page_is_429_with_retry_after(tmp_path_factory, tmp_path):
    from tests.remote.conftest import start_dev

    dev = start_dev(tmp_path_factory, "--rate-limit", "3")  # 3 requests a minute, one back every 20 s
    try:
        ui = remote_ui(tmp_path, dev, token("uirg"))  # its start takes two (ls, whoami)
        try:
            pages = [ui.get("/") for _ in range(3)]
            refused = [p for p in pages if p.status == 429]
            assert refused and all(p.status in (200, 429) for p in pages), [p.status for p in pages]
            page = refused[0]
            assert 'role="alert"' in page.body and "rate limit" in page.body
            assert 5 <= int(page.headers["retry-after"]) <= 60  # the Worker's retry_after (a request back every 20 s)
        finally:
            ui.stop()
    finally:
        dev.stop()
