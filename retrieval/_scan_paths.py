"""The scan's rules applied to one changed path at a time, for a file watcher
(:mod:`kbgraph.retrieval._watch`): could the scan index it, or a file below it? Metadata
only, like the scan, and judged by the scan's own code (:mod:`kbgraph.retrieval._scan`)."""

from __future__ import annotations

import os
from pathlib import Path

from ._config import ScanConfig
from ._scan import _Scanner
from ._scan_marks import ENV_MARKERS


class PathRules:
    """The scan's rules applied to one path at a time, for a file watcher: is a changed path
    one the scan could index (or a folder it would enter)? Metadata only, like the scan."""

    def __init__(self, root: Path, config: ScanConfig, *, index_dir: Path | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self._scanner = _Scanner(self.root, config, index_dir)

    def relative(self, path: str | Path) -> str | None:
        """``path`` relative to the root (POSIX), or None when it lies outside it."""
        absolute = Path(os.path.abspath(path))
        if not absolute.is_relative_to(self.root):
            return None
        return absolute.relative_to(self.root).as_posix()

    def could_hold(self, path: str | Path) -> bool:
        """False when the scan never indexes ``path`` nor anything below it: it lies in a
        folder the scan does not enter (the index, an excluded or secret folder, a
        virtualenv), or its name is excluded or secret. A path that no longer exists is
        judged by its name (it may have been a file or a folder)."""
        rel = self.relative(path)
        if rel is None:
            return False
        if rel == ".":
            return True
        scanner, rules = self._scanner, self._scanner.rules
        parts = rel.split("/")
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            absolute = os.path.join(self.root, folder)
            if depth == len(parts) and not os.path.isdir(absolute):
                return not (rules.exclude.fullmatch(rel) or rules.secret.fullmatch(rel))
            if scanner._refused_dir(folder) is not None:
                return False  # any kbgraph index, an excluded or secret folder
            if any(os.path.exists(os.path.join(absolute, m)) for m in ENV_MARKERS):
                return False
        return True

    def includes(self, rel: str) -> bool:
        """Whether a file of that relative path matches an include pattern."""
        return bool(self._scanner.rules.include.fullmatch(rel))


__all__ = ["PathRules"]
