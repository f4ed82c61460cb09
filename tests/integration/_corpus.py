"""Versioned corpora for the crash and concurrency tests. Version ``v`` of file ``i`` is a
pure function of (v, i), so a reader can tell which version a generation indexed from the
sha256 that meta.json records, and check every chunk against that version's bytes."""

from __future__ import annotations

import hashlib
import os
import random
from functools import cache
from pathlib import Path

FILES = 40
_WORDS = [
    "retry",
    "backoff",
    "token",
    "cache",
    "index",
    "shard",
    "replica",
    "latency",
    "東京",
    "café",
    "naïve",
]


def corpus_file(version: int, i: int) -> bytes:
    """CRLF in every third file, non-ASCII words; each line names its file and version."""
    rng = random.Random(version * 1000 + i)
    lines = [
        " ".join(rng.choice(_WORDS) for _ in range(12)) + f" file{i} gen{version}"
        for _ in range(30)
    ]
    sep = "\r\n" if i % 3 == 0 else "\n"
    return sep.join(lines).encode("utf-8")


def write_corpus(folder: Path, version: int, files: int = FILES) -> None:
    """Each file replaced atomically, so that a concurrent reader of the folder sees one
    whole version of it; files beyond ``files`` are removed."""
    for i in range(files):
        path = folder / f"doc_{i:03d}.md"
        tmp = folder / f".doc_{i:03d}.md.{os.getpid()}.tmp"
        tmp.write_bytes(corpus_file(version, i))
        os.replace(tmp, path)
    for path in folder.glob("doc_*.md"):
        if int(path.stem.split("_")[1]) >= files:
            path.unlink(missing_ok=True)


@cache
def version_of(source: str, sha256: str, max_version: int) -> int | None:
    """Which version of ``source`` has this sha256 (None: no version does)."""
    i = int(Path(source).stem.split("_")[1])
    for version in range(max_version + 1):
        if hashlib.sha256(corpus_file(version, i)).hexdigest() == sha256:
            return version
    return None
