"""GroundingCheck: do the sources support an answer? If not, loop once more (bounded).

Heuristic: grounded when the cited text holds at least ``grounding_min_coverage`` of the
question's topic terms (stemmed) and, when a vector ranker ran, the best cosine
similarity among the chosen chunks reaches ``grounding_min_vector_score``: term coverage
alone is fooled by common words, similarity alone by topical neighbours. The terms are
those of the standalone question (``rag_standalone``: a follow-up completed from the
previous turn), and the question's own terms must be covered as well, so that neither "its
timeout" alone nor the previous turn's topic alone passes. Words that named the scope
(``RagScope.terms``: a file name, an extension, "CSV file") are not looked for in the text.
With a chat model, the model's verdict counts.

Not grounded comes with reasons and guidance (a wider scope, other words, adding
documents). Another attempt (back to RewriteQuery, scope widened to everything) runs while
rewrites remain (``rag_attempt < max_rewrites``), the recursion limit allows a whole
attempt, and it would search something new: a wider scope, or a query not searched yet
(:func:`kbgraph.graphs._nodes.rewrite_query.plan_queries`). Otherwise the run ends, and
``rag_retrieval_debug`` says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from kbgraph._base.context_window import JSON_RESERVE_TOKENS
from kbgraph._base.text import stems
from kbgraph.errors import error_text

from .._settings import RagSettings, ResolvedKnowledgeBase, asks_optional
from .._state import (
    Candidate,
    RagGrounding,
    RagState,
    empty_knowledge_bases,
    retrieve_records,
    unsearched_knowledge_bases,
)
from ._base import END, NodeDeps, StepRecorder
from ._fit_sources import fit_sources
from ._fusion import SIMILARITY
from ._llm import context_fallback, prompt_messages
from ._rewrite_guard import says_something, screen_reason
from ._text import asked_names, content_terms, coverage, question_of, unmentioned
from .rewrite_query import plan_queries, tried_queries
from .select_scope import widest_scope

NODE = "grounding_check"
# Nodes one more attempt runs (rewrite_query … grounding_check), plus one step of margin
# for the parent graph's own next step.
STEPS_PER_ATTEMPT = 5
_CONTEXT_CHARS = 12000
_SHOWN_CHARS = 120
MODEL_REASON = "chat model: "
MISSING_CHARS = 160


class GroundingVerdict(BaseModel):
    grounded: bool = Field(description="true when the sources contain the answer")
    reason: str = ""
    missing: str = Field(default="", description="what information is missing")


def best_vector_score(candidates: Sequence[Candidate], ids: set[str]) -> float | None:
    """The best raw vector similarity among the chunks in the context (``None`` when no
    vector list returned them)."""
    scores = [
        c["scores"][SIMILARITY]
        for c in candidates
        if c["chunk_id"] in ids and SIMILARITY in c.get("scores", {})
    ]
    return max(scores) if scores else None


def topic_terms(text: str, scope_words: Sequence[str] = ()) -> list[str]:
    """The topic words of ``text`` without those that named the scope (compared by stem)."""
    skip = set(stems(list(scope_words)))
    terms = content_terms(text)
    return [t for t, s in zip(terms, stems(terms), strict=True) if s not in skip]


def heuristic_verdict(
    question: str,
    context: str,
    vector: float | None,
    settings: RagSettings,
    *,
    standalone: str | None = None,
    scope_words: Sequence[str] = (),
) -> tuple[bool, list[str], list[str]]:
    """(grounded, reasons, missing terms). With a ``standalone`` form of the question both
    its terms and the question's own must reach the coverage."""
    terms = topic_terms(question, scope_words)
    share, missing = coverage(terms, context)
    found = len(terms) - len(missing)
    reasons = [f"{found} of {len(terms)} question terms occur in the sources ({share:.0%})"]
    grounded = share >= settings.grounding_min_coverage
    full = topic_terms(standalone, scope_words) if standalone else terms
    if full != terms:
        full_share, missing = coverage(full, context)
        found = len(full) - len(missing)
        reasons.append(
            f"{found} of {len(full)} terms of the standalone question occur in the sources "
            f"({full_share:.0%})"
        )
        grounded = grounded and full_share >= settings.grounding_min_coverage
    floor = settings.grounding_min_vector_score
    if vector is not None and floor is not None:
        reasons.append(f"best vector similarity {vector:.2f} (floor {floor:.2f})")
        grounded = grounded and vector >= floor
    return grounded, reasons, missing


def guidance_for(
    scope_narrowed: bool,
    missing: Sequence[str],
    kbs: Sequence[ResolvedKnowledgeBase],
    errors: Sequence[str],
    *,
    searched_nothing: bool = False,
    empty: Sequence[str] = (),
) -> list[str]:
    """What to try when the sources do not ground the question. When no knowledge base could
    be searched, only the fix of its error (other words would fail the same way); when the
    ones searched hold no document, only adding documents."""
    if not kbs:
        return [
            "add documents: configure knowledge_bases in the context (name, folder, "
            "description) or set KBGRAPH_FOLDER to a folder of documents"
        ]
    if errors and searched_nothing:
        return [f"fix the knowledge base errors first: {'; '.join(errors)[:600]}"]
    if empty and set(empty) >= {k.name for k in kbs}:
        folders = ", ".join(k.folder or k.name for k in kbs if k.name in empty)
        return [f"add documents: {', '.join(empty)} holds no documents yet; add files to {folders}"]
    out = []
    if errors:
        out.append(f"fix the knowledge base errors first: {'; '.join(errors)[:300]}")
    if scope_narrowed:
        out.append("wider scope: search every knowledge base, folder and file kind")
    terms = ", ".join(missing[:6])
    if terms:
        out.append(
            f"other words: the sources do not mention {terms}; try synonyms or the terms "
            "the documents use"
        )
    else:
        out.append("other words: ask more specifically, with the terms the documents use")
    folders = ", ".join(k.folder or k.name for k in kbs)
    out.append(f"add documents: if no document covers {terms or 'this'}, add one to {folders}")
    return out


def no_sources_reasons(state: RagState) -> list[str]:
    """Why no source came back: each knowledge base that could not be searched (with its
    error) or holds no document, else that nothing matched."""
    failed = [f"searching {kb} failed: {e}" for kb, e in unsearched_knowledge_bases(state).items()]
    empty = [f"{kb} holds no documents" for kb in empty_knowledge_bases(state)]
    return failed + empty or ["no sources were found for the question"]


def _scope_narrowed(state: RagState) -> bool:
    scope = state.get("rag_scope")
    return bool(scope and (scope["paths"] or scope["kinds"]) and not scope["widened"])


def _errors(state: RagState) -> list[str]:
    """The last Retrieve attempt's errors, ``kb: error`` each."""
    records = retrieve_records(state)
    errs = (records[-1].get("errors") or {}) if records else {}
    return [f"{kb}: {error_text(e)}" for kb, items in errs.items() for e in items]


@dataclass
class Verdict:
    grounded: bool
    reasons: list[str]
    missing: list[str]
    vector: float | None
    trimmed: str | None = None  # how the context was cut to fit the model's window
    not_asked: bool = False  # a chat model that grounding_model says not to ask


def _verdict(state: RagState, rec: StepRecorder, deps: NodeDeps) -> Verdict:
    """The heuristic or the chat model's verdict, and not grounded whatever they say when
    the question names a thing no retrieved passage mentions."""
    verdict = _judged(state, rec, deps)
    if verdict.grounded:
        _unnamed_things(state, verdict)
    return verdict


def _unnamed_things(state: RagState, verdict: Verdict) -> None:
    """Not grounded when the question names something (``Kafka``, ``TLS``, ``gRPC``) that
    none of the retrieved passages mentions, their files and sections included: a
    question about Kafka that the sources answer without the word is rare, a knowledge
    base without Kafka that lends its other words ("topic", "events", "Harbor") to half
    the question's terms is common — a new user's trial of the docs answered such questions
    with unrelated quotes, "grounded" at 50-67 % of the terms. Every passage of every
    query's ranked lists counts, not only those cited: a name the knowledge base holds is
    among them, as its rarity ranks it high."""
    scope = state.get("rag_scope")
    skip = {w.lower() for w in (scope.get("terms", []) if scope else [])}
    full = (state.get("rag_standalone") or "").strip() or question_of(dict(state))
    names = [n for n in asked_names(full) if n.lower() not in skip]
    passages = [*(state.get("rag_candidates") or []), *(state.get("rag_citations") or [])]
    pool = "\n".join(
        f"{c.get('text', '')}\n{c.get('source', '')}\n{c.get('section') or ''}" for c in passages
    )
    missing = unmentioned(names, pool)
    if not missing:
        return
    verdict.grounded = False
    verdict.reasons.append(
        f"the question names {', '.join(missing)}, which no retrieved source mentions"
    )
    named = {n.lower() for n in missing}
    verdict.missing = [*missing, *(m for m in verdict.missing if m.lower() not in named)]


def _judged(state: RagState, rec: StepRecorder, deps: NodeDeps) -> Verdict:
    """The heuristic verdict, replaced by the chat model's when one answers."""
    settings = rec.settings
    question = question_of(dict(state))
    full = (state.get("rag_standalone") or "").strip() or question
    scope = state.get("rag_scope")
    scope_words = scope.get("terms", []) if scope else []
    citations = state.get("rag_citations") or []
    candidates = state.get("rag_candidates") or []
    vector = best_vector_score(
        candidates, {c["chunk_id"] for c in candidates[: settings.search.top_k]}
    )
    # Coverage is measured on the cited text only: headers and the fence's preamble would
    # lend their words (file names, "source", "data") to any question.
    cited = "\n".join(c["text"] for c in citations)
    verdict = Verdict(
        *heuristic_verdict(
            question, cited, vector, settings, standalone=full, scope_words=scope_words
        ),
        vector,
    )
    if not citations:
        verdict.grounded, verdict.reasons = False, no_sources_reasons(state)
        return verdict
    model = rec.chat_model(deps)
    if model is None:
        return verdict
    if not asks_optional(settings.grounding_model, model):
        verdict.not_asked = True  # the heuristic verdict stands (grounding_model)
        return verdict
    context = (state.get("rag_context") or "")[:_CONTEXT_CHARS]
    fit = fit_sources(
        model,
        context,
        citations,
        lambda ctx: list(prompt_messages(NODE, question=full, context=ctx)),
        reserve=JSON_RESERVE_TOKENS,
    )
    if fit is None or fit.empty:
        rec.path = "fallback"
        rec.fallbacks.append(context_fallback(NODE, rec.attempt))
        return verdict
    verdict.trimmed = fit.describe() if fit.trimmed else None
    answer = rec.ask(model, GroundingVerdict, question=full, context=fit.context)
    if answer is not None:
        _take(answer, verdict, rec)
    return verdict


def _take(answer: GroundingVerdict, verdict: Verdict, rec: StepRecorder) -> None:
    """The model's verdict in place of the heuristic one, unless its reason repeats itself
    (a looping model's verdict is no evidence: overruled, the heuristic stands); a long
    reason or list of missing information is cut."""
    reason, problem = screen_reason(answer.reason)
    if problem and not reason:
        proposal = {"grounded": answer.grounded, "reason": answer.reason[:_SHOWN_CHARS] + "…"}
        why = f"the chat model's verdict is not taken: {problem}"
        rec.overrule(proposal, {"heuristic": verdict.reasons}, {"grounded": verdict.grounded}, why)
        return
    verdict.grounded = answer.grounded
    # Said as the model's: its reason may be a claim of its own ("The default ... is 600
    # seconds."), printed bare it read as a finding of the check.
    shown = f"{MODEL_REASON}{reason}" if says_something(reason) else "chat model verdict"
    verdict.reasons = [shown, *verdict.reasons]
    missing, _ = screen_reason(answer.missing, MISSING_CHARS)
    if says_something(missing) and not answer.grounded:
        verdict.missing = [missing, *verdict.missing]


def grounding_check(
    state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps
) -> dict[str, Any]:
    """Judge the context; decide between ending and one more, wider attempt."""
    rec = StepRecorder(NODE, state, runtime)
    verdict = _verdict(state, rec, deps)
    kbs = rec.settings.resolved_knowledge_bases()
    errors = _errors(state)
    unsearched = unsearched_knowledge_bases(state)
    guidance = (
        [] if verdict.grounded
        else guidance_for(
            _scope_narrowed(state), verdict.missing, kbs, errors,
            searched_nothing=bool(kbs) and set(unsearched) >= {k.name for k in kbs},
            empty=empty_knowledge_bases(state),
        )
    )  # fmt: skip
    retry, why = retry_decision(state, rec.settings, verdict, kbs, errors)
    grounding: RagGrounding = {
        "grounded": verdict.grounded, "reasons": verdict.reasons, "guidance": guidance,
    }  # fmt: skip
    rec.data = {
        **grounding, "vector": verdict.vector, "missing": verdict.missing, "retry": retry,
        "retry_reason": why,
    }  # fmt: skip
    if verdict.trimmed:
        rec.data["context_trimmed"] = verdict.trimmed
    if verdict.not_asked:
        rec.data["model_asked"] = False
    update: dict[str, Any] = {
        "rag_grounded": verdict.grounded,
        "rag_grounding": grounding,
        "rag_next": "retry" if retry else "end",
        "rag_retrieval_debug": rec.update(),
    }
    if not retry:
        # The run ends: an explicit query was for this turn only, and a checkpointed parent
        # that declares rag_query would otherwise search it again next turn.
        update["rag_query"] = None
    if retry:
        scope = state.get("rag_scope")
        update["rag_attempt"] = rec.attempt + 1
        update["rag_scope"] = widest_scope(
            kbs,
            "retry: the scope is widened to everything",
            scope.get("terms", []) if scope else [],
        )
    return update


def retry_decision(
    state: RagState,
    settings: RagSettings,
    verdict: Verdict,
    kbs: Sequence[ResolvedKnowledgeBase],
    errors: Sequence[str],
) -> tuple[bool, str]:
    """Whether to run another attempt, and why (or why not)."""
    attempt = int(state.get("rag_attempt") or 0)
    if verdict.grounded:
        return False, "grounded"
    if not kbs:
        return False, "no knowledge base is configured"
    if attempt >= settings.max_rewrites:
        return False, f"no rewrite left (max_rewrites={settings.max_rewrites})"
    if errors and not state.get("rag_candidates"):
        return False, "every search failed: another attempt would fail the same way"
    if set(empty_knowledge_bases(state)) >= {k.name for k in kbs}:
        return False, "the knowledge bases hold no documents: another query finds nothing"
    remaining = state.get("remaining_steps")
    if remaining is not None and remaining <= STEPS_PER_ATTEMPT + 1:
        return False, "the recursion limit leaves no room for another attempt"
    if _scope_narrowed(state):
        return True, "the scope can be widened"
    scope = state.get("rag_scope")
    plan = plan_queries(
        question_of(dict(state)), state.get("messages") or [], attempt + 1,
        tried_queries(state), verdict.missing, scope.get("terms", []) if scope else [],
    )  # fmt: skip
    if len(plan.queries) < 2:
        return False, (
            "nothing new to search: the scope is already everything and every query "
            "RewriteQuery would write was searched already"
        )
    return True, f"new queries: {'; '.join(plan.queries[1:])}"


def route_after_grounding(state: RagState) -> Literal["rewrite_query", "__end__"]:
    return "rewrite_query" if state.get("rag_next") == "retry" else END


__all__ = [
    "GroundingVerdict",
    "best_vector_score",
    "grounding_check",
    "guidance_for",
    "heuristic_verdict",
    "retry_decision",
    "route_after_grounding",
    "topic_terms",
]
