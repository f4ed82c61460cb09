"""Lexical and semantic evidence that a context supports a claim, and the offline judge's
support score over it.

The evidence (all cheap, no LLM):

- ``overlap`` — share of the claim's content words (stemmed) found anywhere in the context:
  the plain baseline;
- ``missing`` — how many content words and numbers of the claim the context lacks: each
  one is a possible hallucination, so the count matters, not only the share. Words naming
  the source ("article", "summary") do not count. A number counts as found only where the
  context states the same quantity about the same thing, or the parts it sums
  (``_checks``);
- ``single`` / ``pair`` — idf-weighted share of the claim's words held by its best-aligned
  sentence (for a compound claim, each clause's own best sentence: ``clauses``), and by
  the best sentence plus the one that best completes it (``_alignment``): words in the
  right place, not just somewhere;
- ``bigrams`` — share of the claim's adjacent content-word pairs found in one sentence;
- ``similarity`` — best cosine similarity between the claim and the part of its aligned
  sentence (and of the aligned pair joined) that holds its words, from a sentence embedding
  model: paraphrase support that words miss. A fragment answer ("Delhi") is embedded with
  its question;
- ``numbers_match`` — share of the claim's numbers found so (``_checks``);
- ``substituted`` — claim words the best sentence lacks but the context has elsewhere,
  between words the best sentence has: a swapped name (``_conflicts.substitutions``);
- ``negation_flip`` / ``number_conflict`` / ``role_swap`` — the context says the opposite,
  checked clause by clause against the whole context: a polarity flip judged on meaning
  (``_polarity``), another number of the same unit about the same subject (``_checks``),
  two names trading places (``_conflicts.role_swaps``). Any of them, on a claim that
  otherwise matches the context, makes the verdict "contradicted" (``problem`` says why,
  ``conflicting`` is the sentence) — unless the claim is the context's word for word
  (``quoted``): a quote cannot contradict its source, and is always supported.

The support score is ``σ(b + w·x) / σ(b + Σw⁺)``: a logistic model over the features,
scaled so that a claim with perfect evidence scores 1; a contradicted claim keeps
``CONTRADICTION_FACTOR`` of it. ``benchmarks/tune_judge.py`` chose the weights and the
factor on development data only — BEGIN ``*_dev_*``, HaluEval ``qa_multi_turn``, and
public summary and claim sets built outside the repository (``benchmarks/README.md``): a
sign-constrained logistic fit, refined for the summary and claim sets without costing
BEGIN or HaluEval. ``kbgraph eval meta`` reports held-out splits separately.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from .._text import content_words
from ._alignment import NO_ALIGNMENT, Alignment
from ._checks import NumberFinding, number_findings, role_swap
from ._conflicts import EntitySwap, RoleSwap, entity_swap, names, substitutions
from ._context import ContextText, claim_words
from ._polarity import Flip, polarity_flip

FRAGMENT_WORDS = 3
"""A claim with fewer content words than this is a fragment, embedded with its question."""

WEIGHTS: dict[str, float] = {
    "bias": -3.375,
    "overlap": 0.0,
    "missing": -0.875,
    "single": 4.125,
    "pair": 0.0,
    "bigrams": 2.25,
    "similarity": 3.25,
    "numbers_match": 0.25,
    "substituted": -0.625,
}
"""Weights of the support score (``missing`` and ``substituted`` enter as ``log1p``),
from ``benchmarks/tune_judge.py``. See the module docstring."""

CONTRADICTION_FACTOR = 0.1
"""A contradicted claim keeps this share of its support score."""

VERIFIER_WEIGHT = 0.75
"""How far the trained verifier moves an unsure lexical score towards its own probability
(:func:`graded`): chosen by ``training/tune_verifier_weight.py`` on development data the
verifier never trained on — SciFact's test claims with their rationales (AUROC 0.609 →
0.633), FRANK XSum (0.702 → 0.736) and CNN/DM (0.768 → 0.766), synthetic claims (0.709 →
0.712), the contrast set ``evals/data/judge_contrast.jsonl`` (0.938 → 0.969) — never on a
held-out set."""

SUPPORTED_AT = 0.5
"""A claim is supported when its support score reaches this: the fitted model's even odds
(``benchmarks/tune_judge.py``, step 5)."""

ENTITY_SWAP_FACTOR = 0.45
"""A claim whose best sentence names someone else in its place (``_conflicts.entity_swap``)
keeps this share of its support: below ``SUPPORTED_AT`` whatever its words, since the
evidence is about another person or thing; not a contradiction, since the context may
say it of the claim's one too in words the judge does not align."""

CONTRADICTED_MIN_OVERLAP = 0.6
"""A negation flip or number conflict means contradiction only when the claim otherwise
matches the context this well; else the claim is just about something else."""

CLAUSE_WORDS = 2
"""A clause with at least this many content words is aligned on its own."""

_CLAUSE_BREAK = re.compile(
    r"\s*[,;]\s+(?:and|but|while|whereas|although|though|yet|so|as)\s+|\s*;\s+"
    r"|\s+(?:but|whereas)\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Evidence:
    overlap: float
    missing: int
    single: float
    pair: float
    bigrams: float
    similarity: float
    numbers_match: float
    negation_flip: bool
    number_conflict: bool
    aligned: str
    substituted: int = 0
    missing_words: tuple[str, ...] = ()
    quoted: bool = False  # the claim is the context's, word for word
    role_swap: bool = False
    entity_swap: str = ""  # a name the best sentence has another one for: "Smith ≠ Jones"
    problem: str = ""  # what contradicts the claim, for a person: "number mismatch: 49 ≠ 29"
    conflicting: str = ""  # the source sentence that contradicts the claim
    numbers: tuple[NumberFinding, ...] = ()
    verified: float | None = None  # the trained verifier's P(supported) (``_verifier``)

    def vector(self) -> dict[str, float]:
        return {
            "overlap": self.overlap,
            "missing": math.log1p(self.missing),
            "single": self.single,
            "pair": self.pair,
            "bigrams": self.bigrams,
            "similarity": self.similarity,
            "numbers_match": self.numbers_match,
            "substituted": math.log1p(self.substituted),
        }


def embedding_text(claim: str, question: str | None) -> str:
    """What to embed for a claim: a fragment answer is not self-contained without its
    question."""
    if question and len(set(content_words(claim))) < FRAGMENT_WORDS:
        return f"{question.strip()} {claim.strip()}"
    return claim


def clauses(claim: str) -> list[str]:
    """The clauses of a compound claim ("X won the final, and Y scored twice"), each with
    at least ``CLAUSE_WORDS`` content words; the whole claim when it has fewer than two."""
    parts = [p for p in _CLAUSE_BREAK.split(claim) if len(content_words(p)) >= CLAUSE_WORDS]
    return parts if len(parts) > 1 else [claim]


@dataclass(frozen=True, slots=True)
class _Clause:
    """One clause aligned on its own: its words, alignment and the checks on it."""

    text: str
    words: list[str]
    alignment: Alignment
    numbers: list[NumberFinding]
    swap: RoleSwap | None
    entity: EntitySwap | None = None

    @classmethod
    def of(cls, text: str, context: ContextText) -> _Clause:
        words = claim_words(text, context)
        alignment = context.align(words) if words else NO_ALIGNMENT
        return cls(
            text,
            words,
            alignment,
            number_findings(text, words, alignment, context),
            role_swap(words, alignment, text, context),
            _entity_swap(text, alignment, context),
        )


def _entity_swap(text: str, alignment: Alignment, context: ContextText) -> EntitySwap | None:
    """``_conflicts.entity_swap`` between the clause and its best sentence."""
    if not alignment.top:
        return None
    best = alignment.top[0]

    def named_elsewhere(stem: str) -> bool:
        return any(
            stem in names(context.sentences[i]) for i in context.index.get(stem, ()) if i != best
        )

    return entity_swap(text, context.sentences[best], named_elsewhere)


def lexical_evidence(claim: str, context: ContextText, similarity: float) -> Evidence:
    """Evidence for ``claim`` in ``context``; ``similarity`` comes from the embedding model
    (best cosine with :meth:`ContextText.candidates`, computed by the caller in batches).
    The clauses of a compound claim are aligned one by one: a summary sentence that fuses
    two source sentences is held by two sentences, one per clause. Numbers, negations and
    roles are checked against the whole context (``_checks``, ``_polarity``)."""
    words = claim_words(claim, context)
    alignment = context.align(words) if words else NO_ALIGNMENT
    parts = [_Clause.of(text, context) for text in clauses(claim)]
    findings = [f for part in parts for f in part.numbers]
    # Numbers are alignment anchors, but found or missing as numbers, not as words.
    text_words = [w for w in words if not w[:1].isdigit()]
    lacking = tuple(w for w in text_words if w not in context.words)
    lacking_numbers = tuple(
        f.slot.describe() for f in findings if f.status in ("clash", "unsupported")
    )
    found = len(findings) - len(lacking_numbers)
    overlap = (
        1.0 - len(lacking) / len(text_words)
        if text_words
        else found / len(findings)
        if findings
        else 0.0
    )
    sized = sum(len(p.words) for p in parts)
    single = sum(p.alignment.single * len(p.words) for p in parts) / sized if sized else overlap
    pairs = set(itertools.pairwise(words))
    flip = polarity_flip(
        claim, context.clauses_of, context.index, context.words, context.sentence_words.__getitem__
    )
    clash = next((f for f in findings if f.status == "clash"), None)
    swap = next((p.swap for p in parts if p.swap is not None), None)
    problem, conflicting = _problem(flip, clash, swap, parts, context)
    return Evidence(
        overlap=overlap,
        missing=len(lacking) + len(lacking_numbers),
        single=single if words else overlap,
        pair=alignment.pair if words else overlap,
        bigrams=len(pairs & context.bigrams) / len(pairs) if pairs else overlap,
        similarity=similarity,
        numbers_match=found / len(findings) if findings else 1.0,
        negation_flip=flip is not None,
        number_conflict=clash is not None,
        substituted=sum(
            substitutions(p.words, context.sentence_words[p.alignment.top[0]], context.words)
            for p in parts
            if p.alignment.top
        ),
        aligned=context.sentences[alignment.top[0]] if alignment.top else "",
        missing_words=(*lacking, *lacking_numbers),
        quoted=context.is_quote(claim),
        role_swap=swap is not None,
        entity_swap=next((p.entity.describe() for p in parts if p.entity is not None), ""),
        problem=problem,
        conflicting=conflicting,
        numbers=tuple(findings),
    )


def _problem(
    flip: Flip | None,
    clash: NumberFinding | None,
    swap: RoleSwap | None,
    parts: list[_Clause],
    context: ContextText,
) -> tuple[str, str]:
    """What contradicts the claim, said for a person, and the source sentence that does."""
    if clash is not None and clash.sentence is not None:
        return clash.describe(), context.sentences[clash.sentence]
    if flip is not None:
        return flip.describe(), context.sentences[flip.sentence]
    if swap is not None:
        part = next(p for p in parts if p.swap is swap)
        return swap.describe(), context.sentences[part.alignment.top[0]]
    return "", ""


def support_score(
    evidence: Evidence,
    weights: dict[str, float] | None = None,
    contradiction_factor: float = CONTRADICTION_FACTOR,
    verifier_weight: float = VERIFIER_WEIGHT,
) -> float:
    """In [0, 1]: the lexical model's score (1 for perfect evidence: every word, pair and
    number found, the closest sentence an exact match; lower for each kind of missing
    evidence) mixed with the trained verifier's probability where it ran (:func:`graded`);
    at least ``SUPPORTED_AT`` for a quote (``Evidence.quoted``); scaled by
    ``contradiction_factor`` when the evidence says the context contradicts the claim."""
    score = graded(lexical_score(evidence, weights), evidence.verified, verifier_weight)
    if evidence.quoted:
        # A quote is supported: never below the cut, graded above it like any claim.
        score = max(score, SUPPORTED_AT)
    elif is_contradiction(evidence):
        score *= contradiction_factor
    elif evidence.entity_swap:
        score *= ENTITY_SWAP_FACTOR
    return min(1.0, max(0.0, score))


def lexical_score(evidence: Evidence, weights: dict[str, float] | None = None) -> float:
    """The logistic model over the lexical and embedding features, in [0, 1]."""
    w = WEIGHTS if weights is None else weights
    features = evidence.vector()
    z = w["bias"] + sum(w.get(name, 0.0) * value for name, value in features.items())
    best = w["bias"] + sum(max(0.0, w.get(name, 0.0)) for name in features)
    return _sigmoid(z) / _sigmoid(best)


def graded(lexical: float, verified: float | None, weight: float = VERIFIER_WEIGHT) -> float:
    """The lexical score moved towards the verifier's probability in proportion to how
    unsure the lexical score is (``4·l·(1 − l)``: none at 0 or 1, fully at 0.5), times
    ``weight``; the lexical score alone where no verifier ran. Where the words settle it —
    every word, pair and number of the claim in one sentence, or none of them — the
    verifier's noise cannot move a near-copy (it scored copied news sentences 0.1-0.5, and
    a plain linear mix cost FRANK CNN/DM 0.13 AUROC); where they do not — a paraphrase, a
    fused summary sentence — it decides."""
    if verified is None:
        return lexical
    doubt = 4.0 * lexical * (1.0 - lexical)
    return lexical + weight * doubt * (verified - lexical)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def is_contradiction(evidence: Evidence) -> bool:
    if evidence.quoted or evidence.overlap < CONTRADICTED_MIN_OVERLAP:
        return False
    return evidence.negation_flip or evidence.number_conflict or evidence.role_swap


__all__ = [
    "CONTRADICTION_FACTOR",
    "ENTITY_SWAP_FACTOR",
    "SUPPORTED_AT",
    "VERIFIER_WEIGHT",
    "WEIGHTS",
    "Evidence",
    "clauses",
    "embedding_text",
    "graded",
    "is_contradiction",
    "lexical_evidence",
    "lexical_score",
    "support_score",
]
