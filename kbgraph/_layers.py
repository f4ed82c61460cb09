"""The layers of the ``kbgraph`` package, and the guard that keeps each imported once.

The layer folders sit at the repository top (``retrieval/``, ``graphs/``, ``prompts/``,
``evals/``) and are the packages ``kbgraph.retrieval`` … through the symlinks in
``kbgraph/``. With the repository top on ``sys.path`` (a script run from it, a test
runner), ``import retrieval`` would load a second copy of a layer whose classes are not
kbgraph's (a ``SearchConfig`` that is not ``kbgraph.retrieval._config.SearchConfig``);
each layer refuses that when it is imported.
"""

from __future__ import annotations

import ast
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


def _load_lazily(namespace: Mapping[str, Any], table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` (PEP 562): each name of ``table`` is loaded from its module
    (relative to the module's package) on first use, so importing one light module never
    loads the heavy ones a face also names. ``namespace`` is the module's ``globals()``."""
    module, package = namespace["__name__"], namespace["__package__"]

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name], package), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def type_checking_imports(source: str) -> dict[str, str]:
    """The names a module's top-level ``if TYPE_CHECKING:`` blocks import, each mapped to
    the module it comes from as written (``._config``): its lazy table (:func:`lazy_imports`)."""
    table: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom) or statement.names[0].name == "*":
                raise TypeError(f"not a 'from module import name' line: {ast.unparse(statement)}")
            module = "." * statement.level + (statement.module or "")
            table.update((alias.asname or alias.name, module) for alias in statement.names)
    return table


def lazy_imports(namespace: Mapping[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of a face or a doorway whose lazy names are its own top-level
    ``if TYPE_CHECKING:`` imports: each name is written once, in the import the type checker
    reads, and loads its module on first use (so ``import kbgraph.errors`` or one light
    module stays light). The module's source is read and parsed once, on the first
    attribute asked for; ``namespace`` is the module's ``globals()``."""
    table: dict[str, str] = {}
    read: list[bool] = []
    lookup = _load_lazily(namespace, table)

    def __getattr__(name: str) -> Any:
        if not read:  # two threads may both read it: the same table, either one kept
            source = namespace["__loader__"].get_source(namespace["__name__"])
            if source is None:
                raise ImportError(
                    f"{namespace['__name__']} is installed without its source, which names "
                    "what it loads on first use; reinstall kbgraph from its wheel or sdist"
                )
            table.update(type_checking_imports(source))
            read.append(True)
        return lookup(name)

    return __getattr__


__all__ = ["LAYERS", "imported_as_kbgraph", "lazy_imports", "type_checking_imports"]
