"""Ready-made agents over the retrieval subgraph.

* ``chat_agent`` — subgraph → answer → citation extraction; answers extractively when no
  chat model is configured.
* ``tool_agent`` — a ReAct loop around the ``rag_search`` tool; needs a chat model
  (``RagSettings.chat_model``), resolved when a run starts.

Both are compiled without a checkpointer (``langgraph.json`` exports them; the server, or
your code, brings one) and take ``RagSettings`` as their context::

    from kbgraph.graphs.agents import chat_agent
    out = chat_agent.invoke(
        {"messages": [("user", "How do I configure retries?")]},
        context={"knowledge_bases": [{"folder": "examples/docs"}]},
    )
    print(out["answer"], out["answer_citations"])
"""

from __future__ import annotations

from .chat import build_chat_agent, compose_answer
from .react import build_tool_agent
from .state import (
    AgentInput,
    AnswerKeys,
    AnswerMode,
    ChatAgentState,
    ToolAgentOutput,
    ToolAgentState,
)

chat_agent = build_chat_agent()
tool_agent = build_tool_agent()

__all__ = [
    "AgentInput",
    "AnswerKeys",
    "AnswerMode",
    "ChatAgentState",
    "ToolAgentOutput",
    "ToolAgentState",
    "build_chat_agent",
    "build_tool_agent",
    "chat_agent",
    "compose_answer",
    "tool_agent",
]
