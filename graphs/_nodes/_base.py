"""What every node shares: its injected dependencies and the recorder of its debug step."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from pydantic import BaseModel

from kbgraph._base.faces import shown_as

from .._langchain_kb import LangChainSource
from .._models import resolve_chat_model
from .._searcher import SearcherRegistry, default_registry
from .._settings import RagSettings, settings_from_runtime
from .._state import (
    Candidate,
    DebugStep,
    LlmFallback,
    Overruling,
    RagState,
    RetrievalDebug,
    debug_update,
)
from ._closings import ClosingDetector
from ._llm import ask_node, budgeted

T = TypeVar("T", bound=BaseModel)
OVERRULED_EVENT = "knowledge.decision.overruled"

END: Literal["__end__"] = "__end__"


@runtime_checkable
@shown_as("kbgraph.graphs")
class Reranker(Protocol):
    """A cross-encoder-style reranker: one relevance score per candidate, higher is better
    (any scale; scores outside 0..1 are squashed with a logistic)."""

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]: ...


@dataclass(frozen=True)
class NodeDeps:
    """Objects a graph is built with rather than configured with (they are not JSON):
    a chat model that overrides ``RagSettings.chat_model``, the searcher registry, a
    reranker for ``rerank="cross_encoder"``, DecideRetrieve's closing detector (``None``:
    the process-wide one, with the local model when installed) and the LangChain stores and
    retrievers the graph searches as knowledge bases, by name (``sources``)."""

    chat_model: BaseChatModel | None = None
    registry: SearcherRegistry = field(default=default_registry)
    reranker: Reranker | None = None
    closings: ClosingDetector | None = None
    sources: Mapping[str, LangChainSource] = field(default_factory=dict)

    def model_for(self, settings: RagSettings) -> BaseChatModel | None:
        if self.chat_model is not None:
            return self.chat_model
        return resolve_chat_model(
            settings.chat_model, timeout=settings.llm_timeout_seconds, served_as="chat_model"
        )


NodeFn = Callable[[RagState, Runtime[RagSettings], NodeDeps], dict[str, Any]]


class StepRecorder:
    """Times one node run and collects its debug data, LLM fallbacks and overrulings."""

    def __init__(self, node: str, state: RagState, runtime: Runtime[RagSettings] | None) -> None:
        self.node = node
        self.state = state
        self.attempt = int(state.get("rag_attempt") or 0)
        self.settings = settings_from_runtime(runtime)
        self.path = "heuristic"
        self.fallbacks: list[LlmFallback] = []
        self.overrulings: list[Overruling] = []
        self.data: dict[str, Any] = {}
        writer = getattr(runtime, "stream_writer", None)
        self.write: Callable[[Any], None] = writer if callable(writer) else (lambda _: None)
        self._start = time.perf_counter()

    def ask(self, model: BaseChatModel, schema: type[T], **values: object) -> T | None:
        """The model's ``schema`` object for this node's prompt pair (rendered with
        ``values``), or ``None`` when it failed: the path taken (``llm``, ``llm-json`` or
        ``fallback``) and every failed call are recorded. The call has its own budget
        (see :func:`kbgraph.graphs._nodes._llm.budgeted`)."""
        model = budgeted(model, self.settings.llm_timeout_seconds, self.node)
        result = ask_node(model, schema, self.node, node=self.node, attempt=self.attempt, **values)
        self.fallbacks += result.fallbacks
        self.path = result.path or "fallback"
        return result.value

    def overrule(self, proposal: Any, evidence: Any, decision: Any, reason: str) -> None:
        """Record that evidence overruled the model's ``proposal`` (``rag_retrieval_debug``
        and a ``knowledge.decision.overruled`` custom stream event)."""
        record: Overruling = {
            "node": self.node, "attempt": self.attempt, "proposal": proposal,
            "evidence": evidence, "decision": decision, "reason": reason,
        }  # fmt: skip
        self.overrulings.append(record)
        self.write({"event": OVERRULED_EVENT, **record})

    def chat_model(self, deps: NodeDeps) -> BaseChatModel | None:
        """The run's chat model, unless an earlier node of this run found the chat server
        unreachable (not merely slow: a timeout falls back for its node only): then
        ``None`` (the heuristic path, without failing again), recorded as a ``skipped``
        fallback. The first node of a run
        (DecideRetrieve) must not use this: the state still holds the previous run's
        debug record then."""
        model = deps.model_for(self.settings)
        if model is None:
            return None
        outage = run_outage(self.state)
        if outage is None:
            return model
        self.path = "fallback"
        self.fallbacks.append({
            "node": self.node, "attempt": self.attempt, "stage": "skipped", "outage": True,
            "error": f"chat model not called: {outage['node']} found the chat server down "
            f"({outage['error']})",
        })  # fmt: skip
        return None

    def step(self) -> DebugStep:
        return {
            "node": self.node,
            "attempt": self.attempt,
            "ms": round((time.perf_counter() - self._start) * 1000, 3),
            "path": self.path,
            "data": self.data,
        }

    def update(self) -> RetrievalDebug:
        """The ``rag_retrieval_debug`` update of this step (DecideRetrieve's starts the
        run's record afresh, see ``kbgraph.graphs._state.reduce_debug``)."""
        return debug_update([self.step()], self.fallbacks, self.overrulings)


def run_outage(state: Mapping[str, Any]) -> LlmFallback | None:
    """The first model call of this run that could not connect, if any (the circuit
    breaker of the run: ``rag_retrieval_debug`` starts afresh with each run). A timeout is
    not one: the model is slow, not down, and is still asked for the answer."""
    debug = state.get("rag_retrieval_debug") or {}
    for fallback in debug.get("fallbacks") or []:
        if fallback.get("outage") and fallback.get("stage") != "skipped":
            found: LlmFallback = fallback
            return found
    return None


__all__ = [
    "END",
    "OVERRULED_EVENT",
    "NodeDeps",
    "NodeFn",
    "Reranker",
    "StepRecorder",
    "run_outage",
]
