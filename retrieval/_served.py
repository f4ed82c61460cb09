"""What a server may read of an indexed file: the file the scan would index there now.

Servers (MCP ``read`` and resources, the inspector's source view, its ``langgraph dev``
mount) are given a path the index holds; between the index run and the read anything may
have taken its place: a link to ``.git/config``, ``.env`` or ``.kbgraph/HISTORY``, a
folder, a FIFO. So the path is judged again by the scan's own rules
(:func:`~kbgraph.retrieval._scan.scan_one`: a link's target inside the folder, not in a
folder the walk does not enter, not excluded or secret; a regular file within
``max_file_bytes``) and read as the indexer reads it (:func:`~kbgraph.retrieval._loaders.
read_scanned`: one folder at a time without following a link, the descriptor checked to be
the file just judged). One helper, so that every serving path applies the same rules."""

from __future__ import annotations

from pathlib import Path

from ._config import ScanConfig
from ._loaders import SkipFile, read_scanned
from ._records import SkippedFile
from ._scan import _Scanner


def read_served(root: Path, rel: str, config: ScanConfig, *, max_bytes: int) -> bytes:
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
    return read_scanned(scanned, max_bytes=max_bytes)


__all__ = ["read_served"]
