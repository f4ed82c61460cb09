"""Source code without a parser: chunks that start where top-level definitions start.

The fallback of :mod:`._definitions`, for languages without an installed grammar and for
files their parser refuses (a Python syntax error).

A definition starts at column 0 with a keyword of the common languages (``def``,
``class``, ``async def``, ``function``, ``fn``, ``pub fn``, ``func``, ``impl``, ``struct``,
``interface``, ``type``, ``export``, ``const`` ...). Decorators and attributes (``@route``,
``#[derive]``) and the comment block right above a definition belong to it, so the chunk
starts at the first of them. Small definitions are packed together up to the size; a
longer one is split at blank lines, then lines, and its pieces overlap from a line start.
Chunks do not overlap across a definition boundary (a chunk that opened with the tail of
the previous function would mislead), start at a line start (indentation included), and
are labelled with the name of the definition they belong to (the word after the keyword:
``def fetch`` is ``fetch``), or the names of those they pack.
"""

from __future__ import annotations

import re
from array import array
from typing import Literal

from kbgraph.retrieval._segments import Span

from ._boundaries import Positions, line_starts, paragraph_starts, word_starts
from ._pack import Plan, checked_settings, finalize, pack
from ._syntax import Symbol, section_of

_MODIFIERS = (
    r"pub(?:\([^)\n]*\))?|public|private|protected|internal|static|abstract|final|sealed"
    r"|async|unsafe|extern(?:[ \t]+\"[^\"\n]*\")?|declare|open|override|inline|data|case"
    r"|default|export"
)
_KEYWORDS = (
    r"def|class|function\*?|fn|fun|func|impl|struct|enum|trait|interface|type|const|let|var"
    r"|mod|module|namespace|object|record|union|macro_rules!|export"
)
DEFINITION = re.compile(rf"(?:(?:{_MODIFIERS})[ \t]+)*(?:{_KEYWORDS})(?=[\s(<{{:*!]|$)")
_NAME = re.compile(r"[\s*!]*([^\W\d]\w*)")
_ATTACHED = re.compile(r"@|#\[")  # Python/Java/TS decorators, Rust attributes
_COMMENT = re.compile(r"#|//|/\*|\*|--| \*")

LineKind = Literal["blank", "definition", "attached", "comment", "other"]


def line_kind(line: str) -> LineKind:
    if not line.strip():
        return "blank"
    if _ATTACHED.match(line):
        return "attached"
    if DEFINITION.match(line):
        return "definition"
    if _COMMENT.match(line):
        return "comment"
    return "other"


def definition_starts(text: str) -> Positions:
    """Where each top-level definition starts, its decorators and leading comments
    included; the start of the text is not listed."""
    starts = [0, *line_starts(text)]
    found = []
    header: int | None = None  # first line of the decorators/comments above a definition
    in_decorator = False  # a decorator's arguments may span lines
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        kind = line_kind(text[start:end])
        if kind == "blank":
            header, in_decorator = None, False
        elif kind == "definition":
            found.append(starts[header] if header is not None else start)
            header, in_decorator = None, False
        elif kind in ("attached", "comment"):
            header = index if header is None else header
            in_decorator = in_decorator or kind == "attached"
        elif not in_decorator:
            header = None
    return array("q", (pos for pos in found if pos > 0))


def code(text: str, size: int, overlap: int, cap: int) -> list[Span]:
    size, overlap = checked_settings(size, overlap, cap)
    definitions = definition_starts(text)
    plan = Plan(
        levels=(
            (definitions,),
            (paragraph_starts(text),),
            (line_starts(text),),
            (word_starts(text),),
        ),
        barriers=frozenset(definitions),
        line_overlap=True,
        keep_indent=True,
    )
    spans = finalize(text, pack(text, 0, len(text), plan, size, overlap), cap, keep_indent=True)
    symbols = _symbols(text, definitions)
    return [Span(s.start, s.end, section_of(symbols, s.start, s.end)) for s in spans]


def _symbols(text: str, definitions: Positions) -> list[Symbol]:
    """Each definition named by the word after its keyword, owning the text up to the next."""
    starts = [0, *definitions]
    ends = [*definitions, len(text)]
    out = []
    for start, end in zip(starts, ends, strict=True):
        for line in text[start:end].split("\n"):
            match = DEFINITION.match(line)
            if match:
                name = _NAME.match(line, match.end())
                if name:
                    out.append(Symbol(name.group(1), start, end))
                break
    return out
