"""Test doubles for kbgraph's seams, for your tests as much as ours.

- :class:`ScriptedChatModel` — a LangChain chat model that replays scripted replies
  (text, JSON for structured output, tool calls, refusals, exceptions) and records calls;
- :class:`FakeEmbeddings` — deterministic hashed bag-of-words embeddings (the ``fake``
  embedding spec), no model and no network;
- :class:`ScriptedJudge` — an evaluation judge whose verdicts a test states.

Each loads on first use, so importing this package stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._chat import (
        ScriptedCall,
        ScriptedChatModel,
        ScriptedRefusalError,
        ScriptExhaustedError,
        StructuredOutputParseError,
        refusal_message,
        tool_call_message,
    )
    from ._embeddings import FakeEmbeddings
    from ._judge import ScriptedJudge

_LAZY = {
    "ScriptedCall": "._chat",
    "ScriptedChatModel": "._chat",
    "ScriptedRefusalError": "._chat",
    "ScriptExhaustedError": "._chat",
    "StructuredOutputParseError": "._chat",
    "refusal_message": "._chat",
    "tool_call_message": "._chat",
    "FakeEmbeddings": "._embeddings",
    "ScriptedJudge": "._judge",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
