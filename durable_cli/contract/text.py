"""Printable text and white space, as durable_cli/contract/unicode.json defines them (docs/reference/concepts.md §2).

One table for both runtimes: the Worker builds its checks from the same file
(worker/src/rules/text.ts), so a NAME, title, user or request id, a strip, the `approx` token
estimator's words and a quoted value in a message are the same on both backends whatever Unicode
version each runtime knows. The table was made from Python 3.11's `str.isprintable()`/`isspace()`;
on that Unicode version the native str methods are the table (tests/test_vectors.py checks every
code point) and are used as they are, faster; on another version the table is read and compiled.
"""

import re
import unicodedata

TABLE_VERSION = "14.0.0"  # unicode.json's "unicode_version" (a test checks)
NATIVE = unicodedata.unidata_version == TABLE_VERSION

_table = None


def table() -> dict:
    """unicode.json, read once: {"white_space": [code points], "printable": [lo, hi, lo, hi, ...]}."""
    global _table
    if _table is None:
        import json
        import os

        with open(os.path.join(os.path.dirname(__file__), "unicode.json"), encoding="utf-8") as f:
            t = json.load(f)
        ws = "".join(map(chr, t["white_space"]))
        pairs = t["printable"]
        klass = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in zip(pairs[::2], pairs[1::2]))
        _table = {
            "white_space": ws,
            "unprintable": re.compile(f"[^{klass}]"),
            "words": re.compile(f"[^{re.escape(ws)}]+"),
            "ranges": list(zip(pairs[::2], pairs[1::2])),
        }
    return _table


def white_space() -> str:
    """Every white-space character, for strip(chars)."""
    return table()["white_space"]


def by_table():
    """The table's own functions (printable, strip, rstrip, word_count, quote), whatever this Python knows."""
    t = table()
    ws, unprintable, words = t["white_space"], t["unprintable"], t["words"]

    def printable(text: str) -> bool:
        return unprintable.search(text) is None

    def quote(text: str) -> str:
        q = '"' if "'" in text and '"' not in text else "'"
        out = []
        for ch in text:
            if ch == "\\" or ch == q:
                out.append("\\" + ch)
            elif ch in "\n\r\t":
                out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
            elif unprintable.search(ch):
                c = ord(ch)
                out.append(f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}")
            else:
                out.append(ch)
        return q + "".join(out) + q

    return {
        "printable": printable,
        "strip": lambda text: text.strip(ws),
        "rstrip": lambda text: text.rstrip(ws),
        "word_count": lambda text: len(words.findall(text)),
        "quote": quote,
    }


if NATIVE:

    def printable(text: str) -> bool:
        """True when every character of TEXT is printable (an empty text is)."""
        return text.isprintable()

    def strip(text: str) -> str:
        return text.strip()

    def rstrip(text: str) -> str:
        return text.rstrip()

    def word_count(text: str) -> int:
        """len(text.split()): the approx token estimator's words."""
        return len(text.split())

    def quote(text: str) -> str:
        """Python's repr() of a str: how messages quote a value the user gave."""
        return repr(text)

else:  # pragma: no cover - another Python's Unicode database: the table decides
    _f = by_table()
    printable, strip, rstrip, word_count, quote = (_f[k] for k in ("printable", "strip", "rstrip", "word_count", "quote"))
