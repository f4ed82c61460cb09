"""Scan rule 1's markers: what makes a folder no folder of documents whatever its name
(:mod:`kbgraph.retrieval._scan`). A Python environment (a folder holding ``pyvenv.cfg`` or
``conda-meta``) and another kbgraph index (``CURRENT`` beside ``gen-*`` folders, or
``gen-*`` folders holding index files when ``CURRENT`` was lost) are never entered. Judged
by the folder's listing and ``lstat`` only: the scan reads no file."""

from __future__ import annotations

import os
import re

# Files whose presence marks a folder as a Python environment, whatever the folder's name.
ENV_MARKERS = {
    "pyvenv.cfg": "a Python virtual environment",
    "conda-meta": "a conda environment",
}
_GENERATION = re.compile(r"gen-[0-9a-f]+-[0-9a-f]+")
_GENERATION_FILES = ("meta.json", "chunks.jsonl")
OTHER_INDEX = "another kbgraph index; an index is never indexed as documents"


def marked(entries: list[os.DirEntry[str]]) -> str | None:
    """Why a folder of these entries is not entered whatever its name (None: it is): it
    is a Python environment, or a kbgraph index."""
    marker = next((e.name for e in entries if e.name in ENV_MARKERS), None)
    if marker is not None:
        return f"{ENV_MARKERS[marker]} ({marker})"
    names = {e.name for e in entries}
    generations = [e for e in entries if _GENERATION.fullmatch(e.name)]
    if generations and "CURRENT" in names:
        return f"{OTHER_INDEX} (CURRENT, gen-*)"
    # An index that lost CURRENT is still one: its generations hold the index files
    # (checked by stat only: the scan reads no file).
    if any(_is_generation(e) for e in generations):
        return f"{OTHER_INDEX} (gen-* folders with index files; CURRENT is missing)"
    return None


def _is_generation(entry: os.DirEntry[str]) -> bool:
    try:
        if not entry.is_dir(follow_symlinks=False):
            return False
    except OSError:
        return False
    return any(os.path.lexists(os.path.join(entry.path, name)) for name in _GENERATION_FILES)


def marked_folder(path: str) -> str | None:
    """:func:`marked` of the folder at ``path`` (None when it cannot be listed)."""
    try:
        with os.scandir(path) as it:
            return marked(list(it))
    except OSError:
        return None


__all__ = ["ENV_MARKERS", "OTHER_INDEX", "marked", "marked_folder"]
