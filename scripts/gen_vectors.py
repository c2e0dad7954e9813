"""Write durable_cli/contract/vectors.json: input -> outcome for the validators both runtimes hold.

The inputs are listed here; each outcome is what the Python rules answer (the reference implementation is Python:
`str.isprintable()`, `strip()`, `len(text.split())`, `repr`). tests/test_vectors.py runs the vectors
against durable_cli/core (and fails when this file's output differs from the committed copy), and
`node --test` runs the same file against worker/src/rules (worker/test/vectors.test.ts): a rule
changed in one language only fails one of them. Run after changing a rule or adding a case:
`python scripts/gen_vectors.py`.
"""

import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from durable_cli import clock, deliver, durations
from durable_cli.across import search
from durable_cli.config import valid_name
from durable_cli.contract import text
from durable_cli.contract.messages import say
from durable_cli.core import elicit, hooks, schedules, sessions, steps, tags, tokens, transcript
from durable_cli.core.transcript import row as transcript_row
from durable_cli.errors import DurableError

TARGET = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "durable_cli", "contract", "vectors.json")

# The characters where runtimes disagree unless told: separators, format characters, controls,
# JS-only and Python-only white space, a code point newer than Unicode 14, astral printables.
TRICKY = ["\u00a0", "\u2028", "\u2029", "\u3000", "\u1680", "\u2000", "\u200a", "\u202f", "\u205f", "\u180e",
          "\u200b", "\u200d", "\u2060", "\ufeff", "\u001c", "\u001f", "\u0085", "\u00ad", "\u0000", "\u007f",
          "\t", "\n", "\r", "\x0b", "\x0c", " ", "\U0001f6dc", "\U0001f600", "\u0378", "\ue000", "\ud800",
          "\udc00", "\U000e0001", "\u0300", "\u00e9", "\u65e5"]
NAMES = ["fix-login", "", "a" * 200, "a" * 201, "\U0001f600" * 200, "\U0001f600" * 201, "it's", 'say "hi"', "a b",
         " a", "a ", "x y z"] + [f"a{c}b" for c in TRICKY] + [f"{c}ab" for c in TRICKY] + [f"ab{c}" for c in TRICKY] + TRICKY
TITLES = NAMES + ["  padded  ", "\x1cabc", "abc\x1f", "\ufeffabc", "\u0085abc", "\u3000abc\u3000", " " * 5,
                  " " + "a" * 200 + " ", "\u00a0" + "a" * 200]
# docs/reference/sessions.md §5 Tags: (set, untag) of one change; KEY rules, VALUE rules (printable, strip), a KEY named twice
TAG_CHANGES = [
    [{"pr": "42", "team": "auth"}, ["old"]], [{"A-z.0_9:/x": "v=w"}, []], [{"k" * 64: "v" * 256}, None], [None, ["b", "a"]],
    [{"k" * 65: "v"}, None], [{"": "v"}, None], [{"_k": "v"}, None], [{"k k": "v"}, None], [{"\u00e9": "v"}, None],
    [{"k": ""}, None], [{"k": " v"}, None], [{"k": "v\u3000"}, None], [{"k": "a\x07"}, None], [{"k": "v" * 257}, None],
    [{"k": "\U0001f600" * 256}, None], [{"k": "\ufeffv"}, None], [{"k": "a\u00a0b"}, None], [{"k": 7}, None],
    [{"a": "1"}, ["a"]], [None, ["a", "a"]], [None, ["-a"]], [None, [""]], [[], None], [None, "a"],
] + [[{"k": f"a{c}b"}, None] for c in TRICKY]
REQUEST_IDS = ["r-1", "", "a" * 128, "a" * 129, " leading", "trailing ", "a b"] + [f"r{c}1" for c in TRICKY]
QUOTES = ["it's not", "a\xa0b", 'say "hi"', "both ' and \"", "back\\slash", "\n\t\r", "\x00\x1b\x7f", "\u2028",
          "\U0001f6dc", "\U0001f600", "\ufeff", "\u65e5\u672c", "\ud800", "\U000e0001", "plain"]
INVITES = [["bob", "member"], ["bob", "owner"], ["bob", "admin"], ["bob", "it's"], ["bob\u00a0", "member"],
           ["\U0001f6dc", "member"], ["b\u3000b", "owner"], ["", "member"]]
ASKS = [["ok?", []], ["ok?", ["yes", "no"]], ["\ufeff", []], ["\x1c", []], ["\u0085", []], ["\u3000", []],
        ["\u200b", []], [" ", []], ["", []], ["q", ["a", ""]], ["q", ["a", "a"]], ["q", ["\u00a0"]]]
APPROX = ["", "hello", "hello world", "a\ufeffb", "\ufeff", "a\u200bb", "a\x1cb", "a\u0085b", "a\u00a0b",
          "a\u3000b c", "\U0001f600\U0001f600\U0001f600\U0001f600\U0001f600", "one two three four five six seven",
          "x" * 41, "word " * 40, "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f \x85\xa0"]
# docs/reference/sessions.md §5.3 cron: (EXPR, TZ, after) -> the next five due times, both daylight-saving days of
# Europe/Paris and America/New_York among them, or the refusal
CRONS = [(e, tz, t) for e, tz, t in [
    ("* * * * *", "UTC", "2026-12-05T10:00:30Z"), ("*/15 * * * *", "UTC", "2026-12-05T10:00:00Z"),
    ("0 * * * *", "UTC", "2026-12-05T10:00:00Z"), ("30 2 * * *", "Europe/Paris", "2027-03-26T12:00:00Z"),
    ("30 2 * * *", "Europe/Paris", "2027-10-29T12:00:00Z"), ("30 2 * * *", "America/New_York", "2027-03-12T12:00:00Z"),
    ("30 1 * * *", "America/New_York", "2027-11-05T12:00:00Z"), ("30 * * * *", "Europe/Paris", "2027-10-30T23:00:00Z"),
    ("30 * * * *", "America/New_York", "2027-11-07T04:00:00Z"), ("0 * * * *", "Europe/Paris", "2027-03-28T00:00:00Z"),
    ("0 9 * * MON-FRI", "Europe/Paris", "2026-12-05T10:00:00Z"), ("0 9 * * 1-5", "America/New_York", "2026-12-05T10:00:00Z"),
    ("0 0 1 * *", "UTC", "2026-12-05T10:00:00Z"), ("0 0 1 1 *", "UTC", "2026-12-05T10:00:00Z"),
    ("0 0 13 * 5", "UTC", "2026-12-05T10:00:00Z"), ("0 0 * * 0", "UTC", "2026-12-05T10:00:00Z"),
    ("0 0 * * 7", "UTC", "2026-12-05T10:00:00Z"), ("0 12 1-10/3 * *", "UTC", "2026-12-05T10:00:00Z"),
    ("0 0 * jan,Jul sun", "UTC", "2026-12-05T10:00:00Z"), ("5,35 8-10 * * *", "Asia/Kolkata", "2026-12-05T10:00:00Z"),
    ("0 0 29 2 *", "UTC", "2026-12-05T10:00:00Z"), ("0 0 31 * *", "UTC", "2026-12-05T10:00:00Z"),
    ("@yearly", "UTC", "2026-12-05T10:00:00Z"), ("@annually", "UTC", "2026-12-05T10:00:00Z"),
    ("@monthly", "Europe/Paris", "2026-12-05T10:00:00Z"), ("@weekly", "UTC", "2026-12-05T10:00:00Z"),
    ("@daily", "America/New_York", "2027-03-13T00:00:00Z"), ("@midnight", "UTC", "2026-12-05T10:00:00Z"),
    ("@hourly", "Australia/Lord_Howe", "2027-04-03T14:00:00Z"), ("15 10 * * *", "Pacific/Chatham", "2026-12-05T10:00:00Z"),
    ("0 0 30 2 *", "UTC", "2026-12-05T10:00:00Z"), ("0 9 * * * *", "UTC", "2026-12-05T10:00:00Z"),
    ("@reboot", "UTC", "2026-12-05T10:00:00Z"), ("0 9 L * *", "UTC", "2026-12-05T10:00:00Z"),
    ("0 9 * * 1#2", "UTC", "2026-12-05T10:00:00Z"), ("0 9 ? * *", "UTC", "2026-12-05T10:00:00Z"),
    ("60 * * * *", "UTC", "2026-12-05T10:00:00Z"), ("0 9 * * 8", "UTC", "2026-12-05T10:00:00Z"),
    # lists, ranges and steps of the hour over both daylight-saving days: which ones fire once (fixed times) and
    # which on every real hour (a wildcard or a step), as cronsim has it
    ("30 2,14 * * *", "Europe/Paris", "2027-03-27T12:00:00Z"), ("30 2-3 * * *", "Europe/Paris", "2027-10-30T12:00:00Z"),
    ("*/30 2 * * *", "Europe/Paris", "2027-10-30T23:00:00Z"), ("0 */2 * * *", "America/New_York", "2027-11-07T03:00:00Z"),
    ("15 1-3 * * *", "Europe/Paris", "2027-03-27T22:00:00Z"), ("*/20 2 * * *", "Europe/Paris", "2027-03-27T23:00:00Z"),
    ("0 0 * * *", "europe/paris", "2026-12-05T10:00:00Z"), ("0 0 * * *", "Mars/Olympus", "2026-12-05T10:00:00Z"),
    ("0 0 * * *", "../etc/passwd", "2026-12-05T10:00:00Z"), ("0 0 1-10/0 * *", "UTC", "2026-12-05T10:00:00Z"),
    ("0 0 5/2 * *", "UTC", "2026-12-05T10:00:00Z"), ("\u0661 0 * * *", "UTC", "2026-12-05T10:00:00Z"),
    ("  0   0 * * *  ", "UTC", "2026-12-05T10:00:00Z"), ("@HOURLY", "UTC", "2026-12-05T10:00:00Z"),
]]
# docs/reference/sessions.md §5.3 schedule options (core/schedules.plan): (now, options) -> the kind and times, or the refusal
NOW = "2026-12-05T10:00:00Z"
SCHEDULES = [{"at": "2026-12-06T09:00:00Z"}, {"at": "2026-12-06T09:00:00+01:00"}, {"at": "2026-12-06T09:00:00.1234-05:30"},
             {"at": "2026-12-06t09:00:00z"}, {"at": "2026-12-06T09:00:00"}, {"at": "2026-12-06"}, {"at": "2026-12-05T09:00:00Z"},
             {"at": "2026-12-05T10:00:00Z"}, {"at": "2126-12-06T09:00:00Z"}, {"at": "2026-02-30T09:00:00Z"},
             {"at": "2026-13-01T09:00:00Z"}, {"at": "2026-12-06T24:00:00Z"}, {"at": "2026-12-06T09:60:00Z"},
             {"at": "2026-12-06T09:00:60Z"}, {"at": "2026-12-06T09:00:00+24:00"}, {"at": "2026-12-06T09:00:00-25:30"},
             {"at": "2026-12-06T09:00:00+01:75"}, {"at": "2028-02-29T09:00:00Z"}, {"at": "2027-02-29T09:00:00Z"},
             {"at": "\u0662026-12-06T09:00:00Z"}, {"at": " 2026-12-06T09:00:00Z"},
             {"after": "90m"}, {"after": "0s"}, {"after": "1x"}, {"every": "1h"}, {"every": "59s"}, {"every": "1m"},
             {"every": "1h", "at": "2026-12-06T09:00:00Z"}, {"every": "1h", "at": "2026-12-04T09:00:00Z"},
             {"cron": "0 9 * * MON-FRI", "tz": "Europe/Paris"}, {"cron": "0 9 * * *"}, {"cron": "0 0 30 2 *"},
             {"cron": "0 9 * * *", "tz": "Nowhere/Else"}, {"tz": "UTC"}, {"at": "2026-12-06T09:00:00Z", "tz": "UTC"}, {},
             {"at": "2026-12-06T09:00:00Z", "after": "1h"}, {"every": "1h", "cron": "@daily"},
             {"after": "1h", "every": "1h", "cron": "@daily"}]


def schedule_outcome(options):
    def run():
        planned = schedules.plan(schedules.parse_time(NOW), **options)
        return {k: (clock.iso(v) if k in ("at", "next_at") else v) for k, v in planned.items()}

    return outcome(run)


# docs/reference/sessions.md §5.3 URLs (core/hooks.valid_url): the client's rules; the Worker's refusal of local and
# private hosts is its own (worker/src/rules/hooks.test.ts)
HOOK_URLS = ["https://example.com/hook", "http://example.com:8080/x?y=1#z", "HTTPS://EXAMPLE.COM/", "ftp://example.com/",
             "example.com/hook", "https://", "http:///x", "https://user:pw@example.com/", "https://user@example.com/",
             "https://@example.com/", "https://example.com/a b", "https://example.com/\x07", "https://example.com:99999/",
             "https://example.com:x/", "https://[::1/", "", "https://example.com/" + "a" * 2028,
             "https://example.com/" + "a" * 2029, "https://example.com/" + "\u00e9" * 1014, "https://example.com/" + "\u00e9" * 1015]
# the signature of docs/reference/sessions.md §5.3 "Request" (deliver.sign): (secret, webhook-id, timestamp, body) -> header
SIGNATURES = [["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}'],
              ["whsec_" + "A" * 32, "msg_" + "0" * 32, 1800000000, '{"type":"prompt.completed","data":{"reply":"d\u00e9j\u00e0 \U0001f600"}}']]


def cron_outcome(expr, tz, after):
    """The next five due times after AFTER of EXPR in TZ (§4's UTC form), or the refusal."""
    import itertools

    def run():
        fields, zone = schedules.valid_cron(expr), schedules.valid_tz(tz)
        times = list(itertools.islice(schedules.cron_times(fields, zone, schedules.parse_time(after)), 5))
        if not times or times[0] > schedules.parse_time(after) + schedules.CRON_HORIZON_DAYS * 86400 * 1000:
            raise sessions.invalid("no due time in the next 10 years")
        return [clock.iso(t) for t in times]

    return outcome(run)


DURATIONS = ["90d", "1h30m", "45s", "1w2d3h4m5s", "36500d", "36501d", "5200w", "5215w", "30", "0s", "05m", "1.5h",
             "-5d", "30x", "0", "", "1d1d", "1m1h", " 1d", "1d ", "1\u00a0d", "\u0661d", "9999999999999d"]
ROWS = [
    {"role": "user", "content": "hi"},
    {"role": "wizard", "content": "hi"},
    {"role": "it's", "content": "hi"},
    {"role": None, "content": "hi"},
    {"role": "user", "content": ""},
    {"role": "user", "content": 5},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "f", "arguments": "{\"x\":1}"}]},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "f"}]},
    {"role": "assistant", "content": "", "tool_calls": []},
    {"role": "assistant", "content": "", "tool_calls": {"id": "c1"}},
    {"role": "assistant", "content": "x", "tool_calls": ["c1"]},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "c1", "name": "f", "zz": 1, "aa": 2}]},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "", "name": "f"}]},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "c1", "name": 5}]},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "c1", "name": "f", "arguments": {}}]},
    {"role": "assistant", "content": "x", "tool_calls": [{"id": "it's", "name": "f"}, {"id": "it's", "name": "g"}]},
    {"role": "user", "content": "x", "tool_calls": [{"id": "c1", "name": "f"}]},
    {"role": "tool", "content": "42", "call_id": "c1"},
    {"role": "tool", "content": "42", "call_id": "c1", "name": "f"},
    {"role": "tool", "content": "42"},
    {"role": "tool", "content": "42", "call_id": ""},
    {"role": "tool", "content": "42", "call_id": "c1", "name": ""},
    {"role": "user", "content": "42", "call_id": "c1"},
    {"role": "user", "content": "42", "name": "f"},
    {"role": "user", "content": "", "data": {"k": 1}},
    {"role": "user", "content": "x", "meta": []},
    {"role": "user", "content": "x", "meta": {"model": 5}},
    {"role": "user", "content": "x", "meta": {"usage": 5}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 1}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 1, "output_tokens": -1}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 1, "output_tokens": 2}, "cost_usd": -1}},
    {"role": "user", "content": "x", "meta": {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 2}, "cost_usd": 0.5}},
    {"role": "user", "content": "x", "tokens": 7},
    # docs/reference/transcript.md §6 numbers: usage counts integers from 0 to 10^12, cost_usd finite from 0 to 10^9, tokens to 10^9
    # (as values: a JSON loader reads 5.0 as 5 in JS, so lexemes such as 1.0 are FIELD_TEXTS below)
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 10**12, "output_tokens": 0, "cache_read_tokens": 10**12,
                                                          "reasoning_tokens": 0}, "cost_usd": 10**9}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 10**12 + 1, "output_tokens": 0}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 2**63, "output_tokens": 0}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 2**63 - 1, "output_tokens": 0}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": True, "output_tokens": 0}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 0.5, "output_tokens": 0}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 1, "output_tokens": 0, "reasoning_tokens": 10**12 + 1}}},
    # docs/reference/transcript.md §6 token convention: cache writes are a part of input_tokens, checked as the other counts
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 9, "output_tokens": 0, "cache_write_tokens": 4}}},
    {"role": "user", "content": "x", "meta": {"usage": {"input_tokens": 9, "output_tokens": 0, "cache_write_tokens": 1.5}}},
    {"role": "user", "content": "x", "meta": {"cost_usd": 10**9 + 1}},
    {"role": "user", "content": "x", "meta": {"cost_usd": 1e308}},
    {"role": "user", "content": "x", "meta": {"cost_usd": "1"}},
    # when the model call ran (docs/reference/traces.md §15.2): both or neither, RFC 3339 with a zone, the end not first
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:00Z", "ended_at": "2026-12-05T10:00:03.120Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T11:00:00.5+01:00", "ended_at": "2026-12-05T10:00:00.500000001z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2024-02-29T23:59:59.999999999-23:59", "ended_at": "9999-12-31T23:59:59Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "0001-01-01T00:00:00Z", "ended_at": "0001-01-01T00:00:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"ended_at": "2026-12-05T10:00:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:01Z", "ended_at": "2026-12-05T10:00:00.999Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:00", "ended_at": "2026-12-05T10:00:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:00Z", "ended_at": "2023-02-29T10:00:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:60Z", "ended_at": "2026-12-05T10:01:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05 10:00:00Z", "ended_at": "2026-12-05T10:01:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:00.1234567890Z", "ended_at": "2026-12-05T10:01:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "2026-12-05T10:00:00+24:00", "ended_at": "2026-12-05T10:01:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": 1796464800, "ended_at": "2026-12-05T10:01:00Z"}},
    {"role": "assistant", "content": "x", "meta": {"started_at": "２026-12-05T10:00:00Z", "ended_at": "2026-12-05T10:01:00Z"}},
    {"role": "user", "content": "x", "tokens": 10**9},
    {"role": "user", "content": "x", "tokens": 10**9 + 1},
    {"role": "user", "content": "a\ufeffb c"},
    {"role": "user", "content": "\u00e9" * 10},
]


# A row's meta or data as the JSON text a client sends (`meta_json`, `data_json`): RFC 8259 and the number
# lexemes (5.0 is not an integer), which only the text shows. Texts both JSON.parse and Python parse.
FIELD_TEXTS = [
    ["meta", '{"usage": {"input_tokens": 1.0, "output_tokens": 1}}'],
    ["meta", '{"usage": {"input_tokens": 1e3, "output_tokens": 1}}'],
    ["meta", '{"usage": {"input_tokens": 1, "output_tokens": 10E0}}'],
    ["meta", '{"usage": {"input_tokens": 9223372036854775808, "output_tokens": 1}}'],
    ["meta", '{"usage": {"input_tokens": 1000000000000, "output_tokens": 0}, "cost_usd": 1.0}'],
    ["meta", '{"usage": {"input_tokens": -0, "output_tokens": 0}}'],
    ["meta", '{"cost_usd": 1, "cost_usd": 2}'],
    ["meta", '{"model": "m", "x": {"it\'s": 1, "it\'s": 2}}'],
    ["meta", '{"cost_usd": 1e400}'],
    ["data", "1e400"],
    ["data", "-1e400"],
    ["data", "1" + "0" * 400],
    ["data", "1e308"],
    ["data", '{"a": [1, {"b": 2, "c": 3, "b": 4}]}'],
    ["data", "[" * 200 + "]" * 200],
    ["data", "[" * 201 + "]" * 201],
    ["data", '{"a": ' * 201 + "1" + "}" * 201],
    ["data", '{"\u0061": 1, "a": 2}'],
]


def field_text_outcome(key, text_):
    def call():
        value = transcript.parse_json(text_, key)
        if key == "meta":
            transcript_row._meta(value, "")
    return outcome(call)


def outcome(call):
    try:
        return {"ok": call()}
    except DurableError as e:
        return {"error": e.code, "message": str(e)}


def row_outcome(fields):
    def call():
        row = transcript.prepare(None, fields, where="line 1: ", _settings=(2 * 1024 * 1024, tokens.approx))
        return {"role": row.role, "content": row.content, "tokens": row.tokens, "call_id": row.call_id, "name": row.name,
                "tool_calls": json.loads(row.tool_calls) if row.tool_calls else None}
    return outcome(call)


# `transcript window` (docs/reference/transcript.md §6): live rows (the fields an append takes; "kind": "summary" for a summary row)
# and the options -> the seqs chosen and their tokens, each row's tokens counted by `approx` unless given.
# The Worker runs the same rule (worker/src/rules/transcript/context.ts `choose`); the formats are rendered by the
# client for both backends (core/formats.py), so "formats" is checked by pytest only.
_CALL = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "f", "arguments": "{}"}]}
_TWO_CALLS = {"role": "assistant", "content": "looking", "tool_calls": [{"id": "c1", "name": "f", "arguments": "{}"},
                                                                          {"id": "c2", "name": "g", "arguments": "{\"q\":1}"}]}
_CHAT = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"},
         {"role": "assistant", "content": "hi, how can I help"}, {"role": "user", "content": "what is two plus two"},
         {"role": "assistant", "content": "four"}]
_TOOLS = [{"role": "system", "content": "tools on"}, {"role": "user", "content": "look it up"}, _TWO_CALLS,
          {"role": "tool", "content": "42", "call_id": "c1", "name": "f"}, {"role": "tool", "content": "43", "call_id": "c2"},
          {"role": "assistant", "content": "it is 42"}]
_FEFF = [{"role": "user", "content": "a\ufeffb"}, {"role": "assistant", "content": "a\ufeffb"},
         {"role": "user", "content": "a\ufeffb"}]
WINDOWS = [
    [_CHAT, {"budget": 1000}],
    [_CHAT, {"budget": 20}],
    [_CHAT, {"budget": 0}],
    [_CHAT, {"budget": 5}],  # the pinned row alone is over: nothing
    [_CHAT, {"budget": 5, "keep": 5}],  # ... unless a row is kept
    [_CHAT, {"budget": 1000, "limit": 2}],
    [_CHAT, {"budget": 1000, "limit": 0}],
    [_CHAT, {"budget": -1}],
    [_CHAT, {"budget": 10, "limit": -1}],
    [[{"role": "developer", "content": "dev"}, {"role": "system", "content": "sys"}, {"role": "user", "content": "u"},
      {"role": "system", "content": "late system"}], {"budget": 1000}],
    [[{"role": "user", "content": "u"}, {"role": "system", "content": "late system"}], {"budget": 6}],
    [_TOOLS, {"budget": 1000}],
    [_TOOLS, {"budget": 26}],  # the call and both results do not fit: none of them
    [_TOOLS, {"budget": 40}],
    [_TOOLS, {"budget": 1000, "limit": 3}],  # a group of three counts as three rows
    [_TOOLS, {"budget": 1000, "limit": 4}],
    [[{"role": "user", "content": "q"}, _CALL], {"budget": 1000}],  # a call without its result
    [[{"role": "user", "content": "q"}, {"role": "tool", "content": "orphan", "call_id": "zz"},
      {"role": "assistant", "content": "done"}], {"budget": 1000}],  # a result without its call
    [[{"role": "user", "content": "q"}, {"role": "tool", "content": "early", "call_id": "c1"}, _CALL,
      {"role": "tool", "content": "late", "call_id": "c1"}], {"budget": 1000}],
    [[{"role": "system", "content": "s"}, {"role": "user", "content": "old"}, {"role": "assistant", "content": "old"},
      {"role": "system", "content": "the story so far", "kind": "summary"}, {"role": "user", "content": "new"}], {"budget": 1000}],
    [[{"role": "system", "content": "s"}, {"role": "user", "content": "old"},
      {"role": "system", "content": "the story so far", "kind": "summary"}, {"role": "user", "content": "new"}], {"budget": 12}],
    [[{"role": "user", "content": "x", "tokens": 100}, {"role": "user", "content": "y", "tokens": 0}], {"budget": 99}],
    [[{"role": "user", "content": "x", "tokens": 100}, {"role": "user", "content": "y"}], {"budget": 1, "keep": 2}],
    # issue 24's approx drift: U+FEFF is not white space (6 tokens a row, not 7), so a 12-token budget holds two rows
    [_FEFF, {"budget": 12}],
    [_FEFF, {"budget": 18}],
    [[{"role": "user", "content": "w\u3000" * 10}, {"role": "user", "content": "w\ufeff" * 10}], {"budget": 9}],
    [[{"role": "user", "content": "w\u3000" * 10}, {"role": "user", "content": "w\ufeff" * 10}], {"budget": 26}],
    [[{"role": "user", "content": "w\u0085" * 10}, {"role": "user", "content": "w\u001c" * 10}], {"budget": 17}],
]


def window_rows(fields_list):
    """The stored rows a transcript of FIELDS_LIST would hold (seq = pos = 1, 2, ...), as ROW_COLUMNS tuples."""
    names = [c.strip() for c in transcript_row.ROW_COLUMNS.split(",")]
    rows = []
    for i, given in enumerate(fields_list, 1):
        fields = dict(given)
        kind = fields.pop("kind", "turn")
        p = transcript.prepare(None, fields, where=f"line {i}: ", _settings=(2 * 1024 * 1024, tokens.approx))
        values = {"seq": i, "role": p.role, "content": p.content, "tokens": p.tokens, "author": "alice", "created_at": 0,
                  "kind": kind, "superseded_by": None, "covers_first": 1 if kind == "summary" else None,
                  "covers_last": i - 1 if kind == "summary" else None, "call_id": p.call_id, "pos": i,
                  "tool_calls": p.tool_calls, "name": p.name, "meta": None, "data": None, "forked_from": None}
        rows.append(tuple(values[n] for n in names))
    return rows


def window_outcome(fields_list, options):
    from durable_cli.core import formats
    from durable_cli.core.transcript import context

    rows = window_rows(fields_list)
    result = {}

    def call():
        pinned = context.pinned_prefix(rows)
        newer_first = reversed(rows[len(pinned):])
        chosen, total = context.choose(pinned, newer_first, budget=options["budget"], limit=options.get("limit"),
                                       keep=options.get("keep"))
        result["rows"] = [transcript_row.row_json(r) for r in chosen]
        return {"seqs": [r[transcript_row.SEQ] for r in chosen], "tokens": total}

    found = outcome(call)
    if "rows" in result:
        found["formats"] = {f: outcome(lambda f=f: formats.render(result["rows"], f)) for f in formats.FORMATS}
    return found


# The message catalog filled (durable_cli/contract/messages.py `say`, worker/src/rules/state.ts `say`): {name} as
# text, {name!r} quoted as Python's repr, numbers and null alike in both languages.
SAYS = [
    ["fact_not_found", {"key": "it's"}],
    ["fact_unconfirmed", {"key": 'say "hi"'}],
    ["invalid_name", {"what": "name", "value": "a\xa0b"}],
    ["invalid_name", {"what": "user", "value": "\U0001f6dc"}],
    ["invalid_participant_role", {"role": "both ' and \""}],
    ["choice_not_offered", {"choice": "\u2028", "choices": "yes, no"}],
    ["queue_full", {"what": 'session "q"', "unfinished": 3, "limit": 3}],
    ["invalid_max_attempts", {"value": 0}],
    ["invalid_on_lease_expiry", {"value": None}],
    ["invalid_attempt", {"attempt": "x\ny"}],
    ["tool_calls_not_array", {}],
    ["record_time", {"max": 253402300799999, "value": -1}],
    ["rate_limited", {"key": "api", "rate": "5/1h", "retry": 720}],
]


def code_point_runs(f):
    """[[first, last, value], ...] over U+0000..U+FFFF where F(code point) stays the same."""
    runs = []
    for c in range(0x10000):
        v = f(c)
        if runs and runs[-1][2] == v and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c, v])
    return runs


# docs/reference/retention.md §7's plain-text search QUERY -> the FTS5 expression (or exit 2): the words agent transcripts are
# full of are terms, never syntax; "…" a phrase; a trailing * a prefix; an unmatched " an ordinary character.
SEARCH_QUERIES = [
    "PROJ-123", "alice@example.com", "main.py", "2026-12-01", "credit-card", "it's", "C++", "refund",
    "refund credit-card", '"credit card" refund', '"credit card"*', "deplo*", "PROJ-1*", "***", "*", '"', '""',
    '"unbalanced', 'say "hi', 'a"b c"', 'he said "ok"', "a AND b", "NOT x", "x OR y", "NEAR(a b)", "col:value",
    "(a)", "a^b", "-x", "+y", "x - y", "  spaced\tout\nlines  ", "", "   ", "\u3000", "caf\u00e9", "na\u00efve*",
    "\u65e5\u672c\u8a9e", "\u0645\u0631\u062d\u0628\u0627", "\U0001f600", "\U0001f600 ok", "x\u00a0y", "a\u2028b",
    "'quoted'", "$HOME", "C#", "f(x)=y", "a_b", "x*y", "\ue000", "\u00bd", "\u2160",
]


# docs/reference/sessions.md §5.2: a step's KEY (the NAME rule, and no leading '-'), its DURABLE_STEP_ID, and what a commit
# stores of its stdout (base64 in, at most 1 MiB unless marked output_too_large, its size as stated)
STEP_KEYS = NAMES + ["-x", "x-", "k\n", "\u00e9t\u00e9", "a\u00a0"]
STEP_IDS = [["1943542e83f4fbd55900151a18cb36d95d742a9762f321e0ba166b2317165f73", 1, "pay"],
            ["1943542e83f4fbd55900151a18cb36d95d742a9762f321e0ba166b2317165f73", 2, "pay"],
            ["00", 9007199254740991, "\u00e9t\u00e9 \U0001f600"]]  # ids past 2^53 are no JavaScript number
_MIB = 1_048_576
STEP_STDOUTS = [["k", "YQBi/wo=", 5, False], ["k", None, 0, False], ["k", "", 0, False], ["k", "YQ==", 2, False],
                ["k", "@@@@", 3, False], ["k", "YQ", 1, False], ["k", None, _MIB + 1, True], ["k", None, _MIB, True],
                ["k", "AAAA", 3, True]]  # over the cap unmarked: tests/core/test_steps_rules.py (1 MiB is no vector)


def step_stdout_outcome(key, stdout, size, too_large):
    def call():
        data = steps._stdout_of(key, stdout, size, too_large)
        return None if data is None else base64.b64encode(data).decode("ascii")[:64]

    return outcome(call)


def build() -> dict:
    return {
        "about": "Generated by scripts/gen_vectors.py: input -> outcome for the rules both runtimes hold; run by "
                 "tests/test_vectors.py against durable_cli and by `node --test` (worker/test) against worker/src/rules.",
        "name": [{"args": [s, "name"], **outcome(lambda s=s: valid_name(s, "name"))} for s in NAMES],
        "user": [{"args": [s, "user"], **outcome(lambda s=s: valid_name(s, "user"))} for s in NAMES],
        "title": [{"args": [s], **outcome(lambda s=s: sessions.valid_title(s))} for s in TITLES],
        "request_id": [{"args": [s], **outcome(lambda s=s: sessions.valid_request_id(s))} for s in REQUEST_IDS],
        "tag_change": [{"args": a, **outcome(lambda a=a: list(tags.valid_change(*a)))} for a in TAG_CHANGES],
        "invite": [{"args": a, **outcome(lambda a=a: sessions.check_invite(*a))} for a in INVITES],
        "ask": [{"args": a, **outcome(lambda a=a: elicit.check_ask(*a))} for a in ASKS],
        "quote": [{"args": [s], "ok": text.quote(s)} for s in QUOTES],
        "approx": [{"args": [s], "ok": tokens.approx(s)} for s in APPROX],
        "row": [{"args": [r], **row_outcome(r)} for r in ROWS],
        "field_text": [{"args": a, **field_text_outcome(*a)} for a in FIELD_TEXTS],
        "window": [{"args": a, **window_outcome(*a)} for a in WINDOWS],
        "say": [{"args": a, "ok": say(a[0], **a[1])} for a in SAYS],
        "search_query": [{"args": [q], **outcome(lambda q=q: search.check_query(q))} for q in SEARCH_QUERIES],
        "step_key": [{"args": [k], **outcome(lambda k=k: steps.check_key(k))} for k in STEP_KEYS],
        "step_id": [{"args": a, "ok": steps.step_id(*a)} for a in STEP_IDS],
        "step_stdout": [{"args": a, **step_stdout_outcome(*a)} for a in STEP_STDOUTS],
        # the Worker parses a schedule's --in and --every as written (worker/src/rules/durations.ts)
        "duration": [{"args": [s], **outcome(lambda s=s: durations.parse(s))} for s in DURATIONS],
        # cronsim's due times; the Worker's croner gives the same (worker/test/vectors.test.ts)
        "cron": [{"args": list(a), **cron_outcome(*a)} for a in CRONS],
        "schedule": [{"args": [NOW, o], **schedule_outcome(o)} for o in SCHEDULES],
        "hook_url": [{"args": [u], **outcome(lambda u=u: hooks.valid_url(u))} for u in HOOK_URLS],
        "signature": [{"args": a, "ok": deliver.sign(*a)} for a in SIGNATURES],
        # approx("a" + chr(c) + "b") for every code point to U+FFFF: 6 where c joins a and b, 7 where it
        # separates them (white space), as runs [first, last, tokens]
        "approx_code_points": code_point_runs(lambda c: tokens.approx("a" + chr(c) + "b")),
        # strip(chr(c)) == "" for every code point to U+FFFF, as runs [first, last, stripped]
        "strip_code_points": code_point_runs(lambda c: text.strip(chr(c)) == ""),
    }


def render() -> str:
    doc = build()
    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        value = doc[key]
        end = "," if i < len(keys) - 1 else ""
        if isinstance(value, list):
            lines.append(f"  {json.dumps(key)}: [")
            lines += [f"    {json.dumps(v)}{',' if j < len(value) - 1 else ''}" for j, v in enumerate(value)]
            lines.append(f"  ]{end}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{end}")
    return "\n".join(lines + ["}"]) + "\n"


if __name__ == "__main__":
    with open(TARGET, "w", encoding="utf-8") as f:
        f.write(render())
    print(TARGET)
