"""HTML files: the visible text, with every character traced back to the file's bytes.

The text is what a browser's "select all, copy" roughly gives: no ``script``, ``style``,
``noscript`` or ``template`` contents, whitespace collapsed outside ``pre``, a line break
at block elements (a blank line between paragraph-like blocks) and entities decoded.

Offsets (see :class:`~kbgraph.retrieval._segments.Segment`): a character copied from the file
points at its own bytes, a character decoded from an entity points at the ``&`` that
starts the entity, and an inserted line break or space points at the tag that caused it;
``offsets[len(text)]`` is the end of the last text taken from the file. The segment's
``byte_line_starts`` holds where every line of the original file starts, so chunk line
numbers are lines of the HTML file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html import unescape
from html.parser import HTMLParser

import numpy as np

from .._segments import Segment
from ._base import skip

_HIDDEN = frozenset({"script", "style", "noscript", "template"})
_VERBATIM = frozenset({"pre", "textarea", "listing", "xmp"})
_PARAGRAPH = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "details", "dialog", "div",
        "dl", "fieldset", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
        "header", "hr", "main", "nav", "ol", "p", "pre", "section", "table", "title", "ul",
    }
)  # fmt: skip
_LINE = frozenset(
    {"br", "caption", "dd", "dt", "figcaption", "legend", "li", "option", "summary", "tr"}
)
_CELL = frozenset({"td", "th"})
_TOKENS = re.compile(r"[ \t\n\r\f]+|[^ \t\n\r\f]+")
_SPACE_RUN = re.compile(r"[ \t\n\r\f]+")
_NEEDS_COLLAPSE = re.compile(r"[\t\n\r\f]|  ")
_HTML_SPACE = " \t\n\r\f"


class _TextExtractor(HTMLParser):
    """Collects visible text and, for each character, its position in the source text."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=False)  # entities are reported with positions
        self._source = source
        self._line_starts = [0, *(m.end() for m in re.finditer("\n", source))]
        self.parts: list[str] = []
        self.positions: list[int] = []
        self.end = 0
        self._hidden = 0
        self._verbatim = 0
        self._break = 0  # newlines owed before the next text
        self._break_pos = 0
        self._space_pos: int | None = None
        self._trailing_newlines = 0
        self._pre_opened = False  # a newline right after <pre> is not content (HTML spec)

    def _pos(self) -> int:
        line, col = self.getpos()
        return self._line_starts[line - 1] + col

    # --- tags -----------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag(tag, opening=True)

    def handle_endtag(self, tag: str) -> None:
        self._tag(tag, opening=False)

    def _tag(self, tag: str, *, opening: bool) -> None:
        step = 1 if opening else -1
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden + step)
            return
        if tag in _VERBATIM:
            self._verbatim = max(0, self._verbatim + step)
            self._pre_opened = opening
        pos = self._pos()
        if tag in _PARAGRAPH:
            self._want_break(2, pos)
        elif tag in _LINE:
            self._want_break(1, pos)
        elif tag in _CELL and self._space_pos is None:
            self._space_pos = pos

    def _want_break(self, newlines: int, pos: int) -> None:
        if self._break == 0:
            self._break_pos = pos  # the tag that ended the previous text
        self._break = max(self._break, newlines)

    # --- text -----------------------------------------------------------------------
    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        start = self._pos()
        if self._pre_opened and data.startswith("\n"):
            data, start = data[1:], start + 1
        self._pre_opened = False
        self._emit(data, start, copied=True, end=0)

    def handle_entityref(self, name: str) -> None:
        self._reference(1 + len(name))

    def handle_charref(self, name: str) -> None:
        self._reference(2 + len(name))

    def _reference(self, length: int) -> None:
        if self._hidden:
            return
        self._pre_opened = False
        start = self._pos()
        end = start + length
        if self._source.startswith(";", end):
            end += 1
        raw = self._source[start:end]
        decoded = unescape(raw).replace("\r", "\n")
        # An unknown name ("AT&T") is plain text: its characters keep their own offsets.
        self._emit(decoded, start, copied=decoded == raw, end=end)

    def _emit(self, text: str, start: int, *, copied: bool, end: int) -> None:
        """Append ``text``: copied text sits at ``start`` onwards in the source; decoded
        text (an entity) sits wholly at ``start`` and ends at ``end``."""
        if self._verbatim:
            if text:
                where = range(start, start + len(text)) if copied else [start] * len(text)
                self._append(text, where, start + len(text) if copied else end)
            return
        core = text.strip(_HTML_SPACE)
        lead = len(text) - len(text.lstrip(_HTML_SPACE))
        if lead and self._space_pos is None:
            self._space_pos = start
        if not core:
            return
        if not copied:
            decoded = _SPACE_RUN.sub(" ", core)
            self._append(decoded, [start] * len(decoded), end)
        elif _NEEDS_COLLAPSE.search(core) is None:
            # The common case, prose with single spaces: nothing to collapse.
            self._append(core, range(start + lead, start + lead + len(core)), 0)
        else:
            self._append_collapsed(core, start + lead)
        if len(text) > lead + len(core):
            self._space_pos = start + lead + len(core) if copied else start

    def _append_collapsed(self, core: str, start: int) -> None:
        words: list[str] = []
        where: list[int] = []
        for m in _TOKENS.finditer(core):
            a, b = m.span()
            if core[a] in _HTML_SPACE:
                words.append(" ")
                where.append(start + a)
            else:
                words.append(core[a:b])
                where.extend(range(start + a, start + b))
        self._append("".join(words), where, 0)

    def _append(self, piece: str, where: Iterable[int], end: int) -> None:
        """Add text after any pending separator; ``end`` 0 means "after the last char"."""
        self._flush_separator()
        self.parts.append(piece)
        self.positions.extend(where)
        self.end = end or self.positions[-1] + 1
        stripped = piece.rstrip("\n")
        newlines = len(piece) - len(stripped)
        self._trailing_newlines = newlines + (self._trailing_newlines if not stripped else 0)

    def _flush_separator(self) -> None:
        if self.parts and self._break > self._trailing_newlines:
            count = self._break - self._trailing_newlines
            self.parts.append("\n" * count)
            self.positions.extend([self._break_pos] * count)
            self._trailing_newlines = self._break
        elif self.parts and self._space_pos is not None and not self.parts[-1][-1].isspace():
            self.parts.append(" ")
            self.positions.append(self._space_pos)
        self._break = 0
        self._space_pos = None


def byte_line_starts(data: bytes) -> np.ndarray:
    """Byte offsets where the lines of ``data`` start (LF, CRLF or lone CR end a line)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    after_lf = np.flatnonzero(raw == 0x0A) + 1
    cr = np.flatnonzero(raw == 0x0D)
    next_is_lf = np.zeros(len(cr), dtype=bool)
    inner = cr + 1 < len(raw)
    next_is_lf[inner] = raw[cr[inner] + 1] == 0x0A
    after_lone_cr = cr[~next_is_lf] + 1
    starts = np.concatenate(([0], after_lf, after_lone_cr)).astype(np.int64)
    starts = np.unique(starts)
    return starts[(starts < len(raw)) | (starts == 0)]


def extract_html(decoded: Segment, data: bytes, rel: str) -> Segment:
    """The visible text of an HTML file already decoded as ``decoded`` (whose text is
    newline-normalised and whose offsets map that text to ``data``)."""
    parser = _TextExtractor(decoded.text)
    parser.feed(decoded.text)
    parser.close()
    text = "".join(parser.parts)
    if not text.strip():
        raise skip(rel, "empty", "the HTML page has no visible text")
    positions = np.asarray([*parser.positions, parser.end], dtype=np.int64)
    return Segment(
        text=text,
        offsets=decoded.offsets[positions],
        encoding=decoded.encoding,
        fallback=decoded.fallback,
        byte_line_starts=byte_line_starts(data),
    )


__all__ = ["byte_line_starts", "extract_html"]
