"""The offline judge's answer relevance: does an answer respond to each part of its
question with information of its own, without evading?

Ragas (Es et al. 2023) asks an LLM which questions the answer answers and compares them
with the question, so that incomplete, evasive and padded answers score low. Offline,
three measurable proxies of the same idea:

- ``addressed`` — each part of the question ("When was X released *and* what can it do?"
  has two) is close, in embedding space, to some sentence of the answer: the mean over the
  parts of the best part–sentence cosine (rescaled, see ``rescale``);
- ``informative`` — how much the answer says beyond restating the question: the distinct
  content words of its on-topic sentences (cosine with the question or a part of at least
  ``ON_TOPIC_AT``) that the question does not contain, saturating as
  ``1 - exp(-n / INFORMATION_SCALE)``. "The director is Shen Tong." restates the question
  and adds two words; off-topic padding ("Sofia is a beautiful capital.") adds none;
- ``focus`` — the mean over the answer's sentences of how close each is to the question
  (its best cosine with the question or a part, rescaled): sentences that answer nothing
  that was asked ("Harbor's logo is a lighthouse.") dilute it, so a padded answer never
  scores above the same answer without the padding;
- ``evasive`` — the share of the answer's sentences that are refusals ("I do not have the
  exact duration", "as an AI language model …"), a sentence that hedges beside a fact
  ("It lasted months, but I do not know exactly") counting ``HEDGED_SENTENCE_EVASION``
  (its fact is kept); the score is scaled by the share that is left.

``score = (ADDRESSED_WEIGHT · addressed + (1 − ADDRESSED_WEIGHT) · focus)
· (INFORMATIVE_FLOOR + (1 − INFORMATIVE_FLOOR) · informative) · (1 − evasive)``

Numbers are masked (``mask_numbers``) in everything this compares: relevance asks whether
an answer addresses the question, not whether its values are right (answer correctness
does), so an answer that differs only by a number scores the same — a wrong number never
ranks above the right one.

The plain cosine of question and answer is not used: on WikiEval it ranks the poor answer
first in most pairs, because a short answer that restates the question is closer to it
than a full one. ``ON_TOPIC_AT``, ``INFORMATION_SCALE`` and ``ADDRESSED_WEIGHT`` were chosen
on the even-numbered WikiEval pairs (a dev half); ``focus``, ``INFORMATIVE_FLOOR`` and the
masking on those pairs and the bundled answer variants
(``evals/data/examples_docs_variants.jsonl``: a correct concise answer, the same padded,
with a wrong number, and an answer to another question), among the settings under which no
variant scores above its correct answer; ``kbgraph eval meta`` reports all 50 pairs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

ON_TOPIC_AT = 0.3
INFORMATION_SCALE = 20.0
ADDRESSED_WEIGHT = 0.25
INFORMATIVE_FLOOR = 0.2
HEDGED_SENTENCE_EVASION = 0.5
SIMILARITY_FLOOR = 0.1
SIMILARITY_CEILING = 0.7
"""Cosine similarities of all-MiniLM-L6-v2 between a question and an unrelated text sit
near 0.1, between a question and a direct answer near 0.7; rescaled to 0..1 between them."""

_WH = r"(?:what|when|where|who|whom|whose|which|why|how)"
_AUX = r"(?:is|are|was|were|does|do|did|can|could|has|have|had|will|should)"
_PART_BREAK = re.compile(rf",?\s+and\s+(?={_WH}\b|{_AUX}\b)|,\s+(?={_WH}\b)|[?;]\s+", re.IGNORECASE)


def rescale(cosine: float) -> float:
    span = SIMILARITY_CEILING - SIMILARITY_FLOOR
    return min(1.0, max(0.0, (cosine - SIMILARITY_FLOOR) / span))


def question_parts(question: str) -> list[str]:
    """The sub-questions of ``question``: split before a second wh-word or auxiliary
    joined by "and" or a comma ("When was GPT-4 released and what can it do?" → two), and
    between several questions. A question with one part gives itself."""
    pieces = [p.strip(" ,?") for p in _PART_BREAK.split(question.strip())]
    return [p for p in pieces if re.search(r"\w", p)] or [question]


_NUMBER = re.compile(r"(?<![\w-])\d+(?:[.,]\d+)*(?![\w-])")


def mask_numbers(text: str) -> str:
    """``text`` with each stand-alone number written as ``N`` ("port 8080" → "port N"; not
    the digits of a name such as "GPT-4")."""
    return _NUMBER.sub("N", text)


@dataclass(frozen=True, slots=True)
class AnswerEvidence:
    addressed: float
    informative: float
    evasive: float
    new_words: int
    focus: float = 1.0

    @property
    def score(self) -> float:
        on_question = ADDRESSED_WEIGHT * self.addressed + (1 - ADDRESSED_WEIGHT) * self.focus
        content = INFORMATIVE_FLOOR + (1 - INFORMATIVE_FLOOR) * self.informative
        return min(1.0, max(0.0, on_question * content * (1.0 - self.evasive)))

    def reason(self) -> str:
        return (
            f"question parts addressed {self.addressed:.2f}, sentences on the question "
            f"{self.focus:.2f}, {self.new_words} new on-topic words (informative "
            f"{self.informative:.2f}), evasive {self.evasive:.0%}"
        )


def answer_evidence(
    part_best: list[float],
    sentence_on_topic: list[float],
    sentence_new_words: list[frozenset[str]],
    evasive_share: float,
) -> AnswerEvidence:
    """The evidence from precomputed similarities: ``part_best`` is each question part's
    best cosine with a non-evasive answer sentence; ``sentence_on_topic`` each such
    sentence's best cosine with the question or a part; ``sentence_new_words`` its content
    words that the question lacks."""
    addressed = sum(rescale(c) for c in part_best) / len(part_best) if part_best else 0.0
    words: set[str] = set()
    for cosine, new in zip(sentence_on_topic, sentence_new_words, strict=True):
        if cosine >= ON_TOPIC_AT:
            words |= new
    informative = 1.0 - math.exp(-len(words) / INFORMATION_SCALE)
    focus = (
        sum(map(rescale, sentence_on_topic)) / len(sentence_on_topic) if sentence_on_topic else 0.0
    )
    return AnswerEvidence(addressed, informative, evasive_share, len(words), focus)


__all__ = [
    "ADDRESSED_WEIGHT",
    "HEDGED_SENTENCE_EVASION",
    "INFORMATION_SCALE",
    "INFORMATIVE_FLOOR",
    "ON_TOPIC_AT",
    "AnswerEvidence",
    "answer_evidence",
    "mask_numbers",
    "question_parts",
    "rescale",
]
