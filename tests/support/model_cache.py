"""A kbgraph cache of a test module's own (``KBGRAPH_CACHE_DIR``): the local model's ONNX
exports made in it from nothing, the torch path not forced; the variables put back after."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbgraph.retrieval._embeddings._onnx import BACKEND_ENV, CACHE_ENV


@contextmanager
def own_model_cache(root: Path) -> Iterator[Path]:
    saved = {k: os.environ.get(k) for k in (CACHE_ENV, BACKEND_ENV)}
    os.environ[CACHE_ENV] = str(root)
    os.environ.pop(BACKEND_ENV, None)
    try:
        yield root
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
