"""The layers of the ``kbgraph`` package, and the guard that keeps each imported once.

The layer folders sit at the repository top (``retrieval/``, ``graphs/``, ``prompts/``,
``evals/``) and are the packages ``kbgraph.retrieval`` … through the symlinks in
``kbgraph/``. With the repository top on ``sys.path`` (a script run from it, a test
runner), ``import retrieval`` would load a second copy of a layer whose classes are not
kbgraph's (a ``SearchConfig`` that is not ``kbgraph.retrieval._config.SearchConfig``);
each layer refuses that when it is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

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


def lazy_attributes(namespace: Mapping[str, Any], table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` (PEP 562) for the faces and doorways: each name of
    ``table`` is loaded from its module (relative to the module's package) on first use,
    so importing one light module never loads the heavy ones a face also names.
    ``namespace`` is the module's ``globals()``."""
    module, package = namespace["__name__"], namespace["__package__"]

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name], package), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


__all__ = ["LAYERS", "imported_as_kbgraph", "lazy_attributes"]
