"""``AnswerCheckMiddleware``: the answer check on ``create_agent`` with the ``rag_search``
tool (issue 40: that path showed a wrong answer with no mark).

    agent = create_agent(model, [rag_search], middleware=[AnswerCheckMiddleware()])

After each model call (inside ``wrap_model_call``, where the agent's own model can be asked
again) a final answer — an ``AIMessage`` without tool calls — is checked against every
source the ``rag_search`` calls of the conversation returned (their artifacts), as the
ready tool agent checks its answers (``RagSettings.answer_check``: ``repair`` by default,
``flag``, ``regenerate``, ``extractive``, ``off``). The message the agent keeps carries the
verdict (``response_metadata["kbgraph_check"]``; under ``flag`` a visible line); a replaced
answer never enters ``messages``. ``answer_check`` and ``answer_citations`` are in the state.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    OmitFromSchema,
)
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.types import Command

from kbgraph._base.citations import ResolvedCitation
from kbgraph._base.faces import shown_as
from kbgraph.evals import Judge
from kbgraph.graphs import RagSettings, settings_from_context, settings_from_runtime
from kbgraph.graphs._internal import extractive_text, previous_citations

from ._check import make_check_node
from ._common import citation_update
from ._held import holds_draft, not_streamed
from ._state import AnswerCheckRecord
from ._verdict import mark_verdict

_OUTPUT = OmitFromSchema(input=True, output=False)


class AnswerCheckMiddlewareState(AgentState[Any]):
    """The keys :class:`AnswerCheckMiddleware` adds: the last answer's check and its
    resolved ``[N]`` markers (outputs of the agent, not inputs)."""

    answer_check: NotRequired[Annotated[AnswerCheckRecord | None, _OUTPUT]]
    answer_citations: NotRequired[Annotated[list[ResolvedCitation], _OUTPUT]]


@shown_as("kbgraph.agents")
class AnswerCheckMiddleware(AgentMiddleware[AnswerCheckMiddlewareState, Any, Any]):
    """Check the final answer against the sources ``rag_search`` returned; mark or repair it.

    ``settings``: a ``RagSettings`` or a dict of its fields (``None``: the run's context);
    ``judge`` (any :class:`kbgraph.evals.Judge`) instead of ``answer_check.judge``;
    ``tool_name``: the search tool whose results are the sources.
    """

    state_schema = AnswerCheckMiddlewareState

    def __init__(
        self,
        settings: RagSettings | Mapping[str, Any] | None = None,
        *,
        judge: Judge | None = None,
        tool_name: str = "rag_search",
    ) -> None:
        super().__init__()
        self.settings = None if settings is None else settings_from_context(settings)
        self.judge, self.tool_name = judge, tool_name
        self.tools = []

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        with not_streamed(self._holds(request)):
            response = handler(request)
        return self.checked(request, response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        with not_streamed(self._holds(request)):
            response = await handler(request)
        # The check may ask the model again (a blocking call) and runs the judge.
        return await asyncio.to_thread(self.checked, request, response)

    def _holds(self, request: ModelRequest[Any]) -> bool:
        """Whether the model's answer may be replaced, so is not streamed (one answer)."""
        return holds_draft(self.settings or settings_from_runtime(request.runtime))

    def checked(
        self, request: ModelRequest[Any], response: ModelResponse[Any]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """The response, its final answer checked (a reply with tool calls passes as is)."""
        last = response.result[-1] if response.result else None
        if not isinstance(last, AIMessage) or last.tool_calls:
            return response
        message = last if last.id else last.model_copy(update={"id": f"kbgraph-{uuid.uuid4()}"})
        settings = self.settings or settings_from_runtime(request.runtime)
        citations = previous_citations(list(request.messages), self.tool_name)
        prompt: list[BaseMessage] = [
            *([request.system_message] if request.system_message is not None else []),
            *request.messages,
        ]
        view = {
            "messages": [*request.messages, message], "answer": message.text,
            "answer_mode": "llm", "answer_error": None, "rag_citations": citations,
        }  # fmt: skip
        node = make_check_node(request.model, lambda *_: list(prompt), extractive_text, self.judge)
        done = node(view, request.runtime.override(context=settings))
        record = done.get("answer_check")
        kept = done["messages"][-1] if "messages" in done else message
        kept = mark_verdict(kept, record)
        update = {
            "answer_check": record,
            "answer_citations": citation_update(kept.text, citations)["answer_citations"],
        }
        result = [m for m in response.result if m is not last] + [kept]
        return ExtendedModelResponse(
            ModelResponse(result, response.structured_response), Command(update=update)
        )


__all__ = ["AnswerCheckMiddleware", "AnswerCheckMiddlewareState"]
