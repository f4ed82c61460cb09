"""kbgraph for LangChain's own agents: :class:`RagMiddleware` attaches the retrieval
subgraph, citation-tagged sources and the answer check to ``langchain.agents.create_agent``::

    from langchain.agents import create_agent
    from kbgraph.agents import RagMiddleware

    agent = create_agent(model, tools=[], middleware=[RagMiddleware({"knowledge_bases": "docs/"})])
    out = agent.invoke({"messages": [("user", "How do I configure retries?")]})
    print(out["messages"][-1].text, out["rag_citations"], out["answer_check"])
"""

from __future__ import annotations

from ._middleware import RagMiddleware, RagMiddlewareState

__all__ = ["RagMiddleware", "RagMiddlewareState"]
