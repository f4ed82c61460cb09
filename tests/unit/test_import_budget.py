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
    "tqdm",  # the progress bars of `kbgraph index`
    "sqlite3",  # the embedding cache: a BM25 search embeds nothing
    "html",  # the HTML loader's parser
    "portalocker",  # its version lookup imports importlib.metadata: locks are fcntl.flock
    "email",  # importlib.metadata's (pydantic's plugin lookup, portalocker's version)
    "logging",  # rare warnings import it when they log (kbgraph._base.logs)
)
# Modules (with their submodules) a search never needs: it reads an index and writes none,
# so the chunkers, the format loaders, the indexer, the scan, the embedding batches and cache
# and the watcher stay unloaded (issue 44: they loaded through the knowledge base's imports).
NEVER_MODULES = (
    "kbgraph.retrieval._chunking",
    "kbgraph.retrieval._loaders._docx",
    "kbgraph.retrieval._loaders._pdf",
    "kbgraph.retrieval._loaders._html",
    "kbgraph.retrieval._loaders._csv",
    "kbgraph.retrieval._indexer",
    "kbgraph.retrieval._kb_index",
    "kbgraph.retrieval._reuse",
    "kbgraph.retrieval._scan",
    "kbgraph.retrieval._folder._documents",
    "kbgraph.retrieval._embeddings._batching",
    "kbgraph.retrieval._embeddings._cache",
    "kbgraph.retrieval._watch",
    "kbgraph._progress",
    "numpy.ma",  # np.unique loads it: an open samples its vector rows without it
    # ~0.05 CPU-s: imported by pydantic's plugin loader, which the CLI skips while plugins
    # are off (kbgraph/_pydantic_env.py), and by portalocker
    "importlib.metadata",
    "kbgraph.retrieval._segments",  # documents' text: a search reads chunks, loads no file
    "kbgraph.retrieval._reports",  # index reports and stats: a search that finds hits
    "kbgraph.retrieval._context",  # format_context: the CLI prints results itself
    "kbgraph.retrieval._lexical._corpus",  # a whole corpus analysed: building BM25 only
)
# 378 measured at the change (Python 3.11, every extra installed; 435 before it, 476
# before issue 44's first lazy imports): room for a few, not for another library.
MODULE_BUDGET = 390

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
    for n in range(70):  # more rows than an open samples (_OPEN_SAMPLE) of the vectors
        (folder / f"note{n}.md").write_text(f"# Note {n}\n\nWords of note {n}.\n", "utf-8")
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


def test_a_bm25_search_loads_no_indexing_module(loaded: dict[str, object]) -> None:
    modules = loaded["modules"]
    assert isinstance(modules, list)
    found = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER_MODULES)]
    assert found == [], "python -X importtime shows which import brought them in"


def test_a_bm25_search_stays_within_its_module_budget(loaded: dict[str, object]) -> None:
    modules = loaded["modules"]
    assert isinstance(modules, list)
    assert len(modules) <= MODULE_BUDGET, (
        f"{len(modules)} modules (budget {MODULE_BUDGET}): python -X importtime -m kbgraph "
        "search FOLDER QUERY --mode bm25 shows what came in"
    )
