"""One exclusive lock per object: flock on a sidecar file, held for the whole run.

Waiting polls with time.sleep (no timed waits on threading primitives, which can hang under faketime)
and counts the time slept, so a frozen clock cannot make it wait forever. After acquiring, the lock
checks that its file is still the one at the path: an object deleted (and its lock file unlinked by
the holder) while others waited is retried on the new file.
"""

import errno
import fcntl
import os

from ..errors import DurableError
from . import paths as _paths


class ObjectLock:
    def __init__(self, path: str, timeout: float, what: str):
        self.path = path
        self.timeout = timeout
        self.what = what
        self.fd: int | None = None
        self.ino: tuple[int, int] | None = None  # (st_dev, st_ino) of the lock file we hold
        self.unlinked = False

    def acquire_kept(self, fd: int, key) -> bool:
        """Take the lock through FD, a descriptor a former run left open on the lock file KEY (dev, ino),
        without waiting; True when taken and the file at the path is still that one. Else FD is closed and
        the caller takes the lock as usual (acquire)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # busy (or an error): the usual way waits, and reports
            return False
        try:
            st = os.stat(self.path, follow_symlinks=False)
            same = (st.st_dev, st.st_ino) == key
        except OSError:
            same = False
        if not same:
            os.close(fd)  # the object was deleted (its lock file unlinked) since: lock the file at the path
            return False
        self.fd = fd
        self.ino = key
        return True

    def acquire(self, *, create: bool) -> bool:
        """Take the lock. False when the lock file is absent and CREATE is false; exit 6 after the timeout."""
        waited = 0.0
        delay = 0.002
        while True:
            fd, writable = _open(self.path, create)
            if fd is None:
                return False
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as e:
                        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                            raise
                    if waited >= self.timeout:
                        raise DurableError(
                            f"{self.what} is busy: another durable process holds its lock; "
                            f"retry, or wait longer with --lock-timeout",
                            "busy",
                        )
                    step = min(delay, self.timeout - waited)
                    _sleep(step)
                    waited += step
                    delay = min(delay * 2, 0.02)
                try:
                    st = os.stat(self.path, follow_symlinks=False)
                    held = os.fstat(fd)
                    same = st.st_ino == held.st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    self.fd = fd
                    self.ino = (held.st_dev, held.st_ino)
                    if create and writable:
                        os.fchmod(fd, _paths.FILE_MODE)
                    return True
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the file was replaced while we waited: lock the new one

    def unlink(self) -> None:
        """Remove the lock file; only ever called while holding it."""
        if self.fd is not None:
            self.unlinked = True
            _paths.unlink_quiet(self.path)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def release_kept(self):
        """Unlock, keeping the descriptor open for the next run (acquire_kept): (fd, key), or None when the
        lock file was unlinked in this run (then it is closed as usual)."""
        fd = self.fd
        if fd is None:
            return None
        if self.unlinked or self.ino is None:
            self.release()
            return None
        self.fd = None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            os.close(fd)
            return None
        return fd, self.ino


def _open(path: str, create: bool):
    """(fd, writable) for the lock file; (None, False) when absent and not CREATE.

    A lock file we may read but not write (a read-only data directory) is opened read-only: flock
    works on any descriptor, so readers there still exclude each other and any writer.
    """
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        return os.open(path, flags, _paths.FILE_MODE), True
    except FileNotFoundError:
        return None, False
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EROFS, errno.EPERM):
            raise _paths.os_error(e, path) from e
        try:
            return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), False
        except FileNotFoundError:
            if create:
                raise _paths.os_error(e, path) from None  # it could not be made: the directory is read-only
            return None, False
        except OSError as e2:
            raise _paths.os_error(e2, path) from e2


def _sleep(seconds: float) -> None:
    from ..clock import sleep

    sleep(seconds)


def try_lock(path: str):
    """A non-blocking attempt (doctor, stale-lock checks): the fd when free, None when held or absent. As
    acquire, the lock counts only if the file at PATH is still the one locked: a holder that unlinked it
    meanwhile may have a successor holding a new lock file there (which the caller would then unlink)."""
    try:
        fd, _writable = _open(path, False)
    except DurableError:
        return None
    if fd is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held, st = os.fstat(fd), os.stat(path, follow_symlinks=False)
        if (held.st_dev, held.st_ino) != (st.st_dev, st.st_ino):
            raise FileNotFoundError(path)
    except OSError:
        os.close(fd)
        return None
    return fd
