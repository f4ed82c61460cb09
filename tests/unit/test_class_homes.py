"""Exported classes name the face a user imports them from (``kbgraph.retrieval.KnowledgeBase``,
not ``kbgraph.retrieval._kb.KnowledgeBase``), as httpx's do, except records (TypedDicts,
dataclasses, pydantic models), whose field annotations are resolved through their home
module (kbgraph/_base/faces.py says why). Every exported class's type hints still resolve,
and a class pickled by reference comes back through its face."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import typing
from typing import Any

import pydantic
import pytest

from tests.unit.test_public_api import PUBLIC_API

_FACES = [name for name in PUBLIC_API if not name.startswith("kbgraph.cli")]


def _exported_classes() -> list[tuple[str, str, type]]:
    out = []
    for face in _FACES:
        module = importlib.import_module(face)
        for name in PUBLIC_API[face]:
            value = getattr(module, name)
            if inspect.isclass(value) and value.__module__.startswith("kbgraph"):
                out.append((face, name, value))
    return out


def _is_record(cls: type) -> bool:
    return (
        typing.is_typeddict(cls)
        or dataclasses.is_dataclass(cls)
        or issubclass(cls, pydantic.BaseModel)
        or (issubclass(cls, dict) and hasattr(cls, "__required_keys__"))
    )


def _faces_exporting(cls: type) -> list[str]:
    return [f for f, _, value in _exported_classes() if value is cls]


def test_every_exported_class_but_a_record_names_its_face() -> None:
    wrong = []
    for face, name, cls in _exported_classes():
        if _is_record(cls) or cls.__module__ == "kbgraph.errors":
            continue
        faces = _faces_exporting(cls)
        # The layer's face, where the top-level package also re-exports the class.
        want = next((f for f in faces if f != "kbgraph"), face)
        if cls.__module__ != want:
            wrong.append(f"{face}.{name}: {cls.__module__} (want {want})")
    assert wrong == []


def test_the_knowledge_base_says_where_to_import_it_from() -> None:
    import kbgraph

    assert f"{kbgraph.KnowledgeBase.__module__}.KnowledgeBase" == "kbgraph.retrieval.KnowledgeBase"
    judge: Any = importlib.import_module("kbgraph.evals").OverlapJudge()
    assert repr(judge).startswith("<kbgraph.evals.OverlapJudge object")


def _unresolved(cls: type) -> list[str]:
    """What of ``cls``'s kbgraph bases' annotations cannot be evaluated through their
    ``__module__`` (LangChain's ``AgentMiddleware`` has its own, which it never resolves)."""
    bad = []
    for base in cls.__mro__:
        if base.__module__.startswith("kbgraph"):
            try:
                inspect.get_annotations(base, eval_str=True)
            except NameError as exc:
                bad.append(str(exc))
    return bad


def test_every_exported_class_keeps_its_type_hints() -> None:
    """A moved class whose annotations need names of its home would fail here."""
    broken = [
        f"{face}.{name}: {bad}"
        for face, name, cls in _exported_classes()
        if (bad := _unresolved(cls))
    ]
    assert broken == []


@pytest.mark.parametrize(
    ("face", "name"),
    [
        ("kbgraph.retrieval", "KnowledgeBase"),
        ("kbgraph.evals", "OverlapJudge"),
        ("kbgraph.testing", "ScriptExhaustedError"),
    ],
)
def test_a_class_pickled_by_reference_comes_back_through_its_face(face: str, name: str) -> None:
    cls = getattr(importlib.import_module(face), name)
    assert pickle.loads(pickle.dumps(cls)) is cls


def test_an_error_of_a_face_pickles_with_its_message() -> None:
    from kbgraph.testing import ScriptExhaustedError

    error = pickle.loads(pickle.dumps(ScriptExhaustedError("the script has no reply left")))
    assert type(error) is ScriptExhaustedError and str(error) == "the script has no reply left"
