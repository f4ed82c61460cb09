"""The built wheel holds exactly one top-level package, ``kbgraph``, and an application
folder with its own ``prompts/``, ``graphs/``, ``retrieval/`` and ``evals/`` packages (the
folder names a LangGraph app often uses) does not shadow kbgraph's layers."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return next(out.glob("kbgraph-*.whl"))


def test_wheel_has_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"kbgraph"}
    # Every module of every layer folder is in it, and the data files ship too.
    for layer in ("retrieval", "graphs", "prompts", "evals"):
        for source in (ROOT / layer).rglob("*.py"):
            assert f"kbgraph/{source.relative_to(ROOT).as_posix()}" in names
    assert "kbgraph/prompts/agent_system.txt" in names
    assert "kbgraph/evals/data/examples_docs.jsonl" in names
    assert "kbgraph/py.typed" in names


def test_app_folders_with_layer_names_do_not_shadow(tmp_path: Path) -> None:
    for name in ("prompts", "graphs", "retrieval", "evals"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("MINE = True\n", encoding="utf-8")
    code = (
        "import prompts, graphs, retrieval, evals\n"
        "assert prompts.MINE and graphs.MINE and retrieval.MINE and evals.MINE\n"
        "import kbgraph.graphs, kbgraph.retrieval, kbgraph.evals, kbgraph.prompts\n"
        "import kbgraph.errors\n"
        "from kbgraph.graphs import build_rag_graph, rag_search\n"
        "from kbgraph.prompts import load_prompt\n"
        "assert load_prompt('agent_system')\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
