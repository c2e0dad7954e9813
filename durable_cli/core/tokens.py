"""Token estimates, computed once at insert and stored with the row.

`approx` (the default) = max(ceil(chars/4), ceil(words*1.3)) + 4 per row, chars in code points and
words as len(text.split()). `tiktoken:<encoding>` uses that package when it and its encoding are
available offline; durable never reaches the network at run time.
"""

import math
import os

from ..errors import invalid

ROW_OVERHEAD = 4


def approx(text: str) -> int:
    return max(math.ceil(len(text) / 4), math.ceil(len(text.split()) * 1.3)) + ROW_OVERHEAD


def estimator(name: str):
    """The estimating function for config transcript.tokenizer; exit 2 when it cannot be used here."""
    if name == "approx":
        return approx
    if name.startswith("tiktoken:"):
        encoding_name = name.split(":", 1)[1]
        os.environ.setdefault("TIKTOKEN_OFFLINE", "1")
        try:
            import tiktoken
        except ImportError:
            raise invalid(f"tokenizer {name!r} needs the tiktoken package; install it or set transcript.tokenizer to approx")
        try:
            # tiktoken fetches encodings on first use; refuse to do that: only a cached encoding is used.
            _forbid_network()
            encoding = tiktoken.get_encoding(encoding_name)
        except Exception as e:  # noqa: BLE001 - any failure means "not available offline"
            raise invalid(
                f"tokenizer {name!r} is not available offline ({type(e).__name__}); cache its encoding "
                "(TIKTOKEN_CACHE_DIR) or set transcript.tokenizer to approx"
            )
        return lambda text: len(encoding.encode(text, disallowed_special=())) + ROW_OVERHEAD
    raise invalid(f"unknown tokenizer {name!r}: use approx or tiktoken:<encoding>")


def _forbid_network() -> None:
    import socket

    def refuse(*_a, **_k):
        raise OSError("durable does not use the network")

    socket.socket.connect = refuse  # type: ignore[method-assign]
