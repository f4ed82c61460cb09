"""Reading the bytes of a scanned file, and nothing else.

Between the scan (metadata only) and the read, anything may happen to a path: a file
swapped for a symbolic link to ``/etc/passwd``, a folder on the way swapped for a link out
of the folder, a FIFO that no process writes, a file grown to a gigabyte. So a file is read
through one descriptor that is checked before a byte is read:

- opened below the scanned root one component at a time, each with ``O_NOFOLLOW`` (a
  link met anywhere on the way fails the open instead of being followed); a link the scan
  accepted (one to a file inside the folder) is read at its target's path, the same way;
- opened non-blocking, then checked on the descriptor to be a regular file (a FIFO never
  blocks the run) and to be the inode the scan saw (``st_dev``/``st_ino``);
- read in pieces up to ``max_bytes`` (a file that grew past the limit stops being read
  there and is ``too-large``), in a helper thread given ``timeout`` seconds (a hung
  network mount).

Anything else skips the file (``unreadable`` is tried again on the next run, whose scan
judges the path as it is then).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path
from typing import IO

from ..records import ScannedFile
from ._base import skip

READ_TIMEOUT_S = 30.0
_PIECE = 1 << 20
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no FIFOs to open
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_WALKS = os.open in os.supports_dir_fd and bool(_NOFOLLOW)
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, getattr(errno, "EMLINK", errno.ELOOP)}


def read_scanned(file: ScannedFile, *, max_bytes: int, timeout: float = READ_TIMEOUT_S) -> bytes:
    """The bytes of the file the scan found at ``file.rel`` (see the module docstring);
    ``SkipFile`` when it cannot be read as that file."""
    fd = _open(file)
    try:
        _check_descriptor(fd, file, max_bytes)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    data = read_with_timeout(fd, timeout, limit=max_bytes + 1)  # takes the descriptor over
    if isinstance(data, OSError):
        raise skip(file.rel, "unreadable", data.strerror or str(data)) from data
    if data is None:
        raise skip(file.rel, "unreadable", f"reading it took longer than {timeout:g}s")
    if len(data) > max_bytes:
        raise skip(
            file.rel,
            "too-large",
            f"it grew past max_file_bytes {max_bytes} after the scan; not read further",
        )
    return data


def _open(file: ScannedFile) -> int:
    try:
        if file.root is not None and _WALKS:
            return open_below(file.root, file.target or file.rel)
        return os.open(file.path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | _NOFOLLOW)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise skip(
                file.rel,
                "unreadable",
                "a symbolic link took the place of the file or of a folder on its path "
                "after the scan; not followed",
            ) from None
        raise skip(file.rel, "unreadable", exc.strerror or str(exc)) from exc


def open_below(root: Path, rel: str) -> int:
    """A read-only, non-blocking descriptor of ``root/rel``, every component below
    ``root`` opened without following a link (``OSError`` ELOOP/ENOTDIR when one is)."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EINVAL, f"not a normalised relative path: {rel!r}")
    folder = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
            os.close(folder)
            folder = inner
        flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
        return os.open(parts[-1], flags, dir_fd=folder)
    finally:
        os.close(folder)


def _check_descriptor(fd: int, file: ScannedFile, max_bytes: int) -> None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise skip(file.rel, "unreadable", "not a regular file (pipe, socket or device)")
    if file.ino is not None and (st.st_dev, st.st_ino) != (file.dev, file.ino):
        raise skip(
            file.rel,
            "unreadable",
            "another file took its place after the scan (read on the next run)",
        )
    if st.st_size > max_bytes:
        raise skip(
            file.rel,
            "too-large",
            f"{st.st_size} bytes > max_file_bytes {max_bytes} (it grew after the scan)",
        )


def read_with_timeout(fd: int, timeout: float, *, limit: int = -1) -> bytes | OSError | None:
    """Read ``fd`` to its end (or ``limit`` bytes) in a helper thread, which closes it;
    None when the read did not finish within ``timeout`` seconds (the thread is left to
    finish or hang alone: a read blocked in the kernel cannot be cancelled)."""
    result: list[bytes | OSError] = []

    def work() -> None:
        try:
            with os.fdopen(fd, "rb", buffering=0) as fh:
                result.append(_read_upto(fh, limit))
        except OSError as exc:
            result.append(exc)

    reader = threading.Thread(target=work, name="kbgraph-read", daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else None


def open_regular_file(path: Path) -> IO[bytes]:
    """``path`` open for reading when it is a regular file, else ``OSError`` saying why:
    opened non-blocking and without following a link, so a FIFO nobody writes (in a
    folder of records anyone may drop files in) never blocks."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | _NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file (pipe, socket or device)")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` when it is a regular file (:func:`open_regular_file`) of at
    most ``limit`` bytes, else ``OSError`` saying why."""
    with open_regular_file(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise OSError(errno.EFBIG, f"{path} is {size} bytes, over {limit}")
        data = _read_upto(handle, limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{path} grew past {limit} bytes while being read")
    return data


def _read_upto(fh: IO[bytes], limit: int) -> bytes:
    """At most ``limit`` bytes (all when negative), read in pieces: a file that keeps
    growing is never taken whole into memory."""
    read = fh.read
    pieces: list[bytes] = []
    total = 0
    while limit < 0 or total < limit:
        want = _PIECE if limit < 0 else min(_PIECE, limit - total)
        piece = read(want)
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


__all__ = [
    "READ_TIMEOUT_S",
    "open_below",
    "open_regular_file",
    "read_regular_file",
    "read_scanned",
    "read_with_timeout",
]
