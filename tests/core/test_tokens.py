"""SPEC §6/§9: a tiktoken tokenizer is used offline only, and the library changes no process-wide state
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
    for tokenizer in ("tiktoken:durable_fake", "tiktoken:cl100k_base"):
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
