"""Deprecated: the ready agents moved to :mod:`kbgraph.agents`.

They check their answers with the evals' judges, so they sit above ``evals`` now (issue 31:
no loop between layers). ``from kbgraph.graphs.agents import chat_agent`` keeps working
with a ``DeprecationWarning``; write ``from kbgraph.agents import chat_agent``.

This module imports ``kbgraph.agents`` only when one of its names is asked for, so the
graphs layer never loads the layer above when it is imported
(``tests/unit/test_layers.py`` holds this alias to that).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers only: at run time see __getattr__
    from kbgraph.agents import (
        AgentInput,
        AnswerAction,
        AnswerAttempt,
        AnswerCheckRecord,
        AnswerKeys,
        AnswerMode,
        ChatAgentState,
        ToolAgentOutput,
        ToolAgentState,
        build_chat_agent,
        build_tool_agent,
        chat_agent,
        compose_answer,
        tool_agent,
    )

MOVED_TO = "kbgraph.agents"

# The names this path offered before the move; a name added to kbgraph.agents later is
# not offered here.
__all__ = [
    "AgentInput",
    "AnswerAction",
    "AnswerAttempt",
    "AnswerCheckRecord",
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
MOVED_NAMES = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name not in MOVED_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from kbgraph import agents  # here, not at the top: see the module docstring

    warnings.warn(
        f"kbgraph.graphs.agents is deprecated: the ready agents moved to {MOVED_TO}; "
        f"write `from {MOVED_TO} import {name}`.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(agents, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *MOVED_NAMES})
