"""Scan rule 7: a file with several names (hard links) is indexed only when every name is
a file the walk indexes (:mod:`kbgraph.retrieval._scan`). ``ln .env docs/notes.md``, or a
hard link to ``.git/config`` or to a file outside the folder, keeps a harmless name on an
inode whose other name the other rules leave out, and names are all a scan judges; so the
walk counts, per inode, the names it indexes against the inode's ``st_nlink``.
``trust_hard_links`` turns this off (a folder of files hard-linked from a cache)."""

from __future__ import annotations

from ._records import ScannedFile, SkippedFile

Inode = tuple[int, int]
TRUST_HINT = (
    "`kbgraph index --trust-hard-links` or KnowledgeBase(folder, scan={'trust_hard_links': "
    "True}) indexes it anyway"
)


def inode(f: ScannedFile) -> Inode:
    return (f.dev or 0, f.ino or 0)


def without_stray_hard_links(
    files: list[ScannedFile], names: dict[Inode, int]
) -> tuple[list[ScannedFile], list[SkippedFile]]:
    """``files`` (a whole walk's) less those of an inode with more names (``names``: its
    ``st_nlink``, for each inode with more than one) than the walk indexes, and a
    ``hard-link`` skip for each name left out (a link's name counts as its target's)."""
    if not names:
        return files, []
    seen: dict[Inode, set[str]] = {}
    for f in files:
        if inode(f) in names:
            seen.setdefault(inode(f), set()).add(f.target or f.rel)
    stray = {key for key, count in names.items() if len(seen[key]) < count}
    kept: list[ScannedFile] = []
    skipped: list[SkippedFile] = []
    for f in files:
        key = inode(f)
        if key not in stray:
            kept.append(f)
            continue
        detail = (
            f"the file has {names[key]} names, of which the scan indexes {len(seen[key])}: "
            f"another may be a secret, in .git or outside the folder; {TRUST_HINT}"
        )
        skipped.append(SkippedFile(f.rel, "hard-link", detail))
    return kept, skipped


__all__ = ["TRUST_HINT", "Inode", "inode", "without_stray_hard_links"]
