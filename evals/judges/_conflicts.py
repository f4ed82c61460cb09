"""Relation errors that words alone miss: a word swapped in from elsewhere in the context, and
two names that trade places around the word that relates them.

- ``substitutions``: a claim word its best-aligned sentence lacks but the context has
  elsewhere, between two claim words the best sentence has: a name or word swapped in from
  another sentence ("Smith was arrested in Leeds" where the sentence says "Jones was
  arrested in Leeds" and Smith appears further on), or two namesakes merged.
- ``role_swaps``: every word of the claim is in its sentence, but two of them sit on the
  other sides of the word between them ("Arsenal beat Chelsea" against "Chelsea beat
  Arsenal"; "Smith told Jones" against "Jones told Smith"). A passive on one side only
  ("Chelsea were beaten by Arsenal") reverses the order legitimately, and verbs that relate
  both ways ("met", "played", "married") are no swap. Only names count (words written with a
  capital, not first, in the claim or the source): other words reorder freely in a
  paraphrase.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from kbgraph.retrieval.text import FUNCTION_WORDS, words

from .._text import content_words, normalise

_SYMMETRIC = frozenset(
    content_words(
        "meet met meets meeting marry married marries play played plays draw drew drawn "
        "face faced faces fight fought fights share shared join joined partner partnered "
        "talk talked speak spoke agree agreed negotiate negotiated compete competed tie tied "
        "versus vs against with and or between"
    )
)
_PASSIVE = "by"


def substitutions(words: Sequence[str], best: Collection[str], elsewhere: Collection[str]) -> int:
    """Claim words that the best-aligned sentence lacks but the context has elsewhere, each
    between two claim words the best sentence has (see the module docstring)."""
    count = 0
    for i, word in enumerate(words):
        if word in best or word not in elsewhere:
            continue
        neighbours = [*words[max(0, i - 1) : i], *words[i + 1 : i + 2]]
        if neighbours and all(n in best for n in neighbours):
            count += 1
    return count


@dataclass(frozen=True, slots=True)
class RoleSwap:
    first: str
    pivot: str
    second: str

    def describe(self) -> str:
        return (
            f"role swap: the claim has {self.first!r} {self.pivot!r} {self.second!r}, the "
            f"source {self.second!r} {self.pivot!r} {self.first!r}"
        )


@dataclass(frozen=True, slots=True)
class _Word:
    stem: str
    raw: str
    position: int  # index among the text's words
    named: bool  # written with a capital, not as the first word


def _words(text: str) -> tuple[list[_Word], list[str]]:
    """The content words of ``text`` with their positions, and every word in order."""
    pieces: list[str] = []
    out: list[_Word] = []
    for token in normalise(text).split():
        capital = token.lstrip("\"'([")[:1].isupper()
        for piece in words(token):
            if piece not in FUNCTION_WORDS and len(piece) > 1:
                stemmed = content_words(piece)
                if stemmed:
                    out.append(_Word(stemmed[0], piece, len(pieces), capital and bool(pieces)))
            pieces.append(piece)
    return out, pieces


def role_swaps(claim: str, sentence: str) -> RoleSwap | None:
    """Two words of ``claim`` that ``sentence`` has on the other sides of a word between
    them (see the module docstring); ``None`` when there are none."""
    said, claim_pieces = _words(claim)
    source, source_pieces = _words(sentence)
    once_source = _once(source)
    shared = [w for w in _once(said).values() if w.stem in once_source]
    if len(shared) < 3:
        return None
    # Names only: written with a capital in the claim or in the source.
    candidates = [w for w in shared if w.named or once_source[w.stem].named]
    for i, a in enumerate(candidates):
        for b in candidates[i + 1 :]:
            sa, sb = once_source[a.stem], once_source[b.stem]
            if sa.position < sb.position:
                continue
            for pivot in shared:
                if not a.position < pivot.position < b.position or pivot.stem in _SYMMETRIC:
                    continue
                sp = once_source[pivot.stem]
                if not sb.position < sp.position < sa.position:
                    continue
                passive_claim = _PASSIVE in claim_pieces[pivot.position : b.position]
                passive_source = _PASSIVE in source_pieces[sp.position : sa.position]
                if passive_claim == passive_source:
                    return RoleSwap(a.raw, pivot.raw, b.raw)
    return None


def _once(found: list[_Word]) -> dict[str, _Word]:
    counts: dict[str, int] = {}
    for w in found:
        counts[w.stem] = counts.get(w.stem, 0) + 1
    return {w.stem: w for w in found if counts[w.stem] == 1}


__all__ = ["RoleSwap", "role_swaps", "substitutions"]
