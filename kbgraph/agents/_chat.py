"""The ready chat agent: retrieval subgraph → answer → citation extraction.

    START → rag (the compiled subgraph, as one node) → answer → extract_citations
          → check_answer → END

The subgraph's output keys land in this graph's state; ``answer`` writes the reply (also
appended to ``messages``, so the next turn sees it, with a turn marker in its
``response_metadata`` — see ``kbgraph.graphs._turns``), ``extract_citations`` resolves its
``[N]`` markers against ``rag_citations`` and ``check_answer`` checks what the chat model
wrote against the sources it cites (``answer_check``; see ``kbgraph.agents._check``).

The answer node picks one of:

* retrieval skipped (small talk, or the conversation already answers it): a short reply
  without sources — from the chat model when there is one;
* not grounded: a not-found message with GroundingCheck's reasons and guidance — never the
  chat model, which would be tempted to answer from memory;
* grounded, with a chat model: the model's answer, the context in its system prompt (with
  fewer sources when they would not all fit the model's context window; see
  ``kbgraph.graphs._nodes._fit_sources``);
* grounded, without a chat model (or when the model fails): an extractive answer quoting
  the best lines of the cited sources, marked as extractive.

When a node of the subgraph found the chat server unreachable in this run, the answer
does not call the model either (a node's timeout is not that: a slow model is still asked
for the answer) (see ``kbgraph.graphs._nodes._base.run_outage``).

Under a policy that may replace the model's answer its draft is not streamed and is held
(``answer_draft``) for ``check_answer``, which appends the one answer kept; see
``kbgraph.agents._held``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from kbgraph.errors import ContextLengthError
from kbgraph.evals import Judge
from kbgraph.graphs import (
    RagSettings,
    SearcherRegistry,
    build_rag_graph,
    inject_context,
    mark_answer,
    settings_from_runtime,
)
from kbgraph.graphs._internal import (
    extractive_text,
    fit_sources,
    is_small_talk_or_closing,
    question_of,
    recording,
    run_outage,
    small_talk_kind,
)
from kbgraph.prompts import load_prompt, render_prompt

from ._check import make_check_node
from ._common import citation_update, kb_names, model_for
from ._held import ChatRunState, draft_config, hold, holds_draft, publishing
from ._state import AgentInput, AnswerMode, ChatAgentState
from ._verdict import with_verdict

RAG_NODE = "rag"
NODES = (RAG_NODE, "answer", "extract_citations", "check_answer")


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    mode: AnswerMode
    error: str | None = None
    trimmed: str | None = None  # how the sources were cut to fit the model's window
    # The chat model's own message: its id (the one its streamed tokens carried) and its
    # metadata (finish_reason) are the answer message's.
    source: AIMessage | None = None


def compose_answer(
    state: ChatAgentState, settings: RagSettings, model: BaseChatModel | None
) -> Reply:
    """The reply for a state the subgraph has filled (see the module docstring)."""
    outage = run_outage(state) if model is not None else None
    skipped = None
    if outage is not None:
        model = None
        skipped = f"chat model not called: {outage['node']} found it down ({outage['error']})"
    if not state.get("rag_should_retrieve"):
        reply = reply_without_retrieval(state, settings, model)
        return Reply(reply.text, reply.mode, reply.error or skipped, source=reply.source)
    if not state.get("rag_grounded") or not state.get("rag_citations"):
        return Reply(not_grounded_text(state, settings), "not_grounded")
    if model is None and skipped:
        why = "the chat model was not called: it was down earlier in this run"
        return Reply(extractive_text(state, why), "fallback", skipped)
    if model is None:
        return Reply(extractive_text(state), "extractive")
    trimmed = None
    try:
        prompt, trimmed = answer_prompt(state, model)
        # A draft the check may replace is not streamed (see kbgraph.agents._held).
        message = model.invoke(prompt, config=draft_config(settings))
        text = message.text
        if not text.strip():
            raise ValueError("the chat model returned an empty answer")
    # Any failure of the model (timeout, refusal to connect, bad output, a context window
    # too small for even one source) must still give the user the sources: fall back to
    # the extractive answer and say why.
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        why = f"the chat model failed: {type(exc).__name__}"
        return Reply(extractive_text(state, why), "fallback", error, trimmed)
    return Reply(text, "llm", trimmed=trimmed, source=message)


def answer_prompt(
    state: Mapping[str, Any], model: BaseChatModel
) -> tuple[list[BaseMessage], str | None]:
    """The answer's prompt (the instructions in the system prompt, then the conversation,
    the fenced sources a user message just before the last question), with fewer sources
    when all of them would not fit the model's context window; and what was left out, if
    anything."""
    messages = [SystemMessage(load_prompt("agent_system").strip()), *state.get("messages", [])]
    fit = fit_sources(
        model,
        state.get("rag_context") or "",
        state.get("rag_citations") or [],
        lambda context: inject_context(messages, context),
    )
    if fit is None or fit.empty:
        raise ContextLengthError(
            "not even one source fits the chat model's context window with this "
            "conversation; raise the model's context (gguf: n_ctx) or start a new conversation"
        )
    return fit.messages, fit.describe() if fit.trimmed else None


def reply_without_retrieval(
    state: ChatAgentState, settings: RagSettings, model: BaseChatModel | None
) -> Reply:
    question = question_of(dict(state))
    small_talk = not question or is_small_talk_or_closing(question)
    mode: AnswerMode = "small_talk" if small_talk else "answered"
    if model is not None:
        system = SystemMessage(load_prompt("agent_chitchat_system").strip())
        try:
            message = model.invoke([system, *state.get("messages", [])])
            if message.text.strip():
                return Reply(message.text, mode, source=message)
        except Exception as exc:  # same reason as in compose_answer
            return Reply(_canned(mode, question, settings), mode, f"{type(exc).__name__}: {exc}")
    return Reply(_canned(mode, question, settings), mode)


_SMALL_TALK_PROMPTS = {
    "greeting": "agent_chitchat_reply",
    "thanks": "agent_thanks_reply",
    "goodbye": "agent_goodbye_reply",
}


def _canned(mode: AnswerMode, question: str, settings: RagSettings) -> str:
    if mode == "answered":
        return load_prompt("agent_already_answered").strip()
    prompt = _SMALL_TALK_PROMPTS[small_talk_kind(question)]
    return render_prompt(prompt, knowledge_bases=kb_names(settings)).strip()


def not_grounded_text(state: ChatAgentState, settings: RagSettings) -> str:
    grounding = state.get("rag_grounding") or {"grounded": False, "reasons": [], "guidance": []}
    reasons = grounding.get("reasons") or ["no source matched the question"]
    guidance = grounding.get("guidance") or [load_prompt("agent_default_guidance").strip()]
    return render_prompt(
        "agent_not_grounded",
        knowledge_bases=kb_names(settings),
        reasons=_bullets(reasons),
        guidance=_bullets(guidance),
    ).strip()


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _prompt_of(
    state: Mapping[str, Any], model: BaseChatModel, settings: RagSettings
) -> list[BaseMessage]:
    return answer_prompt(state, model)[0]


def make_answer_node(chat_model: BaseChatModel | None = None) -> Any:
    def answer(state: ChatAgentState, runtime: Runtime[RagSettings]) -> dict[str, Any]:
        """Answer from the sources (or say why not); see ``compose_answer``."""
        settings = settings_from_runtime(runtime)
        reply = compose_answer(state, settings, model_for(chat_model, settings))
        message = mark_answer(answer_message(reply), state, reply.mode)
        # The model's draft waits for the check when the check may replace it.
        held = reply.mode == "llm" and reply.source is not None and holds_draft(settings)
        return {
            **({"answer_draft": hold(message)} if held else {"messages": [message]}),
            "answer": reply.text,
            "answer_mode": reply.mode,
            "answer_error": reply.error,
            "answer_trimmed": reply.trimmed,
        }

    return answer


def answer_message(reply: Reply) -> AIMessage:
    """The reply as the answer's message. A model's reply keeps the id its tokens streamed
    under: ``stream_mode="messages"`` emits a node's new message unless its id was
    streamed already, so a message without it showed the answer a second time."""
    if reply.source is None:
        return AIMessage(content=reply.text)
    return AIMessage(
        content=reply.text,
        id=reply.source.id,
        response_metadata=dict(reply.source.response_metadata or {}),
    )


def extract_citations_node(state: ChatAgentState) -> dict[str, Any]:
    """Resolve the answer's ``[N]`` markers against ``rag_citations``."""
    return citation_update(state.get("answer") or "", state.get("rag_citations") or [])


def build_chat_agent(
    *,
    chat_model: BaseChatModel | None = None,
    registry: SearcherRegistry | None = None,
    rag_graph: CompiledStateGraph[Any, Any, Any, Any] | None = None,
    checkpointer: Checkpointer = None,
    answer_judge: Judge | None = None,
    name: str = "kbgraph_chat_agent",
) -> CompiledStateGraph[ChatAgentState, RagSettings, AgentInput, ChatAgentState]:
    """The compiled chat agent; pass a ``checkpointer`` to keep conversations (the exported
    instance has none: the LangGraph server brings its own).

    ``chat_model`` overrides ``RagSettings.chat_model`` for the answer and for the
    subgraph's nodes; ``registry`` supplies the subgraph's searchers; ``rag_graph`` replaces
    the subgraph altogether (then ``chat_model`` and ``registry`` only affect the answer);
    ``answer_judge`` (any :class:`kbgraph.evals.Judge`) checks the answers instead of the
    judge ``RagSettings.answer_check.judge`` names.
    """
    subgraph = rag_graph or build_rag_graph(chat_model=chat_model, registry=registry)
    graph = StateGraph(
        ChatRunState,
        context_schema=RagSettings,
        input_schema=AgentInput,
        output_schema=ChatAgentState,
    )
    graph.add_node(RAG_NODE, subgraph)
    graph.add_node("answer", make_answer_node(chat_model))
    graph.add_node("extract_citations", extract_citations_node)
    # The run is recorded (RagSettings.record_runs) when its last node is done.
    check = make_check_node(chat_model, _prompt_of, extractive_text, answer_judge)
    check = publishing(with_verdict(check))  # one answer message, marked
    graph.add_node("check_answer", recording(check, name))
    graph.add_edge(START, RAG_NODE)
    graph.add_edge(RAG_NODE, "answer")
    graph.add_edge("answer", "extract_citations")
    graph.add_edge("extract_citations", "check_answer")
    graph.add_edge("check_answer", END)
    # The run's state adds only the held draft (kbgraph.agents._held) to ChatAgentState.
    compiled: Any = graph.compile(checkpointer=checkpointer, name=name)
    return cast(
        CompiledStateGraph[ChatAgentState, RagSettings, AgentInput, ChatAgentState], compiled
    )


@functools.cache
def exported_chat_agent() -> CompiledStateGraph[
    ChatAgentState, RagSettings, AgentInput, ChatAgentState
]:
    """The package's ``chat_agent``, built once: ``kbgraph ask`` (and ``kbgraph mcp``'s
    ``ask``) run this one without importing the package (which exports ``run_ask``)."""
    return build_chat_agent()


__all__ = [
    "NODES",
    "RAG_NODE",
    "Reply",
    "answer_message",
    "answer_prompt",
    "build_chat_agent",
    "compose_answer",
    "exported_chat_agent",
    "extract_citations_node",
    "extractive_text",
    "make_answer_node",
    "not_grounded_text",
    "reply_without_retrieval",
]
