"""Signed tokens and the Worker's own configuration on real workerd (docs/reference/remote.md §13 "Tokens are signed, not listed"):
`durable remote token` issues a JWT offline, the Worker accepts exactly the valid, unexpired, unrevoked
tokens of its key (anything else, a prefix, a re-encoding, another algorithm: 401, exit 5), `durable remote
revoke` revokes by jti or by user, and a misconfigured Worker refuses every request (500 `misconfigured`,
exit 7) naming the variable, touching no storage. An id lookup answers only to a caller who may see the object.
"""

import base64
import hashlib
import hmac
import json
import os
import socket
import time

import pytest

from tests.conftest import run_inprocess
from tests.remote.conftest import TOKEN_KEY, Fleet, post_call, require_workerd, token, unique


@pytest.fixture
def env(remote_dev, monkeypatch):
    for key in ("DURABLE_USER", "DURABLE_TENANT", "DURABLE_TOKEN_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DURABLE_REMOTE", remote_dev.url)

    def as_token(tok):
        monkeypatch.setenv("DURABLE_TOKEN", tok)

    return as_token


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(header: dict, claims: dict, key: bytes = TOKEN_KEY.encode()) -> str:
    text = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    return f"{text}.{b64(hmac.new(key, text.encode(), hashlib.sha256).digest())}"


def post(url, tok, body) -> tuple:
    return post_call(url, tok, body, timeout=10)


def test_remote_token_issues_what_the_worker_accepts(remote_dev, env, tmp_path):
    name = unique("tok")
    out = run_inprocess("remote", "token", "carol", "--key-file", remote_dev.token_key_file)
    assert out.status == 0, out.err
    carol = out.out.strip()
    head, claims, _ = carol.split(".")
    doc = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    assert doc["sub"] == "carol" and doc["adm"] is False and doc["exp"] - doc["iat"] == 90 * 86400 and doc["jti"]
    assert json.loads(base64.urlsafe_b64decode(head + "==="[: -len(head) % 4 or None]))["alg"] == "HS256"
    env(carol)
    assert run_inprocess("transcript", "append", name, "--role", "user", "hi").status == 0
    # the token names carol only: acting as another user is exit 5; an admin token may
    assert run_inprocess("--as", "dave", "transcript", "show", name).status == 5
    admin = run_inprocess("remote", "token", "root", "--admin", "--expires", "1h", "--key-file", remote_dev.token_key_file).out.strip()
    env(admin)
    assert run_inprocess("--as", "carol", "transcript", "show", name, "--json").json()[0]["content"] == "hi"
    # the key from DURABLE_TOKEN_KEY (less one trailing newline) signs the same way
    os.environ["DURABLE_TOKEN_KEY"] = TOKEN_KEY + "\n"
    try:
        env(run_inprocess("remote", "token", "carol").out.strip())
    finally:
        del os.environ["DURABLE_TOKEN_KEY"]
    assert run_inprocess("transcript", "show", name, "--json").json()[0]["content"] == "hi"


@pytest.mark.parametrize("args, why", [
    ([" carol"], "invalid user"),
    (["carol"], "no signing key"),
    (["carol", "--key-file", "/nonexistent/key"], "cannot read"),
    (["carol", "--expires", "30"], "--expires"),
])
def test_remote_token_refuses_bad_input(args, why, monkeypatch, tmp_path):
    monkeypatch.delenv("DURABLE_TOKEN_KEY", raising=False)
    key = tmp_path / "key"
    key.write_text(TOKEN_KEY)
    if "--key-file" not in args and why != "no signing key":
        args = [*args, "--key-file", str(key)]
    out = run_inprocess("remote", "token", *args)
    assert out.status == 2 and why in out.err, out.err
    short = tmp_path / "short"
    short.write_text("x" * 31 + "\n")
    out = run_inprocess("remote", "token", "carol", "--key-file", str(short))
    assert out.status == 2 and "31 bytes" in out.err


def test_only_valid_tokens_of_this_worker_pass(remote_dev, env):
    good = token("erin")
    now = int(time.time())
    header, claims = {"alg": "HS256", "typ": "JWT"}, {"sub": "erin", "adm": False, "iat": now, "exp": now + 600, "jti": "j1"}
    h, c, s = good.split(".")
    bad = {
        "prefix": good[:-1], "substring": good[1:], "header and claims": f"{h}.{c}", "padded": good + "=",
        "padded signature": f"{h}.{c}.{s}==",
        "standard base64": good.replace("-", "+").replace("_", "/") if ("-" in good or "_" in good) else good + "+",
        "alg none": f"{b64(json.dumps({'alg': 'none'}).encode())}.{c}.",
        "HS512 header": signed({"alg": "HS512"}, claims),
        "another key": signed(header, claims, key=b"k" * 40),
        "expired": signed(header, {**claims, "iat": now - 100, "exp": now - 1}),
        "no jti": signed(header, {k: v for k, v in claims.items() if k != "jti"}),
        "admin as string": signed(header, {**claims, "adm": "true"}),
        "invalid sub": signed(header, {**claims, "sub": " erin"}),
        "the admin secret's letter": "s",
        "an index": "0",
    }
    # the last character of a signature carries 4 spare bits: another letter that decodes to the same bytes
    spare = {"A": "B", "Q": "R", "g": "h", "w": "x"}
    if s[-1] in spare:
        bad["non-canonical base64url"] = f"{h}.{c}.{s[:-1]}{spare[s[-1]]}"
    name = unique("s")
    env(good)
    assert run_inprocess("transcript", "append", name, "--role", "user", "hi").status == 0
    assert run_inprocess("transcript", "show", name).status == 0
    env(signed(header, claims))  # a token made by hand with this key is accepted too
    assert run_inprocess("ls", "--json").status == 0
    for what, tok in bad.items():
        status, doc = post(remote_dev.url, tok, {"op": "show", "scope": "user", "name": name, "actor": "erin"})
        assert (status, doc["error"]["code"]) == (401, "permission_denied"), what
        env(tok)
        out = run_inprocess("transcript", "show", name)
        assert out.status == 5 and "token" in out.err, (what, out.err)


def test_revoke_by_jti_and_by_user(remote_dev, env):
    one, two = token("frank"), token("frank")
    other = token("gina")
    name = unique("s")
    env(one)
    assert run_inprocess("transcript", "append", name, "--role", "user", "hi").status == 0
    jti = json.loads(base64.urlsafe_b64decode(one.split(".")[1] + "==="))["jti"]
    env(other)  # a user token may not revoke
    out = run_inprocess("remote", "revoke", jti)
    assert out.status == 5, out.err
    env(remote_dev.admin_token)
    out = run_inprocess("remote", "revoke", jti, "--json")
    assert out.status == 0 and out.json() == {"revoked": jti, "user": None, "issued_before": None}
    env(one)
    assert run_inprocess("transcript", "show", name).status == 5
    env(two)  # frank's other token still works
    assert run_inprocess("transcript", "show", name).status == 0
    env(remote_dev.admin_token)
    out = run_inprocess("remote", "revoke", "--user", "frank", "--json")
    assert out.status == 0, out.err
    doc = out.json()
    assert doc["revoked"] is None and doc["user"] == "frank" and doc["issued_before"].endswith(".000Z")
    env(two)
    assert run_inprocess("transcript", "show", name).status == 5
    env(other)
    assert run_inprocess("ls").status == 0
    from durable_cli.remote import tokens

    env(tokens.issue(TOKEN_KEY.encode(), "frank", expires=600, now=int(time.time()) + 2))  # issued after the cut
    assert run_inprocess("transcript", "show", name).status == 0
    env(remote_dev.admin_token)
    for args in ([], [jti, "--user", "frank"], [jti, "--issued-before", "2026-01-01T00:00:00Z"],
                 ["--user", "frank", "--issued-before", "yesterday"]):
        assert run_inprocess("remote", "revoke", *args).status == 2, args
    for bad in ("a b", "x\ty", "\u3000", "j" * 201):  # no jti durable issues has white space; a paste is not echoed whole
        out = run_inprocess("remote", "revoke", bad)
        assert out.status == 2 and out.err.count("\n") == 1 and len(out.err) < 200, (bad, out.err)
    out = run_inprocess("remote", "revoke", "--user", "frank", "--issued-before", "2026-01-01T00:00:00.900+01:00", "--json")
    assert out.json()["issued_before"] == "2025-12-31T23:00:00.000Z"


def test_id_lookups_answer_only_who_may_see(remote_dev, env):
    name = unique("s")
    env(token("alice"))
    assert run_inprocess("transcript", "append", name, "--role", "user", "hi").status == 0
    assert run_inprocess("--tenant", "acme", "transcript", "append", name, "--role", "user", "hi").status == 0
    bob = token("bob")
    status, doc = post(remote_dev.url, bob, {"op": "object_id", "scope": "user", "name": name, "owner": "alice", "actor": "bob"})
    assert status == 403 and "result" not in doc, doc
    status, doc = post(remote_dev.url, bob, {"op": "object_id", "scope": "tenant", "tenant": "acme", "name": name, "actor": "bob"})
    assert status == 404 and "result" not in doc, doc
    status, doc = post(remote_dev.url, token("alice"), {"op": "object_id", "scope": "tenant", "tenant": "acme", "name": name})
    assert status == 200 and len(doc["result"]["id"]) == 64


def _answering(url, proc, deadline=60):
    host, port = url.rsplit("/", 1)[1].split(":")
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        assert proc.poll() is None
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError("workerd did not listen")


@pytest.mark.parametrize("variables, named", [
    ({"DURABLE_TOKEN_KEY": None}, "DURABLE_TOKEN_KEY"),
    ({"DURABLE_SECRET": "short"}, "DURABLE_SECRET"),
    ({"DURABLE_MAX_BODY_BYTES": "16MB"}, "DURABLE_MAX_BODY_BYTES"),
    ({"DURABLE_MAX_TURN_BYTES": "-1"}, "DURABLE_MAX_TURN_BYTES"),
    ({"DURABLE_TOKENS": '"s"'}, "DURABLE_TOKENS"),
])
def test_a_misconfigured_worker_serves_nothing(variables, named, tmp_path, monkeypatch):
    require_workerd()
    fleet = Fleet(tmp_path, 1, variables=variables)
    try:
        slot = fleet.free[0]
        _answering(slot.url, fleet.proc)
        status, doc = post(slot.url, token("alice"), {"op": "append_many", "scope": "user", "name": "s",
                                                        "args": {"rows": []}, "create": True})
        assert status == 500 and doc["error"]["code"] == "misconfigured" and named in doc["error"]["message"], doc
        for key in ("DURABLE_USER", "DURABLE_TENANT"):
            monkeypatch.delenv(key, raising=False)
        monkeypatch.setenv("DURABLE_REMOTE", slot.url)
        monkeypatch.setenv("DURABLE_TOKEN", token("alice"))
        out = run_inprocess("transcript", "append", "s", "--role", "user", "hi", "--json")
        assert out.status == 7 and named in out.err, out.err
        assert json.loads(out.err)["error"]["code"] == "misconfigured"
        # no Durable Object was made (workerd keeps one metadata.sqlite per namespace from its start)
        assert [f for _, _, files in os.walk(slot.storage) for f in files if not f.startswith("metadata.sqlite")] == []
    finally:
        fleet.stop()
