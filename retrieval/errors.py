"""One small exception hierarchy. Every message says what was wrong, what is allowed and
what to do next, because the CLI prints it as the one-line reason of a failure."""

from __future__ import annotations


class KbgraphError(Exception):
    """Base of every error kbgraph raises on purpose."""


class ConfigError(KbgraphError, ValueError):
    """A setting or spec is not valid (bad embedding spec, chunk size, mode ...)."""


class IndexNotFoundError(KbgraphError):
    """The folder has no index yet."""


class IndexCorruptError(KbgraphError):
    """An index file failed validation (bad magic, version or length)."""


class IndexLockedError(KbgraphError, TimeoutError):
    """Another process held the index lock for longer than the timeout."""


class ModelMismatchError(KbgraphError):
    """The embedding model in use is not the one the index was built with (another
    provider or model name, or vectors of another size)."""


class DimensionMismatchError(ModelMismatchError):
    """The embedding model gives vectors of another size than the existing index."""


class EmbeddingError(KbgraphError):
    """The embedding provider failed after retries."""


__all__ = [
    "ConfigError",
    "DimensionMismatchError",
    "EmbeddingError",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexNotFoundError",
    "KbgraphError",
    "ModelMismatchError",
]
