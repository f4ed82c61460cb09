"""Vector top-k against a full-sort reference, memory maps, and Reciprocal Rank Fusion."""

from __future__ import annotations

import tracemalloc
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.errors import ConfigError, DimensionMismatchError
from kbgraph.retrieval import ranking
from kbgraph.retrieval._ranking import FusedItem, rrf_fuse, top_k_dot, top_k_indices

DIMS = 16


def _unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def _mask(kind: str, n: int) -> np.ndarray | None:
    rng = np.random.default_rng(n)
    return {
        "none": None,
        "all": np.ones(n, dtype=bool),
        "nothing": np.zeros(n, dtype=bool),
        "half": rng.random(n) < 0.5,
        "sparse": rng.random(n) < 0.02,
    }[kind]


def _reference(matrix: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None) -> list[int]:
    """Full sort of the allowed rows by (score desc, row asc)."""
    scores = matrix @ query.astype(np.float32)
    allowed = range(len(matrix)) if mask is None else np.flatnonzero(mask).tolist()
    return sorted(allowed, key=lambda i: (-scores[i], i))[:k]


@pytest.mark.parametrize("n", [0, 1, 7, 300, 2000])
@pytest.mark.parametrize("k", [0, 1, 10, 299, 5000])
@pytest.mark.parametrize("mask_kind", ["none", "all", "nothing", "half", "sparse"])
def test_top_k_dot_matches_full_sort(n: int, k: int, mask_kind: str) -> None:
    matrix = _unit_rows(n, seed=n + k)
    query = _unit_rows(1, seed=99)[0]
    mask = _mask(mask_kind, n)
    idx, scores = top_k_dot(matrix, query, k, mask=mask)
    assert idx.dtype == np.int64 and scores.dtype == np.float32
    expected = _reference(matrix, query, k, mask)
    assert idx.tolist() == expected
    np.testing.assert_array_equal(scores, (matrix @ query)[expected])
    if mask is not None:
        assert mask[idx].all()


def test_ties_are_broken_by_row() -> None:
    rows = _unit_rows(4, seed=1)
    matrix = np.vstack([rows[0], rows[1], rows[0], rows[2], rows[0], rows[3]])
    idx, _ = top_k_dot(matrix, rows[0], 2)
    assert idx.tolist() == [0, 2]  # three rows tie at 1.0: the first two by position
    assert top_k_indices(np.array([1.0, 3.0, 3.0, 2.0, 3.0]), 2).tolist() == [1, 2]


def _write_memmap(path: Path, array: np.ndarray) -> np.memmap:
    array.tofile(path)
    return np.memmap(path, dtype=np.float32, mode="r", shape=array.shape)


def test_memmap_input_is_not_copied(tmp_path: Path) -> None:
    n, dims = 20_000, 128
    array = np.random.default_rng(3).standard_normal((n, dims)).astype(np.float32)
    matrix = _write_memmap(tmp_path / "vectors.f32", array)
    query = array[7].astype(np.float64)  # a float64 query must not upcast the matrix
    mask = np.arange(n) % 3 != 0
    tracemalloc.start()
    try:
        idx, scores = top_k_dot(matrix, query, 10, mask=mask)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Scores and index arrays only: about 30 bytes per row, the matrix holds 512.
    assert peak < array.nbytes / 8
    assert idx.tolist() == _reference(array, query, 10, mask)
    assert not isinstance(scores, np.memmap)


def test_blocked_product_equals_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = _unit_rows(50, seed=6)
    query = matrix[3]
    whole = top_k_dot(matrix, query, 12)
    monkeypatch.setattr(ranking, "_DOT_BLOCK_ROWS", 7)  # 8 blocks, the last one short
    blocked = top_k_dot(matrix, query, 12)
    np.testing.assert_array_equal(blocked[0], whole[0])
    np.testing.assert_allclose(blocked[1], whole[1], rtol=1e-6)
    assert blocked[0][0] == 3


def test_bad_shapes_are_refused() -> None:
    matrix = _unit_rows(5, seed=5)
    with pytest.raises(DimensionMismatchError, match="model the index was built with"):
        top_k_dot(matrix, np.ones(DIMS + 1, dtype=np.float32), 3)
    with pytest.raises(ConfigError, match=r"shape \(5,\)"):
        top_k_dot(matrix, matrix[0], 3, mask=np.ones(4, dtype=bool))
    with pytest.raises(ConfigError, match="boolean"):
        top_k_dot(matrix, matrix[0], 3, mask=np.ones(5, dtype=np.int8))
    with pytest.raises(ConfigError, match="k must be 0 or more"):
        top_k_dot(matrix, matrix[0], -1)


# ---------------------------------------------------------------- RRF


def _scores(fused: list[FusedItem]) -> dict[Any, float]:
    return {item.key: item.score for item in fused}


def _approx(expected: dict[Any, Fraction]) -> object:
    return pytest.approx({key: float(value) for key, value in expected.items()}, rel=1e-12)


def test_rrf_matches_hand_computation() -> None:
    fused = rrf_fuse({"vector": ["a", "b", "c"], "bm25": ["c", "a", "d"]})
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    assert [item.key for item in fused] == ["a", "c", "b", "d"]
    expected = {
        "a": Fraction(1, 61) + Fraction(1, 62),
        "c": Fraction(1, 63) + Fraction(1, 61),
        "b": Fraction(1, 62),
        "d": Fraction(1, 63),
    }
    assert _scores(fused) == _approx(expected)
    assert fused[0].ranks == {"vector": 1, "bm25": 2}
    assert fused[3].ranks == {"bm25": 3}


@pytest.mark.parametrize("k", [0, 1, 60])
def test_rrf_weights_and_k(k: int) -> None:
    fused = rrf_fuse(
        {"vector": [1, 2], "bm25": [2], "extra": [3], "unweighted": [1]},
        k=k,
        weights={"vector": 2.0, "bm25": 0.5, "extra": 0.0},
    )
    # Weights go by the rankings' exact names; a ranking they do not name weighs 1.
    expected = {
        1: Fraction(2, k + 1) + Fraction(1, k + 1),
        2: Fraction(2, k + 2) + Fraction(1, 2 * (k + 1)),
        3: Fraction(0),
    }
    assert _scores(fused) == _approx(expected)
    assert [item.key for item in fused] == sorted(expected, key=lambda key: -expected[key])


def test_rankings_may_be_named_by_any_hashable_key() -> None:
    fused = rrf_fuse({("docs", 0, "bm25"): ["x"], ("docs", 1, "bm25"): ["x"]}, k=0)
    assert fused[0].ranks == {("docs", 0, "bm25"): 1, ("docs", 1, "bm25"): 1}
    assert fused[0].score == 2.0


def test_rrf_weights_go_by_exact_name_never_by_a_part_of_it() -> None:
    fused = rrf_fuse({"q1:bm25": ["x"]}, k=0, weights={"bm25": 5.0})
    assert fused[0].score == 1.0


def test_rrf_ties_by_best_rank_then_first_seen() -> None:
    # With k = 0 all three score exactly 1: p = 1/2 + 1/2, q = 1/1, z = 1/1.
    fused = rrf_fuse({"x": ["q", "p"], "y": ["z", "p"]}, k=0)
    assert [item.score for item in fused] == [1.0, 1.0, 1.0]
    # q and z have best rank 1 (q seen first), p only 2.
    assert [item.key for item in fused] == ["q", "z", "p"]


def test_rrf_equal_contributions_tie_exactly_in_any_order() -> None:
    fused = rrf_fuse({"a": ["x", "y", "z"], "b": ["y", "z", "x"], "c": ["z", "x", "y"]})
    assert len({item.score for item in fused}) == 1
    assert [item.key for item in fused] == ["x", "y", "z"]


def test_rrf_duplicate_in_one_ranking_keeps_best_rank() -> None:
    fused = rrf_fuse({"r": ["a", "b", "a"]}, k=0)
    assert [(item.key, item.score, item.ranks) for item in fused] == [
        ("a", 1.0, {"r": 1}),
        ("b", 0.5, {"r": 2}),
    ]


def test_rrf_empty_and_bad_inputs() -> None:
    assert rrf_fuse({}) == []
    assert rrf_fuse({"vector": [], "bm25": []}) == []
    with pytest.raises(ConfigError, match="finite and >= 0"):
        rrf_fuse({"vector": ["a"]}, weights={"vector": -1.0})
    with pytest.raises(ConfigError, match="k must be 0 or more"):
        rrf_fuse({"vector": ["a"]}, k=-1)


# -- convex fusion (Bruch et al. 2023) -------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([2.0, 4.0, 3.0], [0.0, 1.0, 0.5]),
        ([-1.0, 1.0], [0.0, 1.0]),
        ([0.7, 0.7, 0.7], [0.0, 0.0, 0.0]),  # no ordering to keep
        ([5.0], [0.0]),
        ([], []),
    ],
)
def test_min_max(scores: list[float], expected: list[float]) -> None:
    assert ranking.min_max(np.array(scores)).tolist() == pytest.approx(expected)


def test_convex_fuse_by_hand() -> None:
    # vector mm: [1, 0, 0.5]; bm25 mm: [0, 1, 0.25]
    scores = {"vector": np.array([0.9, 0.5, 0.7]), "bm25": np.array([2.0, 10.0, 4.0])}
    fused = ranking.convex_fuse(scores, {"vector": 0.7, "bm25": 0.3})
    assert fused.tolist() == pytest.approx([0.7, 0.3, 0.7 * 0.5 + 0.3 * 0.25])
    # weights are proportions: scaling them changes nothing
    again = ranking.convex_fuse(scores, {"vector": 7.0, "bm25": 3.0})
    assert again.tolist() == pytest.approx(fused.tolist())
    # equal weights by default
    assert ranking.convex_fuse(scores).tolist() == pytest.approx([0.5, 0.5, 0.375])


@pytest.mark.parametrize(
    ("scores", "weights", "message"),
    [
        ({"vector": np.ones(2), "bm25": np.ones(3)}, None, "same candidates"),
        ({"vector": np.ones(2)}, {"vector": 0.0}, "sum to 0"),
        ({"vector": np.ones(2)}, {"vector": -1.0}, "finite and >= 0"),
    ],
)
def test_convex_fuse_rejects(
    scores: dict[str, np.ndarray], weights: dict[str, float] | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ranking.convex_fuse(scores, weights)
