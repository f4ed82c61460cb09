"""The ranker registry: the one list every part of kbgraph reads the set of rankers from
(search modes, fusion weights, the CLI's choices, the lexical probe, the inspector, the BEIR
runner). A ranker says what it is; each store ranks it with its own part
(``_folder/_query.py``, ``_postgres/_ranking.py``), and a :class:`FieldRanker` needs none:
both stores rank any of them with BM25 over the text it draws from each chunk."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kbgraph._base.faces import shown_as
from kbgraph._base.registry import Registry
from kbgraph.errors import ConfigError

from .._records import Chunk

RankerName = str
"""A registered ranker's name (``vector``, ``bm25``, ``title``, or one registered since)."""
HYBRID = "hybrid"
"""The search mode that fuses several rankers; every other mode is one ranker's name."""


@runtime_checkable
@shown_as("kbgraph.retrieval")
class Ranker(Protocol):
    """One way to rank a knowledge base's chunks for a query.

    ``needs_vectors``: it ranks by the embedding (a lexical-only index cannot run it);
    ``lexical``: it lists only chunks sharing a term with the query; ``probe``: the lexical
    probe (``graphs``) asks it whether a knowledge base holds the question's words, on the
    index as it is (it must need no vectors); ``hybrid_weight``: its weight in hybrid search
    by default, ``None`` to leave it out unless a search weighs it (``SearchConfig.weights``)."""

    @property
    def name(self) -> RankerName: ...

    @property
    def description(self) -> str: ...

    @property
    def needs_vectors(self) -> bool: ...

    @property
    def lexical(self) -> bool: ...

    @property
    def hybrid_weight(self) -> float | None: ...

    @property
    def probe(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class StoreRanker:
    """A ranker each store implements with a part of its own (vector, BM25)."""

    name: RankerName
    description: str
    needs_vectors: bool = False
    lexical: bool = True
    hybrid_weight: float | None = None
    probe: bool = False


@dataclass(frozen=True, slots=True)
class FieldRanker:
    """BM25 over ``text(chunk)``, a field drawn from each chunk (its path, its heading):
    both stores rank it with their field part, so registering it is all a new one takes."""

    name: RankerName
    description: str
    text: Callable[[Chunk], str]
    hybrid_weight: float | None = None
    probe: bool = False
    needs_vectors: bool = False
    lexical: bool = True


_RANKERS: Registry[Ranker] = Registry("ranker")


def register_ranker(ranker: Ranker, *, replace: bool = False) -> Ranker:
    """Add ``ranker`` to every list kbgraph derives from the registry; a name already taken
    is refused unless ``replace``. Returns it (usable as a module-level statement)."""
    if not isinstance(ranker, Ranker):
        raise ConfigError(
            "a ranker needs name, description, needs_vectors, lexical, hybrid_weight and "
            f"probe (see kbgraph.retrieval.Ranker); got {type(ranker).__name__}"
        )
    name = ranker.name
    if not isinstance(name, str) or not name.isidentifier() or name == HYBRID:
        raise ConfigError(
            f"a ranker's name must be a Python identifier other than {HYBRID!r}, got {name!r}"
        )
    if ranker.probe and (ranker.needs_vectors or not ranker.lexical):
        raise ConfigError(
            f"ranker {name!r}: the lexical probe asks only lexical rankers that need no "
            "vectors; set probe=False"
        )
    return _RANKERS.add(name, ranker, replace=replace)


def unregister_ranker(name: RankerName) -> None:
    """Remove the ranker ``name`` (a test's cleanup; a plugin switched off)."""
    _RANKERS.remove(name)


def rankers() -> tuple[Ranker, ...]:
    """Every registered ranker, in registration order (vector, bm25, title first)."""
    return _RANKERS.values()


def ranker_names() -> tuple[RankerName, ...]:
    return _RANKERS.names()


def get_ranker(name: str) -> Ranker:
    """The ranker ``name`` (``ConfigError`` naming the registered ones)."""
    found = _RANKERS.get(name)
    if found is None:
        raise ConfigError(f"unknown ranker {name!r}; allowed: {_RANKERS.listing()}")
    return found


def search_modes() -> tuple[str, ...]:
    """The search modes: ``hybrid`` and each ranker alone."""
    return (HYBRID, *_RANKERS)


def lexical_rankers() -> tuple[RankerName, ...]:
    return tuple(r.name for r in _RANKERS.values() if r.lexical and not r.needs_vectors)


def default_weights() -> dict[RankerName, float]:
    """The weights hybrid fuses by when a search names none."""
    return {r.name: r.hybrid_weight for r in _RANKERS.values() if r.hybrid_weight is not None}


def hybrid_rankers(weights: Mapping[str, float]) -> dict[RankerName, float]:
    """The rankers one hybrid search fuses, with their weights, in registry order: those
    with a hybrid weight (vector, BM25) and any other that ``weights`` names; a weight
    given overrides the default."""
    return {
        r.name: float(weights.get(r.name, r.hybrid_weight or 0.0))
        for r in _RANKERS.values()
        if r.hybrid_weight is not None or r.name in weights
    }


__all__ = [
    "HYBRID",
    "FieldRanker",
    "Ranker",
    "RankerName",
    "StoreRanker",
    "default_weights",
    "get_ranker",
    "hybrid_rankers",
    "lexical_rankers",
    "ranker_names",
    "rankers",
    "register_ranker",
    "search_modes",
    "unregister_ranker",
]
