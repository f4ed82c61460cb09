"""Ready-made agents over the retrieval subgraph (an application layer above ``evals``,
whose answer check they run; ``kbgraph.graphs.agents`` is its deprecated old path).

* ``chat_agent`` — subgraph → answer → citation extraction → answer check; answers
  extractively when no chat model is configured.
* ``tool_agent`` — a ReAct loop around the ``rag_search`` tool; needs a chat model
  (``RagSettings.chat_model``), resolved when a run starts.

Both check what the chat model writes against the sources it cites (``answer_check``; the
offline judge unless ``RagSettings.answer_check`` says otherwise).

Both are compiled without a checkpointer (``langgraph.json`` exports them; the server, or
your code, brings one) and take ``RagSettings`` as their context::

    from kbgraph.agents import chat_agent
    out = chat_agent.invoke(
        {"messages": [("user", "How do I configure retries?")]},
        context={"knowledge_bases": [{"folder": "examples/docs"}]},
    )
    print(out["answer"], out["answer_citations"], out["answer_check"])

For LangChain's own agents, ``RagMiddleware`` attaches the retrieval subgraph,
citation-tagged sources and the same answer check to ``langchain.agents.create_agent``::

    from langchain.agents import create_agent
    from kbgraph.agents import RagMiddleware

    agent = create_agent(model, tools=[], middleware=[RagMiddleware({"knowledge_bases": "docs/"})])
    out = agent.invoke({"messages": [("user", "How do I configure retries?")]})
    print(out["messages"][-1].text, out["rag_citations"], out["answer_check"])
"""

from __future__ import annotations

from ._chat import build_chat_agent, compose_answer
from ._eval import ChatAgent, output_from_state
from ._middleware import RagMiddleware, RagMiddlewareState
from ._react import build_tool_agent
from ._state import (
    AgentInput,
    AnswerAction,
    AnswerAttempt,
    AnswerCheckRecord,
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
    "AnswerAction",
    "AnswerAttempt",
    "AnswerCheckRecord",
    "AnswerKeys",
    "AnswerMode",
    "ChatAgent",
    "ChatAgentState",
    "RagMiddleware",
    "RagMiddlewareState",
    "ToolAgentOutput",
    "ToolAgentState",
    "build_chat_agent",
    "build_tool_agent",
    "chat_agent",
    "compose_answer",
    "output_from_state",
    "tool_agent",
]
