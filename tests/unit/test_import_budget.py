"""What a cold ``kbgraph search --mode bm25`` imports (issue 44 item 2): every CLI call, MCP
client start and ``langgraph dev`` reload pays for it. Counted in modules, not milliseconds,
so the test holds on a busy machine: LangChain's ``Embeddings`` base class alone pulled in
228 modules (~0.18 s: its callbacks, langsmith, requests) before the embedding classes
loaded on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbgraph.retrieval import KnowledgeBase

# What the BM25 path must never load: a model runtime, LangChain, a client or a server.
NEVER = (
    "langchain_core",
    "langgraph",
    "langsmith",
    "requests",
    "httpx",
    "torch",
    "transformers",
    "sentence_transformers",
    "onnxruntime",
    "tokenizers",
    "huggingface_hub",
    "psycopg",
    "mcp",
    "starlette",
)
# 471 measured at the change (Python 3.11, every extra installed): room for a few, not for
# another library.
MODULE_BUDGET = 520

_CHILD = """
import json, runpy, sys
sys.argv = ["kbgraph", "search", {folder!r}, "retry policy", "--mode", "bm25", "--json"]
try:
    runpy.run_module("kbgraph", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("cold") / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry policy\n\nRetries back off exponentially, up to 5 attempts.\n", encoding="utf-8"
    )
    KnowledgeBase(folder, embedding="fake").index()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(folder=str(folder))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    assert json.loads(done.stdout)["results"], done.stdout  # it did search
    return report


def test_a_bm25_search_loads_no_model_runtime_langchain_or_client(
    loaded: dict[str, object],
) -> None:
    modules = loaded["modules"]
    assert isinstance(modules, list)
    tops = {name.split(".")[0] for name in modules}
    assert loaded["code"] in (0, None)
    assert sorted(tops & set(NEVER)) == []


def test_a_bm25_search_stays_within_its_module_budget(loaded: dict[str, object]) -> None:
    modules = loaded["modules"]
    assert isinstance(modules, list)
    assert len(modules) <= MODULE_BUDGET, (
        f"{len(modules)} modules (budget {MODULE_BUDGET}): python -X importtime -m kbgraph "
        "search FOLDER QUERY --mode bm25 shows what came in"
    )
