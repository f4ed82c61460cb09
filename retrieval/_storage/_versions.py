"""Kept versions as every store describes them, and how many a knowledge base keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from kbgraph._base.camel import camel, to_camel_dict
from kbgraph.errors import ConfigError

from ._meta import DEFAULT_KEEP_VERSIONS

MAX_KEEP_VERSIONS = 100


@camel
@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One kept version. ``problem`` says why it cannot be opened (then only its name
    and whether it is current are known)."""

    name: Annotated[str, Field(alias="generation")]
    current: bool
    indexed_at: Annotated[str | None, Field(alias="lastIndexed")] = None
    file_count: int | None = None
    chunk_count: int | None = None
    embedding: str | None = None  # provider:model, None for a BM25-only index
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return to_camel_dict(self)


def check_keep(keep: int) -> int:
    if not 1 <= keep <= MAX_KEEP_VERSIONS:
        raise ConfigError(
            f"keep_versions is {keep}; allowed: 1 (only the current index) to "
            f"{MAX_KEEP_VERSIONS}; the default keeps {DEFAULT_KEEP_VERSIONS}"
        )
    return keep


__all__ = ["MAX_KEEP_VERSIONS", "VersionInfo", "check_keep"]
