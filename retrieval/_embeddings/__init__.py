"""The embedding layer: specs to LangChain ``Embeddings``, robust batch embedding, and the
embedding cache.

    embeddings = resolve_embeddings("local")          # or openai:<model>, fake, ...
    embedder = BatchEmbedder(embeddings)
    with EmbeddingCache(index_dir / "embeddings.sqlite", embedder.info.key) as cache:
        outcome = embed_with_cache(embedder, cache, texts)

``LocalEmbeddings``, ``FakeEmbeddings`` and ``packaged_model_dir`` load on first use: their
classes subclass LangChain's ``Embeddings``, whose import costs ~0.18 s, and a BM25 search
needs none of them.
"""

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

from ._identity import describe_embeddings
from ._providers import DEFAULT_TIMEOUT, call_timeout_for, resolve_embeddings
from ._spec import (
    ALLOWED_FORMS,
    PACKAGED_MODEL,
    EmbeddingInfo,
    EmbeddingSpec,
    parse_spec,
    spec_forms,
)

if TYPE_CHECKING:
    # Batching, the cache (sqlite3) and retries load on first use too: a BM25 search reads
    # a knowledge base's model spec, and embeds nothing.
    from ._batching import (
        BatchEmbedder,
        EmbeddedBatch,
        EmbedOutcome,
        InputLimited,
        check_dims,
        l2_normalise,
        length_order,
    )
    from ._cache import CachedEmbedOutcome, EmbeddingCache, VectorCache, embed_with_cache
    from ._local import LocalEmbeddings as LocalEmbeddings
    from ._local import packaged_model_dir as packaged_model_dir
    from ._retry import ErrorVerdict, backoff_delay, classify_error, parse_retry_after
    from .fake import FakeEmbeddings as FakeEmbeddings

__getattr__ = lazy_imports(globals())

__all__ = [
    "ALLOWED_FORMS",
    "DEFAULT_TIMEOUT",
    "PACKAGED_MODEL",
    "BatchEmbedder",
    "CachedEmbedOutcome",
    "EmbedOutcome",
    "EmbeddedBatch",
    "EmbeddingCache",
    "EmbeddingInfo",
    "EmbeddingSpec",
    "ErrorVerdict",
    "FakeEmbeddings",
    "InputLimited",
    "LocalEmbeddings",
    "VectorCache",
    "backoff_delay",
    "call_timeout_for",
    "check_dims",
    "classify_error",
    "describe_embeddings",
    "embed_with_cache",
    "l2_normalise",
    "length_order",
    "packaged_model_dir",
    "parse_retry_after",
    "parse_spec",
    "resolve_embeddings",
    "spec_forms",
]
