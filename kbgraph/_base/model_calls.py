"""What every model call kbgraph makes itself shares, in the subgraph's nodes, the evals'
LLM judge and the ready agents' answer check: the config that keeps it out of a client's
message stream and names it in traces, and how its failure is written down."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

INTERNAL_TAG = "kbgraph:internal"
INTERNAL: RunnableConfig = {"tags": ["nostream", INTERNAL_TAG]}
"""The config of every internal model call (``nostream`` is LangGraph's tag for runs that
``stream_mode="messages"`` must not stream)."""


def internal_config(name: str | None) -> RunnableConfig:
    """:data:`INTERNAL`, with the run named ``kbgraph.<name>`` in traces (LangSmith,
    callbacks) so that each node's call is found by its node."""
    return INTERNAL if name is None else {**INTERNAL, "run_name": f"kbgraph.{name}"}


def describe_error(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, cut to ``limit`` characters of message."""
    message = " ".join(str(exc).split())[:limit]
    return f"{type(exc).__name__}: {message}"


__all__ = ["INTERNAL", "INTERNAL_TAG", "describe_error", "internal_config"]
