"""Antonym swaps: a claim clause that puts a word's opposite where the source sentence it
rests on has the word ("revenue decreased" against "revenue increased"), or another member
of a closed class ("yellow and white paint" against "yellow and blue paint").

SummEdits' inconsistent edits are mostly one-word swaps, and the commonest are antonyms
("increase"→"decrease" 30 times, "lower"→"higher" 15, "easy"→"hard", "encourages"→
"discourages", "including"→"excluding"; Laban et al. 2023 name "antonym swap" one of their
four edit types). The judge cannot see them: a sentence and its antonym swap are as close
in embedding space as two paraphrases, and hold the same words but one.

The check is narrow on purpose, since a false flag scores a faithful answer 0: the source
sentences that hold most of the clause's other words must write the opposite and none of
them the claim's word, neither clause may be negative ("did not decrease" says
"increased"'s side, or neither), and the pairs are a closed list of plain opposites.

The classes (``_CLASSES``) are sets whose members exclude one another in one place: a
colour, a season, a time of day, a relative. SummEdits' "entity modification" edits swap
them ("blue" → "white", "brother" → "wife"). Left out: periods ("in recent weeks" for "in
recent months" and "the first quarter of the year" for "the first quarter" are rewordings
people accepted on SummEdits' consistent summaries, development data); ordinals ("lasts"
and "last" share a stem, "at first" is no rank) and directions ("Western officials" are
not from the west of the place named); weekdays and months (capitalised, so the name
check already says "Friday is in no source"); "silver" and "gold" (plans and medals);
"evening" and "night" are one member ("Saturday night" for "Saturday evening").
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
    ("grow", "decline"),
    ("grew", "declined"),
    ("growth", "decline"),
)

_CLASSES = {
    "colour": "red blue green yellow black white orange purple pink brown grey/gray",
    "season": "summer winter autumn",
    "time of day": "morning afternoon evening/night",
    "relative": "husband wife brother sister mother/mom/mum father/dad son daughter aunt uncle "
    "cousin nephew niece grandmother grandfather",
}
"""Closed classes, their members apart by spaces; words that say the same joined by "/"."""


def _opposites() -> dict[str, frozenset[str]]:
    """Each word's opposites, by the stems ``content_words`` gives ("increas")."""
    out: dict[str, set[str]] = {}
    for a, b in _PAIRS:
        (stem_a,), (stem_b,) = content_words(a), content_words(b)  # no stop word
        out.setdefault(stem_a, set()).add(stem_b)
        out.setdefault(stem_b, set()).add(stem_a)
    return {k: frozenset(v) for k, v in out.items()}


def _members() -> dict[str, tuple[str, frozenset[str]]]:
    """Each class member's stem: its class and the other members' stems."""
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for name, members in _CLASSES.items():
        stems = [frozenset(content_words(m.replace("/", " "))) for m in members.split()]
        everything = frozenset().union(*stems)
        for own in stems:
            for stem in own:
                out[stem] = (name, everything - own)
    return out


OPPOSITES = _opposites()
MEMBERS = _members()
ALTERNATIVES = {
    w: OPPOSITES.get(w, frozenset()) | MEMBERS.get(w, ("", frozenset()))[1]
    for w in OPPOSITES.keys() | MEMBERS.keys()
}
"""What may stand in a word's place and say something else: its opposites, the other
members of its class."""


@dataclass(frozen=True, slots=True)
class Swap:
    """The claim's word (a stem), the opposite or other member of its class the source
    writes, and that sentence; ``of_class`` names the class (``""``: an opposite)."""

    word: str
    opposite: str
    sentence: int
    of_class: str = ""


def antonym_swaps(claim: str, ctx: ContextText) -> list[Swap]:
    """The words of ``claim`` whose opposite the source sentences most about their clause
    write instead of them (see the module docstring)."""
    out: list[Swap] = []
    for clause in polarity_clauses(claim):
        if clause.negative:
            continue
        for word in sorted(clause.words & ALTERNATIVES.keys()):
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
            held = clause.words & ALTERNATIVES[word]
            if held and not clause.negative and len(clause.words & present) >= MIN_WORDS:
                opposite = held & OPPOSITES.get(word, frozenset())
                if opposite:
                    return Swap(word, min(opposite), i)
                return Swap(word, min(held), i, MEMBERS[word][0])
    return None


__all__ = ["ALTERNATIVES", "MEMBERS", "OPPOSITES", "Swap", "antonym_swaps"]
