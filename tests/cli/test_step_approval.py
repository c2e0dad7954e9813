"""docs/reference/hitl.md §8 requests bound to one tool call (`elicit ask --call-id --args --approve --approver`, on both backends) and
docs/reference/sessions.md §5.2 `durable step --approval`: the step runs only for the call and arguments the person approved, once;
exit 10 (`not_approved`: unbound, other_call, used, pending) and 11 (`refused`: declined, expired) run nothing."""

import datetime
import hashlib
import json

import pytest
from freezegun import freeze_time

ARGS = '{"to": "acct-7", "amount": 42}'
SHA = hashlib.sha256(b'{"amount":42,"to":"acct-7"}').hexdigest()  # RFC 8785: keys sorted, no white space


def tenant_session(durable):
    assert durable("session", "create", "s", "--tenant", "acme").status == 0
    assert durable("session", "invite", "s", "bob", "--tenant", "acme").status == 0


@pytest.mark.both_backends
def test_a_bound_request_and_who_may_answer_it(durable):
    tenant_session(durable)
    r = durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Pay?", "--call-id", "c1", "--args", ARGS,
                "--approver", "bob", "--json")
    assert r.status == 0, r.err
    req = r.json()
    assert (req["choices"], req["approve"], req["approvers"], req["call_id"]) == (["approve", "decline"], ["approve"], ["bob"], "c1")
    assert req["args"] == {"to": "acct-7", "amount": 42} and req["args_sha256"] == SHA and req["approved"] is None
    r = durable("elicit", "answer", "s", "1", "--choice", "approve", "--tenant", "acme")
    assert r.status == 5 and "only bob may" in r.err
    r = durable("elicit", "answer", "s", "1", "--choice", "approve", "--tenant", "acme", "--as", "bob", "--json")
    assert r.status == 0, r.err
    assert r.json()["approved"] is True and r.json()["answered_by"] == "bob"
    plain = durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Ship?", "--json").json()
    assert (plain["approvers"], plain["call_id"], plain["args"], plain["approve"], plain["approved"]) == ([], None, None, None, None)


@pytest.mark.both_backends
@pytest.mark.parametrize("extra", [
    ["--call-id", "c1"],
    ["--args", "{}"],
    ["--approve", "yes", "--choice", "yes"],
    ["--call-id", "c1", "--args", "{}", "--choice", "yes", "--choice", "no"],
    ["--call-id", "c1", "--args", "{}", "--approve", "ok"],
    ["--call-id", "c1", "--args", "{bad"],
    ["--approver", " bob"],
])
def test_bad_binding_is_exit_2(durable, extra):
    tenant_session(durable)
    r = durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Pay?", *extra)
    assert r.status == 2 and r.err.startswith("durable: error: "), r.err
    assert durable("elicit", "list", "s", "--tenant", "acme", "--json").json() == []


@pytest.mark.both_backends
def test_request_id_replays_only_the_same_binding(durable):
    tenant_session(durable)
    ask = ["elicit", "ask", "s", "--tenant", "acme", "--prompt", "Pay?", "--request-id", "k", "--call-id", "c1"]
    assert durable(*ask, "--args", ARGS).out == "1\n"
    assert durable(*ask, "--args", '{"amount":42,"to":"acct-7"}').out == "1\n"
    assert durable(*ask, "--args", '{"amount":43,"to":"acct-7"}').status == 4


def step(durable, key, req, args=ARGS, call="c1", *more):
    return durable("step", "s", key, "--tenant", "acme", "--call-id", call, "--args", args, "--approval", str(req), *more,
                   "--", "echo", "paid")


@pytest.mark.both_backends
def test_step_runs_only_for_the_approved_call_once(durable):
    tenant_session(durable)
    durable("session", "prompt", "s", "pay acct-7", "--tenant", "acme")
    durable("session", "next", "s", "--tenant", "acme")
    durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Pay?", "--call-id", "c1", "--args", ARGS, "--approver", "bob")
    r = step(durable, "pay", 1, ARGS, "c1", "--json")
    assert r.status == 10 and r.out == ""
    err = json.loads(r.err)["error"]
    assert (err["code"], err["reason"], err["request"]["id"]) == ("not_approved", "pending", 1)
    durable("elicit", "answer", "s", "1", "--choice", "approve", "--tenant", "acme", "--as", "bob")
    assert step(durable, "pay", 1, '{"amount":43,"to":"acct-7"}').status == 10  # other arguments
    assert step(durable, "pay", 1, ARGS, "c9").status == 10  # another call id
    r = step(durable, "pay", 1, '{"amount":42,"to":"acct-7"}')
    assert (r.status, r.out) == (0, "paid\n"), r.err
    assert step(durable, "pay", 1).out == "paid\n"  # a replay: REQ is not looked at again
    r = step(durable, "pay-again", 1, ARGS, "c1", "--json")
    assert r.status == 10 and json.loads(r.err)["error"]["reason"] == "used"
    [journal] = durable("session", "steps", "s", "--tenant", "acme", "--json").json()
    assert (journal["key"], journal["approval"], journal["call_id"], journal["args_sha256"], journal["runs"]) == ("pay", 1, "c1", SHA, 1)
    durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Plain?")
    r = step(durable, "other", 2, ARGS, "c1", "--json")
    assert r.status == 10 and json.loads(r.err)["error"]["reason"] == "unbound"
    assert step(durable, "other", 9).status == 3


def test_declined_and_expired_are_refused(durable):
    tenant_session(durable)
    durable("session", "prompt", "s", "pay", "--tenant", "acme")
    durable("session", "next", "s", "--tenant", "acme", "--lease", "1d")
    durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Pay?", "--call-id", "c1", "--args", ARGS)
    durable("elicit", "answer", "s", "1", "--choice", "decline", "--tenant", "acme")
    r = step(durable, "pay", 1, ARGS, "c1", "--json")
    assert r.status == 11 and json.loads(r.err)["error"]["reason"] == "declined" and json.loads(r.err)["error"]["code"] == "refused"
    durable("elicit", "ask", "s", "--tenant", "acme", "--prompt", "Pay?", "--call-id", "c1", "--args", ARGS, "--timeout", "1h")
    with freeze_time(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)):
        r = step(durable, "pay", 2, ARGS, "c1", "--json")
    assert r.status == 11 and json.loads(r.err)["error"]["reason"] == "expired"
    assert durable("session", "steps", "s", "--tenant", "acme", "--json").json() == []


@pytest.mark.both_backends
def test_a_requests_args_are_written_as_the_worker_writes_them(durable):
    """`args` is the same JSON text on both backends: an integral number given as 1e2 or 100.0 reads 100."""
    assert durable("session", "create", "s").status == 0
    r = durable("elicit", "ask", "s", "--prompt", "Pay?", "--call-id", "c1", "--args", '{"amount": 1e2, "fee": [2.0, 0.5]}', "--json")
    assert r.status == 0, r.err
    assert '"args":{"amount":100,"fee":[2,0.5]}' in r.out
    assert r.json()["args_sha256"] == hashlib.sha256(b'{"amount":100,"fee":[2,0.5]}').hexdigest()
