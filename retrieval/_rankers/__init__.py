"""The rankers kbgraph knows: a registry (``_registry``) and one module per ranker. Adding
a ranker is one module named in the tuple below, or :func:`register_ranker` from a user's
code (plus, unless it is a :class:`FieldRanker`, a part in each store:
``_folder/_query.py``, ``_postgres/_ranking.py``). ``fields`` (BM25, numpy) is imported by
the stores only, so that the settings and the CLI's choices load light (it has no
underscore: the stores, outside this package, import it)."""

from ._bm25 import BM25
from ._registry import (
    HYBRID,
    FieldRanker,
    Ranker,
    RankerName,
    StoreRanker,
    default_weights,
    get_ranker,
    hybrid_rankers,
    lexical_rankers,
    ranker_names,
    rankers,
    register_ranker,
    search_modes,
    unregister_ranker,
)
from ._title import TITLE
from ._vector import VECTOR

# The built-in rankers, in the order modes and weights list them.
for _ranker in (VECTOR, BM25, TITLE):
    register_ranker(_ranker)

__all__ = [
    "BM25",
    "HYBRID",
    "TITLE",
    "VECTOR",
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
