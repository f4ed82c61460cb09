"""An index is always searched with the model that built it: the subgraph's default
embedding is ``auto``, and a run never rebuilds an index with another model unless its
settings say so (``rebuild_on_model_change``). Real engine and real folders, ``fake``
embeddings (bag of words) so that it stays fast and offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import HumanMessage

from kbgraph.agents._ask import ask
from kbgraph.errors import ModelMismatchError
from kbgraph.graphs import RagSettings, build_rag_graph
from kbgraph.graphs.searcher import SearcherRegistry
from kbgraph.retrieval import KnowledgeBase
from kbgraph.testing import FakeEmbeddings

QUESTION = "How does the client retry failed requests?"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "retry.md").write_text(
        "# Retries\n\nThe client retries failed requests with exponential backoff.\n", "utf-8"
    )
    (tmp_path / "größe.md").write_bytes("# Größe\r\n\r\nDie Größe des Caches.\r\n".encode())
    return tmp_path


def run(folder: Path, **settings: Any) -> dict[str, Any]:
    graph = build_rag_graph(registry=SearcherRegistry())  # real KnowledgeBase objects
    kbs: Any = [{"folder": str(folder)}]
    context = RagSettings(knowledge_bases=kbs, **settings)
    return graph.invoke({"messages": [HumanMessage(QUESTION)]}, context=context)


def built_with(folder: Path) -> dict[str, Any]:
    with KnowledgeBase(folder) as kb:
        return kb.stats().embedding


def errors(out: dict[str, Any]) -> str:
    step = next(s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "retrieve")
    return str(step["data"]["errors"])


def test_default_run_keeps_a_fake_index(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake:64").index()
    out = run(folder)  # default settings: embedding "auto"
    assert built_with(folder)["model"] == "bow-64"
    assert out["rag_citations"][0]["source"] == "retry.md"
    assert errors(out) == "{}"


def test_default_run_keeps_an_index_built_from_an_embeddings_object(folder: Path) -> None:
    KnowledgeBase(folder, embedding=FakeEmbeddings(32)).index()
    before = built_with(folder)
    out = run(folder)
    assert built_with(folder) == before
    assert out["rag_citations"][0]["source"] == "retry.md"  # BM25 still finds it


def test_another_model_is_refused_not_rebuilt(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake:64").index()
    out = run(folder, embedding="fake:32")
    assert built_with(folder)["model"] == "bow-64"
    assert "ModelMismatchError" in errors(out)
    assert "fake:bow-64" in errors(out) and "fake:bow-32" in errors(out)
    with (
        KnowledgeBase(folder, embedding="fake:32") as kb,
        pytest.raises(ModelMismatchError, match="rebuild_on_model_change"),
    ):
        kb.ensure_fresh()


def test_rebuild_only_when_the_settings_say_so(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake:64").index()
    out = run(folder, embedding="fake:32", rebuild_on_model_change=True)
    assert built_with(folder)["model"] == "bow-32"
    assert errors(out) == "{}"


def test_ask_with_embedding_none_does_not_drop_the_vectors(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake").index()
    result = CliRunner().invoke(ask, [str(folder), QUESTION, "--embedding", "none", "--json"])
    assert result.exit_code == 0, result.output
    with KnowledgeBase(folder) as kb:
        assert kb.has_vectors
        assert kb.stats().embedding["provider"] == "fake"


@pytest.mark.parametrize(
    "shape",
    ["path", "list of paths", "mapping", "list of objects"],
)
def test_knowledge_base_shapes(folder: Path, shape: str) -> None:
    value: Any = {
        "path": str(folder),
        "list of paths": [str(folder)],
        "mapping": {"docs": str(folder)},
        "list of objects": [{"name": "docs", "folder": str(folder)}],
    }[shape]
    (kb,) = RagSettings(knowledge_bases=value).resolved_knowledge_bases()
    assert kb.folder == str(folder.resolve())
    assert kb.name == ("docs" if shape in ("mapping", "list of objects") else folder.name)
