"""Headings of the lightweight markup languages other than Markdown: reStructuredText and
AsciiDoc. Their files are sectioned like Markdown's (:mod:`._markdown`), one chunk per
section labelled with its heading path, so a question's words that are only in a heading
("Configuration > Builtin Configuration Values") still reach the section's text.

- **reStructuredText** (Docutils spec, "Sections"): a title line followed by an underline,
  optionally preceded by an overline, of one repeated punctuation character at least as
  long as the title. Levels are not fixed by the character: the first style met is level 1,
  the next new one level 2, and so on (an overlined style differs from the same character
  underlined only). Indented text (literal blocks, directive bodies) holds no headings.
- **AsciiDoc**: ``= Document title``, ``== Level 1`` … up to six ``=`` (or ``#``), outside
  delimited listing/literal/passthrough blocks (``----``, ``....``, ``++++``, `````` ``` ``````).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ._markdown import Heading, _lines

RST_SUFFIXES = frozenset({".rst", ".rest"})
ASCIIDOC_SUFFIXES = frozenset({".adoc", ".asciidoc", ".asc"})
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*")
_ADOC_TITLE = re.compile(r"(={1,6}|#{1,6})[ \t]+(\S.*?)[ \t]*$")
_ADOC_DELIMITER = re.compile(r"(-{4,}|\.{4,}|\+{4,}|`{3,}|/{4,})[ \t]*")


def markup_of(source: str | None) -> str | None:
    """``"rst"`` or ``"asciidoc"`` for a file whose name says it holds that markup."""
    if source is None:
        return None
    suffix = PurePosixPath(source).suffix.lower()
    if suffix in RST_SUFFIXES:
        return "rst"
    if suffix in ASCIIDOC_SUFFIXES:
        return "asciidoc"
    return None


def markup_headings(text: str, markup: str) -> list[Heading]:
    return rst_headings(text) if markup == "rst" else asciidoc_headings(text)


def _adornment(line: str) -> str | None:
    """The character of a line that is only one punctuation character repeated."""
    match = _ADORNMENT.fullmatch(line)
    return match.group(1) if match else None


def rst_headings(text: str) -> list[Heading]:
    """reStructuredText section titles, in order (see the module docstring)."""
    lines = _lines(text)
    styles: dict[tuple[str, bool], int] = {}
    found: list[Heading] = []
    index = 0
    while index + 1 < len(lines):
        start, raw = lines[index]
        title = raw.rstrip("\n").rstrip()
        under = lines[index + 1][1].rstrip("\n")
        char = _adornment(under)
        over = False
        heading_start = start
        if char and index > 0:
            before = lines[index - 1][1].rstrip("\n")
            over = _adornment(before) == char and len(before.rstrip()) >= len(title)
            heading_start = lines[index - 1][0] if over else start
        # Only an overlined title may be indented (centred); an indented line is else a
        # literal block's or a directive's.
        plain = title.strip() and (over or not title[0].isspace()) and not _adornment(title)
        if not (char and plain and len(under.rstrip()) >= len(title)):
            index += 1
            continue
        level = styles.setdefault((char, over), len(styles) + 1)
        body_line = index + 2
        body = lines[body_line][0] if body_line < len(lines) else len(text)
        found.append(Heading(heading_start, body, min(level, 6), title.strip()))
        index = body_line
    return found


def asciidoc_headings(text: str) -> list[Heading]:
    """AsciiDoc section titles outside delimited blocks, in order."""
    found: list[Heading] = []
    block: str | None = None
    for start, raw in _lines(text):
        line = raw.rstrip("\n")
        delimiter = _ADOC_DELIMITER.fullmatch(line)
        if delimiter:
            block = None if block == delimiter.group(1) else (block or delimiter.group(1))
            continue
        if block is not None:
            continue
        match = _ADOC_TITLE.match(line)
        if match:
            level = len(match.group(1))
            found.append(Heading(start, min(start + len(raw), len(text)), level, match.group(2)))
    return found


__all__ = ["asciidoc_headings", "markup_headings", "markup_of", "rst_headings"]
