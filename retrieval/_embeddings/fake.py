"""A deterministic embedder for tests: hashed bag of words, no model, no network.

Texts that share words get similar vectors, so ranking tests behave like they would with a
real model on lexical overlap, while running in microseconds. Never a default."""

from __future__ import annotations

import hashlib
import math

from langchain_core.embeddings import Embeddings

from kbgraph._base.faces import shown_as
from kbgraph._base.text import words
from kbgraph.errors import ConfigError

from ._spec import DEFAULT_FAKE_DIMS

# Texts without any word still need a unit vector, so that cosine similarity is defined.
_EMPTY_FEATURE = "\0empty"


def hashed_feature(token: str, dims: int) -> tuple[int, float]:
    """Index and sign of one token: the signed hashing trick of Weinberger et al.,
    "Feature Hashing for Large Scale Multitask Learning" (ICML 2009). The sign keeps
    colliding tokens from adding up, so inner products stay unbiased."""
    digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dims, (1.0 if (value >> 63) & 1 else -1.0)


def bag_of_words_vector(text: str, dims: int) -> list[float]:
    """L2-normalised hashed counts of the words of ``text``."""
    vector = [0.0] * dims
    tokens = words(text) or [_EMPTY_FEATURE]
    for token in tokens:
        index, sign = hashed_feature(token, dims)
        vector[index] += sign
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        # Every token cancelled out in a collision: fall back to the empty feature.
        index, sign = hashed_feature(_EMPTY_FEATURE, dims)
        vector[index] = sign
        return vector
    return [v / norm for v in vector]


@shown_as("kbgraph.testing")
class FakeEmbeddings(Embeddings):
    """Deterministic hashed bag-of-words embeddings (``fake`` / ``fake:<dims>`` spec)."""

    def __init__(self, dims: int = DEFAULT_FAKE_DIMS) -> None:
        if dims < 1:
            raise ConfigError(f"fake embeddings need dims of at least 1, got {dims}")
        self.dims = dims
        self.model = f"bow-{dims}"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [bag_of_words_vector(text, self.dims) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return bag_of_words_vector(text, self.dims)

    def __repr__(self) -> str:
        return f"FakeEmbeddings(dims={self.dims})"


__all__ = ["DEFAULT_FAKE_DIMS", "FakeEmbeddings", "bag_of_words_vector", "hashed_feature"]
