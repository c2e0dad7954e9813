"""Differential test (issue 24): Hypothesis over the Unicode range, boundary lengths, big integers and floats
like 1.0, through the CLI against files and against a real workerd, and through /v1/call directly for what
the Python client refuses before sending. Same exit status, same JSON (ids and times masked), same message.

Short here (DURABLE_DIFFERENTIAL_EXAMPLES, default 6 per property, derandomized: about ten seconds). Run it long by hand, e.g.
ten minutes on a 2-core box:

    DURABLE_DIFFERENTIAL_EXAMPLES=20000 python -m pytest -q tests/remote/test_differential.py -p no:randomly

A failure prints the shrunk input; add it to scripts/gen_vectors.py's cases so both runtimes pin it.
"""

import itertools
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_cli.errors import DurableError
from tests.conftest import run_inprocess
from tests.remote.conftest import post_call
from tests.remote.test_both_backends import normalize

EXAMPLES = int(os.environ.get("DURABLE_DIFFERENTIAL_EXAMPLES", "6"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
                    suppress_health_check=list(HealthCheck))

# what runtimes disagree on unless told: separators, format characters, controls, BOM, JS-only and
# Python-only white space, a code point newer than Python 3.11's Unicode, astral characters
TRICKY = "\u00a0\u2028\u2029\u3000\u1680\u2000\u200a\u202f\u205f\u180e\u200b\u200d\u2060\ufeff\u001c\u001f" \
         "\u0085\u00ad\u007f\t\n\r\x0b\x0c \U0001f6dc\U0001f600\u0378\ue000\U000e0001\u0300\u00e9\u65e5'\"\\"
# argv holds no NUL and no lone surrogate (the OS and UTF-8 cannot carry them): those go through /v1/call
ARGV_CHAR = st.one_of(st.sampled_from(TRICKY), st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
ANY_CHAR = st.one_of(st.sampled_from(TRICKY + "\x00\ud800\udfff"), st.characters())


def argv_text(min_size=0, max_size=12):
    return st.one_of(st.text(ARGV_CHAR, min_size=min_size, max_size=max_size),
                     st.builds(lambda c, n, pad: pad + c * n + pad, st.sampled_from("ab\U0001f600"),
                               st.sampled_from([127, 128, 129, 199, 200, 201]), st.sampled_from(["", " ", "\u3000"])))


NUMBER = st.one_of(st.integers(min_value=-2, max_value=3), st.integers(min_value=2**53 - 2, max_value=2**53 + 2),
                   st.integers(min_value=10**12 - 1, max_value=10**12 + 1), st.integers(min_value=2**63 - 2, max_value=2**64),
                   st.sampled_from([0.0, 1.0, 1.5, -0.0, 1e300, 10.0**12, 5e-324]), st.booleans(), st.none())

_names = itertools.count()


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from tests.remote.conftest import start_dev

    dev = start_dev(tmp_path_factory)
    yield dev, str(tmp_path_factory.mktemp("differential-home"))
    dev.stop()


def _run(env, args, stdin=None):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: v for k, v in env.items() if v is not None})
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
    try:
        r = run_inprocess(*args, input=stdin)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return r.status, normalize(r.out), normalize(r.err)


def same_both_ways(both, *commands):
    """Each command line, against files and against the Worker: the same (status, stdout, stderr)."""
    dev, home = both
    local = {"DURABLE_HOME": home, "DURABLE_REMOTE": None, "DURABLE_TOKEN": None, "DURABLE_USER": "alice"}
    remote = {"DURABLE_HOME": home, "DURABLE_REMOTE": dev.url, "DURABLE_TOKEN": dev.admin_token, "DURABLE_USER": "alice"}
    for args in commands:
        want, got = _run(local, args), _run(remote, args)
        assert got == want, f"durable {args!r}: files answered {want}, the Worker {got}"


def fresh(prefix="d"):
    return f"{prefix}{next(_names)}"


@SETTINGS
@given(title=argv_text(), name=argv_text(min_size=1))
def test_names_and_titles(both, title, name):
    n = fresh()
    same_both_ways(both, ["session", "create", n, "--title", title, "--json"], ["session", "title", n, title, "--json"],
                   ["session", "create", name, "--json"], ["session", "show", name, "--json"])


@SETTINGS
@given(key=argv_text(max_size=8), value=argv_text())
def test_tags(both, key, value):
    """docs/reference/sessions.md §5 Tags: a KEY and a VALUE from the command line, set and removed, answered alike."""
    n = fresh()
    same_both_ways(both, ["session", "create", n, "--tag", f"{key}={value}", "--json"],
                   ["session", "create", n + "t", "--json"],
                   ["session", "tag", n + "t", f"k={value}", f"{key}=v", "--json"],
                   ["session", "tag", n + "t", "--untag", key, "--untag", "k"],
                   ["ls", "--tag", f"{key}={value}", "--tag", "k"])


@SETTINGS
@given(prompt=argv_text(), choice=argv_text(), answer=argv_text(), request_id=argv_text(min_size=1, max_size=6))
def test_prompts_requests_and_choices(both, prompt, choice, answer, request_id):
    n = fresh()
    same_both_ways(both, ["session", "prompt", n, prompt or "x", "--request-id", request_id, "--json"],
                   ["elicit", "ask", n, "--prompt", prompt, "--choice", choice or "c", "--json"],
                   ["elicit", "answer", n, "1", "--choice", answer, "--json"])


@SETTINGS
@given(text=argv_text(max_size=30), user=argv_text(min_size=1, max_size=6))
def test_rows_tokens_and_invitations(both, text, user):
    n = fresh()
    same_both_ways(both, ["transcript", "append", n, "--role", "user", text, "--json"],
                   ["--tenant", "acme", "session", "create", n],
                   ["--tenant", "acme", "session", "invite", n, user, "--json"])


@SETTINGS
@given(value=NUMBER, key=st.sampled_from(["input_tokens", "output_tokens", "reasoning_tokens"]), cost=NUMBER, tokens=NUMBER)
def test_numbers_in_meta_and_tokens(both, value, key, cost, tokens):
    n = fresh()
    meta = {"usage": {"input_tokens": 1, "output_tokens": 1, key: value}, "cost_usd": cost}
    same_both_ways(both, ["transcript", "append", n, "--role", "assistant", "x", "--meta", json.dumps(meta), "--json"],
                   ["transcript", "show", n, "--json"])
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        same_both_ways(both, ["transcript", "append", n, "--role", "user", "y", "--tokens", str(tokens), "--json"])


def _post(dev, body):
    status, doc = post_call(dev.url, dev.admin_token, body)
    if status < 400:
        return {"ok": doc["result"]}
    return {"error": doc["error"]["code"], "message": doc["error"]["message"]}


def _local(check, *args):
    try:
        return {"ok": check(*args)}
    except DurableError as e:
        return {"error": e.code, "message": e.message}


@SETTINGS
@given(title=st.text(ANY_CHAR, max_size=12), user=st.text(ANY_CHAR, max_size=8), prompt=st.text(ANY_CHAR, max_size=8),
       choices=st.lists(st.text(ANY_CHAR, max_size=3), max_size=3))
def test_the_worker_answers_as_the_python_checks_it_is_sent_past(both, title, user, prompt, choices):
    """What the Python client refuses before sending, sent anyway: the Worker's answer is the Python rule's."""
    from durable_cli.core import elicit, sessions

    dev, _ = both
    n = fresh("w")
    base = {"scope": "user", "name": n, "actor": "alice"}
    assert _post(dev, dict(base, op="create", args={}, create=True)).get("ok") is not None
    want = _local(sessions.valid_title, title)
    got = _post(dev, dict(base, op="set_title", args={"title": title}))
    assert (got.get("error"), got.get("message")) == (want.get("error"), want.get("message")), (title, got, want)
    if "ok" in want:
        assert got["ok"]["title"] == want["ok"]
    want = _local(sessions.check_invite, user, "member")
    got = _post(dev, dict(base, op="invite", args={"user": user, "role": "member"}))
    if "error" in want:  # (a valid user on a user-scoped session is exit 4 there: tenant sessions only)
        assert (got.get("error"), got.get("message")) == (want["error"], want["message"]), (user, got, want)
    want = _local(elicit.check_ask, prompt, choices)
    got = _post(dev, dict(base, op="ask", args={"prompt": prompt, "choices": choices}))
    assert got.get("error") == want.get("error") and got.get("message") == want.get("message"), (prompt, choices, got, want)


STEP_ID = __import__("re").compile(r"\b[0-9a-f]{32}\b")  # DURABLE_STEP_ID: of the object's id, which differs


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 2))  # each example runs CMD four times: half as many
@given(key=argv_text(min_size=1, max_size=8), out=argv_text(max_size=20), status=st.sampled_from([0, 3, 75, 255]),
       args=NUMBER)
def test_steps(both, key, out, status, args):
    """docs/reference/sessions.md §5.2: a step run, replayed and listed; the same status, JSON and message both ways."""
    dev, home = both
    n = fresh("st")
    run = ["step", n, key, "--call-id", "c", "--args", json.dumps(args), "--json", "--", "sh", "-c", 'printf %s "$1"; exit $2',
           "sh", out, str(status)]
    commands = [["session", "prompt", n, "go"], ["session", "next", n, "--json"], run, run, ["session", "steps", n, "--json"]]
    envs = [{"DURABLE_HOME": home, "DURABLE_REMOTE": None, "DURABLE_TOKEN": None, "DURABLE_USER": "alice"},
            {"DURABLE_HOME": home, "DURABLE_REMOTE": dev.url, "DURABLE_TOKEN": dev.admin_token, "DURABLE_USER": "alice"}]
    local, remote = ([tuple(STEP_ID.sub("<step>", x) if isinstance(x, str) else x for x in _run(env, args))
                      for args in commands] for env in envs)
    assert remote == local
