"""The folder index checked against the documents it was built from: text the files do
not hold (planted by a crafted index whose checksums were all computed again) is damage."""

from __future__ import annotations

from pathlib import Path

from kbgraph._version import __version__
from kbgraph.errors import IndexCorruptError

from ..chunking import chunk_file, code_chunker_id
from ..config import ChunkConfig, ScanConfig
from ..loaders import SkipFile, load_file
from ..scan import scan_one
from ..storage import REPAIR, recorded_or_default
from ._generation import IndexReader


def check_documents(reader: IndexReader, folder: Path) -> None:
    """The chunks of every file still as indexed against the file's bytes, read with the
    settings the index recorded; an index of another engine version (or code chunker)
    chunks otherwise, so it is not compared."""
    meta = reader.meta
    if meta.engine_version != __version__ or meta.code_chunker != code_chunker_id():
        return
    chunking = recorded_or_default(ChunkConfig, meta.chunking)
    scan = recorded_or_default(ScanConfig, meta.scan)
    check_against_documents(reader, folder, chunking, scan)


def check_against_documents(
    reader: IndexReader, folder: Path, chunking: ChunkConfig, scan: ScanConfig
) -> None:
    """For every file whose bytes are still those the index recorded (same sha256), chunk
    it again and compare with the index's records: text the file does not hold (planted
    by a crafted index, whose ids are right) is damage even where the checksums agree.
    Documents are read as an indexing run reads them (the scan's rules, no link followed
    out of the folder)."""
    for rel in reader.sources:
        record = reader.meta.files[rel]
        scanned = scan_one(folder, rel, scan)
        if scanned is None:
            continue  # gone since: stale, not damaged
        if scanned.kind != record.kind:
            raise IndexCorruptError(
                f"{reader.path / 'meta.json'}: {rel} is recorded as {record.kind}, but its "
                f"name makes it {scanned.kind}; {REPAIR}"
            )
        try:
            loaded = load_file(scanned, max_bytes=scan.max_file_bytes)
        except SkipFile:
            continue
        if loaded.sha256 != record.sha256:
            continue
        expected = chunk_file(loaded.segments, chunking, loaded.kind, rel)
        held = [reader.chunk(row) for row in range(record.chunk_start, record.chunk_end)]
        if [c.id for c in expected] != [c.id for c in held]:
            raise IndexCorruptError(
                f"{reader.chunks.path}: the chunks of {rel} do not match the file's bytes "
                "(text the file does not hold); run `kbgraph index --rebuild` to index it "
                "again from the documents"
            )
        # Same text at the same bytes: every other field (lines, section, page) must be
        # what the file gives too, or a crafted record cites other lines than it holds.
        for row, (want, have) in enumerate(zip(expected, held, strict=True), record.chunk_start):
            if want != have:
                raise IndexCorruptError(
                    f"{reader.chunks.path}: line {row + 1} ({rel}) cites lines "
                    f"{have.line_start}-{have.line_end}, section {have.section!r}, but the "
                    f"file gives lines {want.line_start}-{want.line_end}, section "
                    f"{want.section!r}; run `kbgraph index --rebuild` to index it again "
                    "from the documents"
                )


__all__ = ["check_against_documents", "check_documents"]
