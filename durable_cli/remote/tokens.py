"""Signed tokens of remote mode (docs/reference/remote.md §13 "Tokens are signed, not listed"): JWT (RFC 7519) with HS256.

`durable remote token` issues one offline with the key the Worker holds as DURABLE_TOKEN_KEY; the Worker
verifies it with WebCrypto (worker/src/auth.ts). The standard library's hmac is all HS256 needs: no JWT
package is a dependency (measured with `python -X importtime` on the 2-core test machine under load:
`import jwt` (PyJWT 2.15) 207-281 ms, hmac + hashlib + base64 + json 5-15 ms).
"""

import os

MIN_KEY_BYTES = 32


def b64url(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def read_key(key_file=None) -> bytes:
    """The signing key: the UTF-8 text of KEY_FILE (or of DURABLE_TOKEN_KEY) less one trailing newline.
    Missing or shorter than 32 bytes: exit 2."""
    from ..errors import invalid

    if key_file is not None:
        try:
            with open(key_file, "rb") as f:
                raw = f.read()
        except (OSError, ValueError) as e:  # ValueError: a NUL in the path
            raise invalid(f"cannot read --key-file {key_file!r}: {getattr(e, 'strerror', None) or e}") from e
        where = f"--key-file {key_file}"
    else:
        text = os.environ.get("DURABLE_TOKEN_KEY")
        if text is None:
            raise invalid("no signing key: pass --key-file F or set DURABLE_TOKEN_KEY (the Worker's secret of that name; "
                          "'durable remote dev' prints its token_key_file)")
        raw = os.fsencode(text)
        where = "DURABLE_TOKEN_KEY"
    if raw.endswith(b"\r\n"):
        raw = raw[:-2]
    elif raw.endswith(b"\n"):
        raw = raw[:-1]
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid(f"the key in {where} is not UTF-8 text") from None
    if len(raw) < MIN_KEY_BYTES:
        raise invalid(f"the key in {where} is {len(raw)} bytes; a signing key has at least {MIN_KEY_BYTES} "
                      "(e.g. 'openssl rand -hex 32')")
    return raw


def issue(key: bytes, user: str, *, admin: bool = False, expires: int, now: int = None) -> str:
    """A token naming USER (an admin's when ADMIN), valid for EXPIRES seconds from NOW (s since the epoch)."""
    import hashlib
    import hmac
    import json
    import time

    iat = int(time.time()) if now is None else now
    header = b64url(b'{"alg":"HS256","typ":"JWT"}')
    claims = {"sub": user, "adm": bool(admin), "iat": iat, "exp": iat + expires, "jti": os.urandom(16).hex()}
    payload = b64url(json.dumps(claims, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    signing = f"{header}.{payload}".encode("ascii")
    return f"{header}.{payload}.{b64url(hmac.new(key, signing, hashlib.sha256).digest())}"


def claims(token: str) -> dict:
    """The claims of TOKEN as written (not verified: only the Worker holds the key it must be checked with)."""
    import base64
    import json

    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
