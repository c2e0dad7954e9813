"""Object ids: HMAC-SHA256 over (scope, owner, NAME) keyed with the installation secret.

Fields are length-prefixed, so the encoding is injective. File names carry only ids, never names.
"""

import errno
import os

from ..errors import storage
from . import paths as _paths

SECRET_BYTES = 32

try:  # the builtin sha256 avoids loading OpenSSL (~5-9 ms) on every call
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - Python >= 3.12 renamed it
    try:
        from _sha2 import sha256 as _sha256
    except ImportError:
        from hashlib import sha256 as _sha256

_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def hmac_sha256(key: bytes, message: bytes) -> str:
    """RFC 2104 HMAC-SHA256 as hex (checked against the stdlib hmac in the tests)."""
    if len(key) > 64:
        key = _sha256(key).digest()
    key = key.ljust(64, b"\0")
    inner = _sha256(key.translate(_IPAD) + message).digest()
    return _sha256(key.translate(_OPAD) + inner).hexdigest()


def encode_fields(*fields: str) -> bytes:
    out = bytearray()
    for field in fields:
        data = field.encode("utf-8")
        out += len(data).to_bytes(4, "big") + data
    return bytes(out)


def object_id(secret: bytes, scope: str, owner: str, name: str) -> str:
    return hmac_sha256(secret, encode_fields(scope, owner, name))


def id_scope(scope: str) -> str:
    """The scope an object's id hashes, from the scope it reports (an ephemeral `session` hashes as `user`)."""
    return "user" if scope == "session" else scope


def check_value(secret: bytes) -> str:
    """What index.db records of the secret, so another secret.key is noticed (never the secret itself)."""
    return hmac_sha256(secret, b"durable: installation secret check, v1")


def _read(path: str):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _paths.os_error(e, path) from e
        raise storage(f"cannot read the installation secret {path}: {e.strerror}; object names cannot be resolved without it") from e
    try:
        data = os.read(fd, SECRET_BYTES + 1)
    except OSError as e:  # e.g. a directory at its path
        raise storage(f"cannot read the installation secret {path}: {e.strerror}; object names cannot be resolved without it") from e
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise storage(
            f"the installation secret {path} is {len(data)} bytes, not {SECRET_BYTES}: it is damaged; "
            "restore it from a backup (object names cannot be resolved without it)"
        )
    return data


def load_secret(paths: "_paths.Paths", *, create: bool):
    """The installation secret; None when the home is empty and CREATE is false.

    A secret is only ever made in a data directory that holds neither objects/ nor index.db, written
    to a temporary 0600 file, fsync'd and published with link(), so no reader sees a partial file.
    """
    if not paths.home_exists():
        if not create:
            return None
        paths.make_home()
    secret = _read(paths.secret)
    if secret is not None:
        return secret
    if os.path.lexists(paths.objects) or os.path.lexists(paths.index):
        secret = _read(paths.secret)  # another process may have just published it
        if secret is not None:
            return secret
        raise storage(
            f"the installation secret {paths.secret} is missing but objects exist: their names can no longer "
            "be resolved; restore secret.key from a backup (durable never makes a new one over existing data)"
        )
    if not create:
        return None
    tmp = f"{paths.secret}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _paths.FILE_MODE)
        try:
            os.fchmod(fd, _paths.FILE_MODE)
            os.write(fd, os.urandom(SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, paths.secret)
        except FileExistsError:
            pass  # someone else published first; theirs wins
        _paths.fsync_dir(paths.home)
    except OSError as e:
        raise _paths.os_error(e, paths.secret) from e
    finally:
        _paths.unlink_quiet(tmp)
    return _read(paths.secret)
