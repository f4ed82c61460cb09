"""One BLAS thread for the query-time matrix-vector product.

Why: OpenBLAS keeps its worker threads spinning for a while after a multi-threaded call.
On a small machine they then take the cores the embedding model needs for the next query:
on SciFact (2 cores, 5,971 chunks) vector search measured p50 20 ms and p95 107 ms with
OpenBLAS's default threads against 11 ms and 13 ms with one thread, while the product
itself costs 0.06 ms more at 6K rows and ~1 ms more at 100K (it is memory-bound).

The limit is process-wide in BLAS, so it is taken under a lock and restored on exit: two
searches in two threads cannot leave the user's BLAS at one thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

_LOCK = threading.Lock()


@cache
def _controller() -> Any:
    # Built once, at the first search: it knows the BLAS numpy loaded (the one its products
    # use); a BLAS another package loads later is left alone.
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """BLAS runs on one thread inside the block, then gets its previous limits back."""
    with _LOCK, _controller().limit(limits=1, user_api="blas"):
        yield


__all__ = ["single_blas_thread"]
