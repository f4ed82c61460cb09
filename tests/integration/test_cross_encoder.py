"""``cross_encoder:<folder>`` loads a real sentence-transformers cross-encoder offline and
the subgraph reranks with it. No cross-encoder weights are on the package registries, so
the test builds a tiny BERT sequence classifier (random weights, a 20-word vocabulary),
saves it and loads it back by path: the loader path a user's own model takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.graphs import build_rag_graph
from kbgraph.graphs._rerankers import CrossEncoderReranker, load_cross_encoder
from tests.unit._rag_fakes import ask, fake_kb, registry_with, settings_for

pytestmark = pytest.mark.integration

VOCAB = (
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "how", "do", "i", "configure", "the",
    "retry", "policy", "?", "harbor", "retries", "failed", "provider", "calls", "clients",
    "authenticate", "with", "api", "keys",
)  # fmt: skip


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("cross-encoder")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=128, num_labels=1,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


def test_loads_offline_and_scores_pairs(model_folder: Path) -> None:
    reranker = load_cross_encoder(model_folder)
    assert isinstance(reranker, CrossEncoderReranker)
    direct = reranker.model.predict([("how do i configure the retry policy ?", "harbor retries")])
    assert len(direct) == 1


def test_subgraph_reranks_with_the_folder_spec(model_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    graph = build_rag_graph(
        registry=registry_with({folder: fake_kb(folder)}), reranker=f"cross_encoder:{model_folder}"
    )
    out = graph.invoke(
        ask("How do I configure the retry policy?"),
        context=settings_for(folder, rerank="cross_encoder"),
    )
    candidates = out["rag_candidates"]
    model = load_cross_encoder(model_folder).model
    expected = model.predict([("How do I configure the retry policy?", candidates[0]["text"])])
    assert candidates[0]["scores"]["cross_encoder"] == pytest.approx(float(expected[0]), abs=1e-5)
    step = next(s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "rerank")
    assert step["path"] == "reranker"
