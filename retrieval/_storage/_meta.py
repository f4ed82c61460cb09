"""``meta.json``: what an index generation was built from and with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kbgraph.errors import IndexCorruptError

from .._lexical import LEGACY_TOKENIZER_ID
from .._records import FileKind, SkipReason, json_checksum

# 2: chunk lines, meta.json and bm25.json carry checksums, bm25 column checksums. Format 1
# is read only by a writer, to reuse its vectors while upgrading it (never served).
FORMAT_VERSION = 2
LEGACY_FORMAT = 1
REPAIR = "run `kbgraph index` to repair it from the documents"
DEFAULT_KEEP_VERSIONS = 3
CHECKSUM_KEY = "checksum"
UPGRADE = "run `kbgraph index` to upgrade it (no text is embedded again)"
LEGACY_CODE_CHUNKER = "code-1"
"""How code was chunked by indexes that did not record it (keyword boundaries)."""


class EmbeddingMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str
    dims: int
    spec: str | None = None  # how to load it again (``local``, ``openai:…``), when known


class FileRecord(BaseModel):
    """One indexed file; its chunks are rows ``[chunk_start, chunk_end)`` of the index."""

    model_config = ConfigDict(extra="forbid")

    size: int
    mtime_ns: int
    sha256: str
    kind: FileKind
    chunk_start: int
    chunk_end: int
    # Empty defaults as values, not ``default_factory=list``: pydantic copies a mutable
    # default for each instance all the same, and a builtin factory costs every cold
    # command the parse of its text signature (tokenize's patterns, ~7 ms; issue 44).
    notes: list[dict[str, str]] = []


# Skips whose cause lies outside the file's bytes: a permission, a hung network mount.
RETRIED_SKIPS: frozenset[str] = frozenset({"unreadable"})


class SkipRecord(BaseModel):
    """A skipped file, remembered so that an unchanged one is not read again; except an
    ``unreadable`` one, which every run tries again (its cause, permissions or a hung
    mount, lies outside its bytes). ``ctime_ns`` is kept for those only: a permission fix
    changes it (not the size or mtime), so freshness checks see the file as changed."""

    model_config = ConfigDict(extra="forbid")

    size: int
    mtime_ns: int
    reason: SkipReason
    detail: str = ""
    ctime_ns: int | None = None

    @classmethod
    def of(cls, size: int, mtime_ns: int, ctime_ns: int, reason: SkipReason, detail: str) -> Self:
        """The record of a file skipped now (its ctime kept when the skip is retried)."""
        ctime = ctime_ns if reason in RETRIED_SKIPS else None
        return cls(size=size, mtime_ns=mtime_ns, reason=reason, detail=detail, ctime_ns=ctime)

    @property
    def retried(self) -> bool:
        """Whether the next run reads the file again even if it did not change."""
        return self.reason in RETRIED_SKIPS

    def changed(self, size: int, mtime_ns: int, ctime_ns: int) -> bool:
        """Whether a file of this stat is not the one skipped (metadata only)."""
        if (self.size, self.mtime_ns) != (size, mtime_ns):
            return True
        return self.ctime_ns is not None and self.ctime_ns != ctime_ns


class IndexMeta(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format_version: int = FORMAT_VERSION
    engine_version: str
    embedding: EmbeddingMeta | None
    chunking: dict[str, Any]
    scan: dict[str, Any]
    files: dict[str, FileRecord]
    skipped: dict[str, SkipRecord] = {}  # a value, not a factory: see FileRecord.notes
    file_count: int
    chunk_count: int
    indexed_at: str
    failed_embeddings: list[int] = []
    # Ids of the chunks whose vector holds only the beginning of their text (the model's
    # input cut it), whichever way the vector came: a reused vector keeps its flag here.
    truncated_chunks: list[str] = []
    # Published generations a writer keeps (this one included); remembered like chunking.
    keep_versions: int = Field(default=DEFAULT_KEEP_VERSIONS, ge=1)
    # How the text was analysed for BM25 and how code was chunked: a change of either is
    # a change of settings (a rebuild); an index that predates them has the old ones.
    tokenizer: str = LEGACY_TOKENIZER_ID
    code_chunker: str = LEGACY_CODE_CHUNKER


def meta_bytes(meta: IndexMeta) -> bytes:
    """meta.json's content: the fields and their checksum (``checksum``)."""
    data = meta.model_dump(mode="json")
    data[CHECKSUM_KEY] = json_checksum(data)
    return json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")


def parse_meta(raw: bytes, path: Path, *, legacy_ok: bool = False) -> IndexMeta:
    """meta.json's content, checked: valid JSON of this format whose checksum matches
    (format 1, which has none, only with ``legacy_ok``); every problem is one line
    naming the file."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise IndexCorruptError(
            f"{path} is not valid index metadata (not JSON: {why}); {REPAIR}"
        ) from None
    if not isinstance(data, dict):
        raise IndexCorruptError(f"{path} is not valid index metadata (not an object); {REPAIR}")
    version = data.get("format_version")
    if version == LEGACY_FORMAT and not legacy_ok:
        raise IndexCorruptError(
            f"{path}: index format {LEGACY_FORMAT} was written by an earlier kbgraph without "
            f"checksums, so it is not searched as it is; {UPGRADE}"
        )
    if version not in (FORMAT_VERSION, LEGACY_FORMAT):
        raise IndexCorruptError(
            f"{path}: index format {version!r}, this kbgraph reads {FORMAT_VERSION}; "
            "re-index with `kbgraph index --rebuild` (or use the kbgraph that wrote it)"
        )
    check = data.pop(CHECKSUM_KEY, None)
    if version == FORMAT_VERSION and check != json_checksum(data):
        raise IndexCorruptError(
            f"{path} does not match its checksum (a value was changed since it was written); "
            f"{REPAIR}"
        )
    try:
        return IndexMeta.model_validate(data)
    except ValidationError as exc:
        raise IndexCorruptError(
            f"{path} is not valid index metadata ({first_error(exc)}); {REPAIR}"
        ) from None


def first_error(exc: ValidationError) -> str:
    """pydantic's report spans lines per error; a one-line reason names the first."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "the document"
    more = f" and {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}"


def unsafe_source(rel: str) -> str | None:
    """Why a recorded file path cannot be a file of the indexed folder, or None. The scan
    only records POSIX paths relative to the folder, so anything else is damage (or a
    crafted index trying to cite ``../../etc/passwd``)."""
    if not rel or "\0" in rel:
        return "is empty or holds a NUL byte"
    if rel.startswith("/"):
        return "is absolute"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "leaves the folder or is not normalised"
    return None


def check_files(meta: IndexMeta, path: Path) -> list[str]:
    """The files of ``meta`` in chunk order, after checking that every path stays in the
    folder and that their chunk spans tile ``[0, chunk_count)`` without gaps or overlaps."""
    for rel in meta.files:
        why = unsafe_source(rel)
        if why is not None:
            raise IndexCorruptError(f"{path}: the file path {rel!r} {why}; {REPAIR}")
    sources = sorted(
        meta.files, key=lambda s: (meta.files[s].chunk_start, meta.files[s].chunk_end, s)
    )
    end = 0
    for rel in sources:
        record = meta.files[rel]
        if record.chunk_start != end or record.chunk_end < record.chunk_start:
            raise IndexCorruptError(
                f"{path}: the chunk span of {rel!r} [{record.chunk_start}, "
                f"{record.chunk_end}) does not follow the previous file's (ends at {end}); "
                f"{REPAIR}"
            )
        end = record.chunk_end
    if end != meta.chunk_count:
        raise IndexCorruptError(
            f"{path}: file spans cover {end} chunks, chunk_count says {meta.chunk_count}; {REPAIR}"
        )
    return sources
