"""The packaged all-MiniLM-L6-v2 on its ONNX path: the first load with sentence-transformers
exports it, the next process runs it on onnxruntime with the same vectors, the same token
counts and the same search results, and a cold `kbgraph search` then never imports torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbgraph.evals._judges import OfflineJudge
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._embeddings import LocalEmbeddings
from kbgraph.retrieval._embeddings._local import packaged_model_dir
from kbgraph.retrieval._embeddings._onnx import CACHE_ENV, MIN_COSINE, MODEL_FILE
from tests.support.model_cache import own_model_cache

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "docs"
SEARCH = ["search", "--json", "--embedding", "local"]
TEXTS = [
    "How do retries back off?",
    "Café crème, naïve façade — 東京の天気は晴れです。 😀",
    "def backoff(attempt):\n    return min(30, 2 ** attempt)\n" * 40,  # over 256 tokens
    "x",
    "",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache of its own, exported once by loading the model with sentence-transformers."""
    with own_model_cache(tmp_path_factory.mktemp("kbgraph-cache")) as root:
        yield root


@pytest.fixture(scope="module")
def torch_model(cache: Path) -> LocalEmbeddings:
    model = LocalEmbeddings()
    assert model.backend == "torch"  # no export yet in this cache
    model.embed_query("load")  # loading it writes the export
    assert list(cache.glob(f"onnx/**/{MODEL_FILE}"))
    return model


@pytest.fixture(scope="module")
def onnx_model(torch_model: LocalEmbeddings) -> LocalEmbeddings:
    model = LocalEmbeddings()
    assert model.backend == "onnx"
    return model


def test_the_onnx_path_gives_the_torch_vectors(
    torch_model: LocalEmbeddings, onnx_model: LocalEmbeddings
) -> None:
    expected = np.asarray(torch_model.embed_documents(TEXTS))
    got = np.asarray(onnx_model.embed_documents(TEXTS))
    cosines = (expected * got).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, cosines
    query = np.asarray(onnx_model.embed_query(TEXTS[0]))
    assert float(query @ np.asarray(torch_model.embed_query(TEXTS[0]))) >= MIN_COSINE
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # Same truncation verdicts from the same tokenizer, and the same limit.
    assert onnx_model.over_input_limit(TEXTS) == torch_model.over_input_limit(TEXTS)
    assert onnx_model.over_input_limit(TEXTS)[2] is True
    assert onnx_model.max_tokens() == torch_model.max_tokens() == 256


def test_one_thread_and_length_sorted_batches_give_the_same_vectors(
    torch_model: LocalEmbeddings, onnx_model: LocalEmbeddings
) -> None:
    model = LocalEmbeddings(threads=1, batch_size=2)
    assert model.backend == "onnx"
    texts = [TEXTS[2], TEXTS[3], TEXTS[0], TEXTS[4], TEXTS[1]]  # lengths out of order
    expected = np.asarray(torch_model.embed_documents(texts))
    got = np.asarray(model.embed_documents(texts))
    assert (expected * got).sum(axis=1).min() >= MIN_COSINE


def test_the_offline_judge_runs_the_onnx_model_on_one_quiet_thread(
    onnx_model: LocalEmbeddings,
) -> None:
    """Regression: the judge capped torch's threads only, so on the ONNX path its many small
    calls ran on onnxruntime's default pool, whose idle threads spin: twice the CPU
    (`kbgraph eval meta --benchmark wikieval`: 67.5 against 31.1 CPU s per 100 answers)."""
    judge = OfflineJudge("local")
    judge.vectors(["load the model"])
    model = judge._embeddings
    assert isinstance(model, LocalEmbeddings) and model.backend == "onnx"
    encoder = model._encoder()
    assert encoder is not None
    options = encoder._session.get_session_options()
    assert options.intra_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_another_virtualenvs_copy_of_the_model_shares_its_export(
    cache: Path, onnx_model: LocalEmbeddings, tmp_path: Path
) -> None:
    """Regression (issue 20): the export was keyed by the model folder's path, so each
    virtualenv, with its own copy of the packaged model, exported it again (90 MB each).
    A copy elsewhere (another virtualenv's site-packages) runs on the same export at once."""
    copy = Path(shutil.copytree(packaged_model_dir(), tmp_path / "venv-b" / "model"))
    model = LocalEmbeddings(copy)
    assert model.backend == "onnx"  # no torch load, no second export
    assert len(list(cache.glob(f"onnx/**/{MODEL_FILE}"))) == 1
    got = np.asarray(model.embed_query(TEXTS[1]))
    assert float(got @ np.asarray(onnx_model.embed_query(TEXTS[1]))) >= MIN_COSINE


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, torch_model: LocalEmbeddings) -> Path:
    """examples/docs indexed with the torch model."""
    target = tmp_path_factory.mktemp("onnx-docs") / "docs"
    folder = Path(shutil.copytree(EXAMPLES, target, ignore=_no_index))
    with KnowledgeBase(folder, embedding=torch_model) as kb:
        kb.index()
    return folder


def _no_index(_folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == ".kbgraph"]


def test_an_index_built_on_torch_is_searched_on_onnx_alike(
    indexed: Path, torch_model: LocalEmbeddings, onnx_model: LocalEmbeddings
) -> None:
    question = "How do I configure retries?"
    with KnowledgeBase(indexed, embedding=torch_model) as kb:
        expected = [r.chunk.id for r in kb.search(question, mode="vector")]
    # Same model identity: the ONNX model searches the index the torch model built.
    with KnowledgeBase(indexed, embedding=onnx_model) as kb:
        got = [r.chunk.id for r in kb.search(question, mode="vector")]
        assert kb.index().embedded == 0
    assert got == expected


def test_a_cold_search_on_the_onnx_path_never_imports_torch(
    indexed: Path, cache: Path, onnx_model: LocalEmbeddings
) -> None:
    probe = (
        "import sys\n"
        "from kbgraph.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules)\n"
        "print(heavy, file=sys.stderr)\n"
    )
    env = {**os.environ, CACHE_ENV: str(cache), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", probe, *SEARCH, str(indexed), "retry policy"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert results and {"vector", "bm25"} <= {k for r in results for k in r["ranks"]}
    assert proc.stderr.strip().splitlines()[-1] == "[]"
