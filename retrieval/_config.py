"""Settings of the engine, validated once at the boundary (pydantic), JSON-serialisable so
that they can live in ``meta.json`` and in LangGraph's ``context_schema``."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field, GetJsonSchemaHandler, field_validator, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from kbgraph._base.validation import Settings

from ._rankers import default_weights, ranker_names, search_modes

ChunkStrategy = Literal["fixed_size", "sentence", "paragraph", "recursive", "markdown", "code"]


class _RegisteredModes:
    """A search mode's JSON schema: a string of the modes registered when the schema is
    made (Studio's context form and MCP's ``inputSchema`` offer them as choices). The
    validators check the registry itself, so a mode registered later is still accepted."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema: dict[str, Any] = handler(core_schema)
        schema["enum"] = list(search_modes())
        return schema


SearchMode = Annotated[str, _RegisteredModes()]
"""``hybrid`` or a registered ranker's name (``vector``, ``bm25``, ``title``, ...):
``kbgraph.retrieval.search_modes()`` lists them."""


def check_search_mode(mode: str | None) -> str | None:
    """``mode`` when it is ``None`` or a registered mode; else ``ValueError`` (in a
    validator: a validation error) naming the allowed ones."""
    if mode is not None and mode not in search_modes():
        raise ValueError(f"unknown search mode {mode!r}; allowed: {', '.join(search_modes())}")
    return mode


FusionMethod = Literal["rrf", "convex"]

DEFAULT_INCLUDE: tuple[str, ...] = tuple(
    f"**/*.{ext}"
    for ext in (
        "md",
        "txt",
        "rst",
        "adoc",
        "py",
        "js",
        "ts",
        "rs",
        "go",
        "java",
        "json",
        "yaml",
        "yml",
        "toml",
        "csv",
        "html",
        "pdf",
        "docx",
    )
)
# Folders never worth indexing: VCS data, dependency trees, caches. Virtualenvs and conda
# envs are found by their marker file (pyvenv.cfg, conda-meta/) whatever their name, so a
# documentation folder called `env/` is indexed; `.venv` is a name reserved for them.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    "**/.git/**",
    "**/.hg/**",
    "**/.svn/**",
    "**/.venv/**",
    "**/.tox/**",
    "**/.nox/**",
    "**/node_modules/**",
    "**/__pycache__/**",
    "**/.mypy_cache/**",
    "**/.pytest_cache/**",
    "**/.ruff_cache/**",
)
# Secrets are refused even when an include pattern matches them.
SECRET_DENY: tuple[str, ...] = (
    "**/.env*",  # .env, .env.local, .envrc (direnv), .envs/
    "**/*.env",
    "**/*.pem",
    "**/*.key",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/credentials",
    "**/credentials.*",
    "**/.netrc",
    "**/.pgpass",
    "**/.npmrc",
    "**/.pypirc",
    "**/*.p12",
    "**/*.pfx",
    "**/.aws/**",
    "**/.kube/config",
    "**/.docker/config.json",
    "**/.git-credentials",
    "**/.htpasswd",
    "**/*.jks",
    "**/*.keystore",
    "**/*.tfvars",
    "**/secrets.*",
)


class ScanConfig(Settings):
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    max_file_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    trust_hard_links: bool = Field(
        default=False,
        description="index a file with several names (hard links) even when some name is "
        "not a file the scan indexes (a secret, in .git, outside the folder); off, such a "
        "file is skipped as hard-link",
    )


class ChunkConfig(Settings):
    """``strategy`` ``recursive`` is the default; Markdown files use ``markdown`` and code
    files ``code`` when ``by_kind`` is on, so that sections and definitions are kept whole."""

    strategy: ChunkStrategy = "recursive"
    chunk_size: int = Field(default=500, ge=16, description="target characters per chunk")
    overlap: int = Field(default=50, ge=0, description="characters shared by neighbours")
    max_chunk_chars: int = Field(default=2000, ge=16, description="hard cap per chunk")
    by_kind: bool = True

    @model_validator(mode="after")
    def _clamp(self) -> ChunkConfig:
        # Overlap must stay below the size or chunking would never advance.
        if self.overlap >= self.chunk_size:
            object.__setattr__(self, "overlap", self.chunk_size // 4)
        if self.max_chunk_chars < self.chunk_size:
            object.__setattr__(self, "max_chunk_chars", self.chunk_size)
        return self


class SearchConfig(Settings):
    """How one search ranks. ``mode`` ``None`` means hybrid when the index has vectors, else
    bm25. ``score_threshold`` drops results scored lower (in the subgraph: its 0..1 score)."""

    mode: SearchMode | None = None  # None: hybrid when vectors exist, else bm25
    top_k: int = Field(default=5, ge=1, le=1000)
    candidates_per_ranker: int | None = Field(default=None, ge=1)
    fusion: FusionMethod = Field(
        default="rrf",
        description="how hybrid combines its rankers: rrf (ranks; k = rrf_k) or convex "
        "(weights × min-max normalised scores)",
    )
    rrf_k: int = Field(default=60, ge=1)
    weights: dict[str, float] = Field(
        default_factory=default_weights,
        description="per-ranker weight in either fusion; convex uses them as proportions; "
        "hybrid fuses the rankers named here (default: those registered with a hybrid weight)",
    )
    score_threshold: float | None = Field(default=None, allow_inf_nan=False)

    @field_validator("mode")
    @classmethod
    def _registered_mode(cls, mode: str | None) -> str | None:
        return check_search_mode(mode)

    @field_validator("weights")
    @classmethod
    def _known_finite_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        for name, weight in weights.items():
            if name not in ranker_names():
                known = ", ".join(ranker_names())
                raise ValueError(f"rankers are {known}; got a weight for {name!r}")
            if not (math.isfinite(weight) and weight >= 0):
                raise ValueError(f"weight of {name} must be finite and >= 0, got {weight}")
        return weights

    def candidates(self) -> int:
        """Cormack et al. fuse deep lists; 4·top_k with a floor of 20 keeps fusion stable."""
        return self.candidates_per_ranker or max(20, 4 * self.top_k)


__all__ = [
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "SECRET_DENY",
    "ChunkConfig",
    "ChunkStrategy",
    "FusionMethod",
    "ScanConfig",
    "SearchConfig",
    "SearchMode",
]
