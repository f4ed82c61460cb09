"""Reading and writing one index generation as a set of files."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from kbgraph.errors import IndexCorruptError, IndexNotFoundError

from .._filters import SearchFilters
from .._fs import Read
from .._lexical import BM25Index
from .._rankers.fields import FieldIndexes
from .._records import Chunk, chunk_id, index_text
from .._storage import (
    LEGACY_FORMAT,
    REPAIR,
    IndexMeta,
    check_files,
    meta_bytes,
    parse_meta,
    sound_vectors,
)
from ._ann import AnnIndex
from ._chunks import ChunkReader, write_chunks
from ._layout import IndexLayout, secure_tree
from ._lock import file_lock
from ._mapped import MappedFiles
from ._vectors import SUMS, open_sums, open_vectors, row_sum, write_sums, write_vectors


def write_generation(
    target: Path, meta: IndexMeta, chunks: Sequence[Chunk], vectors: np.ndarray | None
) -> None:
    """Fill a fresh generation folder; it becomes visible only when published."""
    write_chunks(target / "chunks.jsonl", target / "offsets.bin", chunks)
    if vectors is not None:
        write_vectors(target / "vectors.bin", vectors)
        write_sums(target / SUMS, [c.id for c in chunks], vectors)
    BM25Index.build([index_text(c) for c in chunks], tokenizer=meta.tokenizer).save(target / "bm25")
    data = meta_bytes(meta)
    fd = os.open(target / "meta.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    secure_tree(target)


class IndexReader:
    """An open generation: chunks, vectors (memory-mapped) and the BM25 index. Files stay
    open, so a writer may publish and delete this generation while it is being read."""

    def __init__(
        self,
        layout: IndexLayout,
        *,
        lock_timeout: float,
        name: str | None = None,
        for_writer: bool = False,
    ) -> None:
        """The live generation, or the one called ``name`` (to recover from a damaged
        CURRENT). A file that cannot be read is damage naming it (``IndexCorruptError``).
        ``for_writer``: opened by an indexing run to reuse what is sound, which checks
        every vector it takes (so no sample here) and also opens index format 1, whose
        records carry no checksums (never served: only its vectors are reused)."""
        with file_lock(layout.lock, "shared", lock_timeout, "open index"):
            name = name or layout.current_name()
            if name is None:
                raise IndexNotFoundError(
                    f"no index in {layout.root}; run `kbgraph index {layout.root.parent}` first"
                )
            self.name = name
            self.path = layout.generation(name)
            with _unreadable_is_damage(self.path):
                self.mapped = MappedFiles(self.path)  # before any file is read
            try:
                with self.mapped.reading():  # the open reads the maps too
                    self._open_files(for_writer=for_writer)
                self.mapped.opened()
            except BaseException:
                self.mapped.close()
                raise
        try:
            with self.mapped.reading():
                self._check_open(for_writer=for_writer)
        except BaseException:
            self.close()
            raise

    def _open_files(self, *, for_writer: bool) -> None:
        read = self.mapped.read
        self.meta = read_meta(self.path / "meta.json", legacy_ok=for_writer, read=read)
        self.legacy = self.meta.format_version == LEGACY_FORMAT
        with _unreadable_is_damage(self.path):
            self.chunks = ChunkReader(
                self.path / "chunks.jsonl",
                self.path / "offsets.bin",
                checked=not self.legacy,
                read=read,
            )
        try:
            with _unreadable_is_damage(self.path):
                self._open_rest(legacy_ok=for_writer)
        except BaseException:
            self.chunks.close()
            raise

    def _check_open(self, *, for_writer: bool) -> None:
        self._check_counts()
        self.sources = check_files(self.meta, self.path / "meta.json")
        self._failed = np.asarray(sorted(set(self.meta.failed_embeddings)), dtype=np.int64)
        self.chunk_file = np.zeros(self.meta.chunk_count, dtype=np.int32)
        for i, source in enumerate(self.sources):
            record = self.meta.files[source]
            self.chunk_file[record.chunk_start : record.chunk_end] = i
        if self.vectors is not None and not for_writer:
            # Soundness only: binding reads chunk records, which validate checks first.
            self.check_vector_rows(_sample_rows(len(self.vectors)), bind=False)

    def _open_rest(self, *, legacy_ok: bool) -> None:
        read = self.mapped.read
        vectors = self.path / "vectors.bin"
        self.vectors = open_vectors(vectors, read=read) if self.meta.embedding else None
        self.row_sums = (
            None if self.vectors is None else open_sums(self.path / SUMS, len(self.vectors), read)
        )
        self.bm25 = _load_bm25(self.path / "bm25", legacy_ok, read)
        # Field rankers (title, ...) are built from the checked chunks on first use.
        self.fields = FieldIndexes(self.meta.tokenizer)
        self.ann = (
            AnnIndex.open(self.path, self.meta.chunk_count, read=read)
            if self.vectors is not None
            else None
        )

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Around a search (or any other use of the maps): no mapped file shrank or was
        taken from under its lease (``IndexCorruptError`` naming it, never SIGBUS), and
        what was checked once is checked again if a file changed in place."""
        with self.mapped.reading():
            if self.mapped.changed():
                self.bm25.forget_checks()
            yield

    @property
    def outdated(self) -> bool:
        """A file was taken from under its lease: the reader opens the generation again
        before the next search (:class:`~kbgraph.retrieval._kb_reader.LiveReader`)."""
        return self.mapped.broken

    def check_vector_rows(self, rows: np.ndarray | Sequence[int], *, bind: bool = True) -> None:
        """The vectors of ``rows`` are finite with unit length (zero only where the
        embedding failed) and, with ``bind``, the ones written for their chunks
        (``vectors.sums``): what search checks of every row it ranks by, and ``open``
        of a sample. ``IndexCorruptError`` names vectors.bin and the first bad row."""
        if self.vectors is None or not len(rows):
            return
        keys = np.asarray(rows, dtype=np.int64)
        block = np.asarray(self.vectors[keys])
        bad = ~sound_vectors(block)
        if bad.any():
            bad &= ~(np.isin(keys, self._failed) & zero_rows(block))
        if bad.any():
            self._bad_vector(int(keys[np.flatnonzero(bad)[0]]), int(bad.sum()))
        if not bind:
            return
        # A failed embedding's zero row carries nothing to rank by: exempt, as above.
        unranked = np.isin(keys, self._failed) & zero_rows(block)
        moved = [
            int(k)
            for k, row, skip in zip(keys, block, unranked, strict=True)
            if not skip and not self.bound(int(k), row)
        ]
        if moved:
            source = self.sources[int(self.chunk_file[moved[0]])]
            raise IndexCorruptError(
                f"{self.path}/vectors.bin: vector {moved[0]} is not the one written for its "
                f"chunk ({source}, line {moved[0] + 1} of chunks.jsonl; {len(moved)} such "
                "among the rows checked): the vector or the chunk record was changed since "
                f"(rows swapped, a bit flipped, a record crafted); {REPAIR}"
            )

    def bound(self, row: int, vector: np.ndarray) -> bool:
        """Whether ``vector`` is the one written at ``row`` for its chunk (True for a
        generation written before ``vectors.sums``)."""
        if self.row_sums is None:
            return True
        return row_sum(self.chunks.get(row).id, vector) == int(self.row_sums[row])

    def _bad_vector(self, row: int, count: int) -> None:
        assert self.vectors is not None
        with np.errstate(invalid="ignore", over="ignore"):
            norm = float(np.linalg.norm(np.asarray(self.vectors[row], dtype=np.float64)))
        raise IndexCorruptError(
            f"{self.path}/vectors.bin: vector {row} has length {norm:.4g}, not 1 "
            f"({count} such among the rows checked); {REPAIR}"
        )

    def all_chunks(self) -> list[Chunk]:
        return [self.chunk(row) for row in range(len(self.chunks))]

    def chunk(self, row: int) -> Chunk:
        """Chunk ``row``, checked: its id must be the checksum of its source, span and
        text (bit rot), and it must name the file whose span holds it in meta.json (a path
        outside the folder, say). Anything else is damage (IndexCorruptError)."""
        chunk = self.chunks.get(row)
        expected = self.sources[int(self.chunk_file[row])]
        problem = chunk_problem(chunk) or lines_problem(chunk, self.meta.files[expected].kind)
        if problem is None and chunk.source != expected:
            problem = f"names {chunk.source!r}, but meta.json places that row in {expected!r}"
        if problem is not None:
            raise IndexCorruptError(
                f"{self.chunks.path}: line {row + 1} ({expected}) {problem}; {REPAIR}"
            )
        return chunk

    def _check_counts(self) -> None:
        counts = {"chunks.jsonl/offsets.bin": len(self.chunks), "bm25": len(self.bm25)}
        if self.vectors is not None:
            counts["vectors.bin"] = int(self.vectors.shape[0])
        bad = {k: v for k, v in counts.items() if v != self.meta.chunk_count}
        if bad:
            files = " and ".join(bad)
            raise IndexCorruptError(
                f"{self.path}: meta.json says {self.meta.chunk_count} chunks but {files} hold "
                f"{', '.join(str(v) for v in bad.values())}; {REPAIR}"
            )

    def mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """Allowed chunks, or None when every chunk is allowed."""
        if filters is None or filters.is_empty():
            return None
        allowed = np.array(
            [filters.allows(s, self.meta.files[s].kind) for s in self.sources], dtype=bool
        )
        if not len(allowed):
            return np.zeros(0, dtype=bool)
        return allowed[self.chunk_file]

    def validate(self) -> None:
        """Full check: counts agree (meta, chunks, offsets, vectors, BM25), offsets.bin
        points at line starts, every chunk parses, matches its record checksum and its id
        (a checksum of its source, span and text), names the file whose span holds it,
        every vector is finite with unit length (zero only for a chunk whose embedding
        failed) and every BM25 column matches its checksum."""
        self._check_counts()
        problem = self.chunks.check_offsets()
        if problem is not None:
            raise IndexCorruptError(f"{self.path}/offsets.bin: {problem}; {REPAIR}")
        for row in range(len(self.chunks)):
            self.chunk(row)
        count = 0 if self.vectors is None else len(self.vectors)
        for start in range(0, count, _NORM_BLOCK):  # bounded memory on big indexes
            self.check_vector_rows(np.arange(start, min(start + _NORM_BLOCK, count)))
        self.bm25.verify_all()

    def check_lexical(self) -> None:
        """The BM25 index is the one the chunk texts give (built again and compared): a
        crafted index whose checksums were all computed again fails here."""
        chunks = [self.chunk(row) for row in range(len(self.chunks))]
        rebuilt = BM25Index.build([index_text(c) for c in chunks], tokenizer=self.meta.tokenizer)
        if not self.bm25.same_as(rebuilt):
            raise IndexCorruptError(
                f"{self.path}/bm25: the BM25 index is not the one its chunks give (its files "
                "agree with their checksums, so they were written so); run `kbgraph index "
                "--rebuild` to build it again"
            )

    def size_bytes(self) -> int:
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.path) for f in fs
        )

    def close(self) -> None:
        self.chunks.close()
        self.mapped.close()


_NORM_BLOCK = 65536
_OPEN_SAMPLE = 64  # rows whose vectors an open checks: a whole bad file, not a bad row


def _sample_rows(count: int) -> np.ndarray:
    """Up to ``_OPEN_SAMPLE`` rows spread over ``count``, the first and last included."""
    if count <= _OPEN_SAMPLE:
        return np.arange(count, dtype=np.int64)
    # Sorted already, so duplicates are neighbours; np.unique would load numpy.ma (30 ms),
    # on every open.
    rows = np.linspace(0, count - 1, _OPEN_SAMPLE).astype(np.int64)
    return rows[np.concatenate(([True], rows[1:] != rows[:-1]))]


@contextmanager
def _unreadable_is_damage(generation: Path) -> Iterator[None]:
    """A generation file that cannot be opened (permissions, a folder where a file
    belongs) is damage of that generation: one line naming it, not an ``OSError``."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or generation
        raise IndexCorruptError(
            f"{where} cannot be read ({exc.strerror or type(exc).__name__}); {REPAIR}"
        ) from None


def zero_rows(rows: np.ndarray) -> np.ndarray:
    return np.logical_not(np.asarray(rows).any(axis=1))


def chunk_problem(chunk: Chunk) -> str | None:
    """What is wrong with one chunk record on its own, or None: its id must be the
    checksum of its source, span and text (``chunk_id``), its spans ordered."""
    identity = chunk.source if chunk.page is None else f"{chunk.source}#page={chunk.page}"
    if chunk.id != chunk_id(identity, chunk.byte_start, chunk.byte_end, chunk.text):
        return "does not match its checksum (the chunk id)"
    if not 0 <= chunk.byte_start <= chunk.byte_end or not 1 <= chunk.line_start <= chunk.line_end:
        return "has an impossible line or byte span"
    return None


def lines_problem(chunk: Chunk, kind: str) -> str | None:
    """Whether the chunk's line span is the one its text spans, or None. A chunk's lines
    are those of its first and last character, so the span holds one line more than the
    text has line breaks before its last character; except in HTML, whose lines count the
    file's markup, not the extracted text. (A span shifted whole is found by ``stats
    --validate``, which reads the file.)"""
    if kind == "html":
        return None
    breaks = chunk.text.count("\n", 0, max(0, len(chunk.text) - 1))
    if chunk.line_end - chunk.line_start != breaks:
        return (
            f"cites lines {chunk.line_start}-{chunk.line_end}, but its text spans "
            f"{breaks + 1} line(s)"
        )
    return None


def _load_bm25(directory: Path, legacy_ok: bool = False, read: Read | None = None) -> BM25Index:
    try:
        return BM25Index.load(directory, legacy_ok=legacy_ok, read=read)
    except IndexNotFoundError as exc:  # inside a generation, a missing part is damage
        raise IndexCorruptError(f"{exc} ({REPAIR})") from None


def read_meta(path: Path, *, legacy_ok: bool = False, read: Read | None = None) -> IndexMeta:
    """meta.json of a generation, checked (:func:`parse_meta`); every problem is one line
    naming the file. ``read``: how a generation held in memory reads it (once)."""
    try:
        raw = (read or Path.read_bytes)(path)
    except FileNotFoundError:
        raise IndexCorruptError(f"{path} is missing; {REPAIR}") from None
    except OSError as exc:
        raise IndexCorruptError(f"{path} cannot be read ({exc.strerror}); {REPAIR}") from None
    return parse_meta(raw, path, legacy_ok=legacy_ok)
