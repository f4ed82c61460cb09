"""Durable file-system primitives shared by the index writers (and, through
``kbgraph.retrieval``, by the recorded runs of the graphs)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is loaded by the index readers, not by every import of this
    import numpy as np

Read = Callable[[Path], bytes]
"""How an index reader holding a generation in memory reads a file: once, its bytes kept
(and checksummed) by :class:`~kbgraph.retrieval._folder._mapped.MappedFiles`."""


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


def load_npy(path: Path, read: Read | None = None) -> np.ndarray:
    """A ``.npy`` file, memory-mapped read-only, or (``read``) a read-only view of the
    bytes ``read`` returns: read once, not copied. ``ValueError`` for a file that is not
    a plain ``.npy`` array (objects are refused, as ``allow_pickle=False`` does)."""
    import numpy as np

    if read is None:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    data = read(path)
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    if dtype.hasobject:
        raise ValueError("an array of Python objects (not allowed without pickle)")
    count = 1
    for n in shape:
        count *= n
    array = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell())
    return array.reshape(shape, order="F" if fortran else "C")


__all__ = ["Read", "fsync_dir", "load_npy", "write_file_atomic"]
