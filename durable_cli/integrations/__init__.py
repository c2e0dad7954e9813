"""Adapters that make durable the store of an agent framework (docs/reference/integrations.md §12), over the library only.

Every adapter maps the framework's own session or thread id to a durable NAME with `object_name`:
a valid NAME that does not begin with `~` is used as is; any other string (empty, padded, control
characters, longer than 200 code points, or beginning with `~`) becomes `~` followed by the first
32 hex digits of the SHA-256 of its UTF-8 bytes (surrogates kept as `surrogatepass` encodes them).
As-is names never begin with `~`, so two different ids never meet in one object. The original id is
kept on the object as `external_id`.
"""

import hashlib

from ..config import valid_name
from ..errors import DurableError, invalid

DIGEST_PREFIX = "~"
DIGEST_HEX = 32


def object_name(external_id: str) -> str:
    """The durable NAME of a framework's session or thread id (see the module docstring)."""
    if not isinstance(external_id, str):
        raise invalid(f"a session id must be a string, not {type(external_id).__name__}")
    if not external_id.startswith(DIGEST_PREFIX):
        try:
            return valid_name(external_id)
        except DurableError:
            pass
    digest = hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()
    return DIGEST_PREFIX + digest[:DIGEST_HEX]
