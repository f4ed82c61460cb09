"""Ready-made agents over the retrieval subgraph (an application layer above ``evals``,
whose answer check they run; ``kbgraph.graphs.agents`` is its deprecated old path).

* ``chat_agent`` — subgraph → answer → citation extraction → answer check; answers
  extractively when no chat model is configured.
* ``tool_agent`` — a ReAct loop around the ``rag_search`` tool; needs a chat model
  (``RagSettings.chat_model``), resolved when a run starts.

Both check what the chat model writes against the sources it cites (``answer_check``; the
offline judge unless ``RagSettings.answer_check`` says otherwise), and put the verdict on
the answer's message (``response_metadata["kbgraph_check"]``, an ``AnswerVerdict``; under
``policy="flag"`` a visible line too). Your own graphs get the same check from
``answer_check_node()`` (a node after your answer node) and ``create_agent`` with
``rag_search`` from ``AnswerCheckMiddleware``.

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

from ._answer_node import answer_check_node
from ._ask import check_specs, run_ask
from ._chat import build_chat_agent, compose_answer, exported_chat_agent
from ._check_middleware import AnswerCheckMiddleware, AnswerCheckMiddlewareState
from ._eval import ChatAgent, output_from_state
from ._held import hold as hold_draft
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
from ._verdict import VERDICT_KEY, AnswerVerdict, verdict_on

chat_agent = exported_chat_agent()
tool_agent = build_tool_agent()

__all__ = [
    "VERDICT_KEY",
    "AgentInput",
    "AnswerAction",
    "AnswerAttempt",
    "AnswerCheckMiddleware",
    "AnswerCheckMiddlewareState",
    "AnswerCheckRecord",
    "AnswerKeys",
    "AnswerMode",
    "AnswerVerdict",
    "ChatAgent",
    "ChatAgentState",
    "RagMiddleware",
    "RagMiddlewareState",
    "ToolAgentOutput",
    "ToolAgentState",
    "answer_check_node",
    "build_chat_agent",
    "build_tool_agent",
    "chat_agent",
    "check_specs",
    "compose_answer",
    "hold_draft",
    "output_from_state",
    "run_ask",
    "tool_agent",
    "verdict_on",
]
