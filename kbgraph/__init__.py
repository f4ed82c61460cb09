"""kbgraph: local-first retrieval for LangGraph agents, with line-exact citations.

One import name, four layers (the folders of the same names at the repository top):

- ``kbgraph.retrieval`` — the folder-index engine (no LangGraph);
- ``kbgraph.graphs`` — the LangGraph subgraph, the ``rag_search`` tool, ready agents;
- ``kbgraph.prompts`` — every prompt as a text file;
- ``kbgraph.evals`` — evaluators, judges, batch and retrieval-quality runs;

plus ``kbgraph.errors`` (the exception tree), ``kbgraph.testing`` (fakes for users' tests)
and the ``kbgraph`` command line. The most used names are importable from here; each is
loaded on first use, so ``import kbgraph.errors`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph import _moved
from kbgraph._layers import lazy_imports
from kbgraph._version import __version__

# Old module names (``kbgraph.graphs._tool``) keep working, with a warning, until 0.3.
_moved.install()

if TYPE_CHECKING:
    from kbgraph.errors import ConfigError, KbgraphError
    from kbgraph.graphs import RagSettings, build_rag_graph, rag_search
    from kbgraph.retrieval import KnowledgeBase, SearchFilters, format_context


__getattr__ = lazy_imports(globals())


__all__ = [
    "ConfigError",
    "KbgraphError",
    "KnowledgeBase",
    "RagSettings",
    "SearchFilters",
    "__version__",
    "build_rag_graph",
    "format_context",
    "rag_search",
]
