"""What a server may read of an indexed file: the file the scan would index there now.

Servers (MCP ``read`` and resources, the inspector's source view, its ``langgraph dev``
mount) are given a path the index holds; between the index run and the read anything may
have taken its place: a link to ``.git/config``, ``.env`` or ``.kbgraph/HISTORY``, a
folder, a FIFO. So the path is judged again by the scan's own rules
(:func:`~kbgraph.retrieval._scan.scan_one`, the walk's own code: a link's target inside
the folder and a file the walk indexes itself, not in a folder it does not enter, not
excluded, secret or matching no include pattern; a regular file within
``max_file_bytes``; a file with several names only when the walk indexes every one, scan
rule 7) and read as the indexer reads it (:func:`~kbgraph.retrieval._loaders.
read_scanned`: one folder at a time without following a link, the descriptor checked to be
the file just judged). One helper, so that every serving path applies the same rules.

And it must be the file that was indexed, or an edit of it: a file whose bytes are not the
ones indexed (``indexed_sha256``) and that has other names too (a hard link: ``ln -f
docs/a.md docs/b.md`` keeps the name and brings another inode, whose names the scan may
all index) is refused. A file with one name that changed since is the user's own
edit, served as it is now."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ._config import ScanConfig
from ._loaders import SkipFile, read_scanned
from ._records import ScannedFile, SkippedFile
from ._scan import _Scanner


def read_served(
    root: Path, rel: str, config: ScanConfig, *, max_bytes: int, indexed_sha256: str | None = None
) -> bytes:
    """The bytes of ``rel`` under ``root`` when the scan (``config``) would index it now,
    read as the indexer reads it; ``SkipFile`` saying why not (its ``skipped.reason``:
    ``secret``, ``excluded``, ``symlink-outside``, ``unreadable`` …)."""
    scanner = _Scanner(Path(root).resolve(), config, None)
    scanned = scanner.one(rel)
    if scanned is None:
        if scanner.skipped:
            raise SkipFile(scanner.skipped[-1])
        why = "it no longer exists or is not a file the scan indexes"
        raise SkipFile(SkippedFile(rel, "unreadable", why))
    names = _names(scanned)
    data = read_scanned(scanned, max_bytes=max_bytes)
    if names != 1 and indexed_sha256 and hashlib.sha256(data).hexdigest() != indexed_sha256:
        why = (
            "its bytes are not those indexed and the file has other names too (a hard link "
            "took the place of the indexed file?); run `kbgraph index` to serve it again"
        )
        raise SkipFile(SkippedFile(rel, "unreadable", why))
    return data


def _names(scanned: ScannedFile) -> int:
    """How many names the file the scan judged has (0: not the inode the scan saw there).
    For a link that is its target, as in scan rule 7: a symbolic link is no name of the
    inode, and its own inode is never the one the scan saw (a link to a file the user
    edited since would be refused as a hard link)."""
    path = scanned.path
    if scanned.root is not None and scanned.target is not None:
        path = scanned.root / scanned.target
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 0
    return st.st_nlink if scanned.ino is None or st.st_ino == scanned.ino else 0


__all__ = ["read_served"]
