"""Linux read leases on the files of a memory-mapped generation, so that no other process
truncates one while a search reads its maps (SIGBUS, which no Python code can catch).

While a process holds a read lease (``F_SETLEASE``, ``F_RDLCK``) on a file, the kernel
makes any process that opens it for writing or truncates it wait (up to
``/proc/sys/fs/lease-break-time``, 45 s) until the holder lets go. Here the holder lets go
only once no search of that generation is in flight: the generation is marked broken
first, so no new search starts on it; the search that finds it broken is an
``IndexCorruptError`` naming the file, and the reader opens the generation again before
the next one (a fresh open checks sizes and contents as ``kbgraph search`` does).

Why no signal: a lease break signals its holder (``SIGIO``, whose default action ends the
process), but Python runs signal handlers in the main thread only, between bytecodes; a
knowledge base opened in a worker thread cannot install one, and an asyncio server's main
thread sleeps in ``epoll`` until its next event. So the signal is switched off (no owner,
and ``SIGURG``, ignored by default, for the instant before that) and one daemon thread per
process polls the lease state (``F_GETLEASE``, ~1 µs a file) every :data:`POLL_SECONDS`
while any lease is held: a writer waits that long plus the searches in flight.

Limits (checked on Linux 6.18, ext4): a lease needs the file's owner (or ``CAP_LEASE``) and
a filesystem that grants them (not NFS, for one); where none is taken the generation stays
mapped unprotected (:class:`~._mapped.MappedFiles` says why). ``open(O_RDONLY | O_TRUNC)``
truncates without breaking a read lease (a kernel gap no common tool uses); the size check
before each search still sees it, but not during one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

from kbgraph.errors import IndexCorruptError

from .._storage import REPAIR

POLL_SECONDS = 0.05
"""How often the watcher asks whether a writer waits: the longest a writer is held up by
an idle reader."""

_LEASES = hasattr(fcntl, "F_SETLEASE")  # Linux only
_SETLEASE: int = getattr(fcntl, "F_SETLEASE", 1024)
_GETLEASE: int = getattr(fcntl, "F_GETLEASE", 1025)
_SETSIG: int | None = getattr(fcntl, "F_SETSIG", None)
_UNAVAILABLE = {errno.EINVAL, errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP}


class FileLeases:
    """Read leases on the files of one generation, and the searches that read it."""

    def __init__(self, fds: dict[int, Path]) -> None:
        self._fds = fds
        self._lock = threading.Lock()
        self._readers = 0
        self._closing = False
        self.broken: Path | None = None
        _watcher.add(self)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """One use of the maps: refused (``IndexCorruptError``) once a writer waits."""
        with self._lock:
            if self.broken is not None:
                raise _broken_error(self.broken)
            self._readers += 1
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1
                if self._done():
                    self._release()

    def poll(self) -> None:
        """Mark the generation broken when a writer waits on one of its files (or the
        kernel dropped a lease); let go once no search reads it."""
        with self._lock:
            if self.broken is None:
                self.broken = next((p for fd, p in self._fds.items() if _lost(fd)), None)
            if self._done():
                self._release()

    def close(self) -> None:
        """Let go once no use of the maps is in flight: a reader closed by another thread
        (a newer generation opened) may still be searched."""
        with self._lock:
            self._closing = True
            if self._done():
                self._release()

    def _done(self) -> bool:
        return (self._closing or self.broken is not None) and not self._readers

    def __del__(self) -> None:
        # Never closed (a reader dropped unclosed): the descriptors go, and their leases
        # with them. No lock here: a collection may run while the watcher holds its own.
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def renew_after_fork(self) -> None:
        """In a forked child: the inherited descriptors share the parent's leases, which
        the parent lets go by its own searches, so the child takes its own."""
        fds, self._fds = self._fds, {}
        self._lock = threading.Lock()
        self._readers = 0
        for fd, path in fds.items():
            before = os.fstat(fd)
            os.close(fd)  # the parent's lease stays: its own descriptor still holds it
            try:
                fresh = _lease(path)
            except OSError:
                self.broken = self.broken or path
                continue
            self._fds[fresh] = path
            if os.fstat(fresh).st_ino != before.st_ino:  # another file by that name now
                self.broken = self.broken or path

    def _release(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, _SETLEASE, fcntl.F_UNLCK)
            os.close(fd)
        self._fds = {}
        _watcher.discard(self)


def take_leases(paths: Sequence[Path]) -> tuple[FileLeases | None, str]:
    """Leases on every one of ``paths``, or None and why none could be taken. A file open
    for writing by another process is damage in the making: ``IndexCorruptError``."""
    if not _LEASES:
        return None, "this system has no file leases (Linux only)"
    fds: dict[int, Path] = {}
    try:
        for path in paths:
            fds[_lease(path)] = path
    except OSError as exc:
        for fd in fds:
            os.close(fd)
        if exc.errno == errno.EAGAIN:
            raise IndexCorruptError(
                f"{exc.filename}: open for writing by another process, but a published "
                "generation never changes; close that program, then search again (if it "
                f"changed the file, {REPAIR})"
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            return None, "this user does not own the index files (a lease needs the owner)"
        if exc.errno in _UNAVAILABLE:
            return None, f"the filesystem of {exc.filename} grants no file leases"
        raise
    return FileLeases(fds), ""


def _lease(path: Path) -> int:
    # O_NONBLOCK: a FIFO planted under a file's name must not hang the open.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if _SETSIG is not None:  # a break before F_SETOWN below sends SIGURG, not SIGIO
            fcntl.fcntl(fd, _SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, _SETLEASE, fcntl.F_RDLCK)
        fcntl.fcntl(fd, fcntl.F_SETOWN, 0)  # no owner: a break signals nobody
    except OSError as exc:
        os.close(fd)
        exc.filename = exc.filename or str(path)
        raise
    return fd


def _lost(fd: int) -> bool:
    """A writer waits (the lease is being broken) or the kernel dropped it."""
    try:
        return bool(fcntl.fcntl(fd, _GETLEASE) != fcntl.F_RDLCK)
    except OSError:
        return True


def _broken_error(path: Path) -> IndexCorruptError:
    return IndexCorruptError(
        f"{path}: another process opened it for writing or truncated it while this index "
        "was open (a published generation never changes); open the index again (a "
        f"long-running reader does so for its next search); if the file was damaged, {REPAIR}"
    )


class _Watcher:
    """The one thread per process that polls every held lease."""

    def __init__(self) -> None:
        self._leases: weakref.WeakSet[FileLeases] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, leases: FileLeases) -> None:
        with self._lock:
            self._leases.add(leases)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="kbgraph-leases", daemon=True
                )
                self._thread.start()

    def discard(self, leases: FileLeases) -> None:
        with self._lock:
            self._leases.discard(leases)

    def _run(self) -> None:
        stop = threading.Event()  # never set: an interruptible sleep
        while True:
            with self._lock:
                held = list(self._leases)
                if not held:
                    self._thread = None
                    return
            for leases in held:
                leases.poll()
            stop.wait(POLL_SECONDS)

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._thread = None
        held = list(self._leases)
        for leases in held:
            leases.renew_after_fork()
        if held:
            self.add(held[0])


_watcher = _Watcher()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_watcher.after_fork)


__all__ = ["POLL_SECONDS", "FileLeases", "take_leases"]
