"""Records shared by every part of the engine.

Attribute names are snake_case in Python. ``Chunk.to_dict`` gives the camelCase keys of the
on-disk format (``lineStart``, ``byteEnd`` ...); ``SearchResult.to_dict``, the CLI's
``--json`` output and LangChain ``Document`` metadata, is snake_case as every citation
record (``line_start``, ``chunk_id``): the contract in ``ARCHITECTURE.md``, by pydantic
aliases (:mod:`kbgraph._base.camel`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from kbgraph._base.camel import camel, from_camel, to_camel_dict

SkipReason = Literal[
    "excluded",
    "excluded-dir",
    "not-included",
    "secret",
    "too-large",
    "binary",
    "symlink-outside",
    "hard-link",
    "unreadable",
    "decode-fallback",
    "empty",
    "extract-failed",
]
"""Why a file was left out: ``excluded`` (an exclude pattern), ``excluded-dir`` (a folder not
entered: an exclude pattern, a virtualenv; one entry for the whole folder), ``not-included``
(no include pattern), ``secret`` ... ``decode-fallback`` and a PDF page's ``extract-failed``
are reported as warnings of files that are still indexed."""

FileKind = str
"""A file kind of the loader table (``text``, ``markdown``, ``code``, ``html``, ``pdf``,
``docx``, ``csv``, ``data``, or one registered since): ``loaders.file_kinds()``."""


def chunk_id(source: str, byte_start: int, byte_end: int, text: str) -> str:
    """Stable id: the same text at the same place of the same file gets the same id."""
    digest = hashlib.sha256()
    for part in (source, str(byte_start), str(byte_end), text):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def text_hash(text: str) -> str:
    """Key of the embedding cache (together with the model name)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def json_checksum(value: Any) -> str:
    """The checksum of a JSON record of the index (a chunk line, meta.json, bm25.json):
    sha256 of its canonical JSON (sorted keys, no spaces), 16 hex digits as chunk ids. It
    catches damage, not a forger, who can compute it as well (``stats --validate`` checks
    the records against the documents for that)."""
    body = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@camel
@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of one file. ``text`` equals the file's bytes ``[byte_start, byte_end)``
    decoded and newline-normalised (for HTML and PDF: the text extracted from that span)."""

    id: str
    text: str
    source: str
    line_start: int
    line_end: int
    byte_start: int
    byte_end: int
    section: str | None = None
    page: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return to_camel_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        return from_camel(cls, data)


def index_text(chunk: Chunk) -> str:
    """What the rankers see: the chunk text under its heading path. A chunk cut from the
    middle of "Webhooks > Delivery and retries" rarely repeats those words itself, yet
    they are what a question about it uses. The chunk's own text stays exact."""
    return f"{chunk.section}\n\n{chunk.text}" if chunk.section else chunk.text


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    reason: SkipReason
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"path": self.path, "reason": self.reason}
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One ranked chunk. ``ranks`` maps ranker name (``vector``, ``bm25``) to the 1-based
    rank that ranker gave the chunk, or is absent when the ranker did not return it."""

    chunk: Chunk
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The ``kbgraph search --json`` form (and LangChain ``Document`` metadata)."""
        c = self.chunk
        hit = SearchHit(c.text, self.score, c.source, c.line_start, c.line_end, c.id,
                        c.section, c.page, dict(self.ranks))  # fmt: skip
        return to_camel_dict(hit)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result as printed: the chunk's fields next to its score and ranks, keys
    snake_case as MCP's search result (the chunk's id is ``chunk_id`` here, as everywhere
    outside the chunk record itself)."""

    text: str
    score: float
    source: str
    line_start: int
    line_end: int
    id: Annotated[str, Field(alias="chunk_id")]
    section: str | None
    page: int | None
    ranks: dict[str, int]


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """One file the scan found (metadata only); here beside the other records so that the
    loaders, which read it, and the scan, which reads the loaders' kinds, share it."""

    path: Path  # absolute
    rel: str  # POSIX, relative to the scanned root
    size: int
    mtime_ns: int
    kind: FileKind
    # The inode's change time: a chmod/chown changes it, not the size or mtime. Compared
    # only for files an earlier run could not read (see SkipRecord.ctime_ns).
    ctime_ns: int = 0
    # What the scan saw, so that the reader opens exactly that file (loaders/_read.py):
    # the scanned root, the path to open below it (a link's target inside the folder, else
    # ``rel``) and the identity of the inode found there. Unset for a file described by
    # hand: then only the last component is opened without following links.
    root: Path | None = None
    target: str | None = None
    dev: int | None = None
    ino: int | None = None


__all__ = [
    "Chunk",
    "FileKind",
    "ScannedFile",
    "SearchHit",
    "SearchResult",
    "SkipReason",
    "SkippedFile",
    "chunk_id",
    "index_text",
    "text_hash",
]
