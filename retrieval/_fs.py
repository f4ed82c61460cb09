"""Durable file-system primitives shared by the index writers (and, through
``kbgraph.retrieval``, by the recorded runs of the graphs)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Persist a folder's entries (new or renamed files) across a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` all at once (a reader sees the old file or the new
    one, never part of one), durably; new files are private (``mode``: index files and
    recorded runs hold the text of private documents)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


__all__ = ["fsync_dir", "write_file_atomic"]
