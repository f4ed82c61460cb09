"""A knowledge base's embedding model: the spec it was given (or the index recorded), what
it says of itself, and the batching embedder, loaded on first use."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from kbgraph.errors import ConfigError

from ._embeddings import call_timeout_for, describe_embeddings, resolve_embeddings
from ._search import check_query_model, no_query_model
from ._storage import EmbeddingMeta, ModelLost, ObjectOnly, QueryEmbedder, Snapshot

if TYPE_CHECKING:  # ~0.18 s to import, and a BM25 search never needs it
    from langchain_core.embeddings import Embeddings

    from ._embeddings import BatchEmbedder

EmbeddingSpec: TypeAlias = "str | Embeddings | ObjectOnly | ModelLost | None"


def describe(embedding: EmbeddingSpec) -> EmbeddingMeta | None:
    """The model as an index records it (``dims`` 0: known once it embedded something)."""
    if embedding is None or isinstance(embedding, ModelLost):
        return None
    if isinstance(embedding, ObjectOnly):
        return embedding.meta.model_copy(update={"dims": 0})
    info = describe_embeddings(embedding)
    spec = embedding if isinstance(embedding, str) else None
    return EmbeddingMeta(provider=info.provider, model=info.model, dims=0, spec=spec)


class EmbeddingModel:
    """``spec`` resolved lazily: loading a local model costs seconds, so a knowledge base
    that only runs BM25 searches never loads it."""

    def __init__(self, spec: EmbeddingSpec, timeout: float) -> None:
        self.spec = spec
        self.meta = describe(spec)
        self.timeout = timeout
        self._embedder: BatchEmbedder | None = None
        self._lock = threading.Lock()

    def embedder(self) -> BatchEmbedder:
        with self._lock:
            if self._embedder is None:
                spec = self.spec
                if spec is None:
                    raise ConfigError("this knowledge base has no embedding model (lexical only)")
                if isinstance(spec, ObjectOnly | ModelLost):
                    raise spec.error()
                model = (
                    resolve_embeddings(spec, timeout=self.timeout)
                    if isinstance(spec, str)
                    else spec
                )
                bound = call_timeout_for(spec, self.timeout)
                # Imported here: a BM25 search embeds nothing.
                from ._embeddings import BatchEmbedder

                self._embedder = BatchEmbedder(model, call_timeout=bound)
            return self._embedder

    def check_usable(self) -> None:
        """An index whose model is lost (recorded nowhere readable) cannot be updated."""
        if isinstance(self.spec, ModelLost):
            raise self.spec.error()

    def query_embedder(
        self, reader: Snapshot, embed: Callable[[str], np.ndarray]
    ) -> QueryEmbedder | None:
        """Embeds queries for the vector ranker with ``embed``, after checking that this
        model is the one the index was built with (checked only when a query is embedded,
        so BM25 searches work whatever the model)."""
        if not reader.has_vectors:
            return None

        def embed_query(query: str) -> np.ndarray:
            check_query_model(reader.meta.embedding, self.meta)
            if self.spec is None:  # lexical only by choice, not a lost model
                raise no_query_model(reader.meta.embedding)
            return embed(query)

        return embed_query


__all__ = ["EmbeddingModel", "EmbeddingSpec", "describe"]
