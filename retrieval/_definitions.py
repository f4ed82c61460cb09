"""The definitions a query names: an exact identifier in a question (``default_config``,
``Client._redirect_url``, ``maxRedirects``) asks for the code that defines it.

BM25 finds that code (the identifier's whole form is a rare term), but the sentence model
sees an identifier as noise, so a fusion of equal ranks left the definition 11th where BM25
had it 2nd. Hybrid search therefore gives the chunks among BM25's best whose symbol path
ends with a named identifier a ranking of their own, weighted as BM25 is
(:func:`kbgraph.retrieval._search.search`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbgraph._base.languages import language_of

from ._lexical import compounds, segment_parts, split_compound
from ._records import Chunk

DEFINITION_RANKER = "definition"
"""The name of the extra ranking in fusion; never shown in a result's ranks."""
DEFINITION_DEPTH = 20
"""How many of BM25's best chunks are read to find the definitions."""
_STEP = re.compile(r"\.|::")


def named_identifiers(query: str) -> frozenset[str]:
    """The glued, lowercased last steps of the identifiers ``query`` names (``default_config``
    and ``DefaultConfig`` give ``defaultconfig``; ``Client._redirect_url`` gives
    ``redirecturl``). A plain word is not an identifier: it gives nothing."""
    found: set[str] = set()
    for compound in compounds(query):
        if not split_compound(compound)[1]:
            continue  # a plain word (no whole form)
        last = [step for step in _STEP.split(compound) if step][-1]
        if "-" in last:
            continue  # a hyphenated word (HB-601, IL-6), not code
        glued = "".join(segment_parts(last))
        if glued:
            found.add(glued)
    return frozenset(found)


def defines(chunk: Chunk, identifiers: frozenset[str]) -> bool:
    """Whether ``chunk`` is code whose symbol path (one of the paths it packs) ends with one
    of ``identifiers``."""
    if not identifiers or not chunk.section or language_of(chunk.source) is None:
        return False
    for path in chunk.section.split(", "):
        last = [step for step in _STEP.split(path.strip()) if step][-1:]
        if last and "".join(segment_parts(last[0])) in identifiers:
            return True
    return False


def definition_rows(rows: Sequence[int], chunks: Sequence[Chunk], query: str) -> list[int]:
    """The ``rows`` (BM25's order) whose chunk defines an identifier ``query`` names."""
    identifiers = named_identifiers(query)
    if not identifiers:
        return []
    return [row for row, chunk in zip(rows, chunks, strict=True) if defines(chunk, identifiers)]


__all__ = [
    "DEFINITION_DEPTH",
    "DEFINITION_RANKER",
    "defines",
    "definition_rows",
    "named_identifiers",
]
