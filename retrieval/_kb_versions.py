"""A knowledge base's versions: the kept ones listed, one made current again, and the
live one validated. The store keeps them and says what it cannot do (a database keeps
the live version only); this checks the arguments at the door."""

from __future__ import annotations

from kbgraph.errors import ConfigError

from .storage import IndexStore, VersionInfo


def restore(store: IndexStore, version: object, lock_timeout: float) -> VersionInfo:
    """``KnowledgeBase.restore`` (the caller forgets its last freshness check)."""
    if isinstance(version, bool) or not isinstance(version, str | int):
        raise ConfigError(
            f"version must be a row number of versions() (1 = newest), a generation name "
            f"or a unique prefix of one, got {type(version).__name__} {version!r}; e.g. "
            "kb.restore(1) or kb.restore('gen-18a7')"
        )
    return store.restore(str(version), lock_timeout)


__all__ = ["restore"]
