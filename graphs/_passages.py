"""A document chunk's lines as the units an extractive answer quotes: whole sentences of its
prose (never a line that starts mid-sentence) and its code, config and command lines, with
the markup of Markdown, reStructuredText, AsciiDoc and HTML taken off the prose.

- Code: the lines of a fenced block (```` ``` ````/``~~~``), of a reStructuredText literal
  block (the indented lines after a paragraph ending in ``::`` or after ``.. code-block::``),
  and lone command lines (``$ pip install …``, ``>>> …``). Each line is a unit; a block
  is also kept whole, for the sentence that introduces it ("run:" / "in harbor.yaml:").
- Never quoted: headings (ATX ``#``, setext and reStructuredText underlines with their
  title, AsciiDoc ``=``), directive lines (``.. note::``, ``.. admonition:: …``), option
  lines (``:linenos:``), table rules, fences. A directive's indented body is prose.
- Prose: paragraphs (a list item starts a new one) joined across their hard-wrapped lines
  and cut into sentences (:func:`kbgraph._base.sentences.sentence_starts`), a question
  kept with the sentence after it (a FAQ's answer); a table row is one unit, its cells
  joined by `` | ``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from kbgraph._base.sentences import sentence_starts

_FENCE = re.compile(r"\s*(`{3,}|~{3,})")
_ATX = re.compile(r"\s{0,3}#{1,6}(\s|$)")
_ADOC_TITLE = re.compile(r"={1,6}\s+\S")
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}\s*")
_DIRECTIVE = re.compile(r"\s*\.\.\s+([\w:-]+)::(.*)$")
_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "literalinclude", "highlight"})
_COMMENT = re.compile(r"\s*\.\.(\s|$)")
_OPTION = re.compile(r"\s*:[\w -]+:(\s|$)")
_TABLE_RULE = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_COMMAND = re.compile(r"\s*(\$|>>>|\.\.\.|%|#)\s+\S")
_LIST_ITEM = re.compile(r"\s*(?:[-*+•]|\d+[.)]|#\.)\s+")
_ROLE = re.compile(r":[\w:.+-]+:`([^`]+)`")
_DOUBLE_CODE = re.compile(r"``(.+?)``")
_LINK_RST = re.compile(r"`([^`<]+?)\s*(?:<[^>]*>)?`__?")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_LINK_MD = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_SUBSTITUTION = re.compile(r"\|(\w[\w -]*)\|")
_DOCSTRING_OPEN = re.compile(r"""[rRuU]?("{3}|'{3})""")
_KEPT = re.compile("\ue000(\\d+)\ue001")  # a literal set aside while markup is removed


@dataclass(frozen=True, slots=True)
class Unit:
    """Lines ``first``..``last`` (indices into the chunk's lines) and what a quote of them
    says: a sentence without markup, or a code line as it is. ``block`` is the code
    block a code line belongs to (first and last line), ``None`` for prose."""

    first: int
    last: int
    text: str
    code: bool = False
    block: tuple[int, int] | None = None
    paragraph: int = -1  # the sentences of one paragraph share it; -1 for code and tables
    table: tuple[int, int] | None = None  # a table row's table (first and last line)
    item: bool = False  # the first sentence of a list item
    title: bool = False  # a module docstring's summary line: the file's title (PEP 257)


def clean(text: str) -> str:
    """Prose without inline markup: roles, literals, links, emphasis, HTML tags. A
    literal's text is kept as written: ``(field, <file>)`` is code, not a tag to drop, and
    ``**kwargs`` no emphasis."""
    literals: list[str] = []

    def keep(found: re.Match[str]) -> str:
        literals.append(found.group(1))
        return f"\ue000{len(literals) - 1}\ue001"

    text = _ROLE.sub(keep, text)
    text = _DOUBLE_CODE.sub(keep, text)
    text = _LINK_RST.sub(r"\1", text)
    text = _CODE_SPAN.sub(keep, text)
    text = _LINK_MD.sub(r"\1", text)
    text = _STRONG.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _SUBSTITUTION.sub(r"\1", text)
    text = _KEPT.sub(lambda found: literals[int(found.group(1))], text)
    item = _LIST_ITEM.match(text)
    text = text[item.end() :] if item else text
    text = " ".join(text.lstrip("> ").split())
    # reStructuredText's "Example::" introduces a literal block and reads "Example:".
    return text[:-3] if text.endswith(" ::") else text[:-1] if text.endswith("::") else text


def plain(text: str) -> str:
    """A docstring's or comment's text without reStructuredText roles and literals
    (``:func:`x```, ````x````): code quoted by lines keeps everything else as it is."""
    return _DOUBLE_CODE.sub(r"\1", _ROLE.sub(r"\1", text))


def opens_docstring(lines: list[str], index: int) -> bool:
    """The line that opens a file's docstring (after comments and blank lines): its
    summary, the module's title, as a Markdown heading is a page's."""
    before = [line for line in lines[:index] if line.strip() and not line.startswith("#")]
    return not before and _DOCSTRING_OPEN.match(lines[index]) is not None


def is_list_item(line: str) -> bool:
    return bool(_LIST_ITEM.match(line))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_heading(lines: Sequence[str], i: int) -> bool:
    line = lines[i]
    if _ATX.match(line) or _ADOC_TITLE.match(line) or _ADORNMENT.fullmatch(line):
        return True
    below = lines[i + 1] if i + 1 < len(lines) else ""
    return bool(line.strip()) and bool(_ADORNMENT.fullmatch(below)) and len(below) >= 3


def line_kinds(lines: Sequence[str]) -> list[str]:
    """Per line: "code", "prose", "table" or "skip" (see the module docstring)."""
    kinds: list[str] = []
    fence: str | None = _open_at_start(lines)
    literal: int | None = None  # indentation of the paragraph that opened a literal block
    for i, line in enumerate(lines):
        stripped = line.strip()
        if fence is not None:
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
                kinds.append("skip")
            else:
                kinds.append("code")
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            kinds.append("skip")
            continue
        if literal is not None:
            if not stripped or _indent(line) > literal:
                code = stripped and not _OPTION.match(line)
                kinds.append("code" if code else "skip")
                continue
            literal = None
        directive = _DIRECTIVE.match(line)
        if directive:
            kinds.append("skip")
            if directive.group(1) in _CODE_DIRECTIVES:
                literal = _indent(line)
            continue
        if _COMMENT.match(line) or (_OPTION.match(line) and kinds and kinds[-1] == "skip"):
            kinds.append("skip")
            continue
        if not stripped or _is_heading(lines, i) or _TABLE_RULE.fullmatch(line):
            kinds.append("skip")
            continue
        if stripped.startswith("|") and stripped.endswith("|") and stripped.count("|") >= 3:
            kinds.append("table")
            continue
        if _COMMAND.match(line) and not _LIST_ITEM.match(line):
            kinds.append("code")
            continue
        kinds.append("prose")
        if stripped.endswith("::"):
            literal = _indent(line)
    return kinds


def _open_at_start(lines: Sequence[str]) -> str | None:
    """The fence of a code block the chunk starts inside: a chunk cut from the middle of a
    block has an odd number of fences, and its first one closes the block (a bare fence
    right after a code line, not after a blank line or a sentence that introduces it)."""
    fences = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _FENCE.match(line))]
    if len(fences) % 2 == 0:
        return None
    first, fence = fences[0]
    before = [line for line in lines[:first] if line.strip()]
    bare = not lines[first].strip()[len(fence) :].strip()
    opens = not lines[first - 1].strip() or lines[first - 1].rstrip().endswith((":", "..."))
    return fence if bare and before and first > 0 and not opens else None


def units(lines: Sequence[str]) -> list[Unit]:
    """The quotable units of a chunk's lines, in order."""
    kinds = line_kinds(lines)
    out: list[Unit] = []
    paragraph: list[int] = []

    def flush() -> None:
        if paragraph:
            out.extend(_sentences(lines, paragraph, paragraph[0]))
            paragraph.clear()

    i = 0
    while i < len(lines):
        kind = kinds[i]
        if kind == "prose":
            if paragraph and _LIST_ITEM.match(lines[i]):
                flush()
            paragraph.append(i)
        else:
            flush()
            if kind == "table":
                cells = [clean(c) for c in lines[i].strip().strip("|").split("|")]
                table = _table_of(kinds, lines, i)
                out.append(Unit(i, i, " | ".join(c for c in cells if c), table=table))
            elif kind == "code":
                end = i
                while (
                    end + 1 < len(lines)
                    and kinds[end + 1] in ("code", "skip")
                    and (kinds[end + 1] == "code" or _continues(kinds, end + 1))
                ):
                    end += 1
                block = (i, max(j for j in range(i, end + 1) if kinds[j] == "code"))
                for j in range(i, end + 1):
                    if kinds[j] == "code" and lines[j].strip():
                        out.append(Unit(j, j, lines[j].rstrip(), code=True, block=block))
                i = end
        i += 1
    flush()
    return out


def _table_of(kinds: Sequence[str], lines: Sequence[str], i: int) -> tuple[int, int]:
    """The first and last line of the table row ``i`` belongs to (its rules included)."""

    def part(j: int) -> bool:
        return kinds[j] == "table" or bool(_TABLE_RULE.fullmatch(lines[j]))

    first, last = i, i
    while first > 0 and part(first - 1):
        first -= 1
    while last + 1 < len(lines) and part(last + 1):
        last += 1
    return first, last


def _continues(kinds: Sequence[str], j: int) -> bool:
    """A blank line inside a code block: code follows it."""
    k = j
    while k < len(kinds) and kinds[k] == "skip":
        k += 1
    return k < len(kinds) and kinds[k] == "code" and k - j <= 1


def _sentences(lines: Sequence[str], indices: Sequence[int], number: int) -> list[Unit]:
    """A paragraph's sentences, each with the lines it spans."""
    pieces = [clean(lines[i]) for i in indices]
    text = ""
    starts: list[int] = []
    for piece in pieces:
        starts.append(len(text) + (1 if text else 0))
        text = f"{text} {piece}" if text else piece
    # A question is quoted with the sentence that answers it (a FAQ's "Q: …? A: …"): alone
    # it repeats the reader's words and states nothing.
    cuts = [p for p in sentence_starts(text) if not text[:p].rstrip().endswith("?")]
    bounds = [0, *cuts, len(text)]
    out: list[Unit] = []
    for lo, hi in pairwise(bounds):
        sentence = text[lo:hi].strip()
        if not any(ch.isalnum() for ch in sentence):
            continue
        first = max(k for k, s in enumerate(starts) if s <= lo)
        last = max(k for k, s in enumerate(starts) if s < max(hi, lo + 1))
        item = not out and bool(_LIST_ITEM.match(lines[indices[0]]))
        out.append(Unit(indices[first], indices[last], sentence, paragraph=number, item=item))
    return out


__all__ = ["Unit", "clean", "is_list_item", "line_kinds", "opens_docstring", "plain", "units"]
