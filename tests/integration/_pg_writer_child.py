"""A writer process for the two-writers test: rewrites the folder's files to its own
version (each file replaced atomically), then indexes the folder into PostgreSQL; RUNS
times. Two of them race on one knowledge base.

    python _pg_writer_child.py FOLDER URL VERSION RUNS
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kbgraph.retrieval import KnowledgeBase

FILES = 6


def content(i: int, version: int) -> str:
    lines = [f"File {i} version {version} line {n}: budget {version * 100 + n}." for n in range(40)]
    return "# Notes\n\n" + "\n".join(lines) + "\n"


def write_version(folder: Path, version: int) -> None:
    for i in range(FILES):
        tmp = folder / f".f{i}.{os.getpid()}.tmp"
        tmp.write_text(content(i, version))
        os.replace(tmp, folder / f"f{i}.md")


def main() -> None:
    folder, url = Path(sys.argv[1]), sys.argv[2]
    version, runs = int(sys.argv[3]), int(sys.argv[4])
    for _ in range(runs):
        write_version(folder, version)
        with KnowledgeBase(folder, embedding="fake", store=url, lock_timeout=120) as kb:
            kb.index()


if __name__ == "__main__":
    main()
