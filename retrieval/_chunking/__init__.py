"""Chunking strategies: where a file is cut into the pieces that get indexed.

Every strategy works on a :class:`~kbgraph.retrieval._segments.Segment`'s normalised text and
returns :class:`~kbgraph.retrieval._segments.Span` positions in it: sorted, trimmed of whitespace,
never longer than the cap, covering every non-whitespace character, and never cutting a
grapheme cluster apart unless a single cluster is longer than the size.

    spans = chunk_segment(segment, ChunkConfig(strategy="sentence"), "text")
    chunks = chunk_file([segment], ChunkConfig(), "markdown", "docs/install.md")
"""

from __future__ import annotations

from kbgraph._base.sentences import sentence_starts

from ._definitions import CODE_CHUNKER_VERSION, code_chunker_id
from ._dispatch import CHUNKERS, Choice, Chunker, choose, chunk_file, chunk_segment

__all__ = [
    "CHUNKERS",
    "CODE_CHUNKER_VERSION",
    "Choice",
    "Chunker",
    "choose",
    "chunk_file",
    "chunk_segment",
    "code_chunker_id",
    "sentence_starts",
]
