"""RewriteQuery: one to three queries, the original question always first.

Heuristic: a follow-up question (a pronoun or demonstrative such as "it" or "that", an
ellipsis such as "what about ...", or two topic words at most) gets a standalone variant:
the question plus the key terms of the previous human question and of the last answer.
Then a keyword variant (topic words only). On a retry the variants change: the key terms
alone, longest (most specific) first, and queries already tried are not repeated. With a
chat model, the model writes the standalone question, a keyword query and a paraphrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from ..settings import RagSettings
from ..state import RagState, RetrievalDebug, debug_update
from ._base import NodeDeps, StepRecorder
from ._llm import ask_structured
from ._text import (
    content_terms,
    format_turns,
    key_terms,
    last_human_index,
    message_text,
    previous_turns,
    question_of,
    stems,
    word_set,
    words,
)

NODE = "rewrite_query"
MAX_QUERIES = 3
_FOLLOW_UP_WORDS = word_set(
    """
    it its it's itself that this these those they them their there he she his her one ones
    same former latter above
    """
)
_ELLIPSIS = re.compile(
    r"^\s*(?:and|also|but|so|what about|how about|what if|same for|why not|why|which one|"
    r"and what|and how|or)\b",
    re.IGNORECASE,
)
_SHORT_QUESTION_TERMS = 2
_PREVIOUS_QUESTION_TERMS = 6
_ANSWER_TERMS = 3


class RewrittenQueries(BaseModel):
    standalone_question: str = Field(description="the question without references to the chat")
    keyword_query: str = Field(default="", description="the words a relevant passage contains")
    paraphrase: str = Field(default="", description="the question in other words")


def is_follow_up(question: str) -> bool:
    ws = words(question)
    return (
        any(w in _FOLLOW_UP_WORDS for w in ws)
        or bool(_ELLIPSIS.match(question))
        or len(content_terms(question)) <= _SHORT_QUESTION_TERMS
    )


def _previous_exchange(messages: Sequence[BaseMessage]) -> tuple[str, str]:
    """The human question before the current one and the answer that followed it."""
    index = last_human_index(messages)
    before = list(messages[:index]) if index is not None else []
    question = answer = ""
    for message in reversed(before):
        if isinstance(message, AIMessage) and not answer and not question:
            answer = message_text(message)
        elif isinstance(message, HumanMessage):
            question = message_text(message)
            break
    return question, answer


def standalone(question: str, messages: Sequence[BaseMessage]) -> str | None:
    """The question plus the key terms of the previous exchange, or ``None`` when the
    question is not a follow-up or there is nothing before it."""
    previous, answer = _previous_exchange(messages)
    if not previous or not is_follow_up(question):
        return None
    # Compared by stem, so that "webhook" is not added to a question that says "webhooks".
    seen = set(stems(words(question)))
    extra: list[str] = []

    def add(terms: Sequence[str], limit: int) -> None:
        for term in terms:
            stem = stems([term])[0]
            if limit and stem not in seen:
                seen.add(stem)
                extra.append(term)
                limit -= 1

    add(content_terms(previous), _PREVIOUS_QUESTION_TERMS)
    add(key_terms(answer, 4 * _ANSWER_TERMS), _ANSWER_TERMS)
    return f"{question.strip()} {' '.join(extra)}" if extra else None


def _norm(query: str) -> str:
    return " ".join(words(query))


def unique_queries(candidates: Sequence[str], tried: Sequence[str] = ()) -> list[str]:
    """The first :data:`MAX_QUERIES` distinct queries (case and punctuation ignored); the
    first candidate is always kept, later ones only when not in ``tried``."""
    seen = {_norm(q) for q in tried}
    out: list[str] = []
    for i, query in enumerate(candidates):
        key = _norm(query)
        if not key or (out and key in {_norm(q) for q in out}) or (i > 0 and key in seen):
            continue
        out.append(query.strip())
        if len(out) == MAX_QUERIES:
            break
    return out


def heuristic_queries(
    question: str, messages: Sequence[BaseMessage], attempt: int, tried: Sequence[str]
) -> list[str]:
    full = standalone(question, messages) or question
    keywords = " ".join(content_terms(full))
    if attempt == 0:
        return unique_queries([question, full, keywords])
    specific = " ".join(sorted(content_terms(full), key=len, reverse=True)[:3])
    return unique_queries([question, keywords, specific, full], tried)


def rewrite_query(state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps) -> dict[str, Any]:
    """Write the queries of this attempt."""
    rec = StepRecorder(NODE, state, runtime)
    question = question_of(dict(state))
    messages = state.get("messages") or []
    tried = [q for step in _earlier_steps(state) for q in step]
    queries = heuristic_queries(question, messages, rec.attempt, tried)
    model = deps.model_for(rec.settings)
    if model is not None:
        grounding = state.get("rag_grounding")
        guidance = grounding["guidance"] if grounding else []
        result = ask_structured(
            model,
            RewrittenQueries,
            NODE,
            node=NODE,
            attempt=rec.attempt,
            question=question,
            conversation=format_turns(previous_turns(messages)),
            previous_queries="; ".join(tried) or "(none)",
            guidance=" ".join(guidance) if rec.attempt else "(first attempt)",
        )
        rec.fallbacks += result.fallbacks
        if result.value is not None:
            v = result.value
            queries = unique_queries(
                [question, v.standalone_question, v.keyword_query, v.paraphrase], tried
            )
            rec.path = result.path or "llm"
        else:
            rec.path = "fallback"
    rec.data = {"queries": queries, "follow_up": standalone(question, messages) is not None}
    return {
        "rag_queries": queries,
        "rag_retrieval_debug": debug_update([rec.step()], rec.fallbacks),
    }


def _earlier_steps(state: RagState) -> list[list[str]]:
    debug: RetrievalDebug = state.get("rag_retrieval_debug") or {}
    steps = debug.get("steps", [])
    return [list(s.get("data", {}).get("queries", [])) for s in steps if s.get("node") == NODE]


__all__ = [
    "MAX_QUERIES",
    "RewrittenQueries",
    "heuristic_queries",
    "is_follow_up",
    "rewrite_query",
    "standalone",
    "unique_queries",
]
