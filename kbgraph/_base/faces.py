"""Exported classes name their public face as their module, as httpx's do: a repr,
``help()``, a pickle and an error message say ``kbgraph.retrieval.KnowledgeBase``, the
import a user writes, not ``kbgraph.retrieval._kb.KnowledgeBase``, a private home that
moves between releases (pickles and ``repr`` reach the class through the face's lazy
``__getattr__``).

Records keep their home: a TypedDict, a dataclass or a pydantic model has field
annotations that ``typing.get_type_hints``, LangGraph's schema reading and pydantic
resolve through ``sys.modules[cls.__module__]``, and a face's namespace holds none of the
names those annotations use. A class that moves has its own few annotations
(``concurrent_searches: ClassVar[bool]``) resolved where it is defined, first, so
``get_type_hints`` keeps working. The cost: ``inspect.getsource`` looks for a class that
moved in its face's file and fails (as it does for httpx's)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


def shown_as(face: str) -> Callable[[C], C]:
    """A class decorator: the class reports ``face`` (``"kbgraph.retrieval"``) as its
    module; a test checks that the face exports it."""

    def decorate(cls: C) -> C:
        cls.__annotations__ = _resolved(cls)
        cls.__module__ = face
        return cls

    return decorate


def _resolved(cls: type) -> dict[str, Any]:
    """``cls``'s own annotations evaluated where it is defined, as ``typing.get_type_hints``
    does (a name only a type checker sees raises ``NameError`` at import, so the test
    suite finds it)."""
    return inspect.get_annotations(cls, eval_str=True)


__all__ = ["shown_as"]
