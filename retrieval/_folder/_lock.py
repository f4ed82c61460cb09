"""Cross-process locks on files in the index folder (``flock`` on POSIX, ``portalocker``'s
LockFileEx on Windows). Readers share ``.lock``; a writer takes it exclusively only for the
instant it swaps generations, and holds ``.write.lock`` for its whole run so that a second
writer waits instead of building a competing generation.

Why ``fcntl`` itself on POSIX: ``portalocker`` calls the same ``flock`` there (so locks
taken by either interlock), but importing it imports ``importlib.metadata`` (for its
version), ~0.03 CPU-s of every cold ``kbgraph search`` (issue 44)."""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

from kbgraph.errors import IndexCorruptError, IndexLockedError, IndexNotFoundError

LockMode = Literal["shared", "exclusive"]
_POLL_S = 0.05
_READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class _Flock:
    """The two calls this module needs, on ``fcntl.flock`` (POSIX)."""

    def __init__(self) -> None:
        import fcntl

        self._fcntl = fcntl

    def lock(self, handle: IO[bytes], mode: LockMode) -> bool:
        """Try once; False when another process holds a conflicting lock."""
        f = self._fcntl
        try:
            f.flock(handle.fileno(), (f.LOCK_SH if mode == "shared" else f.LOCK_EX) | f.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def unlock(self, handle: IO[bytes]) -> None:
        self._fcntl.flock(handle.fileno(), self._fcntl.LOCK_UN)


class _Portalocker:
    """The same two calls on Windows, through ``portalocker`` (LockFileEx)."""

    def __init__(self) -> None:
        import portalocker

        self._p = portalocker

    def lock(self, handle: IO[bytes], mode: LockMode) -> bool:
        p = self._p
        try:
            p.lock(handle, (p.LOCK_SH if mode == "shared" else p.LOCK_EX) | p.LOCK_NB)
        except p.exceptions.LockException:
            return False
        return True

    def unlock(self, handle: IO[bytes]) -> None:
        self._p.unlock(handle)


_LOCKS: _Flock | _Portalocker = _Portalocker() if os.name == "nt" else _Flock()


@contextmanager
def file_lock(path: Path, mode: LockMode, timeout: float, purpose: str) -> Iterator[None]:
    """Hold ``path`` locked in ``mode``; raise IndexLockedError after ``timeout`` seconds.
    A lock won on a file that was meanwhile unlinked (``kbgraph delete`` removed the index
    while this process waited) locks nothing: the file is opened afresh and locked again,
    and when its folder is gone, ``IndexNotFoundError`` says so.

    A shared lock needs no write access: the file is opened read-only (``flock`` does not
    care), and in an index folder nobody can write (a read-only mount, a snapshot, another
    user's shared folder) there is no writer to exclude, so readers go on unlocked."""
    deadline = time.monotonic() + timeout
    while True:
        handle = _open_lock_file(path, mode, purpose)
        if handle is None:
            yield
            return
        try:
            _acquire(handle, mode, deadline, timeout, path, purpose)
            if _same_file(handle, path):
                break
            _LOCKS.unlock(handle)
        except BaseException:
            handle.close()
            raise
        handle.close()
    try:
        yield
    finally:
        _LOCKS.unlock(handle)
        handle.close()


def _open_lock_file(path: Path, mode: LockMode, purpose: str) -> IO[bytes] | None:
    """The lock file, opened for locking; None for a reader of a folder it cannot write
    (no writer can publish there either)."""
    try:
        if mode == "shared":
            try:
                return _as_file(os.open(path, os.O_RDONLY | _NOFOLLOW), path, "rb")
            except FileNotFoundError:
                pass  # never locked yet: create it below, if the folder lets us
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
    except FileNotFoundError:
        raise IndexNotFoundError(
            f"{purpose}: the index folder {path.parent} no longer exists (deleted by another "
            "process); run the command again"
        ) from None
    except OSError as exc:
        if mode == "shared" and exc.errno in _READ_ONLY:
            return None
        if exc.errno in (errno.EISDIR, errno.ELOOP):
            raise _not_a_lock_file(path) from None
        raise
    return _as_file(fd, path, "r+b")


def _as_file(fd: int, path: Path, how: str) -> IO[bytes]:
    """The lock file as a file object, once it is known to be a regular file (a folder
    or a link in its place is damage that ``kbgraph index`` repairs)."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_a_lock_file(path)
    return os.fdopen(fd, how)


def _not_a_lock_file(path: Path) -> IndexCorruptError:
    return IndexCorruptError(
        f"{path} is not a lock file (a folder or a link took its place); run `kbgraph index` "
        "to repair it"
    )


def _acquire(
    handle: IO[bytes], mode: LockMode, deadline: float, timeout: float, path: Path, purpose: str
) -> None:
    while not _LOCKS.lock(handle, mode):
        if time.monotonic() >= deadline:
            raise IndexLockedError(
                f"{purpose}: {path.parent} is locked by another kbgraph process and "
                f"stayed locked for {timeout:g}s; "
                "wait for it to finish or raise the lock timeout (--lock-timeout)"
            )
        time.sleep(_POLL_S)


def _same_file(handle: IO[bytes], path: Path) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
