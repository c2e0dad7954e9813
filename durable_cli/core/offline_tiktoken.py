"""A stand-in for `tiktoken.get_encoding` that never reaches the network: an encoding this process has loaded,
or tiktoken's cached file checked against its hash, else exit 2 naming what is missing (durable makes no
network call at run time). Imported only when transcript.tokenizer names a tiktoken encoding."""

import os

from ..errors import invalid


class _NotCached(Exception):
    pass


# Private tiktoken API (registry.ENCODING_CONSTRUCTORS, a constructor's code and globals, and GPT-2's loader
# load.data_gym_to_mergeable_bpe_ranks with the read_file_cached it calls), kept for what the
# public `tiktoken.get_encoding` cannot promise, not for speed: on an encoding that is not cached (or whose
# cached file fails its hash) it downloads — measured: 1 network attempt for cl100k_base, where this makes
# none and says exit 2 (docs/reference/library.md §9: never a network call). Cached, the two cost the same in a fresh process
# (import, load of a 100,000-token file, one encode: ratio 1.02, CPU 0.995). `python bench/shims.py
# --only tiktoken`; docs/benchmarks.md, "Private-API shims". tests/core/test_tokens.py fails when tiktoken
# changes what this reads (test_the_tiktoken_internals_the_offline_loader_reads_are_still_there) or counts
# otherwise than get_encoding (test_the_offline_copy_counts_as_tiktokens_public_get_encoding). A change
# upstream can make an encoding exit 2 here, never give other counts, so tiktoken is not pinned.
def offline_encoding(name: str, encoding_name: str):
    """A tiktoken Encoding built only from what is already on this machine: one the process has
    loaded, or tiktoken's cached encoding file (checked against its hash). Nothing is downloaded and
    nothing process-wide is touched (no socket patching, no environment variable, no registry entry)."""
    try:
        import tiktoken
        import tiktoken.registry as registry
    except ImportError:
        raise invalid(f"tokenizer {name!r} needs the tiktoken package; install it or set transcript.tokenizer to approx") from None
    loaded = registry.ENCODINGS.get(encoding_name)
    if loaded is not None:
        return loaded
    try:
        if encoding_name not in registry.list_encoding_names():
            raise _NotCached(f"tiktoken knows no encoding {encoding_name!r}")
        constructors = registry.ENCODING_CONSTRUCTORS or {}  # None until tiktoken has found its plugins
        return tiktoken.Encoding(**_offline_copy(constructors[encoding_name], list(constructors.values()))())
    except Exception as e:  # any failure means "not available offline"
        why = str(e) if isinstance(e, _NotCached) else type(e).__name__
        raise invalid(
            f"tokenizer {name!r} is not available offline ({why}); cache its encoding "
            "(TIKTOKEN_CACHE_DIR) or set transcript.tokenizer to approx"
        ) from e


def _offline_copy(constructor, constructors):
    """The encoding's constructor, with its file loader replaced in a private copy of its globals
    (never in tiktoken's modules): the copy reads tiktoken's cache and raises where it would download.
    A constructor built on another of CONSTRUCTORS (o200k_harmony calls o200k_base()) gets that one's
    offline copy too."""
    import types

    names = constructor.__code__.co_names
    scope = dict(constructor.__globals__, load_tiktoken_bpe=_cached_bpe, data_gym_to_mergeable_bpe_ranks=_cached_data_gym())
    others = [c for c in constructors if c is not constructor]
    built_on = [n for n in names if any(scope.get(n) is c for c in others)]
    if "load_tiktoken_bpe" not in names and "data_gym_to_mergeable_bpe_ranks" not in names and not built_on:
        raise _NotCached("its constructor does not load an encoding file durable can read offline")
    for n in built_on:
        scope[n] = _offline_copy(scope[n], others)
    return types.FunctionType(constructor.__code__, scope, constructor.__name__, constructor.__defaults__, constructor.__closure__)


def _cached_file(blobpath: str, expected_hash=None) -> bytes:
    """The bytes tiktoken's read_file_cached would return for BLOBPATH, read only from the cache file tiktoken
    itself would have written (or a local path), checked against EXPECTED_HASH."""
    import hashlib

    if "://" in blobpath:
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
        if cache_dir is None:
            import tempfile

            cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
        if not cache_dir:
            raise _NotCached("tiktoken's cache is disabled")
        path = os.path.join(cache_dir, hashlib.sha1(blobpath.encode()).hexdigest())
    else:
        path = blobpath
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise _NotCached(f"its encoding file is not in tiktoken's cache {os.path.dirname(path)}") from None
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise _NotCached(f"the cached encoding file {path} does not match its hash")
    return data


def _cached_bpe(blobpath: str, expected_hash=None) -> dict:
    """tiktoken.load.load_tiktoken_bpe, reading only the cache file tiktoken itself would have written."""
    import base64

    ranks = {}
    for line in _cached_file(blobpath, expected_hash).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _cached_data_gym():
    """tiktoken.load.data_gym_to_mergeable_bpe_ranks (GPT-2's two files, vocab.bpe and encoder.json), copied
    with its file reader swapped for _cached_file: read from tiktoken's cache, never downloaded."""
    import types

    import tiktoken.load

    f = tiktoken.load.data_gym_to_mergeable_bpe_ranks
    return types.FunctionType(f.__code__, dict(f.__globals__, read_file_cached=_cached_file), f.__name__, f.__defaults__, f.__closure__)
