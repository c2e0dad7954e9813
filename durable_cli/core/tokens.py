"""Token estimates, computed once at insert and stored with the row.

`approx` (the default) = max(ceil(chars/4), ceil(words*1.3)) + 4 per row, chars in code points and
words as len(text.split()). `tiktoken:<encoding>` uses that package when it and its encoding are
available offline; durable never reaches the network at run time.
"""

import math

from ..contract.text import word_count
from ..errors import invalid

ROW_OVERHEAD = 4
MAX_TOKENS = 1_000_000_000  # one row's count at most: sums over any transcript stay far inside SQLite's 64 bits


def approx(text: str) -> int:
    return max(math.ceil(len(text) / 4), math.ceil(word_count(text) * 1.3)) + ROW_OVERHEAD


def estimator(name: str):
    """The estimating function for config transcript.tokenizer; exit 2 when it cannot be used here."""
    if name == "approx":
        return approx
    if name.startswith("tiktoken:"):
        from .offline_tiktoken import offline_encoding

        encoding = offline_encoding(name, name.split(":", 1)[1])
        return lambda text: len(encoding.encode(text, disallowed_special=())) + ROW_OVERHEAD
    raise invalid(f"unknown tokenizer {name!r}: use approx or tiktoken:<encoding>")
