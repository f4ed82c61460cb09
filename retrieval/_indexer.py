"""One incremental indexing run: scan, reuse what did not change, chunk and embed what
did, hand the new version to the store, which publishes it atomically.

Reuse is decided per file: same size and mtime means unchanged without reading it; a
changed stat but the same sha256 also reuses the old chunks. New chunk texts go through
the embedding cache, so only text never embedded before reaches the model. The store
(``storage.IndexStore``) sees which files kept their rows, so a database writes only the
rows of files that changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from kbgraph._version import __version__

from ._chunking import chunk_file, code_chunker_id
from ._config import ChunkConfig, ScanConfig
from ._embeddings import (
    BatchEmbedder,
    CachedEmbedOutcome,
    check_dims,
    embed_with_cache,
)
from ._lexical import TOKENIZER_ID
from ._loaders import SkipFile, load_file
from ._progress import ProgressCallback, ProgressEvent
from ._records import Chunk, SkippedFile, index_text
from ._reuse import Reused, reuse_unchanged, same_chunks, vectors_by_id
from ._scan import ScannedFile, scan_folder
from ._storage import (
    DEFAULT_KEEP_VERSIONS,
    EmbeddingMeta,
    FileEntry,
    FileRecord,
    IndexMeta,
    IndexStore,
    IndexUpdate,
    IndexWriter,
    Previous,
    SkipRecord,
)


@dataclass
class IndexPlan:
    """Inputs of a run that decide reuse: what the index was built with now."""

    folder: Path
    store: IndexStore
    scan: ScanConfig
    chunking: ChunkConfig
    embedding: EmbeddingMeta | None  # dims may be 0 when not yet known
    embedder: Callable[[], BatchEmbedder] | None
    lock_timeout: float
    rebuild: bool = False
    keep_versions: int = DEFAULT_KEEP_VERSIONS


@dataclass
class RunResult:
    meta: IndexMeta
    embedded: int = 0
    reused: int = 0
    truncated: int = 0  # chunks of the index whose text is longer than the model's input
    skipped: list[SkippedFile] = field(default_factory=list)  # not indexed
    rebuilt: bool = False
    warnings: list[SkippedFile] = field(default_factory=list)  # indexed, with a caveat
    repaired: list[str] = field(default_factory=list)  # damage found and repaired


@dataclass
class _Pending:
    chunks: list[Chunk] = field(default_factory=list)
    vectors: list[np.ndarray | None] = field(default_factory=list)  # None: embed later
    files: dict[str, FileRecord] = field(default_factory=dict)
    skipped: dict[str, SkipRecord] = field(default_factory=dict)
    skips: list[SkippedFile] = field(default_factory=list)
    warnings: list[SkippedFile] = field(default_factory=list)
    reused_vectors: int = 0
    repaired: list[str] = field(default_factory=list)
    kept: set[str] = field(default_factory=set)  # files whose rows are the previous ones
    previous: dict[str, FileRecord] = field(default_factory=dict)  # their old records


def settings_match(meta: IndexMeta, plan: IndexPlan) -> bool:
    """Any change of embedding model, chunking parameters, the lexical analyser or the way
    code is chunked means a rebuild."""
    if meta.chunking != plan.chunking.model_dump(mode="json"):
        return False
    if (meta.tokenizer, meta.code_chunker) != (TOKENIZER_ID, code_chunker_id()):
        return False
    if (meta.embedding is None) != (plan.embedding is None):
        return False
    if meta.embedding is None or plan.embedding is None:
        return True
    return (meta.embedding.provider, meta.embedding.model) == (
        plan.embedding.provider,
        plan.embedding.model,
    )


def run_index(plan: IndexPlan, progress: ProgressCallback) -> RunResult:
    with plan.store.writing(plan.lock_timeout) as writer:
        old, repaired = (None, []) if plan.rebuild else writer.open_previous()
        if old is not None and not settings_match(old.meta, plan):
            old = None
        result = _build(plan, writer, old, progress, repaired)
        result.repaired[:0] = writer.repaired_in_place
        result.rebuilt = writer.had_previous and old is None
        return result


def _build(
    plan: IndexPlan,
    writer: IndexWriter,
    old: Previous | None,
    progress: ProgressCallback,
    repaired: list[str],
) -> RunResult:
    progress(ProgressEvent("scan", 0, 1, str(plan.folder)))
    scanned = scan_folder(plan.folder, plan.scan, index_dir=plan.store.index_dir)
    progress(ProgressEvent("scan", 1, 1, f"{len(scanned.files)} files"))
    pending = _Pending(repaired=list(repaired))
    total = len(scanned.files)
    for done, file in enumerate(scanned.files, 1):
        _add_file(plan, old, file, pending)
        progress(ProgressEvent("load", done, total, file.rel))
    skipped = sorted(list(scanned.skipped) + pending.skips, key=lambda s: s.path)
    warnings = sorted(pending.warnings, key=lambda s: s.path)
    if old is not None and not pending.repaired and _unchanged(plan, old.meta, pending):
        # Nothing to write: a new version would be a copy that pushes a real earlier
        # version out of the ones kept (a file watcher runs this on every burst).
        writer.tidy()
        progress(ProgressEvent("write", 1, 1, f"{plan.store.location} (unchanged)"))
        cut = len(old.meta.truncated_chunks)
        return RunResult(old.meta, 0, pending.reused_vectors, cut, skipped, warnings=warnings)
    embedded_run = _embed(plan, writer, old.meta if old else None, pending, progress)
    vectors, embedded, failed = embedded_run.vectors, embedded_run.embedded, embedded_run.failed
    meta = _make_meta(plan, pending, vectors, failed, _cut_ids(old, pending, embedded_run))
    progress(ProgressEvent("write", 0, 1, "writing index"))
    writer.commit(IndexUpdate(meta, _entries(pending, vectors, failed), fresh=old is None))
    progress(ProgressEvent("write", 1, 1, plan.store.location))
    return RunResult(
        meta,
        embedded,
        pending.reused_vectors,
        len(meta.truncated_chunks),
        skipped,
        warnings=warnings,
        repaired=pending.repaired,
    )


def _cut_ids(old: Previous | None, p: _Pending, run: _Embedded) -> list[str]:
    """The chunks whose vector the model's input cut: those embedded or taken from the
    cache now (``run.cut``) and those whose vector was reused from the previous version,
    flagged there (else a re-index after a touch said none were cut while they were)."""
    if run.vectors is None:
        return []
    old_cut = set(old.meta.truncated_chunks) if old else set()
    reused = (c.id for c, v in zip(p.chunks, p.vectors, strict=True) if v is not None)
    return sorted({*(i for i in reused if i in old_cut), *(p.chunks[row].id for row in run.cut)})


def _entries(p: _Pending, vectors: np.ndarray | None, failed: list[int]) -> list[FileEntry]:
    """The new version file by file; a file is ``kept`` when its rows are exactly those
    of the previous version (nothing re-embedded, nothing repaired)."""
    entries = []
    for rel, record in p.files.items():
        span = range(record.chunk_start, record.chunk_end)
        lost = [row - record.chunk_start for row in failed if row in span]
        entries.append(
            FileEntry(
                rel,
                record,
                p.chunks[record.chunk_start : record.chunk_end],
                None if vectors is None else vectors[record.chunk_start : record.chunk_end],
                failed=lost,
                previous=p.previous.get(rel),
                kept=rel in p.kept,
            )
        )
    return entries


def _unchanged(plan: IndexPlan, meta: IndexMeta, p: _Pending) -> bool:
    """True when the run would write what the live version already holds: the same
    files (records included) and skips, the same scan settings and model spec, and every
    chunk with its vector (a chunk whose embedding failed before is tried again)."""
    if p.files != meta.files or p.skipped != meta.skipped:
        return False
    if meta.scan != plan.scan.model_dump(mode="json") or meta.keep_versions != plan.keep_versions:
        return False
    if plan.embedding is not None:
        if meta.embedding is None or meta.embedding.spec != plan.embedding.spec:
            return False
        if any(v is None for v in p.vectors):
            return False
    return True


def _add_file(plan: IndexPlan, old: Previous | None, file: ScannedFile, p: _Pending) -> None:
    meta = old.meta if old else None
    prev_skip = meta.skipped.get(file.rel) if meta else None
    if (
        prev_skip
        and not prev_skip.retried
        and not prev_skip.changed(file.size, file.mtime_ns, file.ctime_ns)
    ):
        p.skipped[file.rel] = prev_skip
        p.skips.append(SkippedFile(file.rel, prev_skip.reason, prev_skip.detail))
        return
    record = meta.files.get(file.rel) if meta else None
    trusted = record
    if record is not None and record.kind != file.kind:
        # The kind is the file name's: another one recorded is damage (an edited meta.json).
        p.repaired.append(f"{file.rel} was recorded as {record.kind}, not {file.kind}; read again")
        trusted = None
    if old and old.upgrading:
        trusted = None  # an older format: its records are derived again, only vectors reused
    if old and trusted and (trusted.size, trusted.mtime_ns) == (file.size, file.mtime_ns):
        reused = reuse_unchanged(old, trusted, file.rel)
        if isinstance(reused, Reused):
            _take(plan, p, trusted, file, reused)
            p.previous[file.rel] = trusted
            return
        p.repaired.append(f"{reused}; {file.rel} read again")
    try:
        loaded = load_file(file, max_bytes=plan.scan.max_file_bytes)
    except SkipFile as exc:
        skip = exc.skipped
        p.skipped[file.rel] = SkipRecord.of(
            file.size, file.mtime_ns, file.ctime_ns, skip.reason, skip.detail
        )
        p.skips.append(skip)
        return
    # Chunked again even when the bytes hash as before: the records of the previous
    # generation are not trusted to hold the file's text; only their vectors are reused.
    chunks = chunk_file(loaded.segments, plan.chunking, loaded.kind, file.rel)
    known = vectors_by_id(old, record, file.rel)
    if old and trusted and trusted.sha256 == loaded.sha256:
        if not same_chunks(old, trusted, file.rel, chunks):
            p.repaired.append(
                f"the previous chunks of {file.rel} did not match its bytes; chunked again"
            )
        elif old.meta.engine_version == __version__ and (
            plan.embedding is None or all(c.id in known for c in chunks)
        ):
            p.kept.add(file.rel)  # touched, not changed: its rows stay as they are
    p.warnings.extend(loaded.notes)
    start = len(p.chunks)
    p.chunks.extend(chunks)
    p.vectors.extend(known.get(c.id) for c in chunks)
    p.reused_vectors += sum(c.id in known for c in chunks)
    if record is not None:
        p.previous[file.rel] = record
    p.files[file.rel] = FileRecord(
        size=file.size,
        mtime_ns=file.mtime_ns,
        sha256=loaded.sha256,
        kind=loaded.kind,
        chunk_start=start,
        chunk_end=len(p.chunks),
        notes=[n.to_dict() for n in loaded.notes],
    )


def _take(plan: IndexPlan, p: _Pending, rec: FileRecord, file: ScannedFile, reused: Reused) -> None:
    start = len(p.chunks)
    p.chunks.extend(reused.chunks)
    p.vectors.extend(reused.vectors)
    p.reused_vectors += sum(v is not None for v in reused.vectors)
    if plan.embedding is None or all(v is not None for v in reused.vectors):
        p.kept.add(file.rel)
    if reused.damaged_vectors:
        p.repaired.append(
            f"{reused.damaged_vectors} vector(s) of {file.rel} were not finite unit vectors; "
            "taken from the embedding cache or embedded again"
        )
    p.warnings.extend(SkippedFile(n["path"], n["reason"], n.get("detail", "")) for n in rec.notes)  # type: ignore[arg-type]
    p.files[file.rel] = rec.model_copy(
        update={
            "size": file.size,
            "mtime_ns": file.mtime_ns,
            "chunk_start": start,
            "chunk_end": len(p.chunks),
        }
    )


@dataclass(frozen=True, slots=True)
class _Embedded:
    """The run's vectors (None: a lexical index), the texts embedded now, the rows that
    failed and the rows, embedded now or from the cache, whose text the model's input cut."""

    vectors: np.ndarray | None
    embedded: int = 0
    failed: list[int] = field(default_factory=list)
    cut: list[int] = field(default_factory=list)


def _embed(
    plan: IndexPlan,
    writer: IndexWriter,
    old: IndexMeta | None,
    p: _Pending,
    progress: ProgressCallback,
) -> _Embedded:
    if plan.embedder is None or plan.embedding is None:
        return _Embedded(None)
    missing = [i for i, v in enumerate(p.vectors) if v is None]
    dims = old.embedding.dims if old and old.embedding else 0
    embedded, failed_local, cut_local = 0, [], []
    new_rows: np.ndarray | None = None
    if missing:
        embedder = plan.embedder()
        texts = [index_text(p.chunks[i]) for i in missing]
        index_model = _model_name(old.embedding if old else None)
        outcome = _embed_missing(writer, embedder, texts, progress, dims, index_model)
        embedded, failed_local, cut_local = outcome.embedded, outcome.failed, outcome.cut
        p.reused_vectors += outcome.reused
        new_rows = outcome.vectors
        width = int(new_rows.shape[1])
        if width == 0:
            # Nothing got a vector (the provider refused every new text): the rows are
            # zeros of the index's width, or of the model's when there is no index yet.
            width = dims or embedder.dimensions()
            new_rows = np.zeros((len(missing), width), dtype=np.float32)
        if dims:  # vectors from the cache were not checked on the way
            check_dims(dims, width, index_model=index_model, current_model=embedder.info.key)
        dims = width
    if not dims:
        # Nothing embedded yet (an empty folder): the model's own width, so that the index
        # is that model's and later vectors and queries are checked against it, not 0.
        dims = plan.embedding.dims or plan.embedder().dimensions()
    matrix = _matrix(p.vectors, missing, new_rows, dims)
    plan.embedding = plan.embedding.model_copy(update={"dims": dims})
    failed = sorted(missing[j] for j in failed_local)
    return _Embedded(matrix, embedded, failed, [missing[j] for j in cut_local])


def _matrix(
    known: list[np.ndarray | None], missing: list[int], new_rows: np.ndarray | None, dims: int
) -> np.ndarray:
    """Every chunk's row: the reused vectors and the new ones. A run that reused nothing
    (a first index, a rebuild) takes the new rows as they are: the vectors held once."""
    if new_rows is not None and len(missing) == len(known) and new_rows.dtype == np.float32:
        return new_rows
    matrix = np.zeros((len(known), dims), dtype=np.float32)
    for i, vector in enumerate(known):
        if vector is not None:
            matrix[i] = vector
    if new_rows is not None:
        matrix[missing] = new_rows
    return matrix


def _embed_missing(
    writer: IndexWriter,
    embedder: BatchEmbedder,
    texts: list[str],
    progress: ProgressCallback,
    dims: int,
    index_model: str | None,
) -> CachedEmbedOutcome:
    def on_progress(done: int, total: int) -> None:
        progress(ProgressEvent("embed", done, total, "embedding"))

    with writer.cache(embedder.info.key) as cache:
        return embed_with_cache(
            embedder, cache, texts, on_progress, expected_dims=dims or None, index_model=index_model
        )


def _model_name(embedding: EmbeddingMeta | None) -> str | None:
    return f"{embedding.provider}:{embedding.model}" if embedding else None


def _make_meta(
    plan: IndexPlan, p: _Pending, vectors: np.ndarray | None, failed: list[int], cut: list[str]
) -> IndexMeta:
    return IndexMeta(
        engine_version=__version__,
        embedding=plan.embedding if vectors is not None else None,
        chunking=plan.chunking.model_dump(mode="json"),
        scan=plan.scan.model_dump(mode="json"),
        files=p.files,
        skipped=p.skipped,
        file_count=len(p.files),
        chunk_count=len(p.chunks),
        indexed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        failed_embeddings=failed,
        truncated_chunks=cut,
        keep_versions=plan.keep_versions,
        tokenizer=TOKENIZER_ID,
        code_chunker=code_chunker_id(),
    )
