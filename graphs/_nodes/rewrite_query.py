"""RewriteQuery: one to three queries, the original question always first.

Heuristic. A follow-up is completed into a standalone question: the question plus the topic
words of the previous human question and of the section (else the file) the previous
answer's best source came from (the answer's turn marker, ``kbgraph.graphs._turns``) — never the
answer's own words, which may be an extractive header or a canned reply. A question is a
follow-up when it refers back (a pronoun such as "it", "them", "those", a standalone
"that", or an ellipsis such as "what about ...", "and ...?"), or, on a retry, when the
question alone found nothing grounded and there is a previous turn. The standalone question
is what GroundingCheck checks the sources against (``rag_standalone``).

Then a keyword variant (topic words only). A retry searches what is new: the standalone
question if it is new, the words the sources lacked, then groups of the most specific
(longest) topic words. Queries are compared as sets of word stems, so a reordering is not a
new query; GroundingCheck asks :func:`plan_queries` before it retries and stops when nothing
new is left (and the scope cannot widen). With a chat model, the model writes the standalone
question, a keyword query and a paraphrase; what it repeats is replaced by the heuristic's
new queries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from kbgraph._base.text import stems, word_set, words

from .._settings import RagSettings
from .._state import RagState, RetrievalDebug
from .._turns import marker_of, reply_after
from ._base import NodeDeps, StepRecorder
from ._rewrite_guard import screen_rewrites
from ._text import (
    content_terms,
    format_turns,
    last_human_index,
    message_text,
    previous_turns,
    question_of,
)

NODE = "rewrite_query"
MAX_QUERIES = 3
_PREVIOUS_QUESTION_TERMS = 6
_SOURCE_TERMS = 3
_WINDOW = 3
_MISSING_TERMS = 6
# A follow-up of a follow-up is completed from the turn before it, this many turns back.
_MAX_DEPTH = 2

_ANAPHORA = word_set(
    """
    it its itself they them their theirs this these those ones same former latter above
    aforementioned he him his she her hers
    """
)
# "that" starts a clause after these words ("check that", "so that") or before these
# ("that the signature ..."); elsewhere it points back ("does that apply", "change that?").
_CLAUSE_AFTER = word_set("so such sure check checks verify verifies ensure make means mean say")
_CLAUSE_BEFORE = word_set(
    """
    a an the my your our their its his her i you we they he she it there this these those no
    every each all some any
    """
)
# "is it possible", "it takes": an "it" that points at nothing.
_DUMMY_IT_BEFORE = word_set("possible necessary true safe ok okay recommended required takes take")
_ONE_AFTER = word_set("the this that which each another new old other same first second last")
_ELLIPSIS = re.compile(
    r"^\s*(?:and|also|but|or|so|what about|how about|what if|same for|which one|"
    r"and what|and how)\b|^\s*(?:why|why not|how|really|which)\s*[?.!]*\s*$",
    re.IGNORECASE,
)


class RewrittenQueries(BaseModel):
    standalone_question: str = Field(description="the question without references to the chat")
    keyword_query: str = Field(default="", description="the words a relevant passage contains")
    paraphrase: str = Field(default="", description="the question in other words")


def refers_back(question: str) -> bool:
    """True when the question points at something said before (pronoun or ellipsis)."""
    if _ELLIPSIS.match(question):
        return True
    ws = words(question)
    for i, word in enumerate(ws):
        before = ws[i - 1] if i else ""
        after = ws[i + 1] if i + 1 < len(ws) else ""
        if word == "that":
            if not after:
                return True  # "how do I change that?"
            if after in _CLAUSE_BEFORE or before in _CLAUSE_AFTER:
                continue  # "check that the body ...": a conjunction
            if not before or _is_function_word(before):
                return True  # "does that apply ...", "about that"
            continue  # "keys that expire": a relative clause
        if word == "it" and after in _DUMMY_IT_BEFORE:
            continue
        if word == "one" and (not after or before in _ONE_AFTER):
            return True  # "how do I add one?", "the old one": not "one key"
        if word in _ANAPHORA:
            return True
    return False


def _is_function_word(word: str) -> bool:
    # "does that", "about that", "with that": that as a pronoun; "keys that expire": a
    # relative clause after a noun, not a reference to the previous turn.
    return not content_terms(word)


def is_follow_up(question: str) -> bool:
    """Whether the question alone is a follow-up (see :func:`refers_back`); a question that
    does not refer back may still be completed on a retry (:func:`plan_queries`)."""
    return refers_back(question)


@dataclass(frozen=True, slots=True)
class PreviousTurn:
    """The previous question (completed when it was itself a follow-up) and the topic words
    of the section or file its answer drew on most."""

    question: str
    source_terms: tuple[str, ...]


def previous_turn(messages: Sequence[BaseMessage], depth: int = _MAX_DEPTH) -> PreviousTurn | None:
    """The turn before the last human message, or ``None`` when there is none."""
    index = last_human_index(messages)
    if index is None:
        return None
    before = list(messages[:index])
    earlier = last_human_index(before)
    if earlier is None:
        return None
    question = message_text(before[earlier]).strip()
    reply = reply_after(before, earlier)
    marker = marker_of(reply) if reply is not None else None
    # The sources of an answer that was not grounded say nothing about the topic.
    sources = (marker or {}).get("sources") or [] if (marker or {}).get("grounded") else []
    terms = _source_terms(sources[0]["section"], sources[0]["source"]) if sources else ()
    if depth > 1 and refers_back(question):
        older = previous_turn(before[: earlier + 1], depth - 1)
        if older is not None:
            question = complete(question, older)
    return PreviousTurn(question, terms)


def _source_terms(section: str | None, source: str) -> tuple[str, ...]:
    """Topic words of the deepest heading of a section path, else of the file's name."""
    if section and section.strip():
        label = section.split(" > ")[-1]
    else:
        label = PurePosixPath(source).stem.replace("_", " ").replace("-", " ")
    return tuple(content_terms(label)[:_SOURCE_TERMS])


def complete(question: str, previous: PreviousTurn) -> str:
    """The question plus the previous turn's topic words it does not already contain
    (compared by stem, so that "webhook" is not added to a question that says "webhooks")."""
    seen = set(stems(words(question)))
    extra: list[str] = []
    for terms, limit in (
        (content_terms(previous.question), _PREVIOUS_QUESTION_TERMS),
        (list(previous.source_terms), _SOURCE_TERMS),
    ):
        for term in terms:
            stem = stems([term])[0]
            if limit and stem not in seen:
                seen.add(stem)
                extra.append(term)
                limit -= 1
    return f"{question.strip()} {' '.join(extra)}".strip()


def standalone(question: str, messages: Sequence[BaseMessage]) -> str | None:
    """The completed question for a follow-up that refers back, else ``None``."""
    previous = previous_turn(messages)
    if previous is None or not refers_back(question):
        return None
    full = complete(question, previous)
    return full if full != question.strip() else None


def query_key(query: str) -> frozenset[str]:
    """What makes two queries the same search: their set of word stems (case, punctuation
    and word order ignored)."""
    return frozenset(stems(words(query)))


def unique_queries(candidates: Sequence[str], tried: Sequence[str] = ()) -> list[str]:
    """The first :data:`MAX_QUERIES` distinct queries; the first candidate is always kept,
    later ones only when no query of ``tried`` has the same words."""
    seen = {query_key(q) for q in tried}
    out: list[str] = []
    keys: set[frozenset[str]] = set()
    for i, query in enumerate(candidates):
        key = query_key(query)
        if not key or key in keys or (i > 0 and key in seen):
            continue
        keys.add(key)
        out.append(query.strip())
        if len(out) == MAX_QUERIES:
            break
    return out


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """The queries of one attempt, the standalone question the sources are checked against,
    and why the question was completed (``None``: it was not)."""

    queries: list[str]
    standalone: str
    completed: str | None


def plan_queries(
    question: str,
    messages: Sequence[BaseMessage],
    attempt: int,
    tried: Sequence[str] = (),
    missing: Sequence[str] = (),
    scope_words: Sequence[str] = (),
) -> QueryPlan:
    """The heuristic queries of ``attempt``: on the first, the question, its standalone
    form and keywords; on a retry, only queries not in ``tried`` (``queries[1:]`` empty
    means there is nothing new to search), built from the words the sources lacked
    (``missing``) and the topic words, leaving out the words that named the scope."""
    previous = previous_turn(messages)
    refers = refers_back(question)
    completed = None
    full = question.strip()
    if previous is not None and (refers or attempt > 0):
        full = complete(question, previous)
        if full != question.strip():
            completed = "refers back" if refers else "the question alone was not grounded"
    terms = content_terms(full)
    keywords = " ".join(terms)
    if attempt == 0:
        return QueryPlan(unique_queries([question, full, keywords]), full, completed)
    skip = set(stems(list(scope_words)))
    topic = [t for t in terms if stems([t])[0] not in skip]
    gaps = " ".join(content_terms(" ".join(missing))[:_MISSING_TERMS])
    specific = sorted(topic, key=len, reverse=True)
    # Groups of the most specific words; a single leftover word would be a vague query.
    windows = [" ".join(specific[i : i + _WINDOW]) for i in range(0, len(specific), _WINDOW)]
    if len(windows) > 1 and len(specific) % _WINDOW == 1:
        windows.pop()
    candidates = [question, full, gaps, *windows, keywords]
    return QueryPlan(unique_queries(candidates, tried), full, completed)


def heuristic_queries(
    question: str, messages: Sequence[BaseMessage], attempt: int, tried: Sequence[str]
) -> list[str]:
    return plan_queries(question, messages, attempt, tried).queries


def rewrite_query(state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps) -> dict[str, Any]:
    """Write the queries of this attempt."""
    rec = StepRecorder(NODE, state, runtime)
    question = question_of(dict(state))
    messages = state.get("messages") or []
    tried = tried_queries(state)
    scope = state.get("rag_scope")
    plan = plan_queries(
        question, messages, rec.attempt, tried, last_missing(state),
        scope.get("terms", []) if scope else [],
    )  # fmt: skip
    queries, meaning, rewrites = plan.queries, plan.standalone, list[str]()
    model = rec.chat_model(deps)
    if model is not None:
        grounding = state.get("rag_grounding")
        guidance = grounding["guidance"] if grounding else []
        conversation = format_turns(previous_turns(messages))
        written = rec.ask(
            model,
            RewrittenQueries,
            question=question,
            conversation=conversation,
            previous_queries="; ".join(tried) or "(none)",
            guidance=" ".join(guidance) if rec.attempt else "(first attempt)",
        )
        if written is not None:
            queries, meaning, rewrites = _with_rewrites(
                written, question, conversation, plan, tried, rec
            )
    rec.data = {
        "queries": queries,
        "rewrites": rewrites,
        "standalone": meaning,
        "follow_up": plan.completed is not None,
        "completed": plan.completed,
    }
    return {
        "rag_queries": queries,
        "rag_rewrites": rewrites,
        "rag_standalone": meaning,
        "rag_retrieval_debug": rec.update(),
    }


def _with_rewrites(
    written: RewrittenQueries,
    question: str,
    conversation: str,
    plan: QueryPlan,
    tried: Sequence[str],
    rec: StepRecorder,
) -> tuple[list[str], str, list[str]]:
    """The queries with the model's rewrites that pass :func:`screen_rewrites`: the
    question first, then its standalone form when it was completed from the conversation,
    then the rewrites, then the heuristic's own; the standalone question the sources are
    checked against; and which queries the model wrote (Retrieve keeps the question's own
    lists from being pushed out by theirs)."""
    proposed = [written.standalone_question, written.keyword_query, written.paraphrase]
    kept, dropped = screen_rewrites(proposed, question, conversation, first=rec.attempt == 0)
    own = [question, plan.standalone] if plan.completed else [question]
    queries = unique_queries([*own, *kept, *plan.queries[1:]], tried)
    own_keys = {query_key(q) for q in [*own, *plan.queries]}
    rewrites = [q for q in queries if query_key(q) not in own_keys]
    standalone = written.standalone_question.strip()
    meaning = standalone if standalone in kept else plan.standalone
    if dropped:
        rec.overrule(
            {"queries": [q for q in proposed if q.strip()]},
            {"dropped": dropped, "question": question},
            {"queries": queries},
            f"{len(dropped)} rewrite(s) of the chat model not searched: "
            + "; ".join(f"{q[:60]!r} ({why})" for q, why in dropped.items()),
        )
    return queries, meaning, rewrites


def _steps(state: RagState, node: str) -> list[dict[str, Any]]:
    debug: RetrievalDebug = state.get("rag_retrieval_debug") or {}
    return [dict(s.get("data", {})) for s in debug.get("steps", []) if s.get("node") == node]


def tried_queries(state: RagState) -> list[str]:
    """Every query an earlier attempt of this run searched."""
    return [q for data in _steps(state, NODE) for q in data.get("queries", [])]


def last_missing(state: RagState) -> list[str]:
    """The words the latest GroundingCheck did not find in the sources."""
    checks = _steps(state, "grounding_check")
    return list(checks[-1].get("missing") or []) if checks else []


__all__ = [
    "MAX_QUERIES",
    "PreviousTurn",
    "QueryPlan",
    "RewrittenQueries",
    "complete",
    "heuristic_queries",
    "is_follow_up",
    "last_missing",
    "plan_queries",
    "previous_turn",
    "query_key",
    "refers_back",
    "rewrite_query",
    "standalone",
    "tried_queries",
    "unique_queries",
]
