"""The real packaged all-MiniLM-L6-v2 through the ``local`` spec, offline."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from kbgraph.retrieval import ChunkConfig, KnowledgeBase
from kbgraph.retrieval._embeddings import (
    PACKAGED_MODEL,
    BatchEmbedder,
    EmbeddingInfo,
    LocalEmbeddings,
    describe_embeddings,
    packaged_model_dir,
    resolve_embeddings,
)
from tests.support import OpenAIServer

pytestmark = pytest.mark.integration

TEXTS = [
    "How do I reset my password?",
    "Steps to recover a forgotten account password",
    "The bread recipe needs flour, water and yeast.",
    "Wie setze ich mein Passwort zurück? — naïve ünïcode",
    "line one\r\nline two\r\n",
]


@pytest.fixture(scope="module")
def local() -> Iterator[Embeddings]:
    embeddings = resolve_embeddings("local")
    embeddings.embed_query("warm up")  # load once for the module
    yield embeddings


def test_local_spec_gives_normalised_384_dim_vectors(local: Embeddings) -> None:
    outcome = BatchEmbedder(local).embed(TEXTS)
    assert outcome.vectors.shape == (len(TEXTS), 384)
    assert outcome.vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(outcome.vectors, axis=1), 1.0, atol=1e-5)
    assert outcome.failed == []
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_similar_texts_score_higher_than_unrelated(local: Embeddings) -> None:
    embedder = BatchEmbedder(local)
    docs = embedder.embed(TEXTS[1:3]).vectors
    query = embedder.embed_query(TEXTS[0])
    related, unrelated = docs @ query
    assert related > unrelated + 0.3


def test_query_and_document_embeddings_agree_for_the_same_text(local: Embeddings) -> None:
    embedder = BatchEmbedder(local)
    as_doc = embedder.embed([TEXTS[3]]).vectors[0]
    assert float(as_doc @ embedder.embed_query(TEXTS[3])) > 0.999


def test_local_is_described_as_the_packaged_model(local: Embeddings) -> None:
    assert describe_embeddings(local) == EmbeddingInfo("local", PACKAGED_MODEL)
    assert BatchEmbedder(local).dimensions() == 384


def test_long_inputs_are_truncated_by_the_tokenizer_without_failing(local: Embeddings) -> None:
    long_text = "password reset " * 3000  # far beyond 256 wordpieces and max_chars
    outcome = BatchEmbedder(local).embed([long_text, TEXTS[0]])
    assert outcome.truncated == 1
    assert outcome.failed == []
    assert float(outcome.vectors[0] @ outcome.vectors[1]) > 0.3


def test_texts_over_the_token_limit_are_counted_and_warned_once(
    local: Embeddings, caplog: pytest.LogCaptureFixture
) -> None:
    """MiniLM reads 256 word pieces; ~3000 characters of prose are far more, yet far below
    the 8000-character cap: the warning must come from the model's own tokenizer."""
    over = "password reset steps " * 150
    assert len(over) < BatchEmbedder(local).max_chars
    assert isinstance(local, LocalEmbeddings) and local.max_tokens() == 256
    texts = [over, TEXTS[0], over + " again", TEXTS[1]]
    with caplog.at_level(logging.WARNING, logger="kbgraph.retrieval._embeddings"):
        outcome = BatchEmbedder(local, batch_size=1).embed(texts)
    assert outcome.truncated == 2 and outcome.failed == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # four batches, one warning with a count
    assert "2 of 4 texts" in warnings[0] and "256 tokens" in warnings[0]


def test_a_model_folder_by_path_and_nothing_printed(
    local: Embeddings, capfd: pytest.CaptureFixture[str]
) -> None:
    by_path = resolve_embeddings(f"local:{packaged_model_dir()}")
    assert isinstance(by_path, LocalEmbeddings)
    vector = by_path.embed_query(TEXTS[0])
    out, err = capfd.readouterr()
    assert out == ""
    assert "Loading weights" not in err
    assert np.allclose(vector, local.embed_query(TEXTS[0]), atol=1e-5)
    assert describe_embeddings(by_path).model == str(packaged_model_dir().resolve())


def test_the_test_server_can_serve_the_real_model(local: Embeddings) -> None:
    with OpenAIServer(embeddings=local) as server:
        remote = resolve_embeddings(f"{server.base_url}#all-MiniLM-L6-v2")
        over_http = BatchEmbedder(remote).embed(TEXTS).vectors
    assert np.allclose(over_http, BatchEmbedder(local).embed(TEXTS).vectors, atol=1e-5)


def test_a_reindex_counts_the_chunks_the_model_cut_from_reused_vectors(
    local: Embeddings, tmp_path: Path
) -> None:
    """Issue 44 with the real model: ~1800-character chunks are far over 256 word pieces.
    A rebuild (vectors from the embedding cache) and a re-index after a touch (vectors
    from the previous version) embed nothing, and the index still holds the cut chunks."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.md").write_text("# Long\n\n" + "password reset steps " * 90 + "\n")
    (folder / "short.md").write_text("# Short\n\nHow do I reset my password?\n")
    chunking = ChunkConfig(chunk_size=2000, overlap=0, max_chunk_chars=2000)
    kb = KnowledgeBase(folder, embedding=local, chunking=chunking)
    first = kb.index()
    assert (first.truncated, first.embedded) == (1, 2)
    rebuilt = kb.index(rebuild=True)
    assert (rebuilt.embedded, rebuilt.truncated) == (0, 1)
    os.utime(folder / "long.md", ns=(1_000_000_000, 1_000_000_000))
    touched = kb.index()
    assert (touched.embedded, touched.truncated, kb.stats().truncated) == (0, 1, 1)
