"""The folder index's HNSW graph (usearch), with the size threshold lowered so that small
folders get one: written into the generation, rebuilt incrementally, filters before
ranking, exact scores, and the same answers as the exact product."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

import kbgraph.retrieval._folder._ann as ann_module
from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import ChunkConfig, KnowledgeBase, SearchFilters
from kbgraph.retrieval._folder import AnnIndex, IndexReader
from kbgraph.retrieval._ranking import top_k_dot
from tests.unit.test_kb_search import _write

QUERY = "exponential backoff retry policy"


class DenseWords(Embeddings):
    """Dense bag-of-words vectors: each word a fixed Gaussian direction. An HNSW graph
    needs the dense geometry of real embeddings: the ``fake`` model's hashed sparse
    vectors are mostly orthogonal to each other, and greedy graph search cannot cross
    between such islands (a graph over them misses true neighbours)."""

    dims = 64

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dims)

    def embed_query(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower()) or ["empty"]
        vector = np.sum([self._word(w) for w in words], axis=0)
        return [float(x) for x in vector / np.linalg.norm(vector)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


DENSE = DenseWords()


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(ann_module, "ANN_MIN_ROWS", 40)
    return 40


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    files = {
        f"noise/n{i:03d}.md": f"Note {i}: retry policy {i % 7} with jitter {i}.\n"
        for i in range(80)
    }
    files.update(
        {f"target/t{i}.txt": f"Garden schedule {i}; water the tomatoes.\n" for i in range(45)}
    )
    return _write(tmp_path / "docs", files)  # type: ignore[arg-type]


def _reader(kb: KnowledgeBase) -> IndexReader:
    reader = kb._open()
    assert isinstance(reader, IndexReader)
    return reader


def _exact_ids(kb: KnowledgeBase, query: str, k: int, mask: np.ndarray | None = None) -> list[str]:
    reader = _reader(kb)
    assert reader.vectors is not None
    vector = kb.embedder().embed_query(query)
    rows, _ = top_k_dot(reader.vectors, vector, k, mask)
    return [reader.chunks.get(int(r)).id for r in rows]


def test_small_indexes_have_no_graph(notes: Path) -> None:
    kb = KnowledgeBase(notes, embedding=DENSE)
    kb.index()
    assert _reader(kb).ann is None


def test_a_big_index_gets_a_graph_with_the_exact_answers(notes: Path, small_threshold: int) -> None:
    kb = KnowledgeBase(notes, embedding=DENSE)
    kb.index()
    reader = _reader(kb)
    assert reader.ann is not None and len(reader.ann.keys) == reader.meta.chunk_count
    results = kb.search(QUERY, top_k=10, mode="vector")
    assert [r.chunk.id for r in results] == _exact_ids(kb, QUERY, 10)
    vector = kb.embedder().embed_query(QUERY)
    for r in results:  # scores are the exact dot products, not the graph's half precision
        row = next(
            i for i in range(reader.meta.chunk_count) if reader.chunks.get(i).id == r.chunk.id
        )
        assert r.score == pytest.approx(float(np.dot(reader.vectors[row], vector)), abs=1e-6)  # type: ignore[index]
    hybrid = kb.search(QUERY, top_k=5, mode="hybrid", config=None)
    assert len(hybrid) == 5


def test_every_chunk_of_a_small_graph_is_reachable(tmp_path: Path, small_threshold: int) -> None:
    """Threads inserting into a small graph at once could orphan a node (one build in
    fifteen here): the exact top 10 then missed a chunk. Many shuffled builds, every
    node found by a search that asks for all of them."""
    texts = [f"Note {i}: retry policy {i % 7} with jitter {i}." for i in range(80)]
    texts += [f"Garden schedule {i}; water the tomatoes." for i in range(45)]
    vectors = np.array(DENSE.embed_documents(texts), dtype=np.float32)
    ids = [f"{i + 1:016x}" for i in range(len(texts))]
    query = np.array(DENSE.embed_query(QUERY), dtype=np.float32)
    rng = np.random.default_rng(7)
    for build in range(100):
        order = rng.permutation(len(ids))
        target = tmp_path / f"g{build}"
        target.mkdir()
        assert ann_module.write_ann(target, [ids[i] for i in order], vectors[order], None)
        graph = AnnIndex.open(target, len(ids))
        assert graph is not None
        assert len(set(graph.candidates(query, len(ids)).tolist())) == len(ids), build


@pytest.mark.parametrize(
    ("paths", "expected"), [(("target/**",), "target/"), (("noise/n0*",), "noise/n0")]
)
def test_filters_apply_before_ranking_with_a_graph(
    notes: Path,
    small_threshold: int,
    monkeypatch: pytest.MonkeyPatch,
    paths: tuple[str, ...],
    expected: str,
) -> None:
    kb = KnowledgeBase(notes, embedding=DENSE)
    kb.index()
    # few allowed rows: scored exactly; many: the graph over-fetches until k are allowed
    monkeypatch.setattr(ann_module, "ANN_MIN_ROWS", 5)
    filters = SearchFilters(paths=paths)
    results = kb.search(QUERY, top_k=8, mode="vector", filters=filters)
    assert len(results) == 8 and all(r.chunk.source.startswith(expected) for r in results)
    reader = _reader(kb)
    mask = reader.mask(filters)
    assert [r.chunk.id for r in results] == _exact_ids(kb, QUERY, 8, mask)


def test_the_graph_is_rebuilt_incrementally(
    notes: Path, small_threshold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = KnowledgeBase(notes, embedding=DENSE)
    kb.index()
    added: list[int] = []
    real = ann_module._new_index

    def spy(dims: int) -> Any:
        index = real(dims)
        original = index.add

        def add(keys: Any, vectors: Any, **kwargs: Any) -> Any:
            added.append(len(keys))
            return original(keys, vectors, **kwargs)

        index.add = add
        return index

    monkeypatch.setattr(ann_module, "_new_index", spy)
    (notes / "noise/n001.md").write_text("Note 1: completely new words about sailing.\n")
    (notes / "noise/n002.md").unlink()
    report = kb.index()
    assert report.embedded == 1 and sum(added) == 1  # only the new chunk joins the graph
    reader = _reader(kb)
    assert reader.ann is not None and len(reader.ann.index) == reader.meta.chunk_count
    ids = {reader.chunks.get(i).id for i in range(reader.meta.chunk_count)}
    assert set(ann_module.chunk_keys(sorted(ids))) == set(reader.ann.keys.tolist())
    assert kb.search("sailing new words", top_k=1, mode="vector")[0].chunk.source == "noise/n001.md"
    added.clear()
    KnowledgeBase(notes, embedding=DENSE, chunking=ChunkConfig(chunk_size=64)).index()
    assert sum(added) == reader.meta.chunk_count  # a rebuild never reuses the old graph


def test_a_graph_that_does_not_match_is_corrupt(notes: Path, small_threshold: int) -> None:
    kb = KnowledgeBase(notes, embedding=DENSE)
    kb.index()
    generation = _reader(kb).path
    np.save(generation / "ann.keys.npy", np.zeros(3, dtype=np.uint64))
    with pytest.raises(IndexCorruptError, match="ANN graph"):
        AnnIndex.open(generation, _reader(KnowledgeBase(notes, embedding=DENSE)).meta.chunk_count)


def test_an_index_with_a_graph_can_be_deleted(notes: Path, small_threshold: int) -> None:
    kb = KnowledgeBase(notes, embedding=DENSE)
    kb.index()
    kb.delete()
    assert not (notes / ".kbgraph").exists()


@pytest.mark.parametrize(
    "modules",
    [("usearch.index", "onnxruntime"), ("onnxruntime", "usearch.index")],
    ids=["ann-first", "onnx-first"],
)
def test_the_ann_library_and_the_onnx_runtime_load_in_one_process(
    modules: tuple[str, str],
) -> None:
    # A search process loads both: the graph of a big index and the local model's ONNX
    # encoder. usearch 2.26.2-2.26.6 crashed the interpreter when onnxruntime came second.
    pytest.importorskip("onnxruntime")
    code = "; ".join(f"import {name}" for name in modules)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-500:]
