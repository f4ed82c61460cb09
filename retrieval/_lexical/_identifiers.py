"""Identifiers split into the words a question uses, the whole identifier kept as well.

Code names things by gluing words: ``DEFAULT_TIMEOUT_CONFIG``, ``maxRedirects``,
``HTTPServer``, ``max-redirects``, ``sha256``, ``httpx._config.Timeout``. A question says
"default timeout" or "how many redirects". So a *compound* (word characters joined by
``.``, ``::`` or ``-``) is analysed twice over, as Lucene's WordDelimiterGraphFilter does
with ``preserveOriginal`` (and GitHub code search's tokenizer likewise):

- its **parts**: split at ``.``/``::`` into *segments* (a dotted path's steps), each segment
  at ``_`` and ``-``, at a lower-to-upper case change (``maxRedirects`` → max, Redirects),
  before the last capital of a capital run followed by lower case (``HTTPServer`` → HTTP,
  Server; a plural acronym stays whole: ``URLs``) and between letters and digits
  (``sha256`` → sha, 256). Case is read with Unicode's categories, so ``ÜberKlasse`` splits
  too; scripts without case (CJK) are never split.
- its **wholes**: each segment of two or more parts as its parts run together
  (``max_redirects``, ``max-redirects``, ``maxRedirects`` and ``MAX_REDIRECTS`` all give
  ``maxredirects``, and so does a lowercase query "maxredirects"), and a path of two or
  more segments as those joined by ``.`` (``client.redirecturl``), so that an exact
  identifier query matches its definition above the places that only share its words.

A plain word is one part and no whole: prose is analysed as before.
"""

from __future__ import annotations

import re
from functools import lru_cache

COMPOUND_PATTERN = r"\w+(?:(?:[.\-]|::)\w+)*"
"""Word runs (``\\w+``, Unicode) joined by ``.``, ``::`` or ``-``: one identifier or path."""

_SEGMENT_SPLIT = re.compile(r"\.|::")
# Character shapes: A upper, a other letter (s kept apart for plural acronyms), 0 digit,
# _ a separator. One regular expression over the shapes finds the parts in any script.
_ASCII_SHAPES = str.maketrans(
    {
        **{c: "A" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
        **{c: "a" for c in "abcdefghijklmnopqrtuvwxyz"},
        **{c: "0" for c in "0123456789"},
        "-": "_",
    }
)
_PART = re.compile(r"A+s(?![as])|A+(?=A[as])|A?[as]+|A+|0+")


def _char_shape(ch: str) -> str:
    if ch in "_-":
        return "_"
    if ch.isdigit():
        return "0"
    if ch.isupper() or ch.istitle():
        return "A"
    return "s" if ch == "s" else "a"


def _shape(segment: str) -> str:
    if segment.isascii():
        return segment.translate(_ASCII_SHAPES)
    return "".join(_char_shape(ch) for ch in segment)


def segment_parts(segment: str) -> list[str]:
    """The lowercased parts of one segment (no ``.`` in it), in order."""
    return [segment[m.start() : m.end()].lower() for m in _PART.finditer(_shape(segment))]


# Every ASCII byte that cannot be in a compound becomes a space; bytes >= 0x80 stay.
_ASCII_SEPARATORS = bytes(
    0x20 if i < 0x80 and not (re.match(r"\w", chr(i)) or chr(i) in ".-:") else i for i in range(256)
)
_find_compounds = re.compile(COMPOUND_PATTERN).findall


def compounds(text: str) -> list[str]:
    """The matches of :data:`COMPOUND_PATTERN` in ``text``, in order, case kept. As
    :func:`kbgraph._base.text.words` does, the text is first split in C at ASCII
    characters no compound holds; only pieces that may hide more (punctuation, non-ASCII)
    go through the regular expression."""
    raw = text.encode("utf-8", "surrogatepass").translate(_ASCII_SEPARATORS)
    out: list[str] = []
    for piece in raw.decode("utf-8", "surrogatepass").split():
        if piece.isalnum() and piece.isascii():
            out.append(piece)
        else:
            out.extend(_find_compounds(piece))
    return out


def _plain(compound: str) -> bool:
    """A word of one part: letters of one case (or capitalised), or digits only."""
    if compound.isalpha():
        return compound.islower() or compound.isupper() or compound.istitle()
    return compound.isdigit()


@lru_cache(maxsize=1 << 18)
def split_compound(compound: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(parts, wholes)`` of one compound (a match of :data:`COMPOUND_PATTERN`), both
    lowercased: every part in order, and the extra whole-identifier forms (none for a
    plain word)."""
    if _plain(compound):
        return (compound.lower(),), ()
    segments = [s for s in _SEGMENT_SPLIT.split(compound) if s]
    parts: list[str] = []
    wholes: list[str] = []
    joined: list[str] = []
    for segment in segments:
        pieces = segment_parts(segment)
        parts.extend(pieces)
        glued = "".join(pieces)
        if len(pieces) > 1:
            wholes.append(glued)
        if glued:
            joined.append(glued)
    if len(joined) > 1:
        wholes.append(".".join(joined))
    return tuple(parts), tuple(dict.fromkeys(wholes))


def _glued(piece: str) -> bool:
    """A name glued from words: ``snake_case`` (an inner ``_``; ``_private`` is the word
    private) or two runs of lower case (``maxRedirects``, ``RetryableError``)."""
    inner = piece.strip("_")
    if "_" in inner:
        return True
    shape = _shape(inner)
    return len(re.findall(r"[as]+", shape)) >= 2


@lru_cache(maxsize=1 << 18)
def glued_parts(compound: str) -> tuple[bool, ...]:
    """For each part of :func:`split_compound` (same order): whether it was glued into a
    name of code (``snake_case``, ``camelCase``, ``PascalCase``) rather than a word on its
    own: a plain word, a plain piece of a hyphenated word or a dotted path (``IL-6``,
    ``HB-601``, ``os.environ``), or a term of science glued from one word and letters or
    digits (``mRNA``, ``p53``, ``sha256``, ``HTTPServer``). The analyser weighs glued parts
    below whole words."""
    if _plain(compound):
        return (False,)
    flags: list[bool] = []
    for segment in _SEGMENT_SPLIT.split(compound):
        for piece in segment.split("-"):
            if piece:
                flags.extend([_glued(piece)] * len(segment_parts(piece)))
    return tuple(flags)


__all__ = ["COMPOUND_PATTERN", "compounds", "glued_parts", "segment_parts", "split_compound"]
