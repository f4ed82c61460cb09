"""Code chunked at its definitions, by the best parser there is for its language: Python
through ``ast``, JavaScript, TypeScript, Go, Rust and Java through tree-sitter grammars,
anything else (and any file its parser refuses, such as Python with a syntax error)
through the keyword fallback of :mod:`._code`. Never raises for a file's content."""

from __future__ import annotations

from kbgraph.retrieval._segments import Span

from ._code import code
from ._python import python_nodes
from ._syntax import Node, syntax_chunks
from ._treesitter import GRAMMARS, available, treesitter_nodes

CODE_CHUNKER_VERSION = 3
"""1: the keyword chunker for every language; 2: syntax trees, symbol sections, chunks
that start at line starts; 3: a split definition's signature stays with its body's first
piece (no ``@property`` + ``def`` chunk of two lines)."""


def code_chunker_id() -> str:
    """Names how code is chunked here: the version and the grammars installed (a grammar
    installed or removed changes the chunks of its language). An index records it."""
    grammars = ",".join(sorted(name for name in GRAMMARS if available(name)))
    return f"code-{CODE_CHUNKER_VERSION}|python-ast|tree-sitter:{grammars or 'none'}"


def _nodes(text: str, language: str | None) -> list[Node] | None:
    try:
        if language == "python":
            return python_nodes(text)
        if language is not None:
            return treesitter_nodes(text, language)
    except RecursionError:  # nesting deeper than the interpreter's stack
        return None
    return None


def definitions(text: str, size: int, overlap: int, cap: int, language: str | None) -> list[Span]:
    """Spans of a code file of ``language`` (None: unknown, the fallback)."""
    nodes = _nodes(text, language)
    if nodes is None:
        return code(text, size, overlap, cap)
    return syntax_chunks(text, nodes, size, overlap, cap)


__all__ = ["CODE_CHUNKER_VERSION", "code_chunker_id", "definitions"]
