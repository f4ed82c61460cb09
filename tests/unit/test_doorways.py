"""The doorways (``kbgraph.<layer>._internal``, issue 43 item 3: one road per name): what
the layers above use of a layer beyond its face, kbgraph's own contract between its layers
(not public API). Each name a doorway lends is written once, in its ``if TYPE_CHECKING:``
block, from which ``kbgraph._layers.lazy_imports`` derives the lazy table (as for the
faces); it names a private module of its own layer; it is not on the layer's face (the
layers above import those from the face) nor a helper of the foundation (``kbgraph._base``:
the layers import those directly); something above the layer uses it; and the doorways
together stay within their budget of names. (That another layer enters a private module
only through its doorway is ``tests/unit/test_layers.py``'s.)"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph._layers import lazy_imports, type_checking_imports

from .test_layers import DOORWAY, MODULES, ROOT, _injected, _resolve

DOORWAYS = sorted(m for m in MODULES if m.endswith(DOORWAY))
# 137 names before issue 43 item 3 (retrieval 75, graphs 53, evals 9), each written twice.
# 61 since issue 42's guard and the CLI help each lent one (MAX_FILTER_PATHS: the MCP
# schema's limit is the filters' own; spec_forms: one list of --embedding forms).
BUDGET = 61


def _lent(files: dict[str, Path] = MODULES) -> dict[str, dict[str, str]]:
    """Each doorway's names, mapped to the module each comes from (absolute)."""
    return {
        door: {
            name: _resolve(module, door.removesuffix(DOORWAY))
            for name, module in type_checking_imports(files[door].read_text("utf-8")).items()
        }
        for door in DOORWAYS
    }


def _face_names(door: str) -> set[str]:
    tree = ast.parse(MODULES[door.removesuffix(DOORWAY)].read_text("utf-8"))
    return next(
        set(ast.literal_eval(node.value))
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )


def _strays(lent: dict[str, dict[str, str]]) -> list[tuple[str, str, str]]:
    """Names a doorway takes from anything but a private module of its own layer."""
    return sorted(
        (door, name, module)
        for door, names in lent.items()
        for name, module in names.items()
        if module not in MODULES or not module.startswith(door.removesuffix(DOORWAY) + "._")
    )


def test_every_lent_name_loads_and_is_its_layers_own() -> None:
    """Each name resolves through the derived table, to an object of the layer (a helper of
    the foundation is imported from ``kbgraph._base``, not lent again)."""
    foreign = []
    for door, names in _lent().items():
        module = importlib.import_module(door)
        for name, source in names.items():
            value = getattr(module, name)
            assert value is getattr(importlib.import_module(source), name)
            home = value.__module__ if inspect.isclass(value) or inspect.isfunction(value) else None
            if home is not None and "._" not in home and home != "kbgraph.errors":
                home = source  # a class shown as its face's (kbgraph/_base/faces.py)
            layer = door.removesuffix(DOORWAY)
            if home is not None and home.startswith("kbgraph.") and not home.startswith(layer):
                foreign.append((door, name, home))
    assert foreign == []


def _importers() -> Iterator[tuple[str, str]]:
    """(doorway, name) for each name imported from a doorway by kbgraph, its tests,
    benchmarks and training scripts, and each doorway entry of a lazy map (kbgraph.testing)."""
    folders = ("tests", "benchmarks", "training", "examples")
    paths = [*MODULES.values(), *(p for f in folders for p in sorted((ROOT / f).rglob("*.py")))]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(DOORWAY):
                yield from ((str(node.module), alias.name) for alias in node.names)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    constants = isinstance(key, ast.Constant) and isinstance(value, ast.Constant)
                    if constants and str(value.value).endswith(DOORWAY):
                        yield str(value.value), str(key.value)


def _unused(lent: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    used = set(_importers())
    return sorted((d, n) for d, names in lent.items() for n in names if (d, n) not in used)


def _face_lent(lent: dict[str, dict[str, str]]) -> list[tuple[str, str]]:
    return sorted((d, n) for d, names in lent.items() for n in names if n in _face_names(d))


RULES = {"own layer": _strays, "not on the face": _face_lent, "used above": _unused}


@pytest.mark.parametrize("rule", RULES)
def test_every_doorway_keeps_the_rule(rule: str) -> None:
    # own layer: a private module of the doorway's layer; not on the face: the layers above
    # import those from the face (one road per name); used above: nothing lent in vain.
    assert {"kbgraph.retrieval._internal", "kbgraph.graphs._internal"} <= set(DOORWAYS)
    assert RULES[rule](_lent()) == []


@pytest.mark.parametrize(
    ("rule", "door", "line", "caught"),
    [
        (
            "own layer",
            "kbgraph.retrieval._internal",
            "from kbgraph.graphs._state import RagState",
            ("kbgraph.retrieval._internal", "RagState", "kbgraph.graphs._state"),
        ),
        (
            "own layer",
            "kbgraph.retrieval._internal",
            "from ._no_such_module import thing",
            ("kbgraph.retrieval._internal", "thing", "kbgraph.retrieval._no_such_module"),
        ),
        (
            "not on the face",
            "kbgraph.graphs._internal",
            "from ._subgraph import build_rag_graph",
            ("kbgraph.graphs._internal", "build_rag_graph"),
        ),
        (
            "used above",
            "kbgraph.retrieval._internal",
            "from ._context import source_header",
            ("kbgraph.retrieval._internal", "source_header"),
        ),
    ],
)
def test_a_doorway_line_that_breaks_the_rule_is_caught(
    tmp_path: Path, rule: str, door: str, line: str, caught: tuple[str, ...]
) -> None:
    files = _injected(tmp_path, door, f"if TYPE_CHECKING:\n    {line}\n")
    assert RULES[rule](_lent(files)) == [caught]


def test_the_doorways_stay_within_their_budget() -> None:
    counts = {door: len(names) for door, names in _lent().items()}
    assert sum(counts.values()) <= BUDGET, counts


def test_the_lazy_table_is_the_type_checking_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ._a import x, y as z\n"
        "    from .._b.c import w\n"
        "def f() -> None:\n"
        "    if TYPE_CHECKING:\n"
        "        from ._d import inner\n"
    )
    assert type_checking_imports(source) == {"x": "._a", "z": "._a", "w": ".._b.c"}
    with pytest.raises(TypeError, match="not a 'from module import name' line"):
        type_checking_imports("if TYPE_CHECKING:\n    import os\n")


def test_a_module_without_its_source_says_so() -> None:
    class NoSource:
        def get_source(self, name: str) -> None:
            return None

    namespace = {"__name__": "kbgraph.x", "__package__": "kbgraph", "__loader__": NoSource()}
    with pytest.raises(ImportError, match=r"kbgraph\.x is installed without its source"):
        lazy_imports(namespace)("anything")


def test_a_doorway_loads_a_module_only_when_a_name_of_it_is_asked_for() -> None:
    code = (
        "import sys\n"
        "import kbgraph.retrieval._internal as door\n"
        "before = 'kbgraph.retrieval._watch' in sys.modules\n"
        "door.DEBOUNCE_MS\n"
        "print(before, 'kbgraph.retrieval._watch' in sys.modules, hasattr(door, 'nothing'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "False"]
