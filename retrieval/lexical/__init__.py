"""Lexical retrieval: the BM25 index (Lucene variant, eager scoring) and its tokenizer."""

from __future__ import annotations

from ._bm25 import DEFAULT_B, DEFAULT_K1, idf, tf_part
from ._index import BM25_FILES, BM25Index
from ._tokenize import TokenizedCorpus, tokenize, tokenize_corpus

__all__ = [
    "BM25_FILES",
    "DEFAULT_B",
    "DEFAULT_K1",
    "BM25Index",
    "TokenizedCorpus",
    "idf",
    "tf_part",
    "tokenize",
    "tokenize_corpus",
]
