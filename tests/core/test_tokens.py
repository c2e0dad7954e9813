"""docs/reference/transcript.md §6/§9: a tiktoken tokenizer is used offline only, and the library changes no process-wide state
(an application embedding Store keeps its sockets and its environment)."""

import base64
import hashlib
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.both_backends

pytest.importorskip("tiktoken")

URL = "https://example.invalid/encodings/durable_fake.tiktoken"

# A tiktoken plugin (tiktoken_ext is a namespace package) whose encoding file would be downloaded from URL.
PLUGIN = f"""
from tiktoken.load import load_tiktoken_bpe

def durable_fake():
    return {{"name": "durable_fake", "pat_str": r"\\S+|\\s+",
             "mergeable_ranks": load_tiktoken_bpe({URL!r}), "special_tokens": {{}}}}

ENCODING_CONSTRUCTORS = {{"durable_fake": durable_fake}}
"""

# An application embedding the library: it records every network attempt with an audit hook (test-only).
APP = """
import json, os, socket, sys
attempts = []
sys.addaudithook(lambda event, args: attempts.append(event) if event in ("socket.connect", "socket.getaddrinfo") else None)
connect, env = socket.socket.connect, dict(os.environ)
from durable_cli import Store, DurableError
store = Store(user="app")
try:
    with store.open("t", create=True) as session:
        row = session.append("hello hello world", role="user")
    result = {"tokens": row["tokens"]}
except DurableError as e:
    result = {"error": e.message, "exit_status": e.exit_status}
result.update(connect_kept=socket.socket.connect is connect, env_kept=dict(os.environ) == env, network=attempts)
print(json.dumps(result))
"""


def _app(tmp_path, cache_dir, tokenizer):
    plugins = tmp_path / "plugins"
    (plugins / "tiktoken_ext").mkdir(parents=True, exist_ok=True)
    (plugins / "tiktoken_ext" / "durable_fake.py").write_text(PLUGIN)
    (tmp_path / "config.toml").write_text(f'[transcript]\ntokenizer = "{tokenizer}"\n')
    env = dict(os.environ, PYTHONPATH=str(plugins), TIKTOKEN_CACHE_DIR=str(cache_dir), DURABLE_CONFIG=str(tmp_path / "config.toml"))
    env.pop("DATA_GYM_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _cache_fake_encoding(cache_dir):
    """Every single byte, plus the merges 'he', 'll', 'hell', 'hello', in tiktoken's cache format."""
    tokens = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello"]
    cache_dir.mkdir()
    lines = b"".join(base64.b64encode(t) + b" " + str(rank).encode() + b"\n" for rank, t in enumerate(tokens))
    (cache_dir / hashlib.sha1(URL.encode()).hexdigest()).write_bytes(lines)


def test_a_cached_encoding_is_used_without_touching_the_process(tmp_path):
    _cache_fake_encoding(tmp_path / "cache")
    result = _app(tmp_path, tmp_path / "cache", "tiktoken:durable_fake")
    # "hello", " ", "hello", " ", "w","o","r","l","d" = 9 tokens, + 4 per row
    assert result == {"tokens": 13, "connect_kept": True, "env_kept": True, "network": []}


def test_an_encoding_not_cached_is_exit_2_without_network_or_side_effects(tmp_path):
    (tmp_path / "empty").mkdir()
    for tokenizer in ("tiktoken:durable_fake", "tiktoken:cl100k_base", "tiktoken:o200k_harmony"):
        result = _app(tmp_path, tmp_path / "empty", tokenizer)
        assert result["exit_status"] == 2 and "not available offline" in result["error"], result
        assert (result["connect_kept"], result["env_kept"], result["network"]) == (True, True, []), result
    assert os.listdir(tmp_path / "empty") == []  # nothing was fetched into the cache either


def test_a_cached_file_that_does_not_match_its_hash_is_not_used(tmp_path):
    import tiktoken.registry

    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    assert "cl100k_base" in tiktoken.registry.list_encoding_names()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"aGk= 0\n")
    result = _app(tmp_path, cache, "tiktoken:cl100k_base")
    assert result["exit_status"] == 2 and "does not match its hash" in result["error"], result
    assert result["network"] == [] and (cache / hashlib.sha1(url.encode()).hexdigest()).exists()


# -- issue 24: the private tiktoken API the offline loader (core/offline_tiktoken.py) relies on --------------------------

def test_the_tiktoken_internals_the_offline_loader_reads_are_still_there():
    """offline_encoding copies an encoding's constructor with its file loader swapped: it needs the registry's
    two tables, constructors that call `load_tiktoken_bpe` (or the GPT-2 loader) by those names, that loader's
    signature, and Encoding's keyword arguments. A tiktoken that changes any of them fails here."""
    import inspect

    import tiktoken
    import tiktoken.load
    import tiktoken.registry as registry

    assert isinstance(registry.ENCODINGS, dict)
    assert "cl100k_base" in registry.list_encoding_names()
    assert isinstance(registry.ENCODING_CONSTRUCTORS, dict) and "cl100k_base" in registry.ENCODING_CONSTRUCTORS
    for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base"):
        code = registry.ENCODING_CONSTRUCTORS[name].__code__
        assert "load_tiktoken_bpe" in code.co_names, name
    assert "data_gym_to_mergeable_bpe_ranks" in registry.ENCODING_CONSTRUCTORS["gpt2"].__code__.co_names
    assert "o200k_base" in registry.ENCODING_CONSTRUCTORS["o200k_harmony"].__code__.co_names  # built on it
    assert list(inspect.signature(tiktoken.load.load_tiktoken_bpe).parameters)[:2] == ["tiktoken_bpe_file", "expected_hash"]
    # GPT-2's loader: copied with the reader it calls by that name swapped (core/offline_tiktoken._cached_data_gym)
    assert "read_file_cached" in tiktoken.load.data_gym_to_mergeable_bpe_ranks.__code__.co_names
    assert list(inspect.signature(tiktoken.load.read_file_cached).parameters)[:2] == ["blobpath", "expected_hash"]
    assert {"name", "pat_str", "mergeable_ranks", "special_tokens"} <= set(inspect.signature(tiktoken.Encoding).parameters)


# The same text counted by durable's offline copy and by tiktoken's public get_encoding, in one process that
# records network attempts: hostile inputs (lone surrogates, controls, special-token text, long runs).
COMPARE = r"""
import json, sys
attempts = []
sys.addaudithook(lambda event, args: attempts.append(event) if event in ("socket.connect", "socket.getaddrinfo") else None)
import tiktoken, tiktoken.load
from durable_cli.core.offline_tiktoken import offline_encoding, _cached_bpe
TEXTS = ["", "hello hello world", "\ud800", "a\udfffb", "\ud83d\ude00", "\U0001f600 caf\u00e9 \u6771\u4eac",
         "\x00\x01\x1f\x7f\u0085\u2028\u2029\ufeff", "<|endoftext|> hello <|endoftext|>", " " * 5000 + "x",
         "hello" * 2000, "\n\r\n\t" * 100, "".join(chr(c) for c in range(0x20, 0x3000, 7))]
url, counts = sys.argv[1], {}
for name in ("durable_fake", "durable_fake_plus"):
    shim = offline_encoding(f"tiktoken:{name}", name)
    public = tiktoken.get_encoding(name)
    counts[name] = [[len(e.encode(t, disallowed_special=())) for t in TEXTS] for e in (shim, public)]
    counts[name + " allowed"] = [[len(e.encode(t, allowed_special="all")) for t in TEXTS] for e in (shim, public)]
print(json.dumps({
    "counts": counts,
    "same_ranks": _cached_bpe(url) == tiktoken.load.load_tiktoken_bpe(url),
    "network": attempts,
}))
"""


PLUS = """
def durable_fake_plus():
    base = durable_fake()
    return {**base, "name": "durable_fake_plus", "special_tokens": {"<|endoftext|>": 1000}}

ENCODING_CONSTRUCTORS["durable_fake_plus"] = durable_fake_plus
"""


def test_the_offline_copy_counts_as_tiktokens_public_get_encoding(tmp_path):
    """Issue 24: kept over `tiktoken.get_encoding` (which downloads what is not cached; docs/reference/library.md §9 forbids
    it) only while both read the same cache file the same way and count alike, without network."""
    cache = tmp_path / "cache"
    _cache_fake_encoding(cache)
    plugins = tmp_path / "plugins"
    (plugins / "tiktoken_ext").mkdir(parents=True)
    # and one built on another constructor, as o200k_harmony is on o200k_base
    (plugins / "tiktoken_ext" / "durable_fake.py").write_text(PLUGIN + PLUS)
    env = dict(os.environ, PYTHONPATH=str(plugins), TIKTOKEN_CACHE_DIR=str(cache))
    env.pop("DATA_GYM_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", COMPARE, URL], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    for name, (shim, public) in result["counts"].items():
        assert shim == public, name
    assert result["same_ranks"] and result["network"] == [], result
    assert result["counts"]["durable_fake"][0][1] == 9  # "hello", " ", "hello", " ", "w", "o", "r", "l", "d"
    assert result["counts"]["durable_fake_plus allowed"][0][7] == 5  # "<|endoftext|>", " ", "hello", " ", "<|endoftext|>"


# GPT-2's encoding is two files in another format (vocab.bpe, encoder.json: "data gym"); a fake one, consistent
# as tiktoken checks it, cached where tiktoken would cache it.
GYM_URLS = ("https://example.invalid/gym/vocab.bpe", "https://example.invalid/gym/encoder.json")
GYM_PLUGIN = f"""
from tiktoken.load import data_gym_to_mergeable_bpe_ranks

def durable_gym():
    ranks = data_gym_to_mergeable_bpe_ranks(vocab_bpe_file={GYM_URLS[0]!r}, encoder_json_file={GYM_URLS[1]!r})
    return {{"name": "durable_gym", "pat_str": r"\\S+|\\s+", "mergeable_ranks": ranks, "special_tokens": {{"<|endoftext|>": len(ranks)}}}}

ENCODING_CONSTRUCTORS = {{"durable_gym": durable_gym}}
"""


def _cache_fake_gym(cache) -> None:
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    order = printable + [b for b in range(256) if b not in printable]
    gym = {b: chr(b) for b in printable}
    gym.update({b: chr(256 + n) for n, b in enumerate(b for b in range(256) if b not in printable)})
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (gym[32], "w"), ("o", "r")]
    ranks = {bytes([b]): i for i, b in enumerate(order)}
    decode = {v: k for k, v in gym.items()}
    for first, second in merges:
        ranks[bytes(decode[c] for c in first + second)] = len(ranks)
    encoder = {"".join(gym[b] for b in token): rank for token, rank in ranks.items()}
    cache.mkdir(parents=True, exist_ok=True)
    vocab = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)
    for url, text in zip(GYM_URLS, (vocab, json.dumps(encoder))):
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_text(text, encoding="utf-8")


def test_a_gpt2_style_encoding_is_read_offline_and_counts_as_get_encoding(tmp_path):
    """`tiktoken:gpt2` was always exit 2: its files are not a .tiktoken file. Now read from tiktoken's cache
    like the others (no network), counting as tiktoken's public get_encoding does; not cached, exit 2."""
    cache = tmp_path / "cache"
    _cache_fake_gym(cache)
    plugins = tmp_path / "plugins"
    (plugins / "tiktoken_ext").mkdir(parents=True)
    (plugins / "tiktoken_ext" / "durable_gym.py").write_text(GYM_PLUGIN)
    env = dict(os.environ, PYTHONPATH=str(plugins), TIKTOKEN_CACHE_DIR=str(cache))
    env.pop("DATA_GYM_CACHE_DIR", None)
    code = COMPARE.replace('("durable_fake", "durable_fake_plus")', '("durable_gym",)').replace(
        '"same_ranks": _cached_bpe(url) == tiktoken.load.load_tiktoken_bpe(url),', '"same_ranks": True,')
    proc = subprocess.run([sys.executable, "-c", code, URL], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    for name, (shim, public) in result["counts"].items():
        assert shim == public, name
    assert result["network"] == [], result
    assert result["counts"]["durable_gym"][0][1] == 8  # "hello", " ", "hello", " ", "w", "or", "l", "d"
    # the durable_gym tokenizer through the library, and without its files: exit 2, nothing fetched
    (tmp_path / "config.toml").write_text('[transcript]\ntokenizer = "tiktoken:durable_gym"\n')
    env.update(DURABLE_CONFIG=str(tmp_path / "config.toml"))
    ok = subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(ok.stdout)["tokens"] == 8 + 4, ok.stdout  # "hello hello world" + the row's 4
    for f in cache.iterdir():
        f.unlink()
    gone = json.loads(subprocess.run([sys.executable, "-c", APP], capture_output=True, text=True, env=env, timeout=60).stdout)
    assert gone["exit_status"] == 2 and "not available offline" in gone["error"] and gone["network"] == [], gone
