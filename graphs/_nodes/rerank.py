"""Rerank: order the fused candidates for the context.

``heuristic`` (default): the fused score plus a small bonus when the query's terms appear in
the chunk's file path (and, with ``rerank_section_weight`` above 0, in its section heading),
then, with ``rerank_diversity`` above 0, a greedy diversity pass in
the spirit of Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998) that discounts
further chunks of a file already chosen, unless they are its neighbours. ``llm``: the chat
model orders the best ``llm_rerank_max`` candidates (listwise), the rest keep the heuristic
order below them. ``cross_encoder``: a :class:`Reranker` given to ``build_rag_graph`` scores
every candidate. ``none``: fused order. Every score ends up in 0..1 and the old one is kept
in ``scores``.

What the heuristic leaves out was measured (``benchmarks/tune_rerank.py``: nDCG@10 of the
whole subgraph on SciFact train, and gold-source recall@5 on the bundled examples_docs set
as a guard; the rule: no signal may cost SciFact, then the best on the guard). A bonus for
query terms in the section heading counts them twice, as the heading is indexed with the
chunk's text: 0.2 of it cost 0.040 nDCG@10. A bonus for a neighbouring candidate favours
long files (0.05 cost 0.034), and BuildContext merges neighbours anyway. The same-file
discount cannot move document rankings but pushed gold chunks out of the docs folder's top
five (recall@5 0.902 to 0.859 at 0.15), so both are opt-in (``rerank_section_weight``,
``rerank_diversity``) for folders whose headings are not in the indexed text. File paths
are the one signal the rankers never see, and 0.05 of it costs nothing on SciFact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from kbgraph._base.citations import line_span
from kbgraph._base.context_window import JSON_RESERVE_TOKENS, largest_fitting
from kbgraph._base.text import stems, words

from .._settings import RagSettings
from .._state import Candidate, LlmFallback, RagState
from ._base import NodeDeps, Reranker, StepRecorder
from ._llm import context_fallback, prompt_messages
from ._text import question_of, term_stems

NODE = "rerank"
PATH_WEIGHT = 0.05
_ABSENT = 1e9  # the rank of a passage a list did not return: tied last
_PASSAGE_CHARS = 600


class RerankOrder(BaseModel):
    ranking: list[int] = Field(description="passage numbers, most useful first")
    reason: str = ""


def heuristic_score(
    fused: float, path_match: float, section_match: float = 0.0, section_weight: float = 0.0
) -> float:
    """``(fused + 0.05·path_match + w·section_match) / (1.05 + w)``, in 0..1 when its
    inputs are."""
    bonus = PATH_WEIGHT * path_match + section_weight * section_match
    return (fused + bonus) / (1 + PATH_WEIGHT + section_weight)


def adjacent(a: Candidate, b: Candidate) -> bool:
    """Same file, and line ranges that overlap or touch (never when lines are unknown)."""
    a_start, a_end, b_start, b_end = a["line_start"], a["line_end"], b["line_start"], b["line_end"]
    if a_start is None or a_end is None or b_start is None or b_end is None:
        return False
    return (
        a["kb"] == b["kb"]
        and a["source"] == b["source"]
        and a_start <= b_end + 1
        and b_start <= a_end + 1
    )


def stem_share(query_stems: set[str], label: str | None) -> float:
    """Share of ``query_stems`` found among the stems of ``label``."""
    if not query_stems or not label:
        return 0.0
    return len(query_stems & set(stems(words(label)))) / len(query_stems)


def path_match(query_stems: set[str], candidate: Candidate) -> float:
    """Share of the query's topic stems found in the chunk's file path."""
    return stem_share(query_stems, re.sub(r"[/_.\-]+", " ", candidate["source"]))


def section_match(query_stems: set[str], candidate: Candidate) -> float:
    """Share of the query's topic stems found in the chunk's heading path."""
    return stem_share(query_stems, candidate.get("section"))


def diversify(
    candidates: Sequence[Candidate], base: Sequence[float], diversity: float
) -> list[tuple[int, float]]:
    """Greedy order: each step takes the candidate with the best ``base · (1 - d)^n``,
    ``n`` counting the chosen chunks of the same file that are not its neighbours."""
    decay = 1.0 - diversity
    remaining = list(range(len(candidates)))
    chosen: list[int] = []
    out: list[tuple[int, float]] = []
    while remaining:
        best_i, best_score = remaining[0], -1.0
        for i in remaining:
            n = sum(
                1
                for j in chosen
                if candidates[j]["source"] == candidates[i]["source"]
                and candidates[j]["kb"] == candidates[i]["kb"]
                and not adjacent(candidates[i], candidates[j])
            )
            score = base[i] * decay**n
            if score > best_score:
                best_i, best_score = i, score
        remaining.remove(best_i)
        chosen.append(best_i)
        out.append((best_i, best_score))
    return out


def heuristic_rerank(
    candidates: Sequence[Candidate],
    queries: Sequence[str],
    diversity: float = 0.0,
    section_weight: float = 0.0,
) -> list[Candidate]:
    query_stems: set[str] = set().union(*(term_stems(q) for q in queries)) if queries else set()
    matches = [path_match(query_stems, c) for c in candidates]
    sections = [section_match(query_stems, c) if section_weight else 0.0 for c in candidates]
    base = [
        heuristic_score(c["score"], m, s, section_weight)
        for c, m, s in zip(candidates, matches, sections, strict=True)
    ]
    if diversity > 0:
        order = diversify(candidates, base, diversity)
    else:  # a stable sort keeps the fused order among equal scores
        order = sorted(enumerate(base), key=lambda pair: -pair[1])
    return [
        _rescored(
            candidates[i],
            score,
            fused=candidates[i]["score"],
            path=matches[i],
            section=sections[i],
            diversity=score / base[i] if base[i] else 1.0,
        )
        for i, score in order
    ]


def _rescored(candidate: Candidate, score: float, **scores: float) -> Candidate:
    updated = Candidate(**candidate)
    updated["scores"] = {**candidate["scores"], **scores}
    updated["score"] = float(score)
    return updated


def apply_order(ordered: Sequence[Candidate], ranking: Sequence[int]) -> list[Candidate]:
    """Candidates the model listed first (``ranking`` holds 1-based positions in
    ``ordered``; unknown and repeated numbers are ignored), scored 1 down to above 0.5;
    the others after them, in their order, at half their score."""
    picked: list[int] = []
    for number in ranking:
        if 1 <= number <= len(ordered) and number - 1 not in picked:
            picked.append(number - 1)
    listed = [
        _rescored(ordered[i], 1 - pos / (2 * len(picked)), llm_rank=float(pos + 1))
        for pos, i in enumerate(picked)
    ]
    rest = [_rescored(c, c["score"] * 0.5) for i, c in enumerate(ordered) if i not in picked]
    return listed + rest


def cross_encoder_rerank(
    reranker: Reranker, query: str, candidates: Sequence[Candidate]
) -> list[Candidate]:
    raw = [float(s) for s in reranker.rerank(query, candidates)]
    if len(raw) != len(candidates):
        raise ValueError(f"reranker returned {len(raw)} scores for {len(candidates)} candidates")
    squash = any(not 0.0 <= s <= 1.0 for s in raw)
    scored = [
        _rescored(c, 1 / (1 + math.exp(-s)) if squash else s, cross_encoder=s)
        for c, s in zip(candidates, raw, strict=True)
    ]
    return sorted(scored, key=lambda c: -c["score"])


def _passages(candidates: Sequence[Candidate]) -> str:
    blocks = []
    for n, c in enumerate(candidates, 1):
        text = " ".join(c["text"].split())[:_PASSAGE_CHARS]
        blocks.append(f"[{n}] {c['source']} ({line_span(c['line_start'], c['line_end'])})\n{text}")
    return "\n\n".join(blocks)


def _llm_rerank(
    model: BaseChatModel,
    ordered: list[Candidate],
    queries: list[str],
    rec: StepRecorder,
    fused_first: Candidate,
) -> list[Candidate]:
    """The model orders the first ``llm_rerank_max`` candidates (fewer when they would not
    fit its context window); the rest follow. Its order is a proposal: one that disagrees
    with every ranked list is blended with the fused order (:func:`blend`), and the fused
    first result stays in the context (:func:`keep_first`)."""
    head = ordered[: rec.settings.llm_rerank_max]
    values = {"question": queries[0], "queries": "; ".join(queries)}

    def prompt(k: int) -> list[BaseMessage]:
        return list(prompt_messages(NODE, count=k, passages=_passages(head[:k]), **values))

    fit = largest_fitting(model, prompt, len(head), reserve=JSON_RESERVE_TOKENS)
    if fit is None or fit.kept == 0:
        rec.path = "fallback"
        rec.fallbacks.append(context_fallback(NODE, rec.attempt))
        return ordered
    if fit.trimmed:
        rec.data["context_trimmed"] = (
            f"{fit.kept} of {len(head)} passages shown to fit the model's window of "
            f"{fit.limit} tokens"
        )
    head, tail = ordered[: fit.kept], ordered[fit.kept :]
    order = rec.ask(model, RerankOrder, count=len(head), passages=_passages(head), **values)
    if order is None:
        return ordered
    taus = list_agreement(head, order.ranking)
    reranked = apply_order(head, order.ranking)
    if taus and all(tau <= 0 for tau in taus.values()):
        reranked = blend(head, reranked)
        rec.overrule(
            {"ranking": order.ranking[: len(head)]},
            {"kendall_tau": {name: round(tau, 3) for name, tau in taus.items()}},
            {"order": "blended: half the model's score, half the fused one"},
            "the chat model's order disagrees with every ranker (Kendall's tau <= 0 "
            "against each list), so it is blended with the fused order, not obeyed",
        )
    halved = [_rescored(c, c["score"] * 0.5) for c in tail]
    return keep_first(fused_first, [*reranked, *halved], rec)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's rank correlation τ_b of two rankings of the same items (ties allowed;
    Kendall 1945): ``(concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y))`` over the
    ``n0`` pairs; ``None`` when either ranking ties every pair."""
    concordant = discordant = ties_x = ties_y = pairs = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            pairs += 1
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 or dy == 0:
                ties_x += dx == 0
                ties_y += dy == 0
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return (concordant - discordant) / denominator if denominator else None


def list_agreement(head: Sequence[Candidate], ranking: Sequence[int]) -> dict[str, float]:
    """τ_b between the model's order of ``head`` (its listed passages first, the others
    tied after them) and each ranked list's order of the same passages (absent ones tied
    last); lists that order none of them are left out."""
    listed = {n - 1: pos for pos, n in enumerate(dict.fromkeys(ranking)) if 1 <= n <= len(head)}
    model = [float(listed.get(i, len(ranking))) for i in range(len(head))]
    names = sorted({name for c in head for name in c["ranks"]})
    taus: dict[str, float] = {}
    for name in names:
        ranks = [float(c["ranks"].get(name, _ABSENT)) for c in head]
        tau = kendall_tau_b(model, ranks)
        if tau is not None:
            taus[name] = tau
    return taus


def blend(head: Sequence[Candidate], reranked: Sequence[Candidate]) -> list[Candidate]:
    """The model's scores averaged with the scores ``head`` had before it, best first."""
    before = {c["chunk_id"]: c["score"] for c in head}
    mixed = [
        _rescored(c, 0.5 * c["score"] + 0.5 * before[c["chunk_id"]], blended=1.0) for c in reranked
    ]
    return sorted(mixed, key=lambda c: -c["score"])


def keep_first(first: Candidate, ordered: list[Candidate], rec: StepRecorder) -> list[Candidate]:
    """``ordered`` with the fused order's first candidate among the ``top_k`` the context is
    built from: a model may move it down, never out (then it takes the last place of the
    ``top_k``, at that place's score)."""
    top_k = rec.settings.search.top_k
    key = (first["kb"], first["chunk_id"])
    position = next(i for i, c in enumerate(ordered) if (c["kb"], c["chunk_id"]) == key)
    if position < top_k or len(ordered) <= top_k:
        return ordered
    moved = _rescored(ordered[position], ordered[top_k - 1]["score"])
    rest = [c for i, c in enumerate(ordered) if i != position]
    rec.overrule(
        {"position": position + 1},
        {"fused_first": first["chunk_id"], "source": first["source"]},
        {"position": top_k},
        f"the chat model's order left the fused first result ({first['source']}) out of "
        f"the top {top_k}; it is kept in the last place",
    )
    return [*rest[: top_k - 1], moved, *rest[top_k - 1 :]]


def rerank(state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps) -> dict[str, Any]:
    """Reorder ``rag_candidates`` (the whole pool; BuildContext takes the top)."""
    rec = StepRecorder(NODE, state, runtime)
    mode = rec.settings.rerank
    candidates = list(state.get("rag_candidates") or [])
    queries = list(state.get("rag_queries") or []) or [question_of(dict(state))]
    ordered = (
        candidates
        if mode == "none"
        else heuristic_rerank(
            candidates,
            queries,
            rec.settings.rerank_diversity,
            rec.settings.rerank_section_weight,
        )
    )
    model = rec.chat_model(deps) if mode == "llm" and ordered else None
    if model is not None:
        ordered = _llm_rerank(model, ordered, queries, rec, candidates[0])
    elif mode == "cross_encoder" and ordered:
        ordered, rec.path = _with_reranker(
            deps.reranker, queries[0], ordered, rec.fallbacks, rec.attempt
        )
    rec.data.update(
        mode=mode,
        order=[{"chunk_id": c["chunk_id"], "score": round(c["score"], 4)} for c in ordered],
    )
    return {
        "rag_candidates": ordered,
        "rag_retrieval_debug": rec.update(),
    }


def _with_reranker(
    reranker: Reranker | None,
    query: str,
    ordered: list[Candidate],
    fallbacks: list[LlmFallback],
    attempt: int,
) -> tuple[list[Candidate], str]:
    if reranker is None:
        fallbacks.append({
            "node": NODE, "attempt": attempt, "stage": "reranker",
            "error": "rerank='cross_encoder' but build_rag_graph got no reranker",
        })  # fmt: skip
        return ordered, "fallback"
    try:
        return cross_encoder_rerank(reranker, query, ordered), "reranker"
    except Exception as exc:  # a failing plug-in must not break the run
        fallbacks.append({
            "node": NODE, "attempt": attempt, "stage": "reranker",
            "error": f"{type(exc).__name__}: {exc}"[:300],
        })  # fmt: skip
        return ordered, "fallback"


__all__ = [
    "RerankOrder",
    "Reranker",
    "adjacent",
    "apply_order",
    "cross_encoder_rerank",
    "diversify",
    "heuristic_rerank",
    "heuristic_score",
    "path_match",
    "rerank",
    "section_match",
]
