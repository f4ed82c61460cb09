"""Relation errors that words alone miss: a word swapped in from elsewhere in the context, and
two names that trade places around the word that relates them.

- ``substitutions``: a claim word its best-aligned sentence lacks but the context has
  elsewhere, between two claim words the best sentence has: a name or word swapped in from
  another sentence ("Smith was arrested in Leeds" where the sentence says "Jones was
  arrested in Leeds" and Smith appears further on), or two namesakes merged.
- ``entity_swap``: the claim's best sentence holds every word of it but one name, and has
  another name in its place, while the context names the claim's one elsewhere: "Smith was
  arrested in Leeds" against "Police arrested Jones in Leeds. Smith, his brother, was
  questioned in York". The claim is then not supported (the evidence is about Jones).
- ``role_swaps``: every word of the claim is in its sentence, but two of them sit on the
  other sides of the word between them ("Arsenal beat Chelsea" against "Chelsea beat
  Arsenal"; "Smith told Jones" against "Jones told Smith"). A passive on one side only
  ("Chelsea were beaten by Arsenal") reverses the order legitimately, and verbs that relate
  both ways ("met", "played", "married") are no swap. Only names count (words written with a
  capital, not first, in the claim or the source): other words reorder freely in a
  paraphrase.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from kbgraph._base.text import FUNCTION_WORDS, words

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
_NAME_WORDS = 3
"""At most this many words of one name ("Marc Petit") are missing from the sentence."""
_TITLES = frozenset(
    content_words("mr mrs ms miss dr prof sir dame lord lady president minister king queen")
)
_CALENDAR = frozenset(
    content_words(
        "monday tuesday wednesday thursday friday saturday sunday january february march "
        "april may june july august september october november december"
    )
)


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
    capital: bool = False  # written with a capital, wherever it stands


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
                    named = capital and bool(pieces)
                    out.append(_Word(stemmed[0], piece, len(pieces), named, capital))
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


@dataclass(frozen=True, slots=True)
class EntitySwap:
    claimed: str
    source: str

    def describe(self) -> str:
        return f"another name: the claim has {self.claimed!r}, the source {self.source!r}"


def entity_swap(
    claim: str, sentence: str, names_elsewhere: Callable[[str], bool]
) -> EntitySwap | None:
    """A name of ``claim`` (up to ``_NAME_WORDS`` words, together) that ``sentence`` (its
    best-aligned sentence) lacks, while it holds every other content word of the claim and,
    in the name's place (next to a word beside the name in the claim), a name the claim
    lacks: "Smith was arrested in Leeds" against "Police arrested Jones in Leeds", Smith
    being a name elsewhere in the context (``names_elsewhere(stem)``). A pronoun resolved
    ("Locke replaced" for "since he replaced"), a first name added ("Alberto Bueno" for
    "Bueno") or a title ("Ms Moon" for "Natalia Moon") is no swap; days and months are no
    names."""
    said, _ = _words(claim)
    source, _ = _words(sentence)
    have = {w.stem for w in source}
    gaps = [i for i, w in enumerate(said) if w.stem not in have]
    if not 0 < len(gaps) <= _NAME_WORDS or gaps[-1] - gaps[0] != len(gaps) - 1:
        return None
    absent = [said[i] for i in gaps]
    if not all(w.capital and w.stem not in _TITLES and names_elsewhere(w.stem) for w in absent):
        return None
    beside = {said[i].stem for i in (gaps[0] - 1, gaps[-1] + 1) if 0 <= i < len(said)}
    anchors = [w.position for w in source if w.stem in beside]
    claimed = {w.stem for w in said}
    other = next(
        (
            w
            for w in source
            if w.named
            and w.stem not in claimed
            and w.stem not in _CALENDAR
            and any(abs(w.position - p) == 1 for p in anchors)
        ),
        None,
    )
    claimed_name = " ".join(w.raw for w in absent)
    return None if other is None else EntitySwap(claimed_name, other.raw)


def names(text: str) -> frozenset[str]:
    """Stems ``text`` writes with a capital (a name, or a sentence's first word)."""
    return frozenset(w.stem for w in _words(text)[0] if w.capital)


def _once(found: list[_Word]) -> dict[str, _Word]:
    counts: dict[str, int] = {}
    for w in found:
        counts[w.stem] = counts.get(w.stem, 0) + 1
    return {w.stem: w for w in found if counts[w.stem] == 1}


__all__ = ["EntitySwap", "RoleSwap", "entity_swap", "names", "role_swaps", "substitutions"]
