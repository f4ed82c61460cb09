"""Cross-process locks on files in the index folder (``portalocker``: flock on POSIX,
LockFileEx on Windows). Readers share ``.lock``; a writer takes it exclusively only for the
instant it swaps generations, and holds ``.write.lock`` for its whole run so that a second
writer waits instead of building a competing generation."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

import portalocker

from ..errors import IndexLockedError

LockMode = Literal["shared", "exclusive"]
_POLL_S = 0.05


@contextmanager
def file_lock(path: Path, mode: LockMode, timeout: float, purpose: str) -> Iterator[None]:
    """Hold ``path`` locked in ``mode``; raise IndexLockedError after ``timeout`` seconds."""
    flags = portalocker.LOCK_SH if mode == "shared" else portalocker.LOCK_EX
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    handle: IO[bytes] = os.fdopen(fd, "r+b")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                portalocker.lock(handle, flags | portalocker.LOCK_NB)
                break
            except portalocker.exceptions.LockException:
                if time.monotonic() >= deadline:
                    raise IndexLockedError(
                        f"{purpose}: {path.parent} is locked by another kbgraph process and "
                        f"stayed locked for {timeout:g}s; wait for it to finish or raise "
                        "the lock timeout (--lock-timeout)"
                    ) from None
                time.sleep(_POLL_S)
        try:
            yield
        finally:
            portalocker.unlock(handle)
    finally:
        handle.close()
