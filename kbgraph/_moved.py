"""The deprecation path of the modules that became private (issue 31: one public face per
layer). ``from kbgraph.graphs._tool import rag_search`` still works: an import finder at the
end of ``sys.meta_path`` answers an old module name with a stand-in module whose attributes
are the new private module's, each access warning once with a ``DeprecationWarning`` that
names the face to import from instead. Nothing is found here that a real file still holds
(the finder runs after the normal ones), and nothing of the new layout depends on it."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

REMOVED_IN = "0.3"

# old public module -> where it lives now (a private module, or another face)
MOVED: dict[str, str] = {
    # -- generated: begin
    "kbgraph.evals.agent": "kbgraph.agents._eval",
    "kbgraph.evals.answer_check": "kbgraph.evals._answer_check",
    "kbgraph.evals.baseline": "kbgraph.evals._baseline",
    "kbgraph.evals.batch": "kbgraph.evals._batch",
    "kbgraph.evals.beir": "kbgraph.evals._beir",
    "kbgraph.evals.claims": "kbgraph.evals._claims",
    "kbgraph.evals.cli": "kbgraph.evals._cli",
    "kbgraph.evals.datasets": "kbgraph.evals._datasets",
    "kbgraph.evals.decompose": "kbgraph.evals._decompose",
    "kbgraph.evals.evaluators": "kbgraph.evals._evaluators",
    "kbgraph.evals.judges": "kbgraph.evals._judges",
    "kbgraph.evals.meta": "kbgraph.evals._meta",
    "kbgraph.evals.records": "kbgraph.evals._records",
    "kbgraph.evals.report": "kbgraph.evals._report",
    "kbgraph.evals.runner": "kbgraph.evals._runner",
    "kbgraph.evals.stats": "kbgraph.evals._stats",
    "kbgraph.exit_codes": "kbgraph._exit_codes",
    "kbgraph.graphs.agents": "kbgraph.agents",
    "kbgraph.graphs.agents.chat": "kbgraph.agents._chat",
    "kbgraph.graphs.agents.react": "kbgraph.agents._react",
    "kbgraph.graphs.agents.state": "kbgraph.agents._state",
    "kbgraph.graphs.chat_models": "kbgraph.graphs._chat_models",
    "kbgraph.graphs.chat_models.scripted": "kbgraph._base.scripted_chat",
    "kbgraph.graphs.citations": "kbgraph.graphs._citations",
    "kbgraph.graphs.cli": "kbgraph.agents._ask",
    "kbgraph.graphs.context_window": "kbgraph._base.context_window",
    "kbgraph.graphs.http_app": "kbgraph.graphs._http_app",
    "kbgraph.graphs.langchain_kb": "kbgraph.graphs._langchain_kb",
    "kbgraph.graphs.models": "kbgraph.graphs._models",
    "kbgraph.graphs.nodes": "kbgraph.graphs._nodes",
    "kbgraph.graphs.recording": "kbgraph.graphs._recording",
    "kbgraph.graphs.rerankers": "kbgraph.graphs._rerankers",
    "kbgraph.graphs.searcher": "kbgraph.graphs._searcher",
    "kbgraph.graphs.settings": "kbgraph.graphs._settings",
    "kbgraph.graphs.state": "kbgraph.graphs._state",
    "kbgraph.graphs.structured": "kbgraph.graphs._structured",
    "kbgraph.graphs.subgraph": "kbgraph.graphs._subgraph",
    "kbgraph.graphs.tool": "kbgraph.graphs._tool",
    "kbgraph.graphs.trace": "kbgraph.agents._trace",
    "kbgraph.graphs.turns": "kbgraph.graphs._turns",
    "kbgraph.inspector.app": "kbgraph.inspector._app",
    "kbgraph.inspector.config": "kbgraph.inspector._config",
    "kbgraph.inspector.http_app": "kbgraph.inspector._http_app",
    "kbgraph.layers": "kbgraph._layers",
    "kbgraph.retrieval.backends": "kbgraph.retrieval._backends",
    "kbgraph.retrieval.cache": "kbgraph._base.cache",
    "kbgraph.retrieval.camel": "kbgraph._base.camel",
    "kbgraph.retrieval.chunking": "kbgraph.retrieval._chunking",
    "kbgraph.retrieval.citations": "kbgraph._base.citations",
    "kbgraph.retrieval.config": "kbgraph.retrieval._config",
    "kbgraph.retrieval.context": "kbgraph.retrieval._context",
    "kbgraph.retrieval.embeddings": "kbgraph.retrieval._embeddings",
    "kbgraph.retrieval.filters": "kbgraph.retrieval._filters",
    "kbgraph.retrieval.folder": "kbgraph.retrieval._folder",
    "kbgraph.retrieval.integrations": "kbgraph.retrieval._integrations",
    "kbgraph.retrieval.kb": "kbgraph.retrieval._kb",
    "kbgraph.retrieval.languages": "kbgraph._base.languages",
    "kbgraph.retrieval.lexical": "kbgraph.retrieval._lexical",
    "kbgraph.retrieval.loaders": "kbgraph.retrieval._loaders",
    "kbgraph.retrieval.postgres": "kbgraph.retrieval._postgres",
    "kbgraph.retrieval.progress": "kbgraph.retrieval._progress",
    "kbgraph.retrieval.ranking": "kbgraph.retrieval._ranking",
    "kbgraph.retrieval.records": "kbgraph.retrieval._records",
    "kbgraph.retrieval.reports": "kbgraph.retrieval._reports",
    "kbgraph.retrieval.retriever": "kbgraph.retrieval._retriever",
    "kbgraph.retrieval.scan": "kbgraph.retrieval._scan",
    "kbgraph.retrieval.segments": "kbgraph.retrieval._segments",
    "kbgraph.retrieval.storage": "kbgraph.retrieval._storage",
    "kbgraph.retrieval.text": "kbgraph._base.text",
    "kbgraph.retrieval.validation": "kbgraph._base.validation",
    "kbgraph.retrieval.watch": "kbgraph.retrieval._watch",
    # -- generated: end
}
# A name a later split carried out of the module its old name leads to (the old module's
# name still finds it there): (new module, name) -> the module holding it now.
SPLIT: dict[tuple[str, str], str] = {
    ("kbgraph.retrieval._scan", "PathRules"): "kbgraph.retrieval._scan_paths",
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
        new = SPLIT.get((self.__kbgraph_moved_to__, attribute), self.__kbgraph_moved_to__)
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


def _public_names(module: types.ModuleType) -> list[str]:
    """What ``from module import *`` gives: its ``__all__``, else its public non-modules."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    ]


# importlib.abc's base classes for the type checker only: importing it imports
# importlib.resources, tempfile, shutil and random (~0.01 s of every cold command), and the
# import system only calls the methods below.
if TYPE_CHECKING:
    from importlib.abc import Loader as _Loader
    from importlib.abc import MetaPathFinder as _MetaPathFinder
else:
    _Loader = _MetaPathFinder = object


class _MovedLoader(_Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = importlib.import_module(self.new)  # an old name that leads nowhere fails here
        module = _MovedModule(spec.name, self.new)
        # ``from old import *`` reads ``__all__`` from the module's dict, never through
        # ``__getattr__``: without it the star import finds nothing, silently.
        split = [name for (old, name) in SPLIT if old == self.new]
        module.__dict__["__all__"] = _public_names(new) + split
        if hasattr(new, "__path__"):
            module.__path__ = []  # an old package: its old submodules are found here too
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # LangGraph's server reads a graph from a module's ``__dict__``, never through
        # ``getattr``: an old ``langgraph.json`` entry (``kbgraph.graphs.subgraph:rag_graph``)
        # finds its compiled graphs copied here, and the module warns once instead.
        new = importlib.import_module(self.new)
        pregel = sys.modules.get("langgraph.pregel")  # loaded by any module holding a graph
        kind = getattr(pregel, "Pregel", None)
        graphs = {
            name: value
            for name, value in vars(new).items()
            if kind is not None and not name.startswith("_") and isinstance(value, kind)
        }
        if graphs:
            # A FutureWarning, not a DeprecationWarning: the importer is a server reading
            # langgraph.json (``langgraph dev``), never ``__main__``, so Python's default
            # filters hide a DeprecationWarning there and the advice was never seen.
            warnings.warn(
                f"the module {module.__name__} is gone since kbgraph 0.2 (its old name works "
                f"until {REMOVED_IN}); name {self.new} in langgraph.json instead.",
                FutureWarning,
                stacklevel=_importer_level(),
            )
            module.__dict__.update(graphs)


def _importer_level() -> int:
    """The ``stacklevel`` of the first frame that is neither this module nor Python's
    import machinery: the line that imported the old name (the warning names it)."""
    machinery = (__file__, "<frozen importlib", importlib.__file__.rsplit("/", 1)[0] + "/")
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(machinery):
        frame = frame.f_back  # type: ignore[assignment]
        # ``warnings`` itself steps over importlib's bootstrap frames: they do not count
        level += frame is not None and not frame.f_code.co_filename.startswith("<frozen")
    return level


class MovedFinder(_MetaPathFinder):
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
