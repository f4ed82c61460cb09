"""Which sentences of a context a claim rests on.

A claim is aligned with the context sentences that hold the most of its informative words,
weighted by inverse sentence frequency within the context (a name found in every sentence
tells little about where a claim comes from; a word found nowhere weighs most). A summary
sentence often fuses facts from two source sentences ("X won the final, and Y scored
twice"), so the alignment is the best sentence plus the one that covers most of what the
best left out — a greedy set cover of size two (the cover of SummaC's sentence-pair
alignment, Laban et al. 2022, without the NLI model).

``single`` and ``pair`` are the weighted shares of the claim's words that the best
sentence, and the best two, hold: a swapped name or number found elsewhere in the context
keeps the global overlap high but lowers ``single``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TOP_SENTENCES = 3
"""Sentences compared with a claim by the embedding model and the contradiction checks."""


def sentence_idf(sentence_words: Sequence[frozenset[str]]) -> dict[str, float]:
    """``log(1 + N / df)`` over the context's sentences: smoothed inverse sentence
    frequency, never 0 (Robertson–Spärck Jones style)."""
    df: dict[str, int] = {}
    for words in sentence_words:
        for word in words:
            df[word] = df.get(word, 0) + 1
    n = max(1, len(sentence_words))
    return {word: math.log(1 + n / count) for word, count in df.items()}


def absent_weight(n_sentences: int) -> float:
    """The weight of a word the context lacks: that of a word in half a sentence."""
    return math.log(1 + 2 * max(1, n_sentences))


@dataclass(frozen=True, slots=True)
class Alignment:
    """``top``: indices of up to ``TOP_SENTENCES`` sentences, best first; ``partner``: the
    sentence that best completes the first one (``None`` when none adds a word)."""

    top: tuple[int, ...]
    partner: int | None
    single: float
    pair: float

    @property
    def pair_indices(self) -> tuple[int, ...]:
        """The best sentence and its partner, in document order."""
        if not self.top:
            return ()
        if self.partner is None:
            return self.top[:1]
        return tuple(sorted((self.top[0], self.partner)))


NO_ALIGNMENT = Alignment((), None, 0.0, 0.0)


def align(
    words: Sequence[str],
    sentence_words: Sequence[frozenset[str]],
    index: dict[str, list[int]],
    idf: dict[str, float],
) -> Alignment:
    """Align a claim's content ``words`` with the sentences (``index``: word → sentences
    holding it)."""
    wanted = set(words)
    if not wanted or not sentence_words:
        return NO_ALIGNMENT
    absent = absent_weight(len(sentence_words))
    weight = {w: idf.get(w, absent) for w in wanted}
    total = sum(weight.values())
    scores: dict[int, float] = {}
    for word in wanted:
        for i in index.get(word, ()):
            scores[i] = scores.get(i, 0.0) + weight[word]
    if not scores:
        return NO_ALIGNMENT
    # Ties keep document order: the earlier sentence first.
    ranked = sorted(scores, key=lambda i: (-scores[i], i))
    best = ranked[0]
    left = wanted - sentence_words[best]
    partner, gain = None, 0.0
    for i in ranked[1:]:
        extra = sum(weight[w] for w in left & sentence_words[i])
        if extra > gain:
            partner, gain = i, extra
    return Alignment(
        top=tuple(ranked[:TOP_SENTENCES]),
        partner=partner,
        single=scores[best] / total,
        pair=(scores[best] + gain) / total,
    )


__all__ = ["NO_ALIGNMENT", "TOP_SENTENCES", "Alignment", "absent_weight", "align", "sentence_idf"]
