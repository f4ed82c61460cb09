"""Choosing a strategy for a file and running it over the file's segments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from kbgraph._base.languages import language_of
from kbgraph.retrieval._config import ChunkConfig, ChunkStrategy
from kbgraph.retrieval._loaders import TEXT, loader_for
from kbgraph.retrieval._records import Chunk, FileKind
from kbgraph.retrieval._segments import Segment, Span, spans_to_chunks

from ._code import code
from ._definitions import definitions
from ._markdown import by_headings, markdown, outlined
from ._markup import markup_headings, markup_of
from ._prose import fixed_size, paragraph, recursive, sentence
from ._units import chunk_units


class Chunker(Protocol):
    """A strategy: spans of ``text`` of at most ``min(size, cap)`` characters, sorted,
    trimmed, covering every non-whitespace character; neighbours share about ``overlap``
    characters."""

    def __call__(self, text: str, size: int, overlap: int, cap: int) -> list[Span]: ...


CHUNKERS: Mapping[ChunkStrategy, Chunker] = MappingProxyType(
    {
        "fixed_size": fixed_size,
        "sentence": sentence,
        "paragraph": paragraph,
        "recursive": recursive,
        "markdown": markdown,
        "code": code,
    }
)

# Data files (JSON, YAML, TOML) are dense: a smaller chunk keeps one record or table per
# chunk instead of several unrelated ones.
DATA_SIZE_RATIO = 2
_MIN_DATA_SIZE = 16


@dataclass(frozen=True, slots=True)
class Choice:
    """The strategy and settings a file of some kind is chunked with."""

    strategy: ChunkStrategy
    size: int
    overlap: int
    cap: int


def choose(config: ChunkConfig, kind: FileKind) -> Choice:
    """``config.strategy`` for every kind, unless ``by_kind``: then the loader table says
    (``Loader.chunk_as``): Markdown files (and Word documents, sectioned by their heading
    styles) use ``markdown``, code files ``code`` and data files ``recursive`` at half the
    size."""
    cap = config.max_chunk_chars
    style = loader_for(kind).chunk_as if config.by_kind else None
    if style == "markdown":
        return Choice("markdown", config.chunk_size, config.overlap, cap)
    if style == "code":
        return Choice("code", config.chunk_size, config.overlap, cap)
    if style == "data":
        size = max(_MIN_DATA_SIZE, config.chunk_size // DATA_SIZE_RATIO)
        overlap = min(config.overlap // DATA_SIZE_RATIO, size // 4)
        return Choice("recursive", size, overlap, cap)
    return Choice(config.strategy, config.chunk_size, config.overlap, cap)


def chunk_segment(
    segment: Segment, config: ChunkConfig, kind: FileKind, source: str | None = None
) -> list[Span]:
    """Spans of ``segment.text``; records (``segment.units``) are always kept whole, the
    ``markdown`` strategy takes a structured document's headings from its outline, and the
    ``code`` strategy parses a file whose language ``source`` names. A text file in
    reStructuredText or AsciiDoc (by its name) is sectioned at its headings like Markdown."""
    choice = choose(config, kind)
    if segment.units is not None:
        return chunk_units(segment.text, segment.units, choice.size, 0, choice.cap)
    if segment.outline is not None and choice.strategy == "markdown":
        return outlined(segment.text, segment.outline, choice.size, choice.overlap, choice.cap)
    if choice.strategy == "code" and source is not None:
        language = language_of(source)
        return definitions(segment.text, choice.size, choice.overlap, choice.cap, language)
    markup = markup_of(source) if config.by_kind and kind == TEXT else None
    if markup is not None:
        marks = markup_headings(segment.text, markup)
        return by_headings(segment.text, marks, choice.size, choice.overlap, choice.cap)
    chunker = CHUNKERS[choice.strategy]
    return chunker(segment.text, choice.size, choice.overlap, choice.cap)


def chunk_file(
    segments: list[Segment], config: ChunkConfig, kind: FileKind, source: str
) -> list[Chunk]:
    """The chunks of every segment of a file (pages of a PDF, or the one segment of any
    other file), in order."""
    chunks: list[Chunk] = []
    for segment in segments:
        spans = chunk_segment(segment, config, kind, source)
        chunks.extend(spans_to_chunks(segment, spans, source))
    return chunks
