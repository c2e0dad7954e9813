"""`durable ui` (docs/reference/ui.md §16) over real HTTP against a real server process: the security rules
(§16.2) as another web page or local process would test them, the pages (§16.3), the two writes through the
library's operations (§16.4), live updates (§16.5), errors (§16.6) and the command's exit statuses (§16.1)."""

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from datetime import datetime
from urllib.parse import urlencode

import pytest

from tests.ui.server import UI
from tests.waiting import wait_until

pytest.importorskip("starlette", reason="the ui extra (pip install 'durable-cli[ui]') is not installed")


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    server = UI(tmp_path_factory.mktemp("ui"))
    yield server
    assert server.stop() == 143
    assert server.stderr == ""  # nothing per request, and never the token


def test_the_line_names_a_loopback_url_with_a_fresh_token(ui):
    line = ui.line
    assert set(line) == {"url", "port", "token", "user", "remote"}
    assert line["url"] == f"http://127.0.0.1:{ui.port}/?token={ui.token}"
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", ui.token) and line["user"] == "alice" and line["remote"] is None
    with pytest.raises(OSError):  # bound to 127.0.0.1 only
        socket.create_connection((_other_address(), ui.port), timeout=1).close()


def _other_address():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the host's outward address
        address = s.getsockname()[0]
    except OSError:
        address = "0.0.0.0"
    finally:
        s.close()
    if address.startswith("127."):
        pytest.skip("this host has no address but loopback")
    return address


def test_another_host_is_421_and_reads_nothing(ui):
    ui.cli("session", "create", "secret-plan", "--title", "the plan")
    for host in ("evil.example:%d" % ui.port, "127.0.0.1:1", "localhost", "attacker.test"):
        r = ui.get("/", host=host)
        assert r.status == 421, host
        assert "secret-plan" not in r.body and ui.token not in r.body and f"http://127.0.0.1:{ui.port}/" in r.body
    conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)  # no Host at all (HTTP/1.0)
    conn.sendall(f"GET / HTTP/1.0\r\nCookie: {ui.cookie}\r\n\r\n".encode())
    reply = b""
    while chunk := conn.recv(4096):
        reply += chunk
    conn.close()
    assert reply.startswith(b"HTTP/1.1 421 ") and b"secret-plan" not in reply
    for head in ("", f"Host: 127.0.0.1:{ui.port}\r\nHost: evil.example\r\n"):  # HTTP/1.1 with none or two: 421 too
        conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)
        conn.sendall(f"GET / HTTP/1.1\r\n{head}Cookie: {ui.cookie}\r\n\r\n".encode())
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
        conn.close()
        assert reply.startswith(b"HTTP/1.1 421 ") and b"secret-plan" not in reply and b"nosniff" in reply, reply
        assert f"http://127.0.0.1:{ui.port}/".encode() in reply
    conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)  # not HTTP at all: 400, with the headers too
    conn.sendall(b"NONSENSE\r\n\r\n")
    reply = b""
    while chunk := conn.recv(4096):
        reply += chunk
    conn.close()
    assert reply.startswith(b"HTTP/1.1 400 ") and b"x-content-type-options: nosniff" in reply.lower(), reply
    assert ui.get("/", host=f"LOCALHOST:{ui.port}").status == 200


def test_no_token_or_a_wrong_one_is_403_without_data(ui):
    ui.cli("session", "create", "hidden-name", "--title", "hidden title")
    for path in ("/", "/session?name=hidden-name", "/memory", "/usage", "/search?q=hidden", "/static/ui.js",
                 f"/?token={'x' * 43}", "/nowhere"):
        r = ui.get(path, cookie=False)
        assert r.status == 403, path
        assert "hidden" not in r.body and ui.token not in r.body and "durable ui" in r.body
        # a page as every other (§16.3: the skip link first, the Main nav), but not the acting user: no data
        assert r.body.index("Skip to content") < r.body.index('<nav aria-label="Main">') < r.body.index("<h1>")
        assert "alice" not in r.body and r.body.count("<h1>") == 1
    wrong = ui.request("GET", "/", cookie=False, headers={"Cookie": f"durable_ui_{ui.port}={'y' * 43}"})
    assert wrong.status == 403 and "hidden-name" not in wrong.body


def test_the_token_becomes_a_strict_httponly_cookie(ui):
    r = ui.get(f"/session?name=a%2Fb&token={ui.token}", cookie=False)
    assert r.status == 303 and r.headers["location"] == "/session?name=a%2Fb"
    assert r.headers["set-cookie"] == f"durable_ui_{ui.port}={ui.token}; HttpOnly; SameSite=Strict; Path=/"
    assert ui.get("/").status == 200
    assert ui.get(f"//evil.example/?token={ui.token}", cookie=False).headers["location"] == "/evil.example/"


def test_every_response_carries_the_headers_and_never_the_token(ui):
    ui.cli("transcript", "append", "hdr", "--role", "user", "hello")
    for path in ("/", "/session?name=hdr", "/usage", "/memory", "/search?q=hello", "/static/ui.css", "/static/ui.js",
                 "/nowhere", "/session?name=missing"):
        r = ui.get(path)
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer", path
        assert not any(k.lower().startswith("access-control-") for k, _ in r.header_list), path
        assert ui.token not in r.body, path
        if r.headers["content-type"].startswith("text/html"):
            csp = r.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
            assert r.headers["cache-control"] == "no-store"
            assert "<script>" not in r.body and "style=" not in r.body and "<style" not in r.body
    assert ui.request("OPTIONS", "/", headers={"Origin": "http://evil.example"}).status == 405
    assert ui.get("/nowhere").status == 404


def test_everything_from_the_store_is_escaped_text(ui):
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)> https://evil.example'
    ui.cli("session", "create", "xss<b>", "--title", evil)
    ui.cli("transcript", "append", "xss<b>", "--role", "user", evil)
    ui.cli("elicit", "ask", "xss<b>", "--prompt", evil, "--choice", "<i>yes</i>")
    for path in ("/", "/session?name=xss%3Cb%3E", "/search?q=alert"):
        body = ui.get(path).body
        assert "<script>alert" not in body and "<img src=x" not in body and "xss<b>" not in body
        assert "&lt;script&gt;" in body and "&lt;img src=x onerror=" in body, path
        assert '<a href="https://evil.example' not in body
    page = ui.get("/session?name=xss%3Cb%3E").body
    assert "<h1>xss&lt;b&gt;</h1>" in page and "&lt;i&gt;yes&lt;/i&gt;" in page


def test_a_forged_post_changes_nothing(ui):
    ui.cli("session", "create", "deploy")
    req = ui.cli("elicit", "ask", "deploy", "--prompt", "Ship it?", "--choice", "yes", "--choice", "no", "--json").json()["id"]
    good = {"name": "deploy", "tenant": "", "request": str(req), "choice": "yes", "csrf": ui.csrf}
    forged = [
        ({**good, "csrf": "guess"}, {}),
        ({k: v for k, v in good.items() if k != "csrf"}, {}),
        (good, {"Origin": "http://evil.example"}),
        (good, {"Origin": f"http://127.0.0.1:{ui.port + 1}"}),
        (good, {"Sec-Fetch-Site": "same-site"}),
        (good, {"Sec-Fetch-Site": "cross-site"}),
        (good, {"Origin": "null", "Sec-Fetch-Site": None}),  # a sandboxed or file:// page
        (good, {"Origin": "null", "Sec-Fetch-Site": "cross-site"}),
    ]
    for fields, headers in forged:
        r = ui.post("/session/answer", fields, headers=headers)
        assert r.status == 403 and "this form is stale or came from another site; reload the page" in r.body, headers
    assert ui.post("/session/answer", good, cookie=False).status == 403
    assert ui.request("POST", "/session/answer", body=json.dumps(good), headers={
        "Content-Type": "application/json"}).status == 415
    assert ui.cli("elicit", "list", "deploy", "--json").json()[0]["status"] == "pending"
    r = ui.post("/session/answer", {**good, "comment": "after 5pm"}, headers={"Origin": None, "Sec-Fetch-Site": None})
    assert r.status == 303 and r.headers["location"].startswith("/session?name=deploy")
    done = ui.cli("elicit", "list", "deploy", "--json").json()[0]
    assert (done["status"], done["answer"], done["comment"], done["answered_by"]) == ("answered", "yes", "after 5pm", "alice")


def test_answer_errors_are_the_clis_words_and_keep_what_was_typed(ui):
    ui.cli("session", "create", "ask2")
    req = ui.cli("elicit", "ask", "ask2", "--prompt", "Pick", "--choice", "red", "--choice", "blue", "--json").json()["id"]
    cli = ui.cli("elicit", "answer", "ask2", str(req), "--choice", "green")
    r = ui.post("/session/answer", {"name": "ask2", "tenant": "", "request": str(req), "choice": "green",
                                    "comment": "my note", "csrf": ui.csrf})
    assert r.status == 400 and cli.status == 2
    alert = re.search(r'role="alert"[^>]*>([^<]*)<', r.body).group(1)
    assert alert == cli.err.strip().removeprefix("durable: error: ").replace("'", "&#39;").replace('"', "&#34;")
    assert 'value="my note"' in r.body
    ui.cli("elicit", "answer", "ask2", str(req), "--choice", "red")
    again = ui.post("/session/answer", {"name": "ask2", "tenant": "", "request": str(req), "choice": "blue", "csrf": ui.csrf})
    assert again.status == 409 and 'role="alert"' in again.body
    assert ui.cli("elicit", "list", "ask2", "--json").json()[0]["answer"] == "red"


def test_bytes_that_are_not_utf8_are_400_never_stored_as_replacement_characters(ui):
    """A percent-encoded byte that is not UTF-8 (`%ff`) was decoded to U+FFFD and stored as the answer: the CLI
    refuses such an argument (exit 2, docs/reference/output.md §4), so the page does too (400), nothing changed."""
    ui.cli("session", "create", "utf")
    req = ui.cli("elicit", "ask", "utf", "--prompt", "Free text?", "--json").json()["id"]
    body = f"name=utf&tenant=&request={req}&choice=%ff&csrf={ui.csrf}"
    h = {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{ui.port}"}
    r = ui.request("POST", "/session/answer", headers=h, body=body)
    assert r.status == 400 and "invalid UTF-8 in choice (&#39;\\xff&#39;); nothing was changed" in r.body, r.body
    assert ui.cli("elicit", "list", "utf", "--json").json()[0]["status"] == "pending"
    for path in ("/session?name=%ff", "/search?q=a%ffb", "/session?name=utf&tenant=%c3"):
        r = ui.get(path)
        assert r.status == 400 and "invalid UTF-8 in " in r.body and 'role="alert"' in r.body, path
    assert ui.get("/?token=%ff").status == 403  # a token that is not one: 403, never a 500
    # a missing session name is an input error, as a missing NAME is exit 2; days is a whole number as §4 writes one
    assert ui.get("/session").status == 400 and ui.get("/session?name=").status == 400
    for days in ("%2B5", "1_0", "07", "%207"):
        assert ui.get(f"/usage?days={days}").status == 400, days
    assert ui.get("/usage?days=7").status == 200


def test_the_list_shows_sessions_badges_filter_and_no_other_users(ui):
    ui.cli("transcript", "append", "listed", "--role", "user", "hi there")
    ui.cli("session", "title", "listed", "Fix the login")
    ui.cli("elicit", "ask", "listed", "--prompt", "ok?", "--choice", "y")
    ui.cli("elicit", "ask", "listed", "--prompt", "sure?", "--choice", "y")
    ui.cli("transcript", "append", "bobs-secret", "--role", "user", "bob only", user="bob")
    body = ui.get("/").body
    assert ">listed</a>" in body and "Fix the login" in body and "2 questions waiting" in body
    assert "bobs-secret" not in body
    ui.cli("elicit", "answer", "listed", "1", "--choice", "y")
    assert "1 question waiting" in ui.get("/").body.split(">listed</a>")[1].split("</tr>")[0]
    ui.cli("session", "cancel", "listed")
    assert ">listed</a>" in ui.get("/?status=cancelled").body
    assert ">listed</a>" not in ui.get("/?status=active").body
    bad = ui.get("/?status=bogus")
    assert bad.status == 400 and "invalid --status &#39;bogus&#39;" in bad.body
    missing, hidden = ui.get("/session?name=nope"), ui.get("/session?name=bobs-secret")
    assert missing.status == hidden.status == 404
    assert missing.body.replace("nope", "X") == hidden.body.replace("bobs-secret", "X")


def test_the_list_shows_the_cost_usage_reports_given_plus_computed(ui):
    ui.cli("transcript", "append", "priced", "--role", "assistant", "given", "--meta", json.dumps({"cost_usd": 0.5}))
    ui.cli("transcript", "append", "priced", "--role", "assistant", "computed", "--meta",
           json.dumps({"model": "gpt-4o", "usage": {"input_tokens": 2_000_000, "output_tokens": 1_000_000}}))
    total = ui.cli("usage", "--session", "priced", "--json").json()["total"]
    assert total["cost_computed_usd"] > 1 and total["cost_given_usd"] == 0.5  # the shipped table prices gpt-4o
    row = ui.get("/").body.split(">priced</a>")[1].split("</tr>")[0]
    assert f"${total['cost_usd']:,.2f}" in row


def test_an_unreadable_price_table_lists_the_recorded_costs_and_says_why(home, tmp_path, monkeypatch):
    from durable_cli import Store

    bad = tmp_path / "prices.toml"
    bad.write_text("this is not toml [")
    monkeypatch.setenv("DURABLE_PRICES", str(bad))
    store = Store(str(home), user="alice")
    with store.open("s", create=True) as s:
        s.append("x", role="assistant", meta={"cost_usd": 0.25, "model": "gpt-4o", "usage": {"input_tokens": 10**6, "output_tokens": 0}})
    page = store.sessions_page()
    assert page["rows"][0]["cost_usd"] == 0.25 and str(bad) in page["prices_unread"]
    monkeypatch.delenv("DURABLE_PRICES")
    assert store.sessions_page()["rows"][0]["cost_usd"] == 0.25  # given: that row's cost is not computed
    store.close()


def test_the_session_page_pages_its_transcript_and_folds_long_output(ui):
    rows = [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd": "ls"}'}]},
            {"role": "tool", "content": "\n".join(f"line {i}" for i in range(30)), "call_id": "c1", "name": "bash"}]
    rows += [{"role": "user", "content": f"message {i}"} for i in range(250)]
    ui.cli("transcript", "append", "long", "--batch", "-", input="\n".join(json.dumps(r) for r in rows))
    page = ui.get("/session?name=long").body
    for heading in ("Questions", "Transcript", "Queue", "Events"):
        assert f">{heading}</h2>" in page
    assert 'id="row-252"' in page and 'id="row-52"' not in page and 'id="row-53"' in page
    earlier = re.search(r'href="(/session\?[^"]*before=[^"]*)">Earlier rows', page).group(1).replace("&amp;", "&").split("#")[0]
    old = ui.get(earlier).body
    assert 'id="row-1"' in old and 'id="row-2"' in old and "Newest rows" in old and "Later rows" in old
    call = old[old.index('id="row-1"'):]
    assert call.index("bash") < call.index('id="row-2"')  # the result nested under its call
    assert "<details" in call and "30 lines, " in call and "<summary>line 0" in call


@pytest.mark.parametrize("name,tenant", [("my plan's", None), ("-dash", None), ("t plan", "acme")])
def test_a_row_over_64_kib_names_a_command_that_prints_it_whole(ui, name, tenant):
    """The command under a cut row is one a person can paste: NAME quoted for the shell, the tenant's --tenant,
    a NAME that starts with `-` after `--` (it was `durable transcript show my plan's --since 0 --json`)."""
    import html
    import shlex

    scope = ("--tenant", tenant) if tenant else ()
    assert ui.cli(*scope, "transcript", "append", "--role", "user", "--", name, "x" * 70000).status == 0
    page = ui.get("/session?" + urlencode({"name": name, **({"tenant": tenant} if tenant else {})})).body
    cut = re.search(r"([\d,]+) more characters not shown: <code>([^<]*)</code> prints them", page)
    assert cut and cut.group(1) == f"{70000 - 65536:,}", page[-2000:]
    words = shlex.split(html.unescape(cut.group(2)))
    assert words[0] == "durable"
    shown = ui.cli(*words[1:])
    assert shown.status == 0 and shown.json()[0]["content"] == "x" * 70000, shown.err


def test_memory_confirm_goes_through_memory_confirm(ui):
    ui.cli("memory", "set", "timezone", "Europe/Paris", "--source", "model")
    ui.cli("memory", "set", "lang", "fr", "--confirmed")
    page = ui.get("/memory").body
    assert page.count('aria-label="Confirm ') == 1 and 'aria-label="Confirm timezone"' in page
    r = ui.post("/memory/confirm", {"key": "timezone", "csrf": ui.csrf})
    assert r.status == 303 and r.headers["location"] == "/memory"
    assert ui.cli("memory", "get", "timezone", "--json").json()["confirmed"] is True
    gone = ui.post("/memory/confirm", {"key": "never-set", "csrf": ui.csrf})
    cli = ui.cli("memory", "confirm", "never-set")
    assert gone.status == 404 and cli.status == 3
    assert cli.err.strip().removeprefix("durable: error: ").replace("'", "&#39;").replace('"', "&#34;") in gone.body
    # an expired fact (its page showed a Confirm button a moment ago) is 409 with the CLI's words, still unconfirmed
    fact = ui.cli("memory", "set", "brief", "yes", "--source", "model", "--expires", "1s", "--json").json()
    ends = datetime.fromisoformat(fact["expires_at"].replace("Z", "+00:00")).timestamp()
    wait_until(lambda: time.time() > ends + 0.05, "the fact to expire")
    late = ui.post("/memory/confirm", {"key": "brief", "csrf": ui.csrf})
    cli = ui.cli("memory", "confirm", "brief")
    assert late.status == 409 and cli.status == 4 and 'role="alert"' in late.body
    assert cli.err.strip().removeprefix("durable: error: ").replace("'", "&#39;").replace('"', "&#34;") in late.body
    assert ui.cli("memory", "get", "brief", "--all", "--json").json()["confirmed"] is False


def test_usage_draws_svg_and_totals_as_the_cli(ui):
    ui.cli("transcript", "append", "costly", "--role", "assistant", "answer", "--meta",
           json.dumps({"model": "gpt-x", "usage": {"input_tokens": 1200, "output_tokens": 300}, "cost_usd": 0.5}))
    body = ui.get("/usage?days=7").body
    assert body.count('<svg role="img"') == 2 and "gpt-x" in body
    total = ui.cli("usage", "--newer-than", "7d", "--json").json()["total"]
    row = re.search(r'<tr class="total">(.*?)</tr>', body, re.S).group(1)
    assert f"{total['input_tokens']:,}" in row and f"${total['cost_usd']:,.2f}" in row
    assert ui.get("/usage?days=0").status == 400 and ui.get("/usage?days=367").status == 400


def test_search_marks_hits_and_links_rows(ui):
    ui.cli("transcript", "append", "findme", "--role", "user", "the zebracorn escaped")
    body = ui.get("/search?q=zebracorn").body
    assert "<mark>zebracorn</mark>" in body and re.search(r'href="/session\?name=findme#row-\d+">findme</a>', body)
    bad = ui.get("/search?q=***")
    assert bad.status == 400 and "holds no word" in bad.body
    # a hit on a row older than the newest page links to the page that holds it, not to the newest one
    rows = [{"role": "user", "content": "the oldunicorn row"}] + [{"role": "user", "content": f"row {i}"} for i in range(250)]
    ui.cli("transcript", "append", "longer", "--batch", "-", input="".join(json.dumps(r) + "\n" for r in rows))
    ui.cli("transcript", "append", "longer", "--role", "user", "the newunicorn row")
    body = ui.get("/search?q=oldunicorn").body
    link = re.search(r'href="(/session\?name=longer[^"#]*)#row-1">longer</a>', body)
    assert link and 'id="row-1"' in ui.get(link.group(1).replace("&amp;", "&")).body
    assert re.search(r'href="/session\?name=longer#row-252">', ui.get("/search?q=newunicorn").body)  # the newest page


def test_a_busy_session_is_503_within_2s_and_blocks_no_other_page(ui):
    from tests.helpers import hold_lock

    ui.cli("session", "create", "held")
    env = dict(os.environ)
    os.environ.update(ui.env)
    try:
        holder = hold_lock("held", 30)
    finally:
        os.environ.clear()
        os.environ.update(env)
    try:
        started = time.monotonic()
        r = ui.get("/session?name=held")
        assert r.status == 503 and r.headers["retry-after"] == "1" and "busy" in r.body
        assert time.monotonic() - started < 10  # waited min(--lock-timeout, 2 s), not --lock-timeout's 10 s
        assert ui.get("/").status == 200
    finally:
        holder.kill()
        holder.wait()


def test_a_corrupt_session_is_shown_never_a_500(ui):
    ui.cli("session", "create", "broken")
    path = ui.cli("path", "broken").out.strip()
    with open(path, "r+b") as f:
        f.write(b"not a database at all" * 200)
    r = ui.get("/session?name=broken")
    assert r.status == 503 and 'role="alert"' in r.body and "<code>durable doctor --repair</code>" in r.body
    assert ">broken</a>" in ui.get("/").body


def test_live_stream_tells_an_open_session_page_of_a_new_row(ui):
    ui.cli("transcript", "append", "livechat", "--role", "user", "first")
    conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)
    conn.sendall((f"GET /live?page=session&name=livechat HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\n"
                  f"Cookie: {ui.cookie}\r\nAccept: text/event-stream\r\n\r\n").encode())
    got = b""
    while b"retry:" not in got:
        got += conn.recv(4096)
    assert b"text/event-stream" in got
    time.sleep(0.6)  # the poller has seen the index as it is
    written = time.monotonic()
    ui.cli("transcript", "append", "livechat", "--role", "assistant", "second")
    while b"event: changed" not in got:
        got += conn.recv(4096)
    assert time.monotonic() - written < 2
    conn.close()
    assert 'id="row-2"' in ui.get("/session?name=livechat").body


def test_a_change_made_while_no_stream_was_open_is_told_to_the_next_stream(ui):
    # a page is drawn, its stream not yet open (a form's redirect, a reload) and the session changes: the stream
    # that opens next must tell of it, or the page never shows the change
    ui.cli("transcript", "append", "between", "--role", "user", "first")
    conn = _open_stream(ui, "/live?page=session&name=between")
    time.sleep(0.6)  # the poller has seen the index
    conn.close()
    time.sleep(0.8)  # the stream is gone: nothing is polled
    ui.cli("transcript", "append", "between", "--role", "assistant", "second")
    conn = _open_stream(ui, "/live?page=session&name=between")
    got = b""
    while b"event: changed" not in got:
        got += conn.recv(4096)  # a socket timeout (10 s) fails the test
    conn.close()


def test_signals_end_it_130_and_143_and_a_taken_port_is_4(tmp_path):
    from tests.conftest import run_inprocess

    a, b = UI(tmp_path / "a", wait=False), UI(tmp_path / "b", wait=False)
    a.ready(), b.ready()
    taken = run_inprocess("ui", "--no-browser", "--port", a.port)
    assert taken.status == 4 and taken.out == ""
    assert taken.err == f"durable: error: port {a.port} is in use; leave out --port to get a free one\n"
    conn = _open_stream(b, "/live?page=list")  # b's home has no index.db yet: its first session is news too
    time.sleep(0.6)
    b.cli("session", "create", "first-ever")
    got = b""
    while b"event: changed" not in got:
        got += conn.recv(4096)
    conn.close()
    assert a.stop(signal.SIGINT) == 130
    assert b.stop(signal.SIGTERM) == 143 and b.stderr == ""
    for port in ("0", "65536", "-1"):
        bad = run_inprocess("ui", "--no-browser", "--port", port)
        assert bad.status == 2 and "--port" in bad.err and bad.out == ""


def test_at_most_32_live_streams(ui):
    streams = []
    try:
        for _ in range(32):
            conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)
            conn.sendall(f"GET /live?page=list HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\nCookie: {ui.cookie}\r\n\r\n".encode())
            got = b""
            while b"retry:" not in got:
                got += conn.recv(4096)
            streams.append(conn)
        r = ui.get("/live?page=list")
        assert r.status == 503
    finally:
        for conn in streams:
            conn.close()
    wait_until(lambda: ui.get("/").status == 200 and _stream_opens(ui), "a stream to open again once the others closed")


def _open_stream(ui, path):
    conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)
    conn.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\nCookie: {ui.cookie}\r\n\r\n".encode())
    got = b""
    while b"retry:" not in got:
        got += conn.recv(4096)
    return conn


def _stream_opens(ui) -> bool:
    conn = socket.create_connection(("127.0.0.1", ui.port), timeout=10)
    try:
        conn.sendall(f"GET /live?page=list HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\nCookie: {ui.cookie}\r\n\r\n".encode())
        return conn.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        conn.close()


def test_a_terminal_gets_a_browser_through_a_0600_launch_file(tmp_path):
    import pty

    seen = tmp_path / "seen.txt"
    opener = tmp_path / "opener.sh"
    opener.write_text(f'#!/bin/sh\nf="${{1#file://}}"\nstat -c "%a" "$f" > {seen}.tmp\ncat "$f" >> {seen}.tmp\n'
                      f'echo "ARGS $*" >> {seen}.tmp\nmv {seen}.tmp {seen}\n')
    opener.chmod(0o700)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, DURABLE_HOME=str(tmp_path / "home"), DURABLE_CONFIG=str(tmp_path / "c.toml"), DURABLE_USER="alice",
               BROWSER=f"{opener} %s", XDG_RUNTIME_DIR=str(runtime))
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "durable_cli", "ui"], stdout=child, stderr=subprocess.PIPE, env=env)
    os.close(child)
    try:
        out = b""
        while b"\n" not in out:
            out += os.read(main, 4096)
        line = json.loads(out.split(b"\n")[0])
        wait_until(seen.exists, "the browser command to run")
        mode, *rest = seen.read_text().splitlines()
        assert mode == "600" and line["url"] in "\n".join(rest[:-1])
        assert rest[-1].startswith("ARGS file://") and line["token"] not in rest[-1]
        launch_dirs = [p for p in (runtime / "durable").iterdir()]
        assert len(launch_dirs) == 1 and stat.S_IMODE(launch_dirs[0].stat().st_mode) == 0o700
        import urllib.request

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None

        try:
            urllib.request.build_opener(NoRedirect).open(line["url"], timeout=10)
        except urllib.error.HTTPError as e:
            assert e.code == 303
        assert list((runtime / "durable").iterdir()) == []  # deleted after the first request with the token
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 143
        os.close(main)


def test_a_tenant_object_is_addressed_by_name_and_org_and_hidden_from_others(ui):
    ui.cli("--tenant", "acme", "session", "create", "incident/42?", user="bob")
    path = "/session?name=incident%2F42%3F&tenant=acme"
    hidden, missing = ui.get(path), ui.get("/session?name=incident%2F43%3F&tenant=acme")
    assert hidden.status == missing.status == 404
    assert hidden.body.replace("incident/42?", "X") == missing.body.replace("incident/43?", "X")
    assert "incident/42?" not in ui.get("/?status=all").body
    ui.cli("--tenant", "acme", "session", "invite", "incident/42?", "alice", user="bob")
    listed = ui.get("/").body
    assert 'href="/session?name=incident%2F42%3F&amp;tenant=acme">incident/42?</a> <span class="tag">tenant acme</span>' in listed
    assert "<h1>incident/42?</h1>" in ui.get(path).body


def test_without_the_extra_it_names_the_install_command(monkeypatch):
    from tests.conftest import run_inprocess

    monkeypatch.setitem(sys.modules, "starlette", None)  # `import starlette` raises ImportError
    r = run_inprocess("ui", "--no-browser")
    assert r.status == 2 and r.out == ""
    assert r.err.startswith("durable: error: durable ui needs Starlette") and "pip install 'durable-cli[ui]'" in r.err


def test_summaries_say_what_they_cover_and_the_audit_view_shows_superseded_rows(ui):
    for i in range(3):
        ui.cli("transcript", "append", "summed", "--role", "user", f"message {i}")
    seq = ui.cli("transcript", "summarize", "summed", "--through", "2", "--text", "the first two", "--json").json()["summary"]["seq"]
    live = ui.get("/session?name=summed").body
    assert "summary of #1–#2" in live and 'id="row-1"' not in live and ">Show superseded rows</a>" in live
    audit = ui.get("/session?name=summed&superseded=1").body
    assert 'id="row-1"' in audit and f"superseded by #{seq}" in audit and ">Hide superseded rows</a>" in audit


def test_what_ls_refuses_at_start_ui_refuses_alike(home, tmp_path, monkeypatch):
    from tests.conftest import run_inprocess

    assert run_inprocess("session", "create", "x").status == 0
    link = tmp_path / "linked-home"
    link.symlink_to(home)
    monkeypatch.setenv("DURABLE_HOME", str(link))
    ls, ui = run_inprocess("ls"), run_inprocess("ui", "--no-browser")
    assert ls.status != 0 and (ui.status, ui.err, ui.out) == (ls.status, ls.err, "")


def test_a_page_whose_wake_fails_a_prompt_sends_the_outcome_off_the_request(ui):
    """docs/reference/sessions.md §5.3: `ui` sends the deliveries its own commits wrote (here the wake's lease expiry), in a
    thread of its own: the page is answered, and the hook's receiver gets the outcome while the server runs."""
    import threading
    import time

    from tests.helpers import Receiver
    from tests.waiting import wait_until

    receiver, gate = Receiver(), None
    try:
        ui.cli("session", "create", "lapsed")
        ui.cli("session", "hook", "lapsed", "--url", receiver.url)
        ui.cli("session", "prompt", "lapsed", "x")
        ui.cli("session", "next", "lapsed", "--lease", "1s")
        arrived, gate = threading.Event(), threading.Event()
        receiver.on_request = lambda: (arrived.set(), gate.wait(30))  # the receiver answers only when told
        time.sleep(1.2)  # the lease runs out; the page's wake fails the prompt, which is an outcome
        assert ui.get("/session?name=lapsed").status == 200  # answered while the receiver still holds the delivery
        assert arrived.wait(30), "the ui never sent the lease expiry's delivery"
        [d] = json.loads(ui.cli("session", "deliveries", "lapsed", "--json").out)
        assert (d["status"], d["attempts"], d["last_error"]) == ("pending", 1, None)  # claimed, its answer not in yet
        gate.set()
        wait_until(lambda: json.loads(ui.cli("session", "deliveries", "lapsed", "--json").out)[0]["status"] == "delivered",
                   "the ui's thread to record the delivery", timeout=30, step=0.02)
        body = json.loads(receiver.requests[0][1])
        assert (body["type"], body["data"]["error"]) == ("prompt.failed", "timed out")
    finally:
        if gate is not None:
            gate.set()
        receiver.close()
