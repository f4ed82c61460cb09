"""Rerankers users already have, plugged into the whole subgraph: a cross-encoder (duck-typed
``.predict(pairs)``, as sentence-transformers' ``CrossEncoder``), a LangChain
``BaseDocumentCompressor``, a plain function, kbgraph's own protocol; anything else is a
``ConfigError`` when the graph is built. (``tests/integration/test_cross_encoder.py`` loads
a real cross-encoder from a folder.)"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document

from kbgraph.errors import ConfigError
from kbgraph.graphs import build_rag_graph
from kbgraph.graphs._rerankers import as_reranker
from kbgraph.graphs._state import Candidate

from ._rag_fakes import ask, fake_kb, registry_with, settings_for

QUESTION = "How do I configure the retry policy?"
FAVOURED = "docs/authentication.md"


def favour(text: str) -> float:
    """A reranker's opinion: the authentication page first, whatever the rankers said."""
    return 9.0 if "API keys" in text or "Rotate a key" in text else float(len(text) % 3)


class DuckCrossEncoder:
    """What sentence-transformers' ``CrossEncoder`` offers: ``predict(pairs) -> ndarray``."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.pairs.extend(pairs)
        return np.array([favour(text) for _, text in pairs], dtype=np.float32)


class KeepTwoCompressor(BaseDocumentCompressor):
    """A LangChain compressor that keeps the two best documents, with relevance scores."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        ranked = sorted(documents, key=lambda d: -favour(d.page_content))[:2]
        return [
            Document(d.page_content, metadata={**d.metadata, "relevance_score": 0.9 - i / 10})
            for i, d in enumerate(ranked)
        ]


class OrderOnlyCompressor(BaseDocumentCompressor):
    """A compressor that only reorders (no scores): the favoured document first."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return sorted(documents, key=lambda d: -favour(d.page_content))


class OwnProtocol:
    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        return [favour(c["text"]) for c in candidates]


def score_texts(query: str, texts: list[str]) -> list[float]:
    return [favour(t) for t in texts]


def run(tmp_path: Path, reranker: Any) -> dict[str, Any]:
    folder = tmp_path / "docs"
    graph = build_rag_graph(registry=registry_with({folder: fake_kb(folder)}), reranker=reranker)
    return graph.invoke(ask(QUESTION), context=settings_for(folder, rerank="cross_encoder"))


@pytest.mark.parametrize(
    "reranker",
    [DuckCrossEncoder(), KeepTwoCompressor(), OrderOnlyCompressor(), OwnProtocol(), score_texts],
    ids=["cross-encoder", "compressor", "compressor-order-only", "protocol", "function"],
)
def test_each_kind_of_reranker_orders_the_context(tmp_path: Path, reranker: Any) -> None:
    out = run(tmp_path, reranker)
    assert out["rag_citations"][0]["source"] == FAVOURED
    step = next(s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "rerank")
    assert step["path"] == "reranker"
    assert out["rag_retrieval_debug"]["fallbacks"] == []


def test_cross_encoder_sees_the_question_and_chunk_texts(tmp_path: Path) -> None:
    model = DuckCrossEncoder()
    out = run(tmp_path, model)
    assert {q for q, _ in model.pairs} == {QUESTION}
    assert out["rag_candidates"][0]["text"] in {t for _, t in model.pairs}


def test_compressor_drops_score_zero(tmp_path: Path) -> None:
    out = run(tmp_path, KeepTwoCompressor())
    scores = [c["scores"]["cross_encoder"] for c in out["rag_candidates"]]
    assert scores[:2] == pytest.approx([0.9, 0.8])
    assert set(scores[2:]) == {0.0}


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (42, "int cannot rerank"),
        ("bge-reranker", "not valid"),
        ("cross_encoder:", "not valid"),
        (DuckCrossEncoder, "is a class"),
        (lambda query: [1.0], "cannot be called as fn"),
        ({"model": "x"}, "dict cannot rerank"),
    ],
)
def test_wrong_objects_fail_when_the_graph_is_built(bad: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        build_rag_graph(reranker=bad)


def test_cross_encoder_folder_without_a_model_fails_at_build(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"\0")
    with pytest.raises(ConfigError, match=r"no config\.json"):
        build_rag_graph(reranker=f"cross_encoder:{tmp_path}")
    with pytest.raises(ConfigError, match=r"no config\.json"):
        as_reranker(f"cross_encoder:{tmp_path / 'missing'}")
