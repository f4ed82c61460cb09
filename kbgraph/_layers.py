"""The layers of the ``kbgraph`` package, and the guard that keeps each imported once.

The layer folders sit at the repository top (``retrieval/``, ``graphs/``, ``prompts/``,
``evals/``) and are the packages ``kbgraph.retrieval`` … through the symlinks in
``kbgraph/``. With the repository top on ``sys.path`` (a script run from it, a test
runner), ``import retrieval`` would load a second copy of a layer whose classes are not
kbgraph's (a ``SearchConfig`` that is not ``kbgraph.retrieval._config.SearchConfig``);
each layer refuses that when it is imported.
"""

from __future__ import annotations

LAYERS = ("retrieval", "prompts", "graphs", "evals")
"""The layer folders, bottom first."""


def imported_as_kbgraph(name: str) -> None:
    """Raise ``ImportError`` unless the layer package ``name`` (its ``__name__``) was
    imported as a subpackage of ``kbgraph``."""
    layer = name.split(".", 1)[0]
    if layer in LAYERS:
        raise ImportError(
            f"kbgraph's {layer!r} folder was imported as the top-level package {name!r} (the "
            f"repository top is on sys.path); import it as 'kbgraph.{name}' instead, so that "
            "one copy of each module is loaded"
        )


__all__ = ["LAYERS", "imported_as_kbgraph"]
