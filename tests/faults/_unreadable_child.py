"""Child process of the unreadable-file test: a user who cannot read one of their own files
indexes the folder, fixes the file's permissions (which changes neither its size nor its
mtime), and indexes again.

    _unreadable_child.py FOLDER WARM_FOLDER

Root reads every file whatever its mode, so as root the child first does everything once
on WARM_FOLDER (so that every module it needs is imported while the interpreter's own
folders are still open to it), then drops to ``nobody``, who owns FOLDER. Prints one JSON
object: what each step saw."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from kbgraph.retrieval import KnowledgeBase

NOBODY = 65534


def run(folder: Path) -> dict[str, Any]:
    locked = folder / "locked.md"
    locked.chmod(0)
    out: dict[str, Any] = {"before": [locked.stat().st_size, locked.stat().st_mtime_ns]}
    with KnowledgeBase(folder, embedding=None) as kb:
        first = kb.index()
        out["first_skipped"] = {s.path: s.reason for s in first.skipped}
        out["first_files"] = first.stats.file_count
        out["fresh_while_locked"] = kb.is_fresh()
        locked.chmod(0o644)
        out["after"] = [locked.stat().st_size, locked.stat().st_mtime_ns]
        out["fresh_after_chmod"] = kb.is_fresh()
        second = kb.index()
        out["second_skipped"] = {s.path: s.reason for s in second.skipped}
        out["second_files"] = second.stats.file_count
        out["found"] = [r.chunk.source for r in kb.search("quokka", mode="bm25")]
    return out


def main(folder: Path, warm: Path) -> None:
    if os.geteuid() == 0:
        run(warm)
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    print(json.dumps(run(folder)))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
