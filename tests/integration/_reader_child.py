"""Reader process for the concurrency test: opens the live generation again and again
while writers publish new ones, and checks that everything it read belongs to that one
generation. Prints ``generations N checked M`` and exits non-zero on a torn read.

    _reader_child.py FOLDER STOP_FILE MAX_VERSION
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from kbgraph.retrieval._config import SearchConfig
from kbgraph.retrieval._embeddings import l2_normalise
from kbgraph.retrieval._folder import FolderSnapshot, IndexLayout, IndexReader
from kbgraph.retrieval._records import index_text
from kbgraph.retrieval._search import search
from kbgraph.retrieval._segments import normalize_newlines
from kbgraph.testing import FakeEmbeddings
from tests.integration._corpus import corpus_file, version_of

FAKE = FakeEmbeddings()


def fake_vector(text: str) -> np.ndarray:
    return l2_normalise(np.array([FAKE.embed_query(text)], dtype=np.float32))[0]


def check(reader: IndexReader, max_version: int) -> None:
    """Chunks, vectors, BM25 and meta.json of one generation agree with each other and with
    the corpus version of each file that meta.json names."""
    meta = reader.meta
    assert meta.embedding is not None and reader.vectors is not None
    counts = (len(reader.chunks), int(reader.vectors.shape[0]), len(reader.bm25))
    assert counts == (meta.chunk_count,) * 3, (reader.name, counts, meta.chunk_count)
    assert sum(r.chunk_end - r.chunk_start for r in meta.files.values()) == meta.chunk_count
    failed = set(meta.failed_embeddings)
    for source, record in meta.files.items():
        version = version_of(source, record.sha256, max_version)
        assert version is not None, (reader.name, source, "content of no corpus version")
        raw = corpus_file(version, int(Path(source).stem.split("_")[1]))
        for row in range(record.chunk_start, record.chunk_end):
            chunk = reader.chunks.get(row)
            assert chunk.source == source, (reader.name, row, chunk.source, source)
            span = normalize_newlines(raw[chunk.byte_start : chunk.byte_end].decode("utf-8"))
            assert span == chunk.text, (reader.name, source, version, row)
            if row not in failed:
                expected = fake_vector(index_text(chunk))
                assert np.allclose(reader.vectors[row], expected, atol=1e-5), (reader.name, row)
    query = "retry backoff latency"
    results = search(reader, query, SearchConfig(mode="vector", top_k=5), None, fake_vector)
    assert results, reader.name
    for r in results:
        assert abs(r.score - float(fake_vector(query) @ fake_vector(index_text(r.chunk)))) < 1e-4


def main() -> None:
    folder, stop, max_version = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    layout = IndexLayout(folder / ".kbgraph")
    seen: set[str] = set()
    checked = 0
    while not stop.exists():
        reader = FolderSnapshot(layout, lock_timeout=60)
        try:
            check(reader, max_version)
            seen.add(reader.name)
            checked += 1
        finally:
            reader.close()
        time.sleep(0.01)
    print(f"generations {len(seen)} checked {checked}", flush=True)


if __name__ == "__main__":
    main()
