"""Chunks that follow a syntax tree: definitions whole, long ones split at statements, and
every chunk labelled with the symbol it belongs to.

A language adapter (:mod:`._python` through ``ast``, :mod:`._treesitter` through tree-sitter
grammars) describes a file as :class:`Node` records in line coordinates: top-level
statements, and inside them the statements and members they hold, each with the name it
defines when it defines one. This module turns them into spans:

- The file's top-level nodes tile it (a node owns the lines up to the next one, so blank
  lines and stray comments belong to the node above them). Consecutive nodes are packed
  into one chunk while they fit the size; a node marked ``alone`` (the module docstring
  and imports) is always a chunk of its own.
- A node longer than the size is split: a class-like ``container`` into its members, packed
  the same way (its header joins the first member); anything else (a function, a long
  statement) by :func:`~._pack.pack` at its statements, coarsest nesting level first, then
  at lines, so a piece of a function ends where a statement ends. Pieces of one
  definition overlap from a line start; no chunk overlaps into another definition.
- Every chunk starts at a line start, its first line's indentation included.
- ``section`` is the symbol path of the innermost definition holding the chunk
  (``Client._redirect_url``), or the definitions it holds when it packs several
  (``Headers.keys, Headers.values``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kbgraph.retrieval._segments import Span

from ._boundaries import line_starts, next_content, word_starts
from ._pack import Plan, checked_settings, finalize, indent_start, pack

MAX_LISTED = 4
"""A chunk packing more definitions than this lists the first ones and ``…``."""
_MAX_LEVELS = 3  # nesting levels of statements used as distinct boundary levels


@dataclass(frozen=True, slots=True)
class Node:
    """A statement or definition in 0-based line numbers: ``first`` includes its
    decorators and the comment block right above it, ``last`` is its last line."""

    first: int
    last: int
    name: str | None = None  # what it defines (a function, class, constant), if anything
    children: tuple[Node, ...] = ()  # the statements or members it holds, in order
    container: bool = False  # class-like: split into members rather than statements
    alone: bool = False  # never packed with its neighbours (the module header)
    kind: str = ""  # the syntax type, for adapters


@dataclass(frozen=True, slots=True)
class Symbol:
    path: str
    start: int  # character positions of its lines
    end: int
    children: list[Symbol] = field(default_factory=list)


class _Lines:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = array("q", [0, *line_starts(text)])

    def pos(self, line: int) -> int:
        return int(self.starts[line]) if line < len(self.starts) else len(self.text)

    def end(self, line: int) -> int:
        """The position just after the text of ``line`` (before its newline)."""
        return self.pos(line + 1) - 1 if line + 1 < len(self.starts) else len(self.text)

    def content(self, lo: int, hi: int) -> tuple[int, int]:
        """The span of ``[lo, hi)`` without surrounding blank lines and trailing spaces,
        starting at its first line's start."""
        start = next_content(self.text, lo, hi)
        end = hi
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return indent_start(self.text, start, lo), end


def syntax_chunks(
    text: str, nodes: Sequence[Node], size: int, overlap: int, cap: int
) -> list[Span]:
    """Spans of ``text`` following ``nodes`` (the file's top-level nodes, in order)."""
    size, overlap = checked_settings(size, overlap, cap)
    lines = _Lines(text)
    packer = _Packer(lines, size, overlap, cap)
    packer.tiles(nodes, 0, len(text))
    spans = finalize(text, packer.spans, cap, keep_indent=True)
    symbols = _symbols(nodes, lines, "")
    return [Span(s.start, s.end, section_of(symbols, s.start, s.end)) for s in spans]


class _Packer:
    def __init__(self, lines: _Lines, size: int, overlap: int, cap: int) -> None:
        self.lines = lines
        self.size = size
        self.overlap = overlap
        self.cap = cap
        self.spans: list[Span] = []
        text = lines.text
        self._fine = ((line_starts(text),), (word_starts(text),))

    def _length(self, lo: int, hi: int) -> int:
        start, end = self.lines.content(lo, hi)
        return max(0, end - start)

    def tiles(self, nodes: Sequence[Node], lo: int, hi: int) -> None:
        """Chunk ``[lo, hi)``, whose nodes are ``nodes``: each owns the text up to the next
        one (the first also what precedes it, from ``lo``)."""
        bounds = [lo, *(self.lines.pos(n.first) for n in nodes[1:]), hi]
        run: tuple[int, int] | None = None
        for node, start, end in zip(nodes, bounds, bounds[1:], strict=False):
            if start >= end:
                continue
            fits = self._length(start, end) <= self.size
            joins = run is not None and fits and not node.alone
            if joins and run is not None and self._length(run[0], end) <= self.size:
                run = (run[0], end)
                continue
            if run is not None:
                self.spans.append(Span(*run))
                run = None
            if not fits:
                self._split(node, start, end)
            elif node.alone:
                self.spans.append(Span(start, end))
            else:
                run = (start, end)
        if run is not None:
            self.spans.append(Span(*run))
        if not nodes and self._length(lo, hi):
            self._split(Node(0, 0), lo, hi)

    def _split(self, node: Node, lo: int, hi: int) -> None:
        if node.container and node.children:
            self.tiles(node.children, lo, hi)
            return
        levels = tuple((_starts(self.lines, n, lo, hi),) for n in _by_depth(node))
        barriers = frozenset(self.lines.pos(n.first) for n in _named(node))
        plan = Plan(
            levels=(*levels, *self._fine),
            barriers=barriers,
            line_overlap=True,
            keep_indent=True,
        )
        pieces = pack(self.lines.text, lo, hi, plan, self.size, self.overlap)
        self.spans.extend(self._with_header(node, pieces))

    def _with_header(self, node: Node, pieces: list[Span]) -> list[Span]:
        """``pieces`` with a first piece that holds only the definition's header (its
        decorators and signature: ``@property`` + ``def name(self):`` before a long
        docstring) joined to the next, which starts its body: a signature alone answers
        nothing and is found for its name only. The cap still holds."""
        if len(pieces) < 2 or not node.children:
            return pieces
        body = self.lines.pos(node.children[0].first)
        first, second = pieces[0], pieces[1]
        if first.end > body or second.end - first.start > self.cap:
            return pieces
        return [Span(first.start, second.end), *pieces[2:]]


def _by_depth(node: Node) -> list[list[Node]]:
    """The nodes nested in ``node`` by nesting level; the deepest levels merged."""
    levels: list[list[Node]] = []
    current = list(node.children)
    while current:
        if len(levels) == _MAX_LEVELS:
            levels[-1].extend(current)
        else:
            levels.append(current)
        current = [c for n in current for c in n.children]
    return levels


def _starts(lines: _Lines, nodes: Sequence[Node], lo: int, hi: int) -> array[int]:
    return array("q", sorted({p for n in nodes if lo < (p := lines.pos(n.first)) < hi}))


def _named(node: Node) -> Iterator[Node]:
    for child in node.children:
        if child.name:
            yield child
        yield from _named(child)


def _symbols(nodes: Sequence[Node], lines: _Lines, prefix: str) -> list[Symbol]:
    """The named nodes as a tree of symbol paths, each nested under its nearest named
    ancestor."""
    out: list[Symbol] = []
    for node in nodes:
        if node.name:
            path = f"{prefix}{node.name}"
            symbol = Symbol(path, lines.pos(node.first), lines.end(node.last))
            symbol.children.extend(_symbols(node.children, lines, path + "."))
            out.append(symbol)
        else:
            out.extend(_symbols(node.children, lines, prefix))
    return out


def section_of(symbols: Sequence[Symbol], start: int, end: int) -> str | None:
    """The innermost symbol holding ``[start, end)``; where the span lies among several
    of its members (or at the top level), the members it touches."""
    holder: Symbol | None = None
    level = list(symbols)
    while True:
        inner = next((s for s in level if s.start <= start and end <= s.end), None)
        if inner is None:
            break
        holder, level = inner, inner.children
    touched = [s for s in level if s.start < end and start < s.end]
    if holder is not None and (not touched or start < touched[0].start):
        return holder.path
    if not touched:
        return holder.path if holder else None
    names = [s.path for s in touched[:MAX_LISTED]]
    return ", ".join(names) + (", …" if len(touched) > MAX_LISTED else "")


__all__ = ["MAX_LISTED", "Node", "Symbol", "section_of", "syntax_chunks"]
