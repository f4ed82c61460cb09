"""The packaged model at int8 (``local#int8``): made on first use from the fp32 export, close
to the fp32 vectors (another model all the same: its own identity), run without torch by
the next process, and an index built with it is searched with it again when reopened."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._embeddings import LocalEmbeddings
from kbgraph.retrieval._embeddings._onnx import CACHE_ENV
from kbgraph.retrieval._embeddings._onnx_int8 import MIN_COSINE_INT8
from tests.support.model_cache import own_model_cache

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "docs"
TEXTS = [
    "How do retries back off?",
    "Café crème, naïve façade — 東京の天気は晴れです。 😀",
    "def backoff(attempt):\n    return min(30, 2 ** attempt)\n" * 40,  # over 256 tokens
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache of its own: the int8 export is made in it, from nothing."""
    with own_model_cache(tmp_path_factory.mktemp("kbgraph-cache")) as root:
        yield root


def test_int8_vectors_are_close_to_fp32_and_made_once(cache: Path) -> None:
    int8, fp32 = LocalEmbeddings(precision="int8"), LocalEmbeddings()
    got = np.asarray(int8.embed_documents(TEXTS))
    assert int8.backend == "onnx" and got.shape == (3, 384)
    expected = np.asarray(fp32.embed_documents(TEXTS))
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() >= MIN_COSINE_INT8 and cosines.max() < 0.9999, cosines
    assert int8.over_input_limit(TEXTS) == [False, False, True]
    assert len(list((cache / "onnx" / "exports").iterdir())) == 2  # fp32, int8
    # The next process runs the int8 export as it is: no torch, no second quantisation.
    probe = (
        "import sys\n"
        "from kbgraph.retrieval._embeddings import LocalEmbeddings\n"
        "print(len(LocalEmbeddings(precision='int8').embed_query('retries')))\n"
        "print(sorted(m for m in ('torch', 'onnx') if m in sys.modules))\n"
    )
    env = {**os.environ, CACHE_ENV: str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["384", "[]"]


def test_an_int8_index_is_searched_with_int8_when_reopened(cache: Path, tmp_path: Path) -> None:
    folder = Path(
        shutil.copytree(EXAMPLES, tmp_path / "docs", ignore=shutil.ignore_patterns(".kbgraph"))
    )
    question = "How do I configure the retry policy?"
    with KnowledgeBase(folder, embedding="local#int8") as kb:
        kb.index()
        built = [r.chunk.source for r in kb.search(question, mode="vector")]
        assert kb.stats().embedding["model"].endswith("#int8")
    with KnowledgeBase(folder) as kb:  # "auto": the model the index records
        again = [r.chunk.source for r in kb.search(question, mode="vector")]
        assert kb.index().embedded == 0
    assert again == built and "docs/configuration.md" in built[:3]
