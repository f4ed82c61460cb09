"""The chat agent as an evaluation :class:`~kbgraph.evals.Agent`, and ``kbgraph eval``.

Runs :func:`~kbgraph.agents.build_chat_agent` on one question over one folder and reads its
final state: ``answer``, ``rag_citations`` (``{n, id, source, kb, line_start, line_end,
score, text, section, page}``), ``rag_context`` and ``rag_grounded``.

It lives here, not in ``evals``: the agents sit above ``evals`` (their answer check is an
evaluation), so ``evals`` is handed the agent (``run_evaluation(agent_factory=...)``) and
``kbgraph eval`` is the evals' command group given :meth:`ChatAgent.prepared` as its
context object.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kbgraph._base.commands import DefaultCommandGroup
from kbgraph._base.faces import shown_as
from kbgraph.evals import AgentOutput, passages_from
from kbgraph.evals._internal import eval_group as evals_group


@shown_as("kbgraph.agents")
class ChatAgent:
    """The ready chat agent over ``folder`` (knowledge base ``name``). ``settings`` are
    further ``kbgraph.graphs._settings.RagSettings`` fields (``top_k``, ``rerank`` …)."""

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
        from kbgraph.graphs import RagSettings

        from ._chat import build_chat_agent

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
        from kbgraph.graphs import default_registry

        with default_registry.lock(str(self.folder), self.settings.embedding) as searcher:
            searcher.ensure_fresh()

    @classmethod
    def prepared(
        cls, folder: Path, embedding: str, chat_model: str | None, settings: Mapping[str, Any]
    ) -> ChatAgent:
        """The agent over ``folder``, its index fresh (an ``evals.batch.AgentFactory``)."""
        chat = cls(folder, embedding=embedding, chat_model=chat_model, **dict(settings))
        chat.prepare()
        return chat

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


eval_group = DefaultCommandGroup(
    name="eval",
    commands=dict(evals_group.commands),
    lazy=evals_group.lazy,
    help=evals_group.help,
    subcommand_metavar=evals_group.subcommand_metavar,
    invoke_without_command=False,
    no_args_is_help=True,
    context_settings={**evals_group.context_settings, "obj": ChatAgent.prepared},
)
"""``kbgraph eval``: the evals' commands, ``--kb FOLDER`` answered by the ready chat agent."""

__all__ = ["ChatAgent", "eval_group", "output_from_state"]
