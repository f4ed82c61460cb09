"""Readable views of a finished run, for tools that show one (``kbgraph ask --trace``,
``kbgraph inspect``): one line per node step of ``rag_retrieval_debug``, the numbered
sources, the grounding verdict, the answer check and the knowledge bases no list came back
from. Pure
functions of the final state; see :mod:`kbgraph.graphs._trace`."""

from ._trace import (
    SUMMARIES,
    check_lines,
    source_lines,
    summarize_step,
    trace_lines,
    unresolved_lines,
    verdict_lines,
)
from .state import unsearched_knowledge_bases

__all__ = [
    "SUMMARIES",
    "check_lines",
    "source_lines",
    "summarize_step",
    "trace_lines",
    "unresolved_lines",
    "unsearched_knowledge_bases",
    "verdict_lines",
]
