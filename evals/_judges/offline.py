"""A judge that needs no LLM and no network: lexical evidence plus a sentence embedding
model (the packaged all-MiniLM-L6-v2 by default; ``fake`` embeddings in fast tests).

Claims are scored by ``_evidence.support_score``; a claim the context says the opposite of
(a negation flip, another number for the same thing, two names trading places) is
contradicted, and a quote is supported. Each :class:`Judgement` says why
(:func:`judgement_of`): the reason for a person, the source sentence and the cause. The
embedding model compares a claim only with the few sentences it is aligned with
(``_alignment``), not with the whole context: that is most of the judge's cost. Passages are
relevant when they support part of the reference answer, or — without a reference — when
they cover the question's distinctive words (idf over the retrieved passages) and are
close to it in embedding space. Answers are relevant when they address each part of the
question with information of their own and do not evade (``_relevance``).

Vectors are cached per text, so a context judged for several metrics is embedded once.
A local model the judge loads itself (a spec such as ``local``) runs on ``model_threads``
CPU threads (one by default): an evaluation makes many small calls, and idle pool threads
spin between them — measured on the 2-core machine under load, 300 short sentences cost
2.5 s of CPU on one torch thread against 9.4 s on two, and took half the wall time.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from kbgraph._base.faces import shown_as

from .._claims import split_claims
from .._deadline import check_deadline
from .._hedges import without_hedges
from .._records import Cause, Judgement, Relevance, TokenUsage
from .._text import content_words, split_sentences
from ._context import ContextText, context_text
from ._evidence import (
    SUPPORTED_AT,
    Evidence,
    embedding_text,
    is_contradiction,
    lexical_evidence,
    support_score,
)
from ._relevance import (
    HEDGED_SENTENCE_EVASION,
    answer_evidence,
    mask_numbers,
    question_parts,
    rescale,
)
from ._verifier import SupportVerifier

CACHE_SIZE = 50_000
PASSAGE_RELEVANT_AT = 0.5

_WH_WORDS = frozenset(content_words("what which who whom whose when where why how"))


@shown_as("kbgraph.evals")
class OfflineJudge:
    """The offline judge. ``embeddings`` is a LangChain ``Embeddings`` or a spec for
    ``kbgraph.retrieval._embeddings.resolve_embeddings`` (``local``, ``fake`` …).
    ``verifier``: a trained verifier (``_verifier``: weights from ``make verifier``) whose
    probability moves each unsure claim's support score (``_evidence.graded``); ``None``
    (the default) judges on the lexical evidence alone. No weights ship yet: the first
    verifier lowered the held-out figures (``training/README.md``)."""

    def __init__(
        self,
        embeddings: Embeddings | str = "local",
        *,
        weights: dict[str, float] | None = None,
        model_threads: int | None = 1,
        verifier: SupportVerifier | None = None,
    ) -> None:
        from kbgraph.retrieval._internal import LocalEmbeddings, resolve_embeddings

        if isinstance(embeddings, str):
            embeddings = resolve_embeddings(embeddings)
            # Only a model that runs in this process has threads to set; an object the
            # caller passed keeps its own setting.
            if isinstance(embeddings, LocalEmbeddings):
                embeddings.threads = model_threads
        self._embeddings = embeddings
        self._weights = weights
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        # Local models are not guaranteed to be safe under concurrent calls.
        self._model_lock = threading.Lock()
        self._usage = TokenUsage()
        self._verifier = verifier

    @property
    def name(self) -> str:
        return "offline" if self._verifier is None else "offline+verifier"

    @property
    def usage(self) -> TokenUsage:
        return self._usage

    def judge_claims(
        self, claims: Sequence[str], context: str, *, question: str | None = None
    ) -> list[Judgement]:
        if not claims:
            return []
        if not context_text(context).sentences:
            return [
                Judgement("not_supported", 0.0, "the context is empty", cause="empty_context")
                for _ in claims
            ]
        return [self._judgement(e) for e in self.evidence(claims, context, question=question)]

    def evidence(
        self, claims: Sequence[str], context: str, *, question: str | None = None
    ) -> list[Evidence]:
        """The evidence behind each claim's verdict (``_evidence.Evidence``): what the
        support score weighs, for debugging a verdict or tuning the weights."""
        ctx = context_text(context)
        out = []
        for claim in claims:
            check_deadline()
            out.append(lexical_evidence(claim, ctx, self._similarity(claim, ctx, question)))
        verifier = self._verifier
        if verifier is None:
            return out
        check_deadline()
        asked = [embedding_text(claim, question) for claim in claims]
        windows = [ctx.verifier_evidence(claim) for claim in claims]
        pairs = [(a, w) for a, ws in zip(asked, windows, strict=True) for w in ws]
        scores = iter(verifier.scores(pairs))
        return [
            dataclasses.replace(e, verified=max(next(scores) for _ in ws))
            for e, ws in zip(out, windows, strict=True)
        ]

    def judge_passages(
        self, question: str, passages: Sequence[str], *, reference: str | None = None
    ) -> list[Relevance]:
        if reference and reference.strip():
            claims = [c.text for c in split_claims(reference)] or [reference]
            return [self._supports_reference(claims, p, question) for p in passages]
        weights = _term_weights(question, passages)
        return [self._matches_question(question, p, weights) for p in passages]

    def judge_answer(self, question: str, answer: str) -> Relevance:
        """Whether each part of the question gets an answer with information of its own,
        without padding or evasion (``_relevance``); numbers masked."""
        question, answer = mask_numbers(question), mask_numbers(answer)
        sentences = [s for s in split_sentences(answer) if s.strip()] or [answer]
        stripped = [without_hedges(s) for s in sentences]
        kept = [s for s in stripped if s is not None]
        evasive = sum(
            1.0 if cut is None else HEDGED_SENTENCE_EVASION if cut != whole else 0.0
            for whole, cut in zip(sentences, stripped, strict=True)
        ) / len(sentences)
        if not kept:
            return Relevance(False, 0.0, "every sentence declines or hedges")
        parts = question_parts(question)
        vectors = self.vectors([question, *parts, *kept])
        asked, said = vectors[: 1 + len(parts)], vectors[1 + len(parts) :]
        cosines = asked @ said.T  # (question and parts) x sentences
        asked_words = set(content_words(question))
        evidence = answer_evidence(
            part_best=[float(c) for c in cosines[1:].max(axis=1)],
            sentence_on_topic=[float(c) for c in cosines.max(axis=0)],
            sentence_new_words=[frozenset(content_words(s)) - asked_words for s in kept],
            evasive_share=evasive,
        )
        score = evidence.score
        return Relevance(score >= 0.5, score, evidence.reason())

    def prefetch(
        self,
        claims: Iterable[tuple[Sequence[str], str, str | None]] = (),
        texts: Iterable[str] = (),
        *,
        batch_size: int = 256,
    ) -> None:
        """Embed ahead, in large batches, what judging these ``(claims, context, question)``
        items and ``texts`` (questions, answers, passages) will need: one model call per
        batch instead of one per judgement."""
        texts = list(texts)
        wanted: list[str] = list(texts)
        for items, context, question in claims:
            ctx = context_text(context)
            for claim in items:
                wanted.append(embedding_text(claim, question))
                wanted.extend(ctx.candidates(claim))
        for text in texts:
            # Windows for passages, sentences for answers, parts for questions.
            wanted.extend(context_text(text).windows)
            wanted.extend(split_sentences(text))
            wanted.extend(question_parts(text))
        unique = list(dict.fromkeys(t for t in wanted if t))
        for start in range(0, len(unique), batch_size):
            self.vectors(unique[start : start + batch_size])

    def _similarity(self, claim: str, context: ContextText, question: str | None) -> float:
        """Best cosine of the claim with the sentences it is aligned with."""
        candidates = context.candidates(claim)
        if not candidates:
            return 0.0
        vectors = self.vectors([embedding_text(claim, question), *candidates])
        return float((vectors[1:] @ vectors[0]).max())

    def similarities(self, texts: Sequence[str], context: ContextText) -> np.ndarray:
        """Best cosine similarity of each text with any window of ``context``."""
        windows = context.windows
        vectors = self.vectors([*windows, *texts])
        window_vectors, text_vectors = vectors[: len(windows)], vectors[len(windows) :]
        result: np.ndarray = (text_vectors @ window_vectors.T).max(axis=1)
        return result

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors, one row per text, from the cache where possible."""
        with self._cache_lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            check_deadline()
            with self._model_lock:
                raw = self._embeddings.embed_documents(list(missing))
            matrix = np.asarray(raw, dtype=np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
            with self._cache_lock:
                for text, row in zip(missing, matrix, strict=True):
                    self._cache[text] = row
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        with self._cache_lock:
            return np.stack([self._cache[t] for t in texts])

    def _judgement(self, evidence: Evidence) -> Judgement:
        return judgement_of(evidence, support_score(evidence, self._weights))

    def _supports_reference(self, claims: list[str], passage: str, question: str) -> Relevance:
        judged = self.judge_claims(claims, passage, question=question)
        best = max(j.score for j in judged)
        helped = sum(j.verdict == "supported" for j in judged)
        reason = f"supports {helped} of {len(claims)} reference claims"
        return Relevance(helped > 0, best, reason)

    def _matches_question(
        self, question: str, passage: str, weights: dict[str, float]
    ) -> Relevance:
        ctx = context_text(passage)
        if not ctx.windows:
            return Relevance(False, 0.0, "empty passage")
        similarity = rescale(float(self.similarities([question], ctx)[0]))
        total = sum(weights.values())
        found = sum(w for term, w in weights.items() if term in ctx.words)
        coverage = found / total if total else 1.0
        score = 0.4 * similarity + 0.6 * coverage
        reason = f"similarity {similarity:.2f}, question terms covered {coverage:.0%}"
        return Relevance(score >= PASSAGE_RELEVANT_AT, score, reason)


def judgement_of(evidence: Evidence, score: float) -> Judgement:
    """The verdict, a reason a person can act on, the source sentence and the cause."""
    quote = f"{evidence.aligned[:200]!r}"
    if evidence.quoted:
        return Judgement(
            "supported", score, "quoted word for word from the source", evidence.aligned, "quoted"
        )
    if is_contradiction(evidence):
        cause: Cause = (
            "number_mismatch"
            if evidence.number_conflict
            else "negation"
            if evidence.negation_flip
            else "role_swap"
        )
        source = evidence.conflicting or evidence.aligned
        reason = f"contradicted: {evidence.problem}; source: {source[:200]!r}"
        return Judgement("contradicted", score, reason, source, cause)
    if score >= SUPPORTED_AT:
        return Judgement(
            "supported", score, f"supported ({score:.2f}) by {quote}", evidence.aligned, "supported"
        )
    if evidence.entity_swap:
        reason = f"not supported ({score:.2f}): {evidence.entity_swap}; source: {quote}"
        return Judgement("not_supported", score, reason, evidence.aligned, "entity_swap")
    if not evidence.aligned:
        return Judgement(
            "not_supported",
            score,
            "no aligned sentence: no source sentence shares the claim's words",
            "",
            "no_aligned_sentence",
        )
    unsupported = [f for f in evidence.numbers if f.status in ("clash", "unsupported")]
    lacking = ", ".join(evidence.missing_words[:6])
    what = f"not in the source: {lacking}" if lacking else "worded too far from the source"
    cause = "unsupported_number" if unsupported else "missing_words"
    reason = f"not supported ({score:.2f}): {what}; closest source sentence: {quote}"
    return Judgement("not_supported", score, reason, evidence.aligned, cause)


def _term_weights(question: str, passages: Sequence[str]) -> dict[str, float]:
    """Weight of each question term: its inverse document frequency among the retrieved
    passages, ``log(1 + N / (1 + df))`` (a smoothed Robertson–Spärck Jones idf). A term that
    every passage shares ("Harbor" in Harbor's docs) tells relevant passages from the others
    less than one that few or none contain (a missing term is what the question is about)."""
    terms = set(content_words(question)) - _WH_WORDS
    sets = [set(content_words(p)) for p in passages]
    n = len(sets)
    return {t: math.log(1 + n / (1 + sum(t in s for s in sets))) for t in terms}


__all__ = ["OfflineJudge", "judgement_of"]
