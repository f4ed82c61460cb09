"""State of the retrieval subgraph: the keys shared with a parent agent (ARCHITECTURE.md),
the records they hold, and their reducers.

Every value is a plain dict / list / str / number, so that checkpoints serialise and
LangGraph Studio shows them as JSON.

Two keys accumulate through reducers. ``rag_candidates``: **a plain list replaces**, so the
subgraph's output replaces what a parent agent kept from its previous turn and a new
attempt of the loop starts from a clean slate, while a fan-out retriever that wants to add
says so with :func:`merge_candidates`. ``rag_retrieval_debug``: each node's update is a
plain ``{"steps": [its step], "fallbacks": [...]}`` (what ``stream_mode="updates"`` shows),
which appends; a record that starts a run (its first step is DecideRetrieve's, as is every
record the subgraph hands to a parent) replaces, so each turn's trace starts afresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.managed import RemainingSteps
from typing_extensions import TypedDict

from kbgraph._base.camel import snake_keys
from kbgraph.errors import error_text

MERGE_KEY = "__kbgraph_merge__"
"""Marks an update of ``rag_candidates`` / ``rag_retrieval_debug`` as an increment."""


class Candidate(TypedDict):
    """One retrieved chunk. ``score`` is the fused score normalised to 0..1 (1 = ranked
    first by every query × ranker list) until Rerank replaces it with its own 0..1 score;
    ``ranks`` maps ``"q<i>:<ranker>"`` to the 1-based rank that list gave the chunk;
    ``scores`` holds the raw score of each list plus ``"rrf"`` (raw fused) and, after
    Rerank, ``"fused"`` (the normalised fused score). ``line_start``/``line_end`` are
    ``None`` when a LangChain store's document does not say its lines."""

    chunk_id: str
    kb: str
    source: str
    line_start: int | None
    line_end: int | None
    text: str
    section: str | None
    page: int | None
    score: float
    ranks: dict[str, int]
    scores: dict[str, float]
    byte_start: NotRequired[int]
    byte_end: NotRequired[int]


class Citation(TypedDict):
    """One numbered source of ``rag_context`` (``n`` as printed there, 1-based). ``source``
    is relative to the knowledge base folder; ``text`` is exactly what the context shows,
    and lines ``line_start``..``line_end`` of the file contain it. ``chunk_id`` is the chunk id of
    the best-scoring chunk the source was built from. Lines are ``None`` (unknown) for a
    LangChain store's document without line metadata."""

    n: int
    chunk_id: str
    source: str
    kb: str
    line_start: int | None
    line_end: int | None
    score: float
    text: str
    section: str | None
    page: int | None


class RagScope(TypedDict):
    """Where to search. Empty lists mean no restriction (every configured knowledge base,
    every path, every kind). ``paths`` are globs or folder prefixes relative to a knowledge
    base folder; ``kinds`` are ``kbgraph.retrieval._records.FileKind`` values. ``terms`` are the
    question's words that name the scope rather than the topic (``configuration`` and
    ``md`` of "docs/configuration.md", ``csv`` and ``file`` of "in the CSV file"):
    GroundingCheck does not look for them in the sources' text, and a widened scope keeps
    them."""

    knowledge_bases: list[str]
    paths: list[str]
    kinds: list[str]
    widened: bool
    reason: str
    terms: NotRequired[list[str]]


class RagGrounding(TypedDict):
    """GroundingCheck's verdict; ``guidance`` (when not grounded) says what to try: a wider
    scope, other words, or adding documents."""

    grounded: bool
    reasons: list[str]
    guidance: list[str]


class DebugStep(TypedDict, total=False):
    """One node execution: which node, in which attempt, how long, which path (``heuristic``,
    ``llm``, ``llm-json`` or ``fallback``) and node-specific data (decisions, queries, ranks,
    scores, counts; Retrieve's ``errors``: ``{kb: [kbgraph.errors.ErrorRecord]}``)."""

    node: str
    attempt: int
    ms: float
    path: str
    data: dict[str, Any]


FallbackStage = Literal["structured", "json", "reranker", "skipped", "context"]


class LlmFallback(TypedDict):
    """A model call that failed, or was not made; the node then used its heuristic path.
    ``stage`` says which call: ``structured`` (structured output), ``json`` (the plain-JSON
    retry), ``reranker`` (a cross-encoder-style reranker), or ``skipped`` (not called
    because an earlier call of the run found the chat server unreachable). ``outage``
    marks such a failure (a refused or failed connection; not a timeout, which falls back
    for its node only): after it, the rest of the run does not call the chat model again."""

    node: str
    attempt: int
    stage: FallbackStage
    error: str
    outage: NotRequired[bool]


class Overruling(TypedDict):
    """A model's decision that evidence overruled: which node, what the model proposed,
    the evidence against it (a lexical probe of the knowledge bases, the closings
    detector, the question's own words, the rankers' lists), what was done instead and why
    in one line. Also sent as the custom stream event ``knowledge.decision.overruled``."""

    node: str
    attempt: int
    proposal: Any
    evidence: Any
    decision: Any
    reason: str


class RetrievalDebug(TypedDict, total=False):
    steps: list[DebugStep]
    fallbacks: list[LlmFallback]
    overrulings: list[Overruling]


def _candidate_key(candidate: Candidate) -> tuple[str, str]:
    return (candidate.get("kb", ""), candidate["chunk_id"])


def dedupe_candidates(items: Iterable[Candidate]) -> list[Candidate]:
    """One entry per (knowledge base, chunk id), keeping the entry with the best score, in
    order of first appearance."""
    best: dict[tuple[str, str], Candidate] = {}
    for item in items:
        key = _candidate_key(item)
        kept = best.get(key)
        if kept is None or item["score"] > kept["score"]:
            # Re-inserting would move the key to the end; assign in place to keep order.
            best[key] = item
    return list(best.values())


def merge_candidates(items: Sequence[Candidate]) -> dict[str, Any]:
    """An update of ``rag_candidates`` that adds ``items`` to what the state holds
    (deduplicated by chunk id, best score kept) instead of replacing it."""
    return {MERGE_KEY: list(items)}


def reduce_candidates(left: list[Candidate] | None, right: Any) -> list[Candidate]:
    """Reducer of ``rag_candidates``: a list replaces (deduplicated), a
    :func:`merge_candidates` update merges, ``None`` clears."""
    if right is None:
        return []
    # A parent graph's state or an older checkpoint may still spell the keys camelCase.
    right = snake_keys(right, "rag_candidates given to the graph", stacklevel=2)
    if isinstance(right, dict) and MERGE_KEY in right:
        return dedupe_candidates([*(left or []), *right[MERGE_KEY]])
    return dedupe_candidates(right)


def reduce_citations(left: list[Citation] | None, right: list[Citation] | None) -> list[Citation]:
    """Reducer of ``rag_citations``: the update replaces, its camelCase keys of before 0.2
    (a parent graph's state, a previous turn's input) renamed with a warning."""
    return snake_keys(list(right or []), "rag_citations given to the graph", stacklevel=2)


RUN_START_NODE = "decide_retrieve"
"""The node every run of the subgraph starts with: a debug record whose first step is its
starts a new trace."""


def debug_update(
    steps: Sequence[DebugStep] = (),
    fallbacks: Sequence[LlmFallback] = (),
    overrulings: Sequence[Overruling] = (),
) -> RetrievalDebug:
    """A node's ``rag_retrieval_debug`` update: its steps, fallbacks and overrulings
    (appended by :func:`reduce_debug` unless they start a run)."""
    return {"steps": list(steps), "fallbacks": list(fallbacks), "overrulings": list(overrulings)}


def starts_run(record: RetrievalDebug) -> bool:
    steps = record.get("steps") or []
    return bool(steps) and steps[0].get("node") == RUN_START_NODE


def retrieve_records(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """What each Retrieve attempt of the run recorded in ``rag_retrieval_debug`` (its lists,
    errors…), oldest first."""
    steps = (state.get("rag_retrieval_debug") or {}).get("steps") or []
    return [step.get("data") or {} for step in steps if step.get("node") == "retrieve"]


def unsearched_knowledge_bases(state: Mapping[str, Any]) -> dict[str, str]:
    """The knowledge bases Retrieve could not search at all (in no attempt did one of their
    ranked lists come back), each with its last error: ``{name: error}``. A failed index
    update alone does not count: the index as it was is still searched."""
    failed: dict[str, str] = {}
    searched: set[str] = set()
    for data in retrieve_records(state):
        searched.update(str(item["kb"]) for item in data.get("lists") or [])
        for kb, messages in (data.get("errors") or {}).items():
            if messages:
                failed[kb] = error_text(messages[-1])
    return {kb: error for kb, error in failed.items() if kb not in searched}


def empty_knowledge_bases(state: Mapping[str, Any]) -> list[str]:
    """The knowledge bases the last Retrieve attempt searched and found holding no
    document at all."""
    records = retrieve_records(state)
    return list(records[-1].get("empty") or []) if records else []


def reduce_debug(left: RetrievalDebug | None, right: RetrievalDebug | None) -> RetrievalDebug:
    """Reducer of ``rag_retrieval_debug``: ``None`` clears; a record that starts a run
    (:func:`starts_run`) replaces; any other appends its steps and fallbacks."""
    if right is None:
        return debug_update()
    add = debug_update(
        right.get("steps", []), right.get("fallbacks", []), right.get("overrulings", [])
    )
    if left is None or starts_run(add):
        return add
    return {
        "steps": [*left.get("steps", []), *add["steps"]],
        "fallbacks": [*left.get("fallbacks", []), *add["fallbacks"]],
        "overrulings": [*left.get("overrulings", []), *add["overrulings"]],
    }


class RagInput(TypedDict, total=False):
    """What the subgraph reads from its caller."""

    messages: Annotated[list[AnyMessage], add_messages]
    rag_query: str | None


class RagOutput(TypedDict, total=False):
    """What the subgraph hands back: the conversation unchanged and the ``rag_*`` keys."""

    messages: Annotated[list[AnyMessage], add_messages]
    rag_query: str | None
    rag_should_retrieve: bool
    rag_scope: RagScope
    rag_queries: list[str]
    rag_candidates: Annotated[list[Candidate], reduce_candidates]
    rag_context: str
    rag_citations: Annotated[list[Citation], reduce_citations]
    rag_grounded: bool
    rag_grounding: RagGrounding
    rag_attempt: int
    rag_retrieval_debug: Annotated[RetrievalDebug, reduce_debug]


RagRoute = Literal["retry", "end"]


class RagState(RagOutput, total=False):
    """The subgraph's full state. ``rag_next`` is GroundingCheck's routing decision,
    ``rag_standalone`` the question as RewriteQuery understood it in this attempt (a
    follow-up completed from the previous turn; GroundingCheck checks the sources against
    it), ``rag_rewrites`` the queries of ``rag_queries`` a chat model wrote (Retrieve keeps
    their lists from pushing the question's own best results out), and
    ``remaining_steps`` (managed by LangGraph) lets GroundingCheck stop looping before the
    recursion limit; none of them leaves the subgraph."""

    rag_next: RagRoute
    rag_standalone: str
    rag_rewrites: list[str]
    remaining_steps: RemainingSteps


__all__ = [
    "MERGE_KEY",
    "RUN_START_NODE",
    "Candidate",
    "Citation",
    "DebugStep",
    "FallbackStage",
    "LlmFallback",
    "Overruling",
    "RagGrounding",
    "RagInput",
    "RagOutput",
    "RagRoute",
    "RagScope",
    "RagState",
    "RetrievalDebug",
    "debug_update",
    "dedupe_candidates",
    "empty_knowledge_bases",
    "merge_candidates",
    "reduce_candidates",
    "reduce_citations",
    "reduce_debug",
    "retrieve_records",
    "starts_run",
    "unsearched_knowledge_bases",
]
