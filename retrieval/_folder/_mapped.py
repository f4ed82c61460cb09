"""The memory-mapped files of an open generation, checked before each use.

A generation's files never change once published, but a disk or a person can damage them
while a long-running reader (the MCP server, the inspector) has them mapped: a mapped file
shrunk under its map kills the process with SIGBUS at the first read past its new end, and
bytes changed in place are read as they are now (a BM25 column checked once, then
damaged, was served with a score of 2.3e38 while a fresh ``kbgraph search`` refused it).
So every search first compares each file's identity (inode, size, mtime and ctime: one
``stat`` each, ~1 µs) with the one seen at open: a file of another size is an
``IndexCorruptError`` naming it, before anything reads the map; a file of the same size
changed since makes the reader check again what it had checked once. The ctime counts
too: a write whose mtime was put back (``cp -p``, ``rsync -t``, ``touch -r``,
``os.utime``) still moves the ctime, which no one can set. A path
that no longer names the mapped file (a pruned generation, a file replaced by rename)
leaves the map as it was: nobody can shrink an inode that no path names.

The check before a search cannot close the window while a search reads: a file truncated
during a search killed the MCP server with SIGBUS all the same (the matrix rerun of issue
42: 3 of 3 runs). So a generation of at most :data:`IN_MEMORY_MAX_BYTES` (256 MiB;
``KBGRAPH_IN_MEMORY_MAX_MB``) is read into memory rather than mapped: a file shrunk or
rewritten later cannot reach what the reader holds. Each file is read once, by its loader,
which hands the bytes it keeps to :class:`MappedFiles` for their digest; a file changed
in place since (its times moved) is an ``IndexCorruptError`` when its
bytes differ, as a fresh ``kbgraph search`` would refuse it — a time that moved alone (a
hard link made by a backup tool) changes nothing. A larger generation stays mapped
(shared by every process that reads it, not copied) under a read lease on each file
(:mod:`._leases`): a process that truncates one or opens it for writing waits until no
search reads the maps, and the generation is then broken (an ``IndexCorruptError`` naming
the file, and opened again for the next search). Where no lease can be taken (another
user's index, a filesystem without leases: :attr:`MappedFiles.unprotected` says which) a
file truncated while a search reads it still ends the process with SIGBUS — do not let
other programs write into ``.kbgraph``."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from kbgraph.errors import IndexCorruptError

from .._fs import Read
from .._storage import REPAIR
from ._leases import FileLeases, take_leases

IN_MEMORY_ENV = "KBGRAPH_IN_MEMORY_MAX_MB"
IN_MEMORY_MAX_BYTES = 256 << 20


def in_memory_max() -> int:
    """The largest generation read into memory, in bytes (``KBGRAPH_IN_MEMORY_MAX_MB``;
    0 maps every generation)."""
    raw = os.environ.get(IN_MEMORY_ENV, "").strip()
    try:
        return int(float(raw) * (1 << 20)) if raw else IN_MEMORY_MAX_BYTES
    except ValueError:
        return IN_MEMORY_MAX_BYTES


@dataclass(slots=True)
class _Seen:
    path: Path
    ino: int
    dev: int
    size: int
    times: tuple[int, int]  # (st_mtime_ns, st_ctime_ns)
    mode: int
    digest: bytes = b""  # of the bytes read at open (a generation held in memory)
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = os.fspath(self.path)


class MappedFiles:
    """The files of one generation folder as they were when it was opened; ``in_memory``:
    the generation is small enough to be read rather than mapped; else ``leases`` guard
    the maps, or ``unprotected`` says why none could be taken."""

    def __init__(self, folder: Path) -> None:
        self._seen: list[_Seen] = []
        for directory, _, names in os.walk(folder):
            for name in sorted(names):
                path = Path(directory) / name
                st = os.stat(path, follow_symlinks=False)
                self._seen.append(
                    _Seen(path, st.st_ino, st.st_dev, st.st_size, _times(st), st.st_mode)
                )
        self.in_memory = sum(seen.size for seen in self._seen) <= in_memory_max()
        self.leases: FileLeases | None = None
        self.unprotected = ""
        if not self.in_memory:  # before any loader maps a file
            files = [seen.path for seen in self._seen if stat.S_ISREG(seen.mode)]
            self.leases, self.unprotected = take_leases(files)

    @property
    def read(self) -> Read | None:
        """How the loaders read a file of a generation held in memory (None: they map
        it): once, its checksum taken of the very bytes they keep."""
        return self._read if self.in_memory else None

    def _read(self, path: Path) -> bytes:
        data = path.read_bytes()
        seen = next((seen for seen in self._seen if seen.path == path), None)
        if seen is not None:
            if len(data) != seen.size:
                raise IndexCorruptError(
                    f"{path}: {len(data)} bytes read, {seen.size} a moment before: it "
                    f"changed while the index was opened; {REPAIR}"
                )
            seen.digest = _digest_of(data)
        return data

    def opened(self) -> None:
        """After the loaders: a file of a generation held in memory that none of them
        read (a stray file, say) is checksummed from the disk."""
        if self.in_memory:
            for seen in self._seen:
                if not seen.digest and stat.S_ISREG(seen.mode):
                    seen.digest = _digest(seen.path)

    def reading(self) -> AbstractContextManager[None]:
        """Around every use of the maps: no lease is let go while it runs; refused
        (``IndexCorruptError`` naming the file) once a writer waits on one."""
        return contextlib.nullcontext() if self.leases is None else self.leases.reading()

    @property
    def broken(self) -> bool:
        """A writer took a file of the generation from under its lease: open it again."""
        return self.leases is not None and self.leases.broken is not None

    def close(self) -> None:
        if self.leases is not None:
            self.leases.close()

    def changed(self) -> bool:
        """``IndexCorruptError`` when a file changed size since the open; True when one
        changed in place (its mtime or ctime; then it counts as seen as it is now)."""
        changed = False
        for seen in self._seen:
            try:
                # A str, not the Path: every search stats every file (a third of the cost).
                st = os.stat(seen.name, follow_symlinks=False)
            except OSError:
                continue  # pruned: the map still holds the old inode, whole
            if st.st_ino != seen.ino or st.st_dev != seen.dev:
                continue  # replaced by a rename: the mapped inode is not this one
            if st.st_size != seen.size:
                raise IndexCorruptError(
                    f"{seen.path}: {st.st_size} bytes now, {seen.size} when the index was "
                    f"opened: it was truncated or rewritten while in use; {REPAIR}"
                )
            if (st.st_mtime_ns, st.st_ctime_ns) != seen.times:
                if (
                    self.in_memory
                    and stat.S_ISREG(st.st_mode)
                    and _digest(seen.path) != seen.digest
                ):
                    raise IndexCorruptError(
                        f"{seen.path}: its bytes no longer match the checksum taken when "
                        f"the index was opened (changed while in use); {REPAIR}"
                    )
                seen.times = _times(st)
                changed = not self.in_memory  # held in memory: what was checked stands
        return changed


def _times(st: os.stat_result) -> tuple[int, int]:
    return st.st_mtime_ns, st.st_ctime_ns


def _digest(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "blake2b").digest()


def _digest_of(data: bytes) -> bytes:
    return hashlib.blake2b(data).digest()


__all__ = ["IN_MEMORY_ENV", "IN_MEMORY_MAX_BYTES", "MappedFiles", "in_memory_max"]
