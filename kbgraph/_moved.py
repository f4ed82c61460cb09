"""The deprecation path of the modules that became private (issue 31: one public face per
layer). ``from kbgraph.graphs.tool import rag_search`` still works: an import finder at the
end of ``sys.meta_path`` answers an old module name with a stand-in module whose attributes
are the new private module's, each access warning once with a ``DeprecationWarning`` that
names the face to import from instead. Nothing is found here that a real file still holds
(the finder runs after the normal ones), and nothing of the new layout depends on it."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

REMOVED_IN = "0.3"

# old public module -> where it lives now (a private module, or another face)
MOVED: dict[str, str] = {
    # -- generated: begin
    "kbgraph.evals.agent": "kbgraph.agents._eval",
    "kbgraph.graphs.agents": "kbgraph.agents",
    "kbgraph.graphs.agents.chat": "kbgraph.agents._chat",
    "kbgraph.graphs.agents.react": "kbgraph.agents._react",
    "kbgraph.graphs.agents.state": "kbgraph.agents._state",
    "kbgraph.graphs.cli": "kbgraph.agents._ask",
    # -- generated: end
}


def moved_to(name: str) -> str | None:
    """The new dotted name of an old module, or of a module inside an old package."""
    head, _, tail = name, "", ""
    while head:
        if head in MOVED:
            return MOVED[head] + (f".{tail}" if tail else "")
        head, _, last = head.rpartition(".")
        tail = f"{last}.{tail}" if tail else last
    return None


def _face_of(new: str) -> str:
    """``kbgraph.graphs._tool`` -> ``kbgraph.graphs``: the public package above a module."""
    parts = new.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return new


class _MovedModule(types.ModuleType):
    """An old module name; each attribute read is the new module's, with a warning."""

    def __init__(self, name: str, new: str) -> None:
        super().__init__(name)
        self.__kbgraph_moved_to__ = new

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        new = self.__kbgraph_moved_to__
        value = getattr(importlib.import_module(new), attribute)
        face = _face_of(new)
        if attribute in getattr(importlib.import_module(face), "__all__", ()):
            advice = f"write `from {face} import {attribute}`"
        else:
            advice = f"it is internal now ({new}) and may change without notice"
        warnings.warn(
            f"{self.__name__}.{attribute}: the module {self.__name__} is gone since kbgraph "
            f"0.2 (its old name works until {REMOVED_IN}); {advice}.",
            DeprecationWarning,
            stacklevel=2,
        )
        return value


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = importlib.import_module(self.new)  # an old name that leads nowhere fails here
        module = _MovedModule(spec.name, self.new)
        if hasattr(new, "__path__"):
            module.__path__ = []  # an old package: its old submodules are found here too
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds only the names of :data:`MOVED`; every other import passes by."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = moved_to(fullname) if fullname.startswith("kbgraph.") else None
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader(new))


def install() -> None:
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedFinder())
