"""``RagMiddleware``: kbgraph's retrieval and answer check on ``langchain.agents.create_agent``.

    agent = create_agent(model, tools, middleware=[RagMiddleware({"knowledge_bases": "docs/"})])

Three hooks, one per step of a turn:

* ``before_model``: once per question (the last human message; the model calls of a tool
  loop that follow reuse it), the retrieval subgraph runs on the conversation and decides
  as it does for the ready agents: small talk and closings skip retrieval, a follow-up is
  rewritten, the scope is narrowed, the sources are checked for grounding. Its ``rag_*``
  keys replace the previous question's (``rag_citations`` is what a UI shows as sources)
  and the ``answer_*`` keys of the previous answer are cleared, so nothing of one turn
  leaks into the next.
* ``wrap_model_call``: the citation instructions extend the **request's** system message
  (the user's own system prompt kept) and the citation-tagged sources go into a fenced
  user message of the request just before the question — never into the system role,
  whose authority a document must not borrow — with fewer sources when they would not all
  fit the model's window. It is never written to ``messages``: a checkpointed
  thread grows by the question and the answer alone, and each turn's model sees the
  sources of its own question instead of every earlier turn's (the context is in
  ``rag_context``, replaced each turn, out of the agent's input and output). When the
  sources are not grounded, an agent without tools gets the ready agents' not-found
  message and the model is not called (it would answer from memory); an agent with tools
  is told that the knowledge bases hold nothing on the question and may use its tools.
* after the model answered (still inside ``wrap_model_call``, where the agent's own model
  can be asked again): the ready agents' answer check (``RagSettings.answer_check``:
  ``repair`` by default, ``flag``, ``regenerate``, ``extractive``, ``off``; see
  :mod:`kbgraph.agents._check`) on the final answer (a reply with tool calls is
  not one). A replaced answer never enters ``messages``: the model's message is swapped for
  the kept one before the model step ends. The verdict is in ``answer_check``, the
  answer's resolved ``[N]`` markers in ``answer_citations``.

Settings are the ``RagSettings`` given to the middleware, else the run's context (a
``RagSettings``, a dict, or any context object sharing its field names).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, NotRequired, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    OmitFromSchema,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from kbgraph._base.citations import ResolvedCitation, UncitedSource, UnresolvedMarker
from kbgraph._base.faces import shown_as
from kbgraph.evals import Judge
from kbgraph.graphs import (
    Citation,
    RagGrounding,
    RagScope,
    RagSettings,
    RetrievalDebug,
    SearcherRegistry,
    build_rag_graph,
    inject_context,
    mark_answer,
    settings_from_context,
    settings_from_runtime,
)
from kbgraph.graphs._internal import extractive_text, fit_sources, is_small_talk_or_closing

from ._chat import not_grounded_text
from ._check import make_check_node
from ._common import citation_update
from ._held import holds_draft, not_streamed
from ._state import AnswerCheckRecord, AnswerMode, ChatAgentState
from ._verdict import mark_verdict

_PRIVATE = OmitFromSchema(input=True, output=True)
_OUTPUT = OmitFromSchema(input=True, output=False)


class RagMiddlewareState(AgentState[Any]):
    """The keys :class:`RagMiddleware` adds to the agent's state: the retrieval subgraph's
    (``rag_*``, as in ``RagOutput``) and the answer's (``answer_*``, as in ``AnswerKeys``;
    the answer itself is the last message). All are per turn. ``rag_context`` (the sources
    as the model saw them) and ``rag_turn`` (the id of the question they were retrieved
    for) are the middleware's own: neither an input nor an output of the agent."""

    rag_turn: NotRequired[Annotated[str | None, _PRIVATE]]
    rag_context: NotRequired[Annotated[str, _PRIVATE]]
    rag_should_retrieve: NotRequired[Annotated[bool, _OUTPUT]]
    rag_scope: NotRequired[Annotated[RagScope, _OUTPUT]]
    rag_queries: NotRequired[Annotated[list[str], _OUTPUT]]
    rag_citations: NotRequired[Annotated[list[Citation], _OUTPUT]]
    rag_grounded: NotRequired[Annotated[bool, _OUTPUT]]
    rag_grounding: NotRequired[Annotated[RagGrounding, _OUTPUT]]
    rag_retrieval_debug: NotRequired[Annotated[RetrievalDebug, _OUTPUT]]
    answer_mode: NotRequired[Annotated[AnswerMode | None, _OUTPUT]]
    answer_trimmed: NotRequired[Annotated[str | None, _OUTPUT]]
    answer_citations: NotRequired[Annotated[list[ResolvedCitation], _OUTPUT]]
    answer_unresolved: NotRequired[Annotated[list[UnresolvedMarker], _OUTPUT]]
    answer_uncited: NotRequired[Annotated[list[UncitedSource], _OUTPUT]]
    answer_check: NotRequired[Annotated[AnswerCheckRecord | None, _OUTPUT]]


RAG_KEYS = (
    "rag_context", "rag_should_retrieve", "rag_scope", "rag_queries", "rag_citations",
    "rag_grounded", "rag_grounding", "rag_retrieval_debug",
)  # fmt: skip
"""The subgraph's output keys the middleware keeps (``rag_candidates``, every chunk
considered, stays in the subgraph's own run)."""
NEW_ANSWER: dict[str, Any] = {
    "answer_mode": None,
    "answer_trimmed": None,
    "answer_citations": [],
    "answer_unresolved": [],
    "answer_uncited": [],
    "answer_check": None,
}
"""The ``answer_*`` keys before the turn's answer: the previous answer's are cleared."""
_NOT_KEPT = ("messages", "answer", "answer_error")  # the answer is the last message


@shown_as("kbgraph.agents")
class RagMiddleware(AgentMiddleware[RagMiddlewareState, Any, Any]):
    """Retrieval before the model, the sources in its request, the answer checked after it.

    ``settings``: a ``RagSettings`` or a dict of its fields (``None``: the run's context).
    ``chat_model`` is the model the retrieval subgraph's decisions ask (``None``:
    ``RagSettings.chat_model``, else the heuristics); answers are written, and written
    again, by the agent's own model. ``registry`` supplies the subgraph's searchers,
    ``rag_graph`` replaces the subgraph altogether, and ``answer_judge`` (any
    :class:`kbgraph.evals.Judge`) checks the answers instead of the judge
    ``RagSettings.answer_check.judge`` names.
    """

    state_schema = RagMiddlewareState

    def __init__(
        self,
        settings: RagSettings | Mapping[str, Any] | None = None,
        *,
        chat_model: BaseChatModel | None = None,
        registry: SearcherRegistry | None = None,
        rag_graph: CompiledStateGraph[Any, Any, Any, Any] | None = None,
        answer_judge: Judge | None = None,
    ) -> None:
        super().__init__()
        self.settings = None if settings is None else settings_from_context(settings)
        self.rag_graph: CompiledStateGraph[Any, Any, Any, Any] = rag_graph or build_rag_graph(
            chat_model=chat_model, registry=registry
        )
        self.answer_judge = answer_judge
        self.tools = []

    def settings_for(self, runtime: Runtime[Any] | None) -> RagSettings:
        """The settings of a run: the middleware's own, else the run's context."""
        return self.settings if self.settings is not None else settings_from_runtime(runtime)

    # -- before the model: retrieval, once per question --------------------------------------

    def before_model(
        self, state: RagMiddlewareState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Run the retrieval subgraph for a new question (see the module docstring)."""
        turn = _question_id(state)
        if turn is None:
            return None
        out = self.rag_graph.invoke(_subgraph_input(state), context=self.settings_for(runtime))
        return _retrieved(out, turn)

    async def abefore_model(
        self, state: RagMiddlewareState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        turn = _question_id(state)
        if turn is None:
            return None
        context = self.settings_for(runtime)
        out = await self.rag_graph.ainvoke(_subgraph_input(state), context=context)
        return _retrieved(out, turn)

    # -- the model call: the sources in the request, the answer checked ---------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        turn = _Turn(self, request)
        if turn.reply is not None:
            return turn.reply
        with not_streamed(turn.mode == "llm" and holds_draft(turn.settings)):
            response = handler(turn.request)
        return turn.checked(response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        turn = _Turn(self, request)
        if turn.reply is not None:
            return turn.reply
        with not_streamed(turn.mode == "llm" and holds_draft(turn.settings)):
            response = await handler(turn.request)
        # The check may ask the model again (a blocking call) and runs the judge.
        return await asyncio.to_thread(turn.checked, response)


def _question_id(state: Mapping[str, Any]) -> str | None:
    """The id of the question retrieval has not run for yet (``None``: it ran already,
    this is a later model call of the same turn; or there is no question)."""
    messages = state.get("messages") or []
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    if human is None:
        return None
    # add_messages gives every message an id; without one, retrieve every time.
    turn = human.id or f"kbgraph-{uuid.uuid4()}"
    return None if turn == state.get("rag_turn") else turn


def _subgraph_input(state: Mapping[str, Any]) -> dict[str, Any]:
    return {"messages": list(state.get("messages") or [])}


def _retrieved(out: Mapping[str, Any], turn: str) -> dict[str, Any]:
    return {**{k: out.get(k) for k in RAG_KEYS if k in out}, "rag_turn": turn, **NEW_ANSWER}


class _Turn:
    """One model call of a turn: the request with the sources, or the reply made without
    the model; then the answer checked."""

    def __init__(self, middleware: RagMiddleware, request: ModelRequest[Any]) -> None:
        self.middleware, self.original = middleware, request
        self.settings = middleware.settings_for(request.runtime)
        # Every key a turn marker reads, whether or not retrieval ran this turn.
        self.state: dict[str, Any] = {
            "rag_should_retrieve": False, "rag_grounded": False, "rag_citations": [],
            **request.state, "messages": list(request.messages),
        }  # fmt: skip
        self.mode = _mode(self.state, bool(request.tools))
        self.trimmed: str | None = None
        self.reply: ExtendedModelResponse[Any] | None = None
        self.prompt = [*_system(request), *request.messages]
        self.request = request
        if self.mode == "not_grounded":
            self.reply = self._answered(
                not_grounded_text(cast(ChatAgentState, self.state), self.settings), "not_grounded"
            )
        elif self.mode == "llm" or (self.mode == "answered" and self.state["rag_should_retrieve"]):
            self._with_sources(request)

    def _with_sources(self, request: ModelRequest[Any]) -> None:
        """The request with the sources in a user message of their own (fewer when they would
        not all fit the model's window; none, with a not-found notice, when not grounded)."""
        grounded = self.mode == "llm"
        context = str(self.state.get("rag_context") or "") if grounded else ""
        citations = list(self.state.get("rag_citations") or []) if grounded else []
        prompt = [*_system(request), *request.messages]
        fit = fit_sources(request.model, context, citations, lambda c: _with_context(prompt, c))
        if fit is None or fit.empty:
            why = "not even one source fits the chat model's context window"
            self.reply = self._answered(extractive_text(self.state, why), "fallback")
            return
        self.trimmed = fit.describe() if fit.trimmed else None
        system, *rest = fit.messages
        messages = cast(list[AnyMessage], rest)
        assert isinstance(system, SystemMessage)  # inject_context always leads with one
        self.prompt = list(fit.messages)
        self.request = request.override(system_message=system, messages=messages)

    def _answered(self, text: str, mode: AnswerMode) -> ExtendedModelResponse[Any]:
        """A reply the model did not write (not checked)."""
        message = mark_answer(AIMessage(text, id=f"kbgraph-{uuid.uuid4()}"), self.state, mode)
        update = {"answer_mode": mode, **citation_update(text, self._citations())}
        return ExtendedModelResponse(ModelResponse([message]), Command(update=update))

    def _citations(self) -> list[Citation]:
        return list(self.state.get("rag_citations") or []) if self.state["rag_grounded"] else []

    def checked(
        self, response: ModelResponse[Any]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """The model's final answer checked as the ready agents check theirs."""
        answer = _final_answer(response)
        if answer is None:  # tool calls: the answer comes later
            return response
        message = (
            answer if answer.id else answer.model_copy(update={"id": f"kbgraph-{uuid.uuid4()}"})
        )
        view = {**self.state, "messages": [*self.state["messages"], message],
                "answer": message.text, "answer_mode": self.mode, "answer_error": None}  # fmt: skip
        check = make_check_node(
            self.original.model, lambda *_: list(self.prompt), extractive_text,
            self.middleware.answer_judge,
        )  # fmt: skip
        runtime = self.original.runtime.override(context=self.settings)
        done = check(view, runtime)
        kept = done["messages"][-1] if "messages" in done else mark_answer(message, view, self.mode)
        # The verdict on what a chat UI renders, not only in the state.
        kept = mark_verdict(kept, done.get("answer_check"), from_sources=self.mode == "llm")
        update: dict[str, Any] = {
            "answer_mode": self.mode,
            "answer_trimmed": self.trimmed,
            **citation_update(message.text, self._citations()),
            **{k: v for k, v in done.items() if k not in _NOT_KEPT},
        }
        result = [m for m in response.result if m is not answer] + [kept]
        return ExtendedModelResponse(
            ModelResponse(result, response.structured_response), Command(update=update)
        )


def _mode(state: Mapping[str, Any], has_tools: bool) -> AnswerMode:
    """How this turn's answer is made: from the sources (``llm``), the not-found message
    (``not_grounded``; with tools, the model answers, told that nothing was found), or a
    reply without retrieval (``small_talk`` / ``answered``)."""
    if state.get("rag_should_retrieve"):
        if state.get("rag_grounded") and state.get("rag_citations"):
            return "llm"
        return "answered" if has_tools else "not_grounded"
    messages: list[AnyMessage] = list(state.get("messages") or [])
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    question = human.text if human is not None else ""
    return "small_talk" if not question or is_small_talk_or_closing(question) else "answered"


def _with_context(prompt: list[BaseMessage], context: str) -> list[BaseMessage]:
    """The instructions in the system message, the retrieved text never (issue 42, hole 6):
    it comes fenced, as a user message, before the question."""
    return inject_context(prompt, context, sources_role="user")


def _system(request: ModelRequest[Any]) -> list[BaseMessage]:
    return [request.system_message] if request.system_message is not None else []


def _final_answer(response: ModelResponse[Any]) -> AIMessage | None:
    """The model's answer: its last message, unless it calls tools (or is no AI message)."""
    last = response.result[-1] if response.result else None
    if not isinstance(last, AIMessage) or last.tool_calls:
        return None
    return last


__all__ = ["NEW_ANSWER", "RAG_KEYS", "RagMiddleware", "RagMiddlewareState"]
