"""The deprecation path of issue 31: every name the 0.1 API pinned in a module that is now
private (``tests/unit/public_api_0.1.json``, the pin as it was) still imports from its old
module, is the same object as in the new layout, and warns naming where to import it from."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from kbgraph import _moved

ROOT = Path(__file__).resolve().parents[2]

OLD_API: dict[str, list[str]] = json.loads(
    (Path(__file__).with_name("public_api_0.1.json")).read_text(encoding="utf-8")
)
# Names 0.1 exported that 0.2 removed on purpose, with the reason (nothing else may go).
REMOVED: dict[tuple[str, str], str] = {
    # closed sets that became registries (issue 31 item 2): read the registry instead
    ("kbgraph.retrieval.storage", "RANKERS"): "kbgraph.retrieval.rankers()",
    ("kbgraph.retrieval.kb", "Ranker"): "a Literal of names then; kbgraph.retrieval.Ranker now",
    ("kbgraph.retrieval.records", "FILE_KINDS"): "the loader table's kinds",
    ("kbgraph.retrieval.filters", "SEARCH_KINDS"): "the loader table's kinds",
    ("kbgraph.evals.records", "METRIC_NAMES"): "kbgraph.evals.metric_names()",
    ("kbgraph.evals.baseline", "COMPARED"): "the registered metrics",
    ("kbgraph.evals.beir", "MODES"): "the registered rankers (search_modes())",
    # every store answers server() now (issue 31 item 5), so no protocol marks the served ones
    ("kbgraph.retrieval.storage", "ServedStore"): "IndexStore.server()",
    ("kbgraph.graphs.trace", "unsearched_knowledge_bases"): (
        "graphs/trace.py re-exported graphs/state.py's; the stand-in maps to agents/_trace.py"
    ),
}


def _old_pairs() -> list[tuple[str, str]]:
    return [
        (module, name)
        for module, names in sorted(OLD_API.items())
        if _moved.moved_to(module) is not None
        for name in names
        if (module, name) not in REMOVED
    ]


@pytest.mark.parametrize(("module", "name"), _old_pairs())
def test_every_old_name_still_imports_with_a_warning(module: str, name: str) -> None:
    old = importlib.import_module(module)
    if name in vars(old):  # a compiled graph, copied in for LangGraph's server (see below)
        value = getattr(old, name)
    else:
        with pytest.warns(DeprecationWarning, match=rf"{module}\.{name}: .* kbgraph 0\.2"):
            value = getattr(old, name)
    new = _moved.moved_to(module) or ""
    holder = importlib.import_module(_moved.SPLIT.get((new, name), new))  # a split's new home
    assert value is getattr(holder, name)


def test_the_warning_names_the_face_when_the_face_exports_it() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    from kbgraph.graphs.tool import rag_search\n"
        "import kbgraph.graphs\n"
        "assert rag_search is kbgraph.graphs.rag_search\n"
        "print(seen[0].category.__name__, '|', seen[0].filename, '|', seen[0].message)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    category, filename, message = out.stdout.strip().split(" | ")
    assert category == "DeprecationWarning"
    assert filename == "<string>"  # the user's line, not kbgraph's
    assert "write `from kbgraph.graphs import rag_search`" in message


def test_an_internal_name_says_it_is_internal() -> None:
    with pytest.warns(DeprecationWarning, match=r"internal now \(kbgraph\._base\.text\)"):
        from kbgraph.retrieval.text import words  # noqa: F401


def test_a_name_the_old_module_never_had_is_an_attribute_error() -> None:
    old = importlib.import_module("kbgraph.retrieval.text")
    with warnings.catch_warnings(), pytest.raises(AttributeError):
        warnings.simplefilter("ignore")
        old.no_such_name  # noqa: B018


def test_an_unknown_module_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("kbgraph.graphs.no_such_module")


def test_real_modules_are_never_stand_ins() -> None:
    module = importlib.import_module("kbgraph.graphs._tool")
    assert not isinstance(module, _moved._MovedModule)
    assert _moved.moved_to("kbgraph.graphs._tool") is None
    assert _moved.moved_to("kbgraph.retrieval.folder._store") == (
        "kbgraph.retrieval._folder._store"
    )


def test_an_old_langgraph_json_entry_still_loads_its_graph() -> None:
    # LangGraph's server reads ``module.__dict__[variable]``, never getattr: an old entry
    # (``kbgraph.graphs.subgraph:rag_graph``) must find the graph there, with a warning.
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    module = importlib.import_module('kbgraph.graphs.subgraph')\n"
        "from kbgraph.graphs._subgraph import rag_graph\n"
        "assert module.__dict__['rag_graph'] is rag_graph\n"
        "print(seen[0].category.__name__, '|', seen[0].message)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    category, message = out.stdout.strip().split(" | ")
    assert category == "FutureWarning"
    assert "name kbgraph.graphs._subgraph in langgraph.json" in message


def test_the_langgraph_json_advice_is_shown_by_default_once_naming_the_importer(
    tmp_path: Path,
) -> None:
    """Issue 42 hole 14: a server reading langgraph.json imports the graph's module (never
    as ``__main__``), so a DeprecationWarning was hidden by Python's default filters."""
    (tmp_path / "server.py").write_text(
        "import importlib\n"
        "def load(name):\n"
        "    return importlib.import_module(name)  # the line the warning names\n"
    )
    code = (
        "import server\n"
        "server.load('kbgraph.graphs.subgraph')\n"
        "server.load('kbgraph.graphs.subgraph')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONWARNINGS": "", "PYTHONPATH": f"{tmp_path}:{ROOT}"},
    )
    advice = [line for line in out.stderr.splitlines() if "langgraph.json" in line]
    assert len(advice) == 1, out.stderr
    assert "server.py:3: FutureWarning" in advice[0], advice


def test_a_star_import_of_an_old_module_imports_its_names() -> None:
    # ``from old import *`` reads ``__all__`` from the module's dict: a stand-in without it
    # imported nothing, silently (issue 42 hole 14).
    code = (
        "import warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from kbgraph.graphs.tool import *\n"
        "from kbgraph.retrieval.text import *\n"
        "import kbgraph.graphs._tool as new\n"
        "assert rag_search is new.rag_search\n"
        "print(callable(words))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
