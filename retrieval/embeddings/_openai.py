"""OpenAI-compatible embeddings whose vectors are matched to their inputs by ``index``.

The embeddings API answers ``data: [{"index": i, "embedding": [...]}, ...]``; nothing in
the API promises the items come in input order, and some servers (a proxy that fans a
batch out, a server that embeds longest first) answer in another. langchain-openai takes
them in the order they come, so every vector could be attached to another text (and an
index of such vectors validates: every vector has unit length). These classes place each
vector at its ``index``; a response whose indexes are not exactly ``0 … n-1`` is refused,
and so is one without indexes whose count is not the number of inputs.

Only the path kbgraph uses is changed (``check_embedding_ctx_length=False``, see
``_providers``); with token-length checking on, langchain-openai's own path runs.
Imported only when an OpenAI-family spec is built (langchain-openai takes a second).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_openai import AzureOpenAIEmbeddings, OpenAIEmbeddings

from kbgraph.errors import EmbeddingError


def matched_vectors(response: Any, expected: int) -> list[list[float]]:
    """The vectors of an embeddings response in input order (see the module docstring)."""
    data = response if isinstance(response, dict) else response.model_dump()
    items: Sequence[dict[str, Any]] = data.get("data") or []
    indexes = [item.get("index") for item in items]
    if all(isinstance(i, int) and not isinstance(i, bool) for i in indexes) and indexes:
        if sorted(indexes) != list(range(expected)):  # type: ignore[type-var]
            shown = ", ".join(map(str, indexes[:8])) + (" …" if len(indexes) > 8 else "")
            raise EmbeddingError(
                f"the embeddings server answered {len(items)} vectors for {expected} inputs, "
                f"indexed [{shown}] (each index of 0-{expected - 1} once was expected); it is "
                "not behaving as an OpenAI-compatible embeddings API"
            )
        ordered: list[list[float]] = [[] for _ in range(expected)]
        for index, item in zip(indexes, items, strict=True):
            ordered[index] = item["embedding"]  # type: ignore[index]
        return ordered
    if any(i is not None for i in indexes) or len(items) != expected:
        raise EmbeddingError(
            f"the embeddings server answered {len(items)} vectors for {expected} inputs "
            "without an index on each to match them by; it is not behaving as an "
            "OpenAI-compatible embeddings API"
        )
    return [item["embedding"] for item in items]


def _batches(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


class IndexedOpenAIEmbeddings(OpenAIEmbeddings):
    """``OpenAIEmbeddings`` (OpenAI and compatible servers) matching vectors by index."""

    def embed_documents(
        self, texts: list[str], chunk_size: int | None = None, **kwargs: Any
    ) -> list[list[float]]:
        if self.check_embedding_ctx_length:
            return super().embed_documents(texts, chunk_size, **kwargs)
        self._ensure_sync_client_available()
        params = {**self._invocation_params, **kwargs}
        vectors: list[list[float]] = []
        for batch in _batches(texts, chunk_size or self.chunk_size):
            response = self.client.create(input=batch, **params)
            vectors.extend(matched_vectors(response, len(batch)))
        return vectors

    async def aembed_documents(
        self, texts: list[str], chunk_size: int | None = None, **kwargs: Any
    ) -> list[list[float]]:
        if self.check_embedding_ctx_length:
            return await super().aembed_documents(texts, chunk_size, **kwargs)
        params = {**self._invocation_params, **kwargs}
        vectors: list[list[float]] = []
        for batch in _batches(texts, chunk_size or self.chunk_size):
            response = await self.async_client.create(input=batch, **params)
            vectors.extend(matched_vectors(response, len(batch)))
        return vectors


class IndexedAzureOpenAIEmbeddings(AzureOpenAIEmbeddings, IndexedOpenAIEmbeddings):
    """``AzureOpenAIEmbeddings`` matching vectors by index."""


__all__ = ["IndexedAzureOpenAIEmbeddings", "IndexedOpenAIEmbeddings", "matched_vectors"]
