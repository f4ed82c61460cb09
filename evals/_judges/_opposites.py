"""Antonym swaps: a claim clause that puts a word's opposite where the source sentence it
rests on has the word ("revenue decreased" against "revenue increased").

SummEdits' inconsistent edits are mostly one-word swaps, and the commonest are antonyms
("increase"→"decrease" 30 times, "lower"→"higher" 15, "easy"→"hard", "encourages"→
"discourages", "including"→"excluding"; Laban et al. 2023 name "antonym swap" one of their
four edit types). The judge cannot see them: a sentence and its antonym swap are as close
in embedding space as two paraphrases, and hold the same words but one.

The check is narrow on purpose, since a false flag scores a faithful answer 0: the source
sentences that hold most of the clause's other words must write the opposite and none of
them the claim's word, neither clause may be negative ("did not decrease" says
"increased"'s side, or neither), and the pairs are a closed list of plain opposites.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._text import content_words
from ._context import ContextText
from ._polarity import MIN_WORDS, SAME_SHARE
from ._polarity import clauses as polarity_clauses

_PAIRS = (
    ("increase", "decrease"),
    ("increase", "reduce"),
    ("increase", "decline"),
    ("increasing", "decreasing"),
    ("higher", "lower"),
    ("raise", "lower"),
    ("rise", "fall"),
    ("rises", "falls"),
    ("rose", "fell"),
    ("gain", "loss"),
    ("profit", "loss"),
    ("strong", "weak"),
    ("stronger", "weaker"),
    ("strengthen", "weaken"),
    ("easy", "hard"),
    ("easy", "difficult"),
    ("easier", "harder"),
    ("encourage", "discourage"),
    ("suitable", "unsuitable"),
    ("include", "exclude"),
    ("positive", "negative"),
    ("success", "failure"),
    ("succeed", "fail"),
    ("accept", "reject"),
    ("maximum", "minimum"),
    ("improve", "worsen"),
    ("larger", "smaller"),
    ("bigger", "smaller"),
    ("longer", "shorter"),
    ("better", "worse"),
    ("best", "worst"),
    ("earlier", "later"),
    ("agree", "disagree"),
    ("approve", "disapprove"),
    ("legal", "illegal"),
    ("possible", "impossible"),
    ("likely", "unlikely"),
    ("expensive", "cheap"),
    ("optimistic", "pessimistic"),
    ("majority", "minority"),
    ("upward", "downward"),
    ("win", "lose"),
    ("won", "lost"),
    ("free", "paid"),
    ("sunny", "rainy"),
    ("sunny", "cloudy"),
    ("hot", "cold"),
    ("warm", "cold"),
    ("open", "closed"),
    ("full", "empty"),
    ("high", "low"),
    ("buy", "sell"),
    ("import", "export"),
    ("add", "remove"),
    ("true", "false"),
    ("correct", "incorrect"),
    ("safe", "dangerous"),
    ("simple", "complex"),
    ("cheaper", "dearer"),
)


def _opposites() -> dict[str, frozenset[str]]:
    """Each word's opposites, by the stems ``content_words`` gives ("increas")."""
    out: dict[str, set[str]] = {}
    for a, b in _PAIRS:
        (stem_a,), (stem_b,) = content_words(a), content_words(b)  # no stop word
        out.setdefault(stem_a, set()).add(stem_b)
        out.setdefault(stem_b, set()).add(stem_a)
    return {k: frozenset(v) for k, v in out.items()}


OPPOSITES = _opposites()


@dataclass(frozen=True, slots=True)
class Swap:
    """The claim's word (a stem), the opposite the source writes, and that sentence."""

    word: str
    opposite: str
    sentence: int


def antonym_swaps(claim: str, ctx: ContextText) -> list[Swap]:
    """The words of ``claim`` whose opposite the source sentences most about their clause
    write instead of them (see the module docstring)."""
    out: list[Swap] = []
    for clause in polarity_clauses(claim):
        if clause.negative:
            continue
        for word in sorted(clause.words & OPPOSITES.keys()):
            swap = _swap(word, clause.words - {word}, ctx)
            if swap is not None:
                out.append(swap)
    return out


def _swap(word: str, rest: frozenset[str], ctx: ContextText) -> Swap | None:
    present = rest & ctx.words
    if len(present) < MIN_WORDS:
        return None
    counts: dict[int, int] = {}
    for w in present:
        for i in ctx.index.get(w, ()):
            counts[i] = counts.get(i, 0) + 1
    best = max(counts.values(), default=0)
    if best < max(MIN_WORDS, SAME_SHARE * len(present)):
        return None
    top = [i for i, n in counts.items() if n == best]
    if any(word in ctx.sentence_words[i] for i in top):
        return None
    for i in sorted(top):
        for clause in ctx.clauses_of(i):
            held = clause.words & OPPOSITES[word]
            if held and not clause.negative and len(clause.words & present) >= MIN_WORDS:
                return Swap(word, min(held), i)
    return None


__all__ = ["OPPOSITES", "Swap", "antonym_swaps"]
