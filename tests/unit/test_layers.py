"""The import graph of the package, from the source: no module circle anywhere (imports
inside functions included), not even one closed by an ``if TYPE_CHECKING:`` import, imports
between layers point down, a private module is imported only inside its own package, and
importing kbgraph.evals does not build the LangGraph subgraph.

Layers, bottom up: the foundation (``kbgraph.errors``, ``kbgraph.exit_codes``, the version,
``kbgraph.layers``), ``prompts``, ``retrieval``, ``graphs``, ``evals``, the ready agents
(``kbgraph.agents``: they run the evals' answer check), then the application (the CLI, the
inspector, ``kbgraph.testing``, the ``kbgraph`` package)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYER_FOLDERS = ("prompts", "retrieval", "graphs", "evals")
FOUNDATION = ("kbgraph.errors", "kbgraph.exit_codes", "kbgraph.layers", "kbgraph._version")
RANK = {
    "foundation": 0,
    "prompts": 1,
    "retrieval": 2,
    "graphs": 3,
    "evals": 4,
    "agents": 5,
    "app": 6,
}
# Modules being moved by issue 31 (split, rewritten or moved by other branches); the lead
# removes them at merge.
PRIVATE_IMPORT_EXCEPTIONS = (
    "kbgraph.graphs.nodes.retrieve",  # being moved by issue 31
)
# Imports that close a circle only for the type checker (none left).
TYPE_CIRCLE_EXCEPTIONS: set[tuple[str, str]] = set()
# Old paths of names that moved up a layer: each is a module whose ``__getattr__`` imports
# the new home when a name is asked for, with a DeprecationWarning. That one lazy edge is
# the only upward edge allowed, and test_deprecated_aliases_load_their_target_lazily holds
# each alias to it.
DEPRECATED_ALIASES = {"kbgraph.graphs.agents": "kbgraph.agents"}


def _module_files() -> dict[str, Path]:
    found = {}
    for folder in (*LAYER_FOLDERS, "kbgraph"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder)
            if folder == "kbgraph" and rel.parts[0] in LAYER_FOLDERS:
                continue  # the committed symlinks of the layers
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            prefix = ["kbgraph"] if folder == "kbgraph" else ["kbgraph", folder]
            found[".".join(prefix + parts)] = path
    return found


MODULES = _module_files()


def _type_checking_only(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    return skipped


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    for alias in node.names:
        yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _edges(*, types: bool = False) -> dict[str, set[str]]:
    """Each module's imports of the package's modules; with ``types``, those under
    ``if TYPE_CHECKING:`` too."""
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = set() if types else _type_checking_only(tree)
        targets = {
            _known(target)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped
            for target in _targets(module, path, node)
        }
        edges[module] = {t for t in targets if t is not None and t != module}
    return edges


EDGES = _edges()
TYPED_EDGES = _edges(types=True)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    if module in FOUNDATION:
        return "foundation"
    if parts[:2] == ["kbgraph", "agents"]:
        return "agents"
    if len(parts) > 1 and parts[1] in LAYER_FOLDERS:
        return parts[1]
    return "app"


def test_the_graph_sees_every_layer() -> None:
    assert {_layer(m) for m in MODULES} == set(RANK)
    assert EDGES["kbgraph.retrieval.kb"] >= {"kbgraph.retrieval.backends"}


def test_no_import_circle() -> None:
    assert _circles(EDGES) == []


def test_no_import_circle_for_the_type_checker() -> None:
    # An import under ``if TYPE_CHECKING:`` still ties two modules: neither can be read,
    # moved or type-checked alone.
    edges = {
        module: {t for t in targets if (module, t) not in TYPE_CIRCLE_EXCEPTIONS}
        for module, targets in TYPED_EDGES.items()
    }
    assert _circles(edges) == []


def test_the_typed_graph_counts_type_checking_imports() -> None:
    # graphs/__init__.py names its lazy exports' modules for the type checker only.
    assert "kbgraph.graphs.subgraph" in TYPED_EDGES["kbgraph.graphs"]
    assert "kbgraph.graphs.subgraph" not in EDGES["kbgraph.graphs"]


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(edges) == [["a", "b", "c"]]


def test_imports_between_layers_point_down() -> None:
    upward = sorted(
        (module, target)
        for module, targets in EDGES.items()
        for target in targets
        if RANK[_layer(target)] > RANK[_layer(module)] and DEPRECATED_ALIASES.get(module) != target
    )
    assert upward == []


@pytest.mark.parametrize(("alias", "target"), sorted(DEPRECATED_ALIASES.items()))
def test_deprecated_aliases_load_their_target_lazily(alias: str, target: str) -> None:
    assert EDGES[alias] == {target}  # nothing else, so the exception lets nothing else up
    code = (
        "import sys, warnings, importlib\n"
        f"alias = importlib.import_module({alias!r})\n"
        f"print({target!r} in sys.modules)\n"
        "name = sorted(alias.MOVED_NAMES)[0]\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    value = getattr(alias, name)\n"
        f"print(value is getattr(sys.modules[{target!r}], name))\n"
        f"print([w.category.__name__ for w in caught if {target!r} in str(w.message)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["False", "True", "['DeprecationWarning']"]


def _owner(module: str) -> str | None:
    """The package a private module belongs to (the one holding its last private part):
    ``kbgraph.graphs.nodes._text`` → ``kbgraph.graphs.nodes``; ``None`` for a public one."""
    parts = module.split(".")
    private = [i for i, part in enumerate(parts) if i and part.startswith("_")]
    return ".".join(parts[: private[-1]]) if private else None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def _private_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (module, target)
        for module, targets in edges.items()
        for target in targets
        if (owner := _owner(target)) is not None and not _inside(module, owner)
    )


def test_no_private_module_of_another_package() -> None:
    # A private module is its package's own (the package and the packages inside it); from
    # anywhere else its names come through the package's ``__init__``. That holds between
    # layers and between the subpackages of one layer (graphs/_extractive.py may not reach
    # into graphs/nodes/_text.py), type-only imports included.
    private = [
        (module, target)
        for module, target in _private_imports(TYPED_EDGES)
        if not any(_inside(module, known) for known in PRIVATE_IMPORT_EXCEPTIONS)
    ]
    assert private == []


def test_the_private_import_rule_knows_a_package_from_its_subpackages() -> None:
    edges = {
        "kbgraph.graphs.nodes.rerank": {"kbgraph.graphs.nodes._text", "kbgraph.graphs._trace"},
        "kbgraph.graphs.nodes": {"kbgraph.graphs.nodes._base"},
        "kbgraph.graphs._extractive": {"kbgraph.graphs.nodes._text", "kbgraph.graphs.nodes"},
        "kbgraph.evals.runner": {"kbgraph.retrieval._search", "kbgraph._version"},
        "kbgraph.retrieval.x": {"kbgraph.retrieval._folder._store", "kbgraph.retrieval._folder"},
    }
    assert _private_imports(edges) == [
        ("kbgraph.evals.runner", "kbgraph.retrieval._search"),
        ("kbgraph.graphs._extractive", "kbgraph.graphs.nodes._text"),
        ("kbgraph.retrieval.x", "kbgraph.retrieval._folder._store"),
    ]


def test_the_storage_seam_knows_no_store() -> None:
    seam = [m for m in MODULES if m.startswith("kbgraph.retrieval.storage")]
    stores = ("kbgraph.retrieval.folder", "kbgraph.retrieval.postgres")
    assert seam and not [(m, t) for m in seam for t in EDGES[m] if t.startswith(stores)]
    assert not [t for t in EDGES["kbgraph.retrieval.postgres._store"] if "folder" in t]


STORES = ("kbgraph.retrieval.folder", "kbgraph.retrieval.postgres")


def _store_of(module: str) -> str | None:
    return next((s for s in STORES if module == s or module.startswith(f"{s}.")), None)


def test_only_the_backends_know_the_stores() -> None:
    """Above the seam, a store is reached through ``kbgraph.retrieval.storage`` only: the
    one module that names a store is ``backends`` (it opens them), and no store imports the
    other. Type-level imports count too (a store's type is knowledge of the store)."""
    knowing = sorted(
        (module, target)
        for module, targets in TYPED_EDGES.items()
        if module != "kbgraph.retrieval.backends"
        for target in targets
        if _store_of(target) not in (None, _store_of(module))
    )
    assert knowing == []


@pytest.mark.parametrize("layer", ["evals", "graphs", "kbgraph.agents", "kbgraph.inspector"])
def test_no_cli_internals_below_the_cli(layer: str) -> None:
    bad = [
        (module, target)
        for module, targets in EDGES.items()
        if module.startswith(f"kbgraph.{layer}".replace("kbgraph.kbgraph.", "kbgraph."))
        for target in targets
        if target in ("kbgraph.cli", "kbgraph.__main__")
    ]
    assert bad == []


def test_importing_evals_does_not_build_the_subgraph() -> None:
    code = (
        "import sys, kbgraph.evals, kbgraph.evals.records, kbgraph.evals.evaluators\n"
        "print('kbgraph.graphs.subgraph' in sys.modules, 'langgraph.graph' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
