"""The ready ReAct agent: a chat model that calls ``rag_search`` until it can answer.

    START → agent ⇄ tools
              └→ extract_citations → check_answer → END

The chat model is resolved per run from ``RagSettings.chat_model`` (or given when the
graph is built), so the graph compiles — and ``langgraph dev`` starts — without any API
key; a run without a model fails with a message that says how to configure one.
A question (not small talk, not a closing) is searched before any answer: the first step
forces a ``rag_search`` call, later steps leave the choice to the model. Searches per
question are bounded (``max_searches``; then the model must answer without tools) and the
loop stops before LangGraph's recursion limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from kbgraph.errors import ConfigError
from kbgraph.evals import Judge
from kbgraph.graphs import (
    RagSettings,
    rag_search,
    settings_from_runtime,
)
from kbgraph.graphs._internal import (
    extractive_text,
    is_small_talk_or_closing,
    previous_citations,
    question_of,
)
from kbgraph.prompts import load_prompt, render_prompt

from ._check import make_check_node
from ._common import citation_update, kb_names, model_for
from ._state import AgentInput, ToolAgentOutput, ToolAgentState
from ._verdict import with_verdict

NODES = ("agent", "tools", "extract_citations", "check_answer")
# An answer needs the agent step and the extraction step; a search round needs two more.
_STEPS_TO_FINISH = 3


def searches_since_question(messages: list[AnyMessage], tool_name: str) -> int:
    """``tool_name`` results after the last human message."""
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage) and message.name == tool_name:
            count += 1
    return count


def needs_search(question: str) -> bool:
    """A question gets a search before any answer, whatever the model proposes (small
    local models often answer documentation questions from nothing); small talk, a
    closing and an empty message do not."""
    return bool(question.strip()) and not is_small_talk_or_closing(question)


def make_agent_node(chat_model: BaseChatModel | None, tool: BaseTool, max_searches: int) -> Any:
    def agent(state: ToolAgentState, runtime: Runtime[RagSettings]) -> dict[str, Any]:
        """Ask the chat model for the next step: a search, or the answer."""
        settings = settings_from_runtime(runtime)
        model = model_for(chat_model, settings)
        if model is None:
            raise ConfigError(
                "the tool agent needs a chat model: set chat_model in the run's context (for "
                "example openai:gpt-4o-mini, or openai_compatible:<model>@<base url>); the chat "
                "agent answers without one."
            )
        messages = list(state.get("messages") or [])
        searches = searches_since_question(messages, tool.name)
        may_search = searches < max_searches
        runnable: Any = model
        if may_search:
            first = searches == 0 and needs_search(question_of(dict(state)))
            runnable = model.bind_tools([tool], tool_choice=tool.name if first else None)
        response = runnable.invoke(tool_agent_prompt(messages, settings))
        out_of_steps = not may_search or state.get("remaining_steps", 100) < _STEPS_TO_FINISH
        if isinstance(response, AIMessage) and response.tool_calls and out_of_steps:
            response = AIMessage(id=response.id, content=load_prompt("agent_step_limit").strip())
        return {"messages": [response]}

    return agent


def tool_agent_prompt(messages: Sequence[BaseMessage], settings: RagSettings) -> list[BaseMessage]:
    """The system prompt (the knowledge bases, described) and the conversation so far."""
    system = render_prompt("agent_tool_system", knowledge_bases=kb_names(settings, described=True))
    return [SystemMessage(system.strip()), *messages]


def _prompt_of(
    state: Mapping[str, Any], model: BaseChatModel, settings: RagSettings
) -> list[BaseMessage]:
    return tool_agent_prompt(list(state.get("messages") or []), settings)


def route_after_agent(state: ToolAgentState) -> Literal["tools", "extract_citations"]:
    messages = state.get("messages") or []
    if messages and isinstance(messages[-1], AIMessage) and messages[-1].tool_calls:
        return "tools"
    return "extract_citations"


def make_extract_node(tool_name: str) -> Any:
    def extract_citations(state: ToolAgentState) -> dict[str, Any]:
        """The last AI message is the answer; resolve its markers against every source
        ``rag_search`` returned in the conversation."""
        messages = list(state.get("messages") or [])
        answer = next((m.text for m in reversed(messages) if isinstance(m, AIMessage)), "")
        by_number = {c["n"]: c for c in previous_citations(messages, tool_name)}
        citations = [by_number[n] for n in sorted(by_number)]
        # The step-limit message is the agent's, not the model's: it is not checked.
        stopped = answer == load_prompt("agent_step_limit").strip()
        return {
            "answer": answer,
            "answer_mode": "stopped" if stopped else "llm",
            "answer_error": None,
            "rag_citations": citations,
            **citation_update(answer, citations),
        }

    return extract_citations


def build_tool_agent(
    *,
    chat_model: BaseChatModel | None = None,
    tool: BaseTool | None = None,
    max_searches: int = 4,
    checkpointer: Checkpointer = None,
    answer_judge: Judge | None = None,
    name: str = "kbgraph_tool_agent",
) -> CompiledStateGraph[ToolAgentState, RagSettings, AgentInput, ToolAgentOutput]:
    """The compiled ReAct agent (with ``checkpointer`` when given). ``chat_model`` overrides
    ``RagSettings.chat_model``; ``tool`` replaces the default ``rag_search`` (for example one
    from ``make_rag_search(build_rag_graph(registry=...))``); ``answer_judge`` checks the
    final answer instead of the judge ``RagSettings.answer_check.judge`` names."""
    if max_searches < 1:
        raise ConfigError(f"max_searches is {max_searches}; it must be 1 or more.")
    tool = tool or rag_search
    graph = StateGraph(
        ToolAgentState,
        context_schema=RagSettings,
        input_schema=AgentInput,
        output_schema=ToolAgentOutput,
    )
    graph.add_node("agent", make_agent_node(chat_model, tool, max_searches))
    graph.add_node("tools", ToolNode([tool]))
    graph.add_node("extract_citations", make_extract_node(tool.name))
    graph.add_node(
        "check_answer",
        with_verdict(make_check_node(chat_model, _prompt_of, extractive_text, answer_judge)),
    )
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route_after_agent, ["tools", "extract_citations"])
    graph.add_edge("tools", "agent")
    graph.add_edge("extract_citations", "check_answer")
    graph.add_edge("check_answer", END)
    return graph.compile(checkpointer=checkpointer, name=name)


__all__ = [
    "NODES",
    "build_tool_agent",
    "make_agent_node",
    "make_extract_node",
    "needs_search",
    "route_after_agent",
    "searches_since_question",
]
