"""kbgraph: local-first retrieval for LangGraph agents. The layers are the top-level
packages ``retrieval``, ``graphs``, ``prompts`` and ``evals``; this package holds the
``kbgraph`` command line that puts them together."""

from retrieval import __version__

__all__ = ["__version__"]
