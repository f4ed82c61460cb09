"""The layers' imports point down and stay public: evals imports no CLI internals and no
private engine module, and importing kbgraph.evals does not build the LangGraph subgraph."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(folder: str) -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((str(path.relative_to(ROOT)), node.module))
    return found


def _private_outside(module: str, own: str) -> bool:
    """A private module (a ``_name`` part) of another package than ``own``."""
    if not module.startswith("kbgraph.") or module.startswith(own):
        return False
    return any(part.startswith("_") for part in module.split(".")[1:])


@pytest.mark.parametrize(
    ("folder", "own"),
    [
        ("evals", "kbgraph.evals"),
        ("graphs", "kbgraph.graphs"),
        ("kbgraph/inspector", "kbgraph.inspector"),
    ],
)
def test_no_private_module_of_another_layer_or_the_cli(folder: str, own: str) -> None:
    bad = [
        (path, module)
        for path, module in _imports(folder)
        if _private_outside(module, own) or module in ("kbgraph.cli", "kbgraph.__main__")
    ]
    # The engine's Settings base is shared by the subgraph's settings on purpose.
    assert [b for b in bad if b[1] != "kbgraph.retrieval._settings"] == []


def test_importing_evals_does_not_build_the_subgraph() -> None:
    code = (
        "import sys, kbgraph.evals, kbgraph.evals.records, kbgraph.evals.evaluators\n"
        "print('kbgraph.graphs.subgraph' in sys.modules, 'langgraph.graph' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
