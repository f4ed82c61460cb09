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
leaves the map as it was: nobody can shrink an inode that no path names."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kbgraph.errors import IndexCorruptError

from .._storage import REPAIR


@dataclass(slots=True)
class _Seen:
    path: Path
    ino: int
    dev: int
    size: int
    times: tuple[int, int]  # (st_mtime_ns, st_ctime_ns)


class MappedFiles:
    """The files of one generation folder as they were when it was opened."""

    def __init__(self, folder: Path) -> None:
        self._seen: list[_Seen] = []
        for directory, _, names in os.walk(folder):
            for name in sorted(names):
                path = Path(directory) / name
                st = os.stat(path, follow_symlinks=False)
                self._seen.append(_Seen(path, st.st_ino, st.st_dev, st.st_size, _times(st)))

    def changed(self) -> bool:
        """``IndexCorruptError`` when a file changed size since the open; True when one
        changed in place (its mtime or ctime; then it counts as seen as it is now)."""
        changed = False
        for seen in self._seen:
            try:
                st = os.stat(seen.path, follow_symlinks=False)
            except OSError:
                continue  # pruned: the map still holds the old inode, whole
            if (st.st_ino, st.st_dev) != (seen.ino, seen.dev):
                continue  # replaced by a rename: the mapped inode is not this one
            if st.st_size != seen.size:
                raise IndexCorruptError(
                    f"{seen.path}: {st.st_size} bytes now, {seen.size} when the index was "
                    f"opened: it was truncated or rewritten while in use; {REPAIR}"
                )
            if _times(st) != seen.times:
                seen.times = _times(st)
                changed = True
        return changed


def _times(st: os.stat_result) -> tuple[int, int]:
    return st.st_mtime_ns, st.st_ctime_ns


__all__ = ["MappedFiles"]
