"""Settings of the retrieval subgraph: LangGraph 1.x ``context_schema``.

Nodes read them with :func:`settings_from_runtime` (``runtime.context``). Every field is
JSON-serialisable so that LangGraph Studio can show and edit them. A missing context means
defaults; a dict is validated into :class:`RagSettings` (unknown keys are ignored, so a
parent agent may pass its own, larger context).

Knowledge bases: when ``knowledge_bases`` is empty the folders named by the environment
variable ``KBGRAPH_FOLDER`` (one path, or several separated by ``os.pathsep``) are used;
without that variable there is no knowledge base, and retrieval reports "add documents"
rather than indexing whatever the current directory happens to be.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from kbgraph.errors import ConfigError
from kbgraph.retrieval.config import FusionMethod, SearchMode

RerankMode = Literal["heuristic", "llm", "none", "cross_encoder"]
RERANK_MODES: tuple[RerankMode, ...] = ("heuristic", "llm", "none", "cross_encoder")
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "vector", "bm25")
FUSION_METHODS: tuple[FusionMethod, ...] = ("rrf", "convex")
FOLDER_ENV = "KBGRAPH_FOLDER"
MAX_REWRITES_LIMIT = 5


class KnowledgeBaseSpec(TypedDict):
    """One knowledge base: a folder (absolute, or relative to the working directory), the
    ``name`` sources are attributed to (default: the folder's name) and a ``description``
    SelectScope matches questions against."""

    folder: str
    name: NotRequired[str]
    description: NotRequired[str]


@dataclass(frozen=True, slots=True)
class ResolvedKnowledgeBase:
    name: str
    folder: str
    description: str


@dataclass
class RagSettings:
    """The subgraph's context schema. ``chat_model`` is a spec for
    :func:`kbgraph.graphs.models.resolve_chat_model` (``None``: every node uses its heuristic path).
    ``score_threshold`` drops candidates whose final 0..1 score is lower. ``rerank_diversity``
    (0 to below 1, default 0 = off) is the heuristic rerank's discount of each further chunk
    of a file already chosen, for a context that spans more files; ``rerank_section_weight``
    (0 to 1, default 0 = off) is its bonus for query terms in a chunk's heading path. The grounding
    heuristic needs ``grounding_min_coverage`` of the question's terms in the context and,
    when a vector ranker ran, a best cosine similarity of ``grounding_min_vector_score``
    (``None`` switches that floor off)."""

    knowledge_bases: list[KnowledgeBaseSpec] = field(default_factory=list)
    embedding: str = "local"
    chat_model: str | None = None
    top_k: int = 5
    candidates_per_ranker: int | None = None
    fusion: FusionMethod = "rrf"
    rrf_k: int = 60
    rrf_weights: dict[str, float] = field(default_factory=lambda: {"vector": 1.0, "bm25": 1.0})
    score_threshold: float | None = None
    rerank: RerankMode = "heuristic"
    rerank_diversity: float = 0.0
    rerank_section_weight: float = 0.0
    context_budget_tokens: int = 2000
    max_rewrites: int = 1
    search_mode: SearchMode = "hybrid"
    auto_index: bool = True
    llm_timeout_seconds: float = 60.0
    llm_rerank_max: int = 20
    grounding_min_coverage: float = 0.5
    grounding_min_vector_score: float | None = 0.2

    def __post_init__(self) -> None:
        _check_positive("top_k", self.top_k)
        if self.candidates_per_ranker is not None:
            _check_positive("candidates_per_ranker", self.candidates_per_ranker)
        _check_positive("rrf_k", self.rrf_k)
        _check_positive("context_budget_tokens", self.context_budget_tokens)
        _check_positive("llm_rerank_max", self.llm_rerank_max)
        if not 0.0 <= self.rerank_diversity < 1.0:
            raise ConfigError(
                f"rerank_diversity is {self.rerank_diversity}; allowed: 0 (off, the default) "
                "up to below 1 (each further chunk of a file already chosen loses that share)."
            )
        if not 0.0 <= self.rerank_section_weight <= 1.0:
            raise ConfigError(
                f"rerank_section_weight is {self.rerank_section_weight}; allowed: 0 (off, the "
                "default) to 1 (the heading-match bonus, added to the fused score)."
            )
        if not 0 <= self.max_rewrites <= MAX_REWRITES_LIMIT:
            raise ConfigError(
                f"max_rewrites is {self.max_rewrites}; allowed: 0 to {MAX_REWRITES_LIMIT} "
                "(each rewrite runs retrieval again)."
            )
        if self.rerank not in RERANK_MODES:
            raise ConfigError(f"rerank is {self.rerank!r}; allowed: {', '.join(RERANK_MODES)}.")
        if self.fusion not in FUSION_METHODS:
            raise ConfigError(
                f"fusion is {self.fusion!r}; allowed: {', '.join(FUSION_METHODS)} (convex "
                "combines each query's vector and BM25 scores, weighted by rrf_weights)."
            )
        if self.search_mode not in SEARCH_MODES:
            raise ConfigError(
                f"search_mode is {self.search_mode!r}; allowed: {', '.join(SEARCH_MODES)}."
            )
        if not (self.llm_timeout_seconds > 0 and math.isfinite(self.llm_timeout_seconds)):
            raise ConfigError("llm_timeout_seconds must be a positive number of seconds.")
        for name, weight in self.rrf_weights.items():
            if not (math.isfinite(weight) and weight >= 0):
                raise ConfigError(
                    f"rrf_weights[{name!r}] is {weight}; weights must be finite and >= 0."
                )
        for spec in self.knowledge_bases:
            if not isinstance(spec, Mapping) or not str(spec.get("folder") or "").strip():
                raise ConfigError(
                    f"knowledge base {spec!r} has no folder; give each knowledge base as "
                    '{"name": ..., "folder": "path/to/folder", "description": ...}.'
                )

    def resolved_knowledge_bases(self) -> list[ResolvedKnowledgeBase]:
        """The configured knowledge bases (else those of ``KBGRAPH_FOLDER``), with absolute
        folders and unique names."""
        specs: list[Mapping[str, Any]] = list(self.knowledge_bases)
        if not specs:
            env = os.environ.get(FOLDER_ENV, "").strip()
            specs = [{"folder": part} for part in env.split(os.pathsep) if part.strip()]
        out: list[ResolvedKnowledgeBase] = []
        used: set[str] = set()
        for spec in specs:
            folder = str(Path(str(spec["folder"]).strip()).expanduser().resolve())
            name = str(spec.get("name") or Path(folder).name or "kb")
            if name in used:
                raise ConfigError(
                    f"two knowledge bases are named {name!r}; give each a distinct 'name'."
                )
            used.add(name)
            out.append(ResolvedKnowledgeBase(name, folder, str(spec.get("description") or "")))
        return out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} is {value!r}; it must be a whole number of 1 or more.")


_FIELDS = frozenset(f.name for f in dataclasses.fields(RagSettings))


def settings_from_context(context: Any) -> RagSettings:
    """``None`` → defaults; a ``RagSettings`` → itself; a mapping or any other object (a
    parent agent's own context dataclass) → the fields it shares with ``RagSettings``."""
    if context is None:
        return RagSettings()
    if isinstance(context, RagSettings):
        return context
    if isinstance(context, Mapping):
        values = {k: v for k, v in context.items() if k in _FIELDS}
    else:
        values = {k: getattr(context, k) for k in _FIELDS if hasattr(context, k)}
    try:
        return RagSettings(**values)
    except TypeError as exc:
        raise ConfigError(f"invalid subgraph settings: {exc}; see graphs.RagSettings.") from exc


def settings_from_runtime(runtime: Any) -> RagSettings:
    """The settings of a run: ``runtime`` is a LangGraph ``Runtime`` (its ``context`` may be
    ``None``, a dict or a dataclass), or ``None``; a context passed directly also works."""
    if isinstance(runtime, (Mapping, RagSettings)):
        return settings_from_context(runtime)
    return settings_from_context(getattr(runtime, "context", None))


__all__ = [
    "FOLDER_ENV",
    "MAX_REWRITES_LIMIT",
    "KnowledgeBaseSpec",
    "RagSettings",
    "RerankMode",
    "ResolvedKnowledgeBase",
    "settings_from_context",
    "settings_from_runtime",
]
