"""The data directory: one module for every path, mode and symlink rule (dirs 0700, files 0600).

The symlink rule (docs/reference/storage.md §3): durable reads and writes nothing through a symlink at any level it
manages -- the data directory, objects/, each shard, object files and their WAL/SHM/journal, lock
files, index.db (and its WAL/SHM) and secret.key. `check_object` and `check_index` are the checks,
a few lstat calls made on every open.
"""

import errno
import os
import stat

from ..errors import DurableError, invalid, storage

DIR_MODE = 0o700
FILE_MODE = 0o600
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
UNPUBLISHED = ".new"  # beside an object file: a new object written whole, before its rename into place


class Paths:
    def __init__(self, home: str):
        home = os.fspath(home)
        if "\0" in home:  # (only a library caller can pass one: no argv or environment holds a NUL)
            raise invalid(f"the data directory {home!r} is not a path: it holds a NUL byte")
        self.home = os.path.abspath(os.path.expanduser(home))
        self.objects = os.path.join(self.home, "objects")
        self.index = os.path.join(self.home, "index.db")
        self.secret = os.path.join(self.home, "secret.key")
        self.quarantine = os.path.join(self.home, "quarantine")  # corrupt objects doctor --repair moved aside

    def object_file(self, object_id: str) -> str:
        return os.path.join(self.objects, object_id[:2], object_id + ".sqlite3")

    def lock_file(self, object_id: str) -> str:
        return os.path.join(self.objects, object_id[:2], object_id + ".lock")

    def home_exists(self) -> bool:
        """True when the data directory exists; exit 7 when it is a symlink or not a directory."""
        try:
            st = os.lstat(self.home)
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(st.st_mode):
            raise storage(f"data directory {self.home} is a symlink; durable refuses it: use the real path with --home")
        if not stat.S_ISDIR(st.st_mode):
            raise storage(f"data directory {self.home} is not a directory; choose another with --home")
        return True

    def make_home(self) -> None:
        if not self.home_exists():
            parent = os.path.dirname(self.home)
            if parent and not os.path.isdir(parent):
                os.makedirs(parent, mode=DIR_MODE, exist_ok=True)
            make_dir(self.home)

    def make_shard(self, object_id: str) -> None:
        make_dir(self.objects)
        make_dir(os.path.dirname(self.object_file(object_id)))

    def check_object(self, object_id: str, *, sidecars: bool = True) -> bool:
        """Refuse (exit 7) a symlink anywhere on an object's paths; True when its file exists.

        The data directory, objects/ and the shard must be real directories (or not exist yet);
        the object file, its WAL/SHM/journal and its lock file must not be symlinks.
        """
        shard = os.path.dirname(self.object_file(object_id))
        for directory in (self.home, self.objects, shard):
            if not real_dir(directory):
                return False
        path = self.object_file(object_id)
        exists = refuse_symlink(path)
        if sidecars:
            for side in SIDE_SUFFIXES:
                refuse_symlink(path + side)
            refuse_symlink(self.lock_file(object_id))  # also opened O_NOFOLLOW
        return exists

    def check_index(self) -> bool:
        """Refuse (exit 7) a symlinked data directory, index.db or index.db-wal/-shm; True when index.db exists."""
        if not real_dir(self.home):
            return False
        exists = refuse_symlink(self.index)
        for side in SIDE_SUFFIXES:
            refuse_symlink(self.index + side)
        return exists

    def iter_object_ids(self, *, skip_symlinks: bool = False):
        """Ids of every object file present (ignores anything else).

        A symlinked objects/ or shard is refused (exit 7), or passed over with SKIP_SYMLINKS (doctor,
        which reports it): nothing is listed through a symlink.
        """
        try:
            if not real_dir(self.home) or not real_dir(self.objects):
                return
        except DurableError:
            if skip_symlinks:
                return
            raise
        shards = sorted(os.listdir(self.objects))
        for shard in shards:
            directory = os.path.join(self.objects, shard)
            try:
                if stat.S_ISLNK(os.lstat(directory).st_mode) and not skip_symlinks:
                    real_dir(directory)  # raises: a symlinked shard
            except FileNotFoundError:
                continue
            if os.path.islink(directory):
                continue
            try:
                names = sorted(os.listdir(directory))
            except (NotADirectoryError, FileNotFoundError):
                continue
            for name in names:
                if name.endswith(".sqlite3"):
                    yield name[: -len(".sqlite3")]


def real_dir(path: str) -> bool:
    """True for a real directory, False when absent; exit 7 for a symlink (or anything else in its place)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        return True
    if stat.S_ISLNK(st.st_mode):
        raise storage(f"{path} is a symlink; durable refuses symlinked paths in its data directory (nothing was read or written through it)")
    raise storage(f"{path} is not a directory; durable expected one there: run 'durable doctor'")


def make_dir(path: str) -> None:
    """mkdir with mode 0700 whatever the umask; an existing symlink is refused."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise storage(f"{path} is a symlink; durable refuses symlinked paths in its data directory") from None
        return
    except OSError as e:
        raise os_error(e, path) from e
    os.chmod(path, DIR_MODE)


def refuse_symlink(path: str) -> bool:
    """True when PATH exists (as a regular file); exit 7 when it is a symlink."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise storage(f"{path} is a symlink; durable refuses symlinked paths in its data directory")
    return True


def create_file(path: str, contents: bytes | bytearray = b"") -> None:
    """Create a file with mode 0600 (if absent), never following a symlink; CONTENTS written and fsync'd."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as e:
        raise os_error(e, path) from e
    try:
        os.fchmod(fd, FILE_MODE)
        if contents:
            view = memoryview(contents)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
    except OSError as e:
        raise os_error(e, path) from e
    finally:
        os.close(fd)


def unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def os_error(e: OSError, path: str):
    """A storage DurableError naming the path and the condition (disk full, read-only, permission)."""
    if e.errno == errno.ELOOP:
        return storage(f"{path} is a symlink; durable refuses symlinked paths in its data directory")
    if e.errno == errno.ENOSPC:
        return storage(f"disk full writing {path}; free some space and retry (nothing was changed)")
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return storage(f"cannot write {path}: {e.strerror}; check the data directory's permissions (nothing was changed)")
    if e.errno == errno.EFBIG:
        return storage(f"file size limit reached writing {path}; nothing was changed")
    return storage(f"cannot use {path}: {e.strerror}")
