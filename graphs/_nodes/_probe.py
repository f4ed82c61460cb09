"""The lexical probe: cheap evidence a model's decision is checked against.

A lexical search of the question (the registered rankers marked ``probe``: BM25) in
every folder knowledge base in scope, on the index as it is (no indexing, no embedding
model: under a millisecond on a folder index). DecideRetrieve lets a model's "no search
needed" stand only when the probe finds nothing; SelectScope widens a model's scope that
leaves out every place the probe's best hits are in.

A knowledge base the probe cannot read (no index yet, a LangChain store, which has no
BM25, or an error) is *unknown*, never "nothing found": only a probe that read every
knowledge base can say the documents hold nothing on the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbgraph.retrieval import SearchFilters, SearchResult, rankers
from kbgraph.retrieval._internal import file_kind

from .._settings import RagSettings, ResolvedKnowledgeBase
from ._base import NodeDeps
from ._paths import scope_kinds
from ._text import content_terms, coverage

PROBE_HITS = 3


@dataclass(frozen=True, slots=True)
class ProbeHit:
    kb: str
    source: str
    score: float
    coverage: float  # share of the question's topic terms in the chunk

    def to_dict(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "source": self.source,
            "score": round(self.score, 4),
            "coverage": round(self.coverage, 2),
        }


@dataclass
class Probe:
    """What BM25 found for the question: each knowledge base's best hits, the knowledge
    bases it read, and those it could not (with why)."""

    query: str
    hits: list[ProbeHit] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    unknown: dict[str, str] = field(default_factory=dict)

    @property
    def found_nothing(self) -> bool:
        """Every knowledge base in scope was read (there may be none) and none holds a word
        of the question."""
        return not self.unknown and not self.hits

    def evidence(self) -> dict[str, Any]:
        """The probe as a JSON record for ``rag_retrieval_debug``."""
        return {
            "probe": "+".join(probe_rankers()),
            "query": self.query,
            "hits": [h.to_dict() for h in self.hits],
            "read": self.read,
            "unknown": self.unknown,
        }


def probe(
    query: str,
    kbs: Sequence[ResolvedKnowledgeBase],
    settings: RagSettings,
    deps: NodeDeps,
    limit: int = PROBE_HITS,
) -> Probe:
    """BM25 hits of the topic words of ``query`` in each folder knowledge base of ``kbs``
    (best first): how a question is asked ("how do I") finds every document. A query
    without topic words finds nothing."""
    terms = content_terms(query)
    found = Probe(" ".join(terms))
    spec = None if settings.embedding.strip().lower() == "none" else settings.embedding.strip()
    for kb in kbs if terms else ():
        if kb.retriever is not None:
            found.unknown[kb.name] = "a LangChain store has no lexical index to probe"
            continue
        try:
            with deps.registry.lock(
                kb.folder, spec, settings.chunking, kb.store, kb.read_store, kb.index_dir
            ) as searcher:
                results = _best(
                    [searcher.rank(found.query, name, limit=limit) for name in probe_rankers()],
                    limit,
                )
        # No index yet, an unreadable one, a database down, or a failing plug-in searcher:
        # the probe is evidence, never a reason for the run to fail.
        except Exception as exc:
            found.unknown[kb.name] = f"{type(exc).__name__}: {exc}"[:200]
            continue
        found.read.append(kb.name)
        for result in results:
            share = coverage(terms, result.chunk.text)[0]
            found.hits.append(ProbeHit(kb.name, result.chunk.source, result.score, share))
    return found


def probe_rankers() -> list[str]:
    """The registered rankers the probe asks (``Ranker.probe``: BM25 by default)."""
    return [r.name for r in rankers() if r.probe]


def _best(lists: Sequence[Sequence[SearchResult]], limit: int) -> list[SearchResult]:
    """The ``limit`` best chunks of the probe rankers' lists (one list: itself), a chunk
    found by several once, by its best score."""
    if len(lists) == 1:
        return list(lists[0])[:limit]
    best: dict[str, SearchResult] = {}
    for result in (r for found in lists for r in found):
        if result.chunk.id not in best or result.score > best[result.chunk.id].score:
            best[result.chunk.id] = result
    return sorted(best.values(), key=lambda r: -r.score)[:limit]


def in_scope(
    hit: ProbeHit, kb_names: Sequence[str], paths: Sequence[str], kinds: Sequence[str]
) -> bool:
    """Whether a scope (knowledge bases, path globs or prefixes, file kinds) holds ``hit``."""
    if kb_names and hit.kb not in kb_names:
        return False
    chosen = tuple(k for k in scope_kinds() if k in kinds)
    filters = SearchFilters(paths=tuple(paths), kinds=chosen)
    return filters.is_empty() or filters.allows(hit.source, file_kind(hit.source))


__all__ = ["PROBE_HITS", "Probe", "ProbeHit", "in_scope", "probe", "probe_rankers"]
