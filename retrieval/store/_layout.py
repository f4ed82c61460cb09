"""Where the files of an index live.

    <folder>/.kbgraph/
        .gitignore        "*"
        .lock             readers shared, generation swap exclusive
        .write.lock       one writer at a time
        CURRENT           name of the live generation (replaced atomically)
        cache.sqlite      embedding cache, kept across generations and rebuilds
        gen-<id>/         meta.json, chunks.jsonl, offsets.bin, vectors.bin, bm25/

A writer builds a new ``gen-*`` folder beside the live one and publishes it by replacing
``CURRENT``; a process killed at any instant leaves either the old or the new pointer,
both naming complete generations. Unpublished folders are removed by the next writer.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .._fs import fsync_dir
from ..errors import IndexCorruptError

DIR_MODE = 0o700
FILE_MODE = 0o600
INDEX_DIR_NAME = ".kbgraph"


@dataclass(frozen=True, slots=True)
class IndexLayout:
    root: Path

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def write_lock(self) -> Path:
        return self.root / ".write.lock"

    @property
    def current(self) -> Path:
        return self.root / "CURRENT"

    @property
    def cache(self) -> Path:
        return self.root / "cache.sqlite"

    def generation(self, name: str) -> Path:
        return self.root / name

    def ensure(self) -> None:
        self.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(self.root, DIR_MODE)
        gitignore = self.root / ".gitignore"
        if not gitignore.exists():
            write_file_atomic(gitignore, b"*\n")

    def current_name(self) -> str | None:
        try:
            name = self.current.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        if not name.startswith("gen-") or "/" in name or not self.generation(name).is_dir():
            raise IndexCorruptError(
                f"{self.current} names a missing generation {name!r}; re-index the folder"
            )
        return name

    def new_generation(self) -> Path:
        name = f"gen-{time.time_ns():x}-{secrets.token_hex(3)}"
        path = self.generation(name)
        path.mkdir(mode=DIR_MODE)
        return path

    def publish(self, generation: Path) -> None:
        """Point CURRENT at ``generation`` (call with the exclusive ``.lock`` held)."""
        fsync_dir(generation)
        write_file_atomic(self.current, generation.name.encode("utf-8") + b"\n")

    def remove_stale(self, keep: str) -> None:
        """Delete every generation but ``keep``. Readers that opened an older one keep
        their open files (POSIX unlink semantics) until they close them."""
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.name.startswith("gen-") and entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)


def write_file_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def secure_tree(path: Path) -> None:
    """Folders 0700 and files 0600: an index holds the text of private documents."""
    for dirpath, _dirnames, filenames in os.walk(path):
        os.chmod(dirpath, DIR_MODE)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), FILE_MODE)
