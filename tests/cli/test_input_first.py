"""Input first (docs/reference/output.md §4): a command's bad input is exit 2 whether NAME exists or not, and nothing is created.

The CLI checks through durable_cli/checks.py before it opens NAME, and the remote client runs the same
checks before it sends a request, so both backends refuse with the same message, never "not found".
"""

import pytest

pytestmark = pytest.mark.both_backends

BAD_LINE = '{"role": "user"\n'

# (arguments, a fragment of the one-line message); "ghost" exists nowhere
CASES = [
    (["session", "title", "ghost", "x" * 201], "invalid title"),
    (["session", "invite", "ghost", "bob", "--role", "admin"], "invalid role 'admin'"),
    (["elicit", "ask", "ghost", "--prompt", ""], "empty --prompt"),
    (["elicit", "ask", "ghost", "--prompt", "ok", "--choice", "a", "--choice", "a"], "duplicate --choice"),
    (["elicit", "ask", "ghost", "--prompt", "ok", "--request-id", ""], "invalid --request-id"),
    (["session", "prompt", "ghost", ""], "empty content"),
    (["session", "renew", "ghost", "1", "--attempt", "0"], "invalid --attempt 0"),
    (["session", "release", "ghost", "1", "--attempt", "0"], "invalid --attempt 0"),
    (["session", "finish", "ghost", "1", "--rows", "{bad}"], "line 1 is not valid JSON"),
    (["session", "finish", "ghost", "1", "--reply", "ok", "--meta", '{"usage": 5}'], "meta.usage must be an object"),
    (["transcript", "append", "ghost", "--role", "user", "hi", "--meta", '{"usage": 5}'], "meta.usage must be an object"),
    (["transcript", "append", "ghost", "--role", "user", "hi", "--data", '{"a": NaN}'], "--data is not valid JSON"),
    (["transcript", "append", "ghost", "--batch", "{bad}"], "line 1 is not valid JSON"),
    (["transcript", "append", "ghost", "--role", "user", "hi", "--request-id", ""], "invalid --request-id"),
    (["limit", "hit", "k", "--rate", "nonsense"], "invalid --rate 'nonsense'"),
    (["memory", "set", "k", "v", "--source", ""], "invalid --source ''"),
]


def test_bad_input_is_exit_2_before_name_is_looked_for(durable, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(BAD_LINE)
    failures = []
    for args, fragment in CASES:
        r = durable(*[str(bad) if a == "{bad}" else a for a in args])
        lines = r.err.strip().splitlines()
        if r.status != 2 or len(lines) != 1 or not lines[0].startswith("durable: error: ") or fragment not in lines[0]:
            failures.append(f"{' '.join(args)[:80]}: exit {r.status}, {r.err.strip()!r}")
    assert failures == []
    assert durable("ls", "--all", "--json").json() == []  # nothing was created

