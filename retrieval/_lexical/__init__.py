"""Lexical retrieval: the BM25 index (Lucene variant, eager scoring) and its tokenizer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

from ._bm25 import DEFAULT_B, DEFAULT_K1, idf, tf_part
from ._identifiers import compounds, segment_parts, split_compound
from ._index import BM25_FILES, BM25Index
from ._tokenize import (
    GLUED_PART_WEIGHT,
    IDENTIFIERS_1_ID,
    LEGACY_TOKENIZER_ID,
    TOKENIZER_ID,
    TOKENIZERS,
    analyse,
    analyse_weighted,
    tokenize,
)

if TYPE_CHECKING:  # building an index only: a search analyses one query
    from ._corpus import TokenizedCorpus, tokenize_corpus

__getattr__ = lazy_imports(globals())

__all__ = [
    "BM25_FILES",
    "DEFAULT_B",
    "DEFAULT_K1",
    "GLUED_PART_WEIGHT",
    "IDENTIFIERS_1_ID",
    "LEGACY_TOKENIZER_ID",
    "TOKENIZERS",
    "TOKENIZER_ID",
    "BM25Index",
    "TokenizedCorpus",
    "analyse",
    "analyse_weighted",
    "compounds",
    "idf",
    "segment_parts",
    "split_compound",
    "tf_part",
    "tokenize",
    "tokenize_corpus",
]
