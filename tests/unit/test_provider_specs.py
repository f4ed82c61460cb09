"""``provider:model`` specs for any LangChain integration: chat models through
``init_chat_model``, embeddings through ``init_embeddings``, besides kbgraph's own openai /
azure_openai / openai_compatible / local / fake specs. An integration whose package is
installed (langchain-ollama here, a dev dependency) resolves to its class; one whose
package is missing is a ConfigError naming the package to install."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_ollama import ChatOllama, OllamaEmbeddings

from kbgraph.errors import ConfigError
from kbgraph.graphs._models import resolve_chat_model
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._embeddings import (
    EmbeddingInfo,
    EmbeddingSpec,
    describe_embeddings,
    parse_spec,
    resolve_embeddings,
)


def test_chat_spec_of_an_installed_integration() -> None:
    model = resolve_chat_model("ollama:llama3.2")
    assert isinstance(model, ChatOllama)
    assert (model.model, model.temperature) == ("llama3.2", 0)


@pytest.mark.parametrize(
    ("spec", "package"),
    [
        ("anthropic:claude-haiku-4-5", "langchain-anthropic"),
        ("mistralai:mistral-small-latest", "langchain-mistralai"),
        ("groq:llama-3.3-70b-versatile", "langchain-groq"),
    ],
)
def test_chat_spec_of_a_missing_integration_names_the_package(spec: str, package: str) -> None:
    with pytest.raises(ConfigError, match=f"needs the package {package}.*pip install {package}"):
        resolve_chat_model(spec)


def test_unknown_chat_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not one LangChain can build"):
        resolve_chat_model("nosuch:model")


def test_embedding_spec_of_an_installed_integration() -> None:
    assert parse_spec("ollama:nomic-embed-text") == EmbeddingSpec(
        "langchain", "nomic-embed-text", integration="ollama"
    )
    assert describe_embeddings("ollama:nomic-embed-text") == EmbeddingInfo(
        "ollama", "nomic-embed-text"
    )
    embeddings = resolve_embeddings("ollama:nomic-embed-text")
    assert isinstance(embeddings, OllamaEmbeddings)
    assert embeddings.model == "nomic-embed-text"


@pytest.mark.parametrize(
    ("spec", "package"),
    [("cohere:embed-v4.0", "langchain-cohere"), ("mistralai:mistral-embed", "langchain-mistralai")],
)
def test_embedding_spec_of_a_missing_integration_names_the_package(
    spec: str, package: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=f"needs the package {package}"):
        resolve_embeddings(spec)
    (tmp_path / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    kb = KnowledgeBase(tmp_path, embedding=spec)
    with pytest.raises(ConfigError, match=f"pip install {package}"):
        kb.index()


def test_unknown_embedding_provider_is_refused_when_parsed() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nosuch'"):
        parse_spec("nosuch:model")
