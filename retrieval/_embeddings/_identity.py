"""The identity of an embedding model, from a spec or from any LangChain ``Embeddings``
object: the provider and model that key the embedding cache and that an index records, so
that a spec and the object it resolves to describe alike."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kbgraph.errors import ConfigError

from ._spec import EmbeddingInfo, is_embeddings, parse_spec

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings


def _info_of_object(embeddings: Embeddings) -> EmbeddingInfo:
    from ._local import LocalEmbeddings
    from .fake import FakeEmbeddings

    if isinstance(embeddings, FakeEmbeddings):
        return EmbeddingInfo("fake", embeddings.model)
    if isinstance(embeddings, LocalEmbeddings):
        return EmbeddingInfo("local", embeddings.model_name)
    # Not imported on purpose (it takes seconds): an object of its classes implies it is.
    lc_openai = sys.modules.get("langchain_openai")
    if lc_openai is not None and isinstance(embeddings, lc_openai.AzureOpenAIEmbeddings):
        model = embeddings.deployment or embeddings.model
        return EmbeddingInfo("azure_openai", model, embeddings.dimensions)
    if lc_openai is not None and isinstance(embeddings, lc_openai.OpenAIEmbeddings):
        base = embeddings.openai_api_base
        host = urlsplit(base).hostname if base else "api.openai.com"
        provider = "openai" if host == "api.openai.com" else "openai_compatible"
        return EmbeddingInfo(provider, embeddings.model, embeddings.dimensions)
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    dims = getattr(embeddings, "dimensions", None)
    return EmbeddingInfo(
        type(embeddings).__name__,
        str(model) if model else "default",
        dims if isinstance(dims, int) else None,
    )


def describe_embeddings(spec_or_embeddings: str | Embeddings) -> EmbeddingInfo:
    """Provider and model of a spec or of any LangChain ``Embeddings``. A spec and the
    object it resolves to describe alike, so either can key the cache."""
    if isinstance(spec_or_embeddings, str):
        parsed = parse_spec(spec_or_embeddings)
        return EmbeddingInfo(parsed.integration or parsed.provider, parsed.model)
    if not is_embeddings(spec_or_embeddings):
        raise ConfigError(
            f"expected an embedding spec or a LangChain Embeddings, got "
            f"{type(spec_or_embeddings).__name__}; pass e.g. 'local' or OpenAIEmbeddings(...)"
        )
    return _info_of_object(spec_or_embeddings)


__all__ = ["describe_embeddings"]
