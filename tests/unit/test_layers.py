"""The import graph of the package, from the source: no module circle anywhere (imports
inside functions included), not even one closed by an ``if TYPE_CHECKING:`` import, imports
between layers point down, a private module is imported only inside its own package, and
importing kbgraph.evals does not build the LangGraph subgraph.

Layers, bottom up: the foundation (``kbgraph.errors``, ``kbgraph._exit_codes``, the version,
``kbgraph._layers``, and ``kbgraph._base``: the helpers no layer owns), ``prompts``,
``retrieval``, ``graphs``, ``evals``, the ready agents (``kbgraph.agents``: they run the
evals' answer check), then the application (the CLI, the inspector, the MCP server
``kbgraph.mcp``, ``kbgraph.testing``, the ``kbgraph`` package)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph import _moved

ROOT = Path(__file__).resolve().parents[2]
LAYER_FOLDERS = ("prompts", "retrieval", "graphs", "evals")
FOUNDATION = ("kbgraph.errors", "kbgraph._exit_codes", "kbgraph._layers", "kbgraph._version")
# The helpers no layer owns (words and stems, camelCase, the cache folder, the settings base,
# the citation grammar, loopback hosts): every layer imports them directly, they import none.
FOUNDATION_PACKAGE = "kbgraph._base"
RANK = {
    "foundation": 0,
    "prompts": 1,
    "retrieval": 2,
    "graphs": 3,
    "evals": 4,
    "agents": 5,
    "app": 6,
}

# A layer's doorway for kbgraph's own layers (``kbgraph.retrieval._internal``): what the
# layers above use beyond the face, not public API. As a face's, its ``if TYPE_CHECKING:``
# imports are its lazy table (``kbgraph._layers.lazy_imports``): run-time edges.
DOORWAY = "._internal"


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


def _named(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The modules an import statement loads: for ``from a import b``, ``a.b`` when that is
    a module of the package (or an old, moved module name), else ``a``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        base = _resolve("." * node.level + (node.module or ""), _package(module, path))
    for alias in node.names:
        full = f"{base}.{alias.name}"
        old = _is_old_name(full) and not _is_old_name(base)  # `from old.pkg import x`: pkg
        yield full if full in MODULES or old else base


def _package(module: str, path: Path) -> str:
    """The module's ``__package__``: itself for an ``__init__.py``, else its parent."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(name: str, package: str) -> str:
    """``importlib.util.resolve_name`` without importing: ``..x`` from ``a.b`` is ``a.x``."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    parts = package.split(".")
    base = parts[: len(parts) - level + 1]
    return ".".join(base + ([name[level:]] if name[level:] else []))


def _is_old_name(name: str) -> bool:
    """A module name of 0.1 that kbgraph/_moved.py answers with a deprecated stand-in."""
    return name not in MODULES and _moved.moved_to(name) is not None


def _string_imports(module: str, path: Path, tree: ast.Module) -> Iterator[str]:
    """Modules named by ``importlib.import_module("...")`` with a literal name: each is an
    import the ``import`` statements do not show."""
    package = _package(module, path)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        callee = ast.unparse(node.func).rpartition(".")[2]
        first = node.args[0]
        if callee == "import_module" and isinstance(first, ast.Constant):
            yield _resolve(str(first.value), package)


def _known(name: str) -> str | None:
    if _is_old_name(name):
        return name  # kept as it is, so that test_no_old_module_name sees it
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _loads_its_type_imports(tree: ast.Module) -> bool:
    """Whether the module is a face or doorway built by ``lazy_imports``: its type-checking
    imports are then the names it loads at run time, on first use."""
    return any(
        isinstance(node, ast.Call) and ast.unparse(node.func).endswith("lazy_imports")
        for node in ast.walk(tree)
    )


def _imports_of(module: str, path: Path, *, types: bool = False) -> set[str]:
    """The package's modules that ``module`` (its source at ``path``) imports: statements
    (inside functions too), literal ``import_module`` calls and the lazy names of a face or
    doorway (its ``if TYPE_CHECKING:`` imports); with ``types``, the imports under
    ``if TYPE_CHECKING:`` of every module too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    runtime = types or _loads_its_type_imports(tree)
    skipped = set() if runtime else _type_checking_only(tree)
    names = [
        target
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped
        for target in _named(module, path, node)
    ]
    names += _string_imports(module, path, tree)
    targets = {_known(name) for name in names}
    return {t for t in targets if t is not None and t != module}


def _edges(files: dict[str, Path] | None = None, *, types: bool = False) -> dict[str, set[str]]:
    """Each module's imports of the package's modules (``files``: module -> source, default
    the package's own); with ``types``, those under ``if TYPE_CHECKING:`` too."""
    return {m: _imports_of(m, p, types=types) for m, p in (files or MODULES).items()}


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
    if module in FOUNDATION or _inside(module, FOUNDATION_PACKAGE):
        return "foundation"
    if parts[:2] == ["kbgraph", "agents"]:
        return "agents"
    if len(parts) > 1 and parts[1] in LAYER_FOLDERS:
        return parts[1]
    return "app"


def test_the_graph_sees_every_layer() -> None:
    assert {_layer(m) for m in MODULES} == set(RANK)
    assert EDGES["kbgraph.retrieval._kb"] >= {"kbgraph.retrieval._backends"}
    assert _layer("kbgraph.mcp._server") == "app"  # above the graphs and evals, beside the CLI


def test_no_import_circle() -> None:
    assert _circles(EDGES) == []


def test_no_import_circle_for_the_type_checker() -> None:
    # An import under ``if TYPE_CHECKING:`` still ties two modules: neither can be read,
    # moved or type-checked alone.
    assert _circles(TYPED_EDGES) == []


def test_the_typed_graph_counts_type_checking_imports(tmp_path: Path) -> None:
    # graphs/__init__.py's lazy exports are its type-checking imports (loaded on first use):
    # both graphs see the edge.
    assert "kbgraph.graphs._subgraph" in TYPED_EDGES["kbgraph.graphs"]
    assert "kbgraph.graphs._subgraph" in EDGES["kbgraph.graphs"]
    line = "if TYPE_CHECKING:\n    from ._subgraph import rag_graph\n"
    files = _injected(tmp_path, "kbgraph.graphs._extractive", line)
    edges, typed = _edges(files), _edges(files, types=True)
    assert "kbgraph.graphs._subgraph" not in edges["kbgraph.graphs._extractive"]
    assert "kbgraph.graphs._subgraph" in typed["kbgraph.graphs._extractive"]


def _injected(tmp_path: Path, module: str, text: str) -> dict[str, Path]:
    """The package's files with ``module`` replaced by a copy with ``text`` appended (same
    file name, so that relative imports resolve as in the original)."""
    copy = tmp_path / module / MODULES[module].name
    copy.parent.mkdir(parents=True)
    copy.write_text(MODULES[module].read_text(encoding="utf-8") + "\n" + text, "utf-8")
    return {**MODULES, module: copy}


def _upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (module, target)
        for module, targets in edges.items()
        for target in targets
        if RANK[_layer(target)] > RANK[_layer(module)]
    )


def _old_names(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, t) for m, targets in edges.items() for t in targets if _is_old_name(t))


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(edges) == [["a", "b", "c"]]


def test_imports_between_layers_point_down() -> None:
    assert _upward(EDGES) == []
    assert _upward(TYPED_EDGES) == []


@pytest.mark.parametrize("module", ["kbgraph.retrieval", "kbgraph.retrieval._internal"])
def test_an_upward_lazy_name_of_a_face_or_doorway_is_caught(tmp_path: Path, module: str) -> None:
    # Faces and doorways load their ``if TYPE_CHECKING:`` imports on first use
    # (``kbgraph._layers.lazy_imports``): run-time edges, though written for the type checker.
    assert "kbgraph.retrieval._kb" in EDGES["kbgraph.retrieval"]
    assert "kbgraph.retrieval._watch" in EDGES["kbgraph.retrieval._internal"]
    text = "if TYPE_CHECKING:\n    from kbgraph.graphs._state import RagState\n"
    files = _injected(tmp_path, module, text)
    assert _upward(_edges(files)) == [(module, "kbgraph.graphs._state")]
    plain = _injected(tmp_path / "plain", "kbgraph.retrieval._kb", text)
    assert _upward(_edges(plain)) == []  # elsewhere a type-checking import stays a type's


def test_a_string_import_is_caught(tmp_path: Path) -> None:
    text = (
        "def _late() -> object:\n"
        "    import importlib\n\n"
        '    return importlib.import_module("kbgraph.graphs._state")\n'
    )
    files = _injected(tmp_path, "kbgraph.retrieval._kb", text)
    assert _upward(_edges(files)) == [("kbgraph.retrieval._kb", "kbgraph.graphs._state")]


def test_no_old_module_name_in_kbgraph() -> None:
    # An old (moved) name loads a deprecated stand-in (kbgraph/_moved.py) that goes in 0.3;
    # kbgraph's own code imports the new home (``ask --trace`` imported graphs.trace).
    assert _old_names(TYPED_EDGES) == []


@pytest.mark.parametrize(
    "text",
    [
        "from kbgraph.graphs import trace\n",
        "import kbgraph.graphs.trace\n",
        "from kbgraph.graphs.trace import trace_lines\n",
        'import importlib\nimportlib.import_module("kbgraph.graphs.trace")\n',
    ],
)
def test_an_old_module_name_is_caught(tmp_path: Path, text: str) -> None:
    files = _injected(tmp_path, "kbgraph.agents._ask", text)
    assert _old_names(_edges(files)) == [("kbgraph.agents._ask", "kbgraph.graphs.trace")]


def _owner(module: str) -> str | None:
    """The package a private module belongs to (the one holding its last private part):
    ``kbgraph.graphs._nodes._text`` → ``kbgraph.graphs._nodes``; ``None`` for a public one."""
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
        if (owner := _owner(target)) is not None
        and not _inside(module, owner)
        and not target.endswith(DOORWAY)
    )


def test_no_private_module_of_another_package() -> None:
    # A private module is its package's own (the package and the packages inside it); from
    # anywhere else its names come through the package's ``__init__``. That holds between
    # layers and between the subpackages of one layer (graphs/_extractive.py may not reach
    # into graphs/_nodes/_text.py), type-only imports included.
    assert _private_imports(TYPED_EDGES) == []


def test_the_private_import_rule_knows_a_package_from_its_subpackages() -> None:
    edges = {
        "kbgraph.graphs._nodes.rerank": {"kbgraph.graphs._nodes._text", "kbgraph.graphs._tool"},
        "kbgraph.graphs._nodes": {"kbgraph.graphs._nodes._base"},
        "kbgraph.graphs._extractive": {"kbgraph.graphs._nodes._text", "kbgraph.graphs._nodes"},
        "kbgraph.evals._runner": {"kbgraph.retrieval._search", "kbgraph._version"},
        "kbgraph.retrieval.x": {"kbgraph.retrieval._folder._store", "kbgraph.retrieval._folder"},
    }
    assert _private_imports(edges) == [
        ("kbgraph.evals._runner", "kbgraph.retrieval._search"),
        ("kbgraph.graphs._extractive", "kbgraph.graphs._nodes._text"),
        ("kbgraph.retrieval.x", "kbgraph.retrieval._folder._store"),
    ]


def test_the_storage_seam_knows_no_store() -> None:
    seam = [m for m in MODULES if m.startswith("kbgraph.retrieval._storage")]
    stores = ("kbgraph.retrieval._folder", "kbgraph.retrieval._postgres")
    assert seam and not [(m, t) for m in seam for t in EDGES[m] if t.startswith(stores)]
    assert not [t for t in EDGES["kbgraph.retrieval._postgres._store"] if "folder" in t]


STORES = ("kbgraph.retrieval._folder", "kbgraph.retrieval._postgres")


def _store_of(module: str) -> str | None:
    return next((s for s in STORES if module == s or module.startswith(f"{s}.")), None)


def test_only_the_backends_know_the_stores() -> None:
    """Above the seam, a store is reached through ``kbgraph.retrieval._storage`` only: the
    one module that names a store is ``backends`` (it opens them), and no store imports the
    other. Type-level imports count too (a store's type is knowledge of the store)."""
    knowing = sorted(
        (module, target)
        for module, targets in TYPED_EDGES.items()
        if module != "kbgraph.retrieval._backends"
        for target in targets
        if _store_of(target) not in (None, _store_of(module))
    )
    assert knowing == []


@pytest.mark.parametrize(
    "layer", ["evals", "graphs", "kbgraph.agents", "kbgraph.inspector", "kbgraph.mcp"]
)
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
        "import sys, kbgraph.evals, kbgraph.evals._records, kbgraph.evals._evaluators\n"
        "print('kbgraph.graphs._subgraph' in sys.modules, 'langgraph.graph' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_every_layer_imports_the_foundation_directly() -> None:
    assert _layer("kbgraph._base.text") == _layer("kbgraph._base") == "foundation"
    assert "kbgraph._base.validation" in EDGES["kbgraph.retrieval._config"]
    assert "kbgraph._base.hosts" in EDGES["kbgraph.graphs._served_guard"]
    assert "kbgraph._base.text" in EDGES["kbgraph.evals._text"]
    assert "kbgraph._base.citations" in EDGES["kbgraph.agents._state"]
    foundation = [m for m in MODULES if _layer(m) == "foundation"]
    assert not [(m, t) for m in foundation for t in TYPED_EDGES[m] if _layer(t) != "foundation"]


@pytest.mark.parametrize(
    "text",
    [
        "from kbgraph.retrieval import KnowledgeBase\n",
        "def _late() -> object:\n    from kbgraph.graphs._state import RagState\n\n"
        "    return RagState\n",
        "from kbgraph.cli import main\n",
    ],
)
def test_an_upward_import_from_the_foundation_is_caught(tmp_path: Path, text: str) -> None:
    files = _injected(tmp_path, "kbgraph._base.text", text)
    assert [m for m, _ in _upward(_edges(files))] == ["kbgraph._base.text"]


def test_a_type_level_upward_import_from_the_foundation_is_caught(tmp_path: Path) -> None:
    text = "if TYPE_CHECKING:\n    from kbgraph.retrieval import Chunk\n"
    files = _injected(tmp_path, "kbgraph._base.camel", text)
    assert _upward(_edges(files)) == []
    assert _upward(_edges(files, types=True)) == [("kbgraph._base.camel", "kbgraph.retrieval")]
