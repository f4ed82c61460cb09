"""The query-time product runs on one BLAS thread and gives the user's limits back."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from kbgraph.retrieval._blas import _controller, single_blas_thread
from kbgraph.retrieval._ranking import dot_scores


def _blas_threads() -> list[int]:
    """Threads of the BLAS libraries numpy had loaded when the first search ran (the ones
    its products use; a BLAS that another package loads later is not numpy's)."""
    blas = _controller().select(user_api="blas")
    return [lib.num_threads for lib in blas.lib_controllers]


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    if not _blas_threads():
        pytest.skip("numpy is not linked to a BLAS threadpoolctl knows")
    with ThreadpoolController().limit(limits=2, user_api="blas"):
        yield


@pytest.mark.usefixtures("two_blas_threads")
def test_blas_runs_on_one_thread_inside_and_gets_its_limit_back() -> None:
    with single_blas_thread():
        assert set(_blas_threads()) == {1}
    assert set(_blas_threads()) == {2}


@pytest.mark.usefixtures("two_blas_threads")
def test_concurrent_searches_leave_the_users_limit_in_place() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((2_000, 16)).astype(np.float32)
    query = rng.standard_normal(16).astype(np.float32)
    expected = matrix @ query
    errors: list[BaseException] = []

    def search() -> None:
        try:
            for _ in range(50):
                np.testing.assert_allclose(dot_scores(matrix, query), expected, rtol=1e-5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert set(_blas_threads()) == {2}
