"""The data directory: one module for every path, mode and symlink rule (dirs 0700, files 0600)."""

import errno
import os
import stat

from ..errors import storage

DIR_MODE = 0o700
FILE_MODE = 0o600
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")


class Paths:
    def __init__(self, home: str):
        self.home = os.path.abspath(os.path.expanduser(home))
        self.objects = os.path.join(self.home, "objects")
        self.index = os.path.join(self.home, "index.db")
        self.secret = os.path.join(self.home, "secret.key")

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

    def iter_object_ids(self):
        """Ids of every object file present (ignores anything else)."""
        try:
            shards = sorted(os.listdir(self.objects))
        except FileNotFoundError:
            return
        for shard in shards:
            directory = os.path.join(self.objects, shard)
            try:
                names = sorted(os.listdir(directory))
            except (NotADirectoryError, FileNotFoundError):
                continue
            for name in names:
                if name.endswith(".sqlite3"):
                    yield name[: -len(".sqlite3")]


def make_dir(path: str) -> None:
    """mkdir with mode 0700 whatever the umask; an existing symlink is refused."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            raise storage(f"{path} is a symlink; durable refuses symlinked paths in its data directory")
        return
    except OSError as e:
        raise os_error(e, path)
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


def create_file(path: str) -> None:
    """Create an empty file with mode 0600 (if absent), never following a symlink."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    except OSError as e:
        raise os_error(e, path)
    os.fchmod(fd, FILE_MODE)
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
