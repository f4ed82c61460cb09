"""The chat agent as an evaluation :class:`~kbgraph.evals.runner.Agent`.

Runs ``kbgraph.graphs.agents.build_chat_agent()`` on one question over one folder and reads its
final state: ``answer``, ``rag_citations`` (``{n, id, source, kb, lineStart, lineEnd,
score, text, section, page}``), ``rag_context`` and ``rag_grounded``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .evaluators import passages_from
from .records import AgentOutput


class ChatAgent:
    """The ready chat agent over ``folder`` (knowledge base ``name``). ``settings`` are
    further ``kbgraph.graphs.settings.RagSettings`` fields (``top_k``, ``rerank`` …)."""

    def __init__(
        self,
        folder: str | Path,
        *,
        embedding: str = "local",
        chat_model: str | None = None,
        name: str = "docs",
        description: str = "",
        graph: Any = None,
        **settings: Any,
    ) -> None:
        from kbgraph.graphs.agents import build_chat_agent
        from kbgraph.graphs.settings import RagSettings

        self.folder = Path(folder).expanduser().resolve()
        self.settings = RagSettings(
            knowledge_bases=[
                {"name": name, "folder": str(self.folder), "description": description}
            ],
            embedding=embedding,
            chat_model=chat_model,
            **settings,
        )
        self._graph: Any = graph if graph is not None else build_chat_agent()

    def prepare(self) -> None:
        """Open and (re)index the folder once, before rows run in parallel, so that a bad
        folder or model fails the run at once instead of failing every row."""
        from kbgraph.graphs.searcher import default_registry

        with default_registry.lock(str(self.folder), self.settings.embedding) as searcher:
            searcher.ensure_fresh()

    async def arun(self, question: str) -> AgentOutput:
        state = await self._graph.ainvoke({"messages": [("user", question)]}, context=self.settings)
        return output_from_state(state)


def output_from_state(state: Mapping[str, Any]) -> AgentOutput:
    """An :class:`AgentOutput` from a chat agent's final state."""
    answer = state.get("answer")
    if not isinstance(answer, str):
        messages = state.get("messages") or []
        answer = _text(messages[-1]) if messages else ""
    grounded = state.get("rag_grounded")
    return AgentOutput(
        answer=answer,
        passages=passages_from(state.get("rag_citations") or []),
        context=str(state.get("rag_context") or ""),
        grounded=bool(grounded) if grounded is not None else None,
    )


def _text(message: Any) -> str:
    text = getattr(message, "text", None)
    return text if isinstance(text, str) else str(getattr(message, "content", ""))


__all__ = ["ChatAgent", "output_from_state"]
