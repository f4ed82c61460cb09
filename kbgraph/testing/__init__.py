"""Test doubles for kbgraph's seams, for your tests as much as ours.

- :class:`ScriptedChatModel` — a LangChain chat model that replays scripted replies
  (text, JSON for structured output, tool calls, refusals, exceptions) and records calls;
- :class:`FakeEmbeddings` — deterministic hashed bag-of-words embeddings (the ``fake``
  embedding spec), no model and no network;
- :class:`ScriptedJudge` — an evaluation judge whose verdicts a test states.

Each lives beside the seam it stands in for (``kbgraph.retrieval._embeddings.fake``,
``kbgraph.evals._judges.scripted``; the chat model is the seam of every layer above the
engine, so its double is the foundation's, ``kbgraph._base.scripted_chat``: the ``fake``
specs resolve to them there) and loads on first use, so importing this package stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph._layers import lazy_imports

if TYPE_CHECKING:
    from kbgraph._base.scripted_chat import (
        ScriptedCall,
        ScriptedChatModel,
        ScriptedRefusalError,
        ScriptExhaustedError,
        StructuredOutputParseError,
        refusal_message,
        tool_call_message,
    )
    from kbgraph.evals._internal import ScriptedJudge
    from kbgraph.retrieval._internal import FakeEmbeddings


__getattr__ = lazy_imports(globals())


__all__ = [
    "FakeEmbeddings",
    "ScriptExhaustedError",
    "ScriptedCall",
    "ScriptedChatModel",
    "ScriptedJudge",
    "ScriptedRefusalError",
    "StructuredOutputParseError",
    "refusal_message",
    "tool_call_message",
]
