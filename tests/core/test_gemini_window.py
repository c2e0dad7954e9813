"""docs/reference/transcript.md §6 `--format gemini` through the CLI, on both backends (the window is chosen by the object, locally
or in the Worker, and rendered by the client): `transcript recent`, `session next --context`, `work`, each
checked against the google-genai package's types as tests/core/test_formats.py checks every format."""

import json

import pytest

from tests.cli.test_work import work
from tests.core.test_formats import valid_gemini

pytestmark = pytest.mark.both_backends

CALLS = json.dumps([{"id": "c1", "name": "ls", "arguments": '{"path": "/tmp"}'},
                    {"id": "c2", "name": "cat", "arguments": '{"path": "/tmp/a"}'}])


def conversation(durable, name):
    for args in (
        ["--role", "system", "You are terse."],
        ["--role", "user", "What is in /tmp?"],
        ["--role", "assistant", "Looking.", "--tool-calls", CALLS],
        ["--role", "tool", "--call-id", "c1", "--name", "ls", "a"],
        ["--role", "tool", "--call-id", "c2", "A"],  # no name: the call's
        ["--role", "assistant", "a holds A."],
    ):
        r = durable("transcript", "append", name, *args)
        assert r.status == 0, r.err


def test_transcript_recent_format_gemini(durable):
    conversation(durable, "g")
    r = durable("transcript", "recent", "g", "--format", "gemini")
    assert r.status == 0, r.err
    doc = r.json()
    valid_gemini(doc)
    assert doc == {
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "What is in /tmp?"}]},
            {"role": "model", "parts": [{"text": "Looking."},
                                        {"functionCall": {"id": "c1", "name": "ls", "args": {"path": "/tmp"}}},
                                        {"functionCall": {"id": "c2", "name": "cat", "args": {"path": "/tmp/a"}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a"}}},
                {"functionResponse": {"id": "c2", "name": "cat", "response": {"output": "A"}}}]},
            {"role": "model", "parts": [{"text": "a holds A."}]},
        ],
    }
    # --json is the rows' document: with another --format, exit 2
    assert durable("transcript", "recent", "g", "--format", "gemini", "--json").status == 2


def test_arguments_that_are_not_an_object_are_exit_4_naming_the_row(durable):
    durable("transcript", "append", "b", "--role", "user", "go")
    durable("transcript", "append", "b", "--role", "assistant", "--tool-calls", '[{"id": "x", "name": "sh", "arguments": "[1]"}]')
    durable("transcript", "append", "b", "--role", "tool", "--call-id", "x", "done")
    before = durable("transcript", "show", "b", "--json").out
    r = durable("transcript", "recent", "b", "--format", "gemini")
    assert r.status == 4 and r.out == ""
    assert r.err.startswith("durable: error: row 2: ") and "gemini" in r.err and len(r.err.splitlines()) == 1
    assert durable("transcript", "show", "b", "--json").out == before
    assert durable("transcript", "recent", "b", "--format", "messages").status == 0  # verbatim there


def test_session_next_context_format_gemini_ends_with_the_prompt(durable):
    conversation(durable, "n")
    durable("session", "prompt", "n", "And /var?")
    p = durable("session", "next", "n", "--context", "1000", "--format", "gemini", "--json")
    assert p.status == 0, p.err
    window = p.json()["window"]
    valid_gemini(window)
    assert window["contents"][-1] == {"role": "user", "parts": [{"text": "And /var?"}]}
    assert window["systemInstruction"] == {"parts": [{"text": "You are terse."}]}


def test_work_format_gemini_gives_cmd_the_window(durable, tmp_path):
    durable("transcript", "append", "w", "--role", "developer", "Be kind.")
    durable("session", "prompt", "w", "hello")
    seen = tmp_path / "seen.json"
    r = work("w", "--command", f"cat > {seen}; echo hi", "--wait", "0", "--context", "500", "--format", "gemini")
    assert r.status == 0, r.err
    doc = json.loads(seen.read_text())
    valid_gemini(doc["window"])
    assert doc["window"] == {"systemInstruction": {"parts": [{"text": "Be kind."}]},
                             "contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
