"""Synthetic embedding-like vectors for the scale benchmarks: L2-normalised float32 drawn
around random cluster centres (a Gaussian mixture), so that, like real sentence
embeddings and unlike uniform noise, neighbours exist. Deterministic for a seed."""

from __future__ import annotations

import numpy as np

CLUSTERS = 4096
SPREAD = 0.6  # noise around a centre, relative to the centre's length


def vectors(n: int, dims: int, *, seed: int = 0, block: int = 100_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLUSTERS, dims), dtype=np.float32)
    out = np.empty((n, dims), dtype=np.float32)
    for start in range(0, n, block):
        stop = min(start + block, n)
        picks = rng.integers(0, CLUSTERS, stop - start)
        rows = centres[picks] + SPREAD * rng.standard_normal((stop - start, dims), dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        out[start:stop] = rows
    return out


def queries(n: int, dims: int, *, seed: int = 1) -> np.ndarray:
    """Queries from the same mixture (other draws): each has true neighbours."""
    rng = np.random.default_rng(0)  # the same centres as vectors(seed=0)
    centres = rng.standard_normal((CLUSTERS, dims), dtype=np.float32)
    rng = np.random.default_rng(seed + 1000)
    picks = rng.integers(0, CLUSTERS, n)
    rows = centres[picks] + SPREAD * rng.standard_normal((n, dims), dtype=np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
