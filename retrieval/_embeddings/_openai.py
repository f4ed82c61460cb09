"""OpenAI-compatible embeddings whose vectors are matched to their inputs by ``index``.

The embeddings API answers ``data: [{"index": i, "embedding": [...]}, ...]``; nothing in
the API promises the items come in input order, and some servers (a proxy that fans a
batch out, a server that embeds longest first) answer in another. langchain-openai takes
them in the order they come, so every vector could be attached to another text (and an
index of such vectors validates: every vector has unit length). These classes place each
vector at its ``index``; a response whose indexes are not exactly ``0 … n-1`` is refused,
and so is one without indexes whose count is not the number of inputs. A server that
answers without indexes (allowed: the count is right) is checked once, on its first answer
of several inputs: the first and the last input are embedded alone, and their vectors must
be the ones the batch gave them; a server that reorders is refused (two requests more).

Only the path kbgraph uses is changed (``check_embedding_ctx_length=False``, see
``_providers``); with token-length checking on, langchain-openai's own path runs.
Imported only when an OpenAI-family spec is built (langchain-openai takes a second).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_openai import AzureOpenAIEmbeddings, OpenAIEmbeddings
from pydantic import PrivateAttr

from kbgraph.errors import EmbeddingError


def _items(response: Any) -> Sequence[dict[str, Any]]:
    data = response if isinstance(response, dict) else response.model_dump()
    return data.get("data") or []


def indexed(response: Any) -> bool:
    """Whether every item of the response carries its ``index``."""
    items = _items(response)
    return bool(items) and all(isinstance(item.get("index"), int) for item in items)


_SAME = 0.999  # cosine of one text's vector from two requests (float noise, base64 or not)


def order_problem(
    batch: Sequence[str], vectors: Sequence[Any], alone: dict[int, Any]
) -> str | None:
    """Why the vectors of an answer without indexes are not in input order, or None:
    ``alone`` maps positions of ``batch`` to the vector of that input embedded alone."""
    for position, vector in alone.items():
        a = np.asarray(vector, dtype=np.float64)
        b = np.asarray(vectors[position], dtype=np.float64)
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        if a.shape != b.shape or not norm or float(a @ b) / norm < _SAME:
            return (
                f"the embeddings server answered {len(batch)} vectors without an index on each, "
                f"and not in the order of the inputs (input {position} embedded alone gets "
                "another vector than in the batch), so they cannot be matched to their texts; "
                "use a server that sends each item's `index` (OpenAI-compatible) or answers "
                "in input order"
            )
    return None


def matched_vectors(response: Any, expected: int) -> list[list[float]]:
    """The vectors of an embeddings response in input order (see the module docstring)."""
    items = _items(response)
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

    _order_checked: bool = PrivateAttr(default=False)

    def _check_order(self, batch: list[str], response: Any, vectors: list[list[float]]) -> None:
        """Once, for an answer of several inputs without indexes: its first and last
        inputs embedded alone must get the vectors the batch gave them."""
        if self._order_checked or len(batch) < 2 or indexed(response):
            return
        params = self._invocation_params
        alone = {
            k: matched_vectors(self.client.create(input=[batch[k]], **params), 1)[0]
            for k in (0, len(batch) - 1)
        }
        self._settle_order(batch, vectors, alone)

    async def _acheck_order(
        self, batch: list[str], response: Any, vectors: list[list[float]]
    ) -> None:
        if self._order_checked or len(batch) < 2 or indexed(response):
            return
        params = self._invocation_params
        alone = {}
        for k in (0, len(batch) - 1):
            answer = await self.async_client.create(input=[batch[k]], **params)
            alone[k] = matched_vectors(answer, 1)[0]
        self._settle_order(batch, vectors, alone)

    def _settle_order(
        self, batch: list[str], vectors: list[list[float]], alone: dict[int, Any]
    ) -> None:
        problem = order_problem(batch, vectors, alone)
        if problem is not None:
            raise EmbeddingError(problem)
        self._order_checked = True

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
            matched = matched_vectors(response, len(batch))
            self._check_order(batch, response, matched)
            vectors.extend(matched)
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
            matched = matched_vectors(response, len(batch))
            await self._acheck_order(batch, response, matched)
            vectors.extend(matched)
        return vectors


class IndexedAzureOpenAIEmbeddings(AzureOpenAIEmbeddings, IndexedOpenAIEmbeddings):
    """``AzureOpenAIEmbeddings`` matching vectors by index."""


__all__ = ["IndexedAzureOpenAIEmbeddings", "IndexedOpenAIEmbeddings", "matched_vectors"]
