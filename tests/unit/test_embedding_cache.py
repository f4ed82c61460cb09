"""The SQLite embedding cache and ``embed_with_cache``. Real SQLite files in tmp_path; the
multi-process and kill tests live in tests/integration/test_embeddings_http.py."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from kbgraph.errors import EmbeddingError
from kbgraph.retrieval._embeddings import (
    BatchEmbedder,
    EmbeddingCache,
    embed_with_cache,
    l2_normalise,
)
from kbgraph.retrieval._records import text_hash
from kbgraph.testing import FakeEmbeddings

TEXTS = ["naïve café", "東京の天気", "line one\r\nline two", "", "plain ascii", "emoji 🚀 text"]


def _vectors(n: int, dims: int = 8, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return list(l2_normalise(rng.normal(size=(n, dims))))


def test_round_trip_is_bit_exact(tmp_path: Path) -> None:
    vectors = _vectors(len(TEXTS))
    items = {text_hash(t): v for t, v in zip(TEXTS, vectors, strict=True)}
    with EmbeddingCache(tmp_path / "cache.sqlite", "fake:bow-8") as cache:
        cache.put_many(items)
        got = cache.get_many([text_hash(t) for t in [*TEXTS, "never stored"]])
        assert len(cache) == len(TEXTS)
    assert set(got) == set(items)
    for digest, vector in items.items():
        assert got[digest].dtype == np.float32
        assert np.array_equal(got[digest], vector)


def test_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "idx" / "embeddings.sqlite"
    [vector] = _vectors(1)
    with EmbeddingCache(path, "m") as cache:
        cache.put_many({"h1": vector})
    with EmbeddingCache(path, "m") as cache:
        assert np.array_equal(cache.get_many(["h1"])["h1"], vector)


def test_models_do_not_share_vectors(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    a, b = _vectors(2)
    with EmbeddingCache(path, "local:a") as one, EmbeddingCache(path, "openai:b") as two:
        one.put_many({"same-hash": a})
        assert two.get_many(["same-hash"]) == {}
        two.put_many({"same-hash": b})
        assert np.array_equal(one.get_many(["same-hash"])["same-hash"], a)
        assert (len(one), len(two)) == (1, 1)


def test_put_replaces_and_empty_put_is_a_no_op(tmp_path: Path) -> None:
    a, b = _vectors(2)
    with EmbeddingCache(tmp_path / "c.sqlite", "m") as cache:
        cache.put_many({})
        cache.put_many({"h": a})
        cache.put_many({"h": b})
        assert np.array_equal(cache.get_many(["h"])["h"], b)
        assert len(cache) == 1


def test_get_many_beyond_the_sqlite_parameter_limit(tmp_path: Path) -> None:
    vectors = _vectors(1500, dims=4)
    items = {f"h{i}": v for i, v in enumerate(vectors)}
    with EmbeddingCache(tmp_path / "c.sqlite", "m") as cache:
        cache.put_many(items)
        got = cache.get_many([*items, *items])  # duplicates asked twice
    assert len(got) == 1500


def test_files_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "fresh" / "embeddings.sqlite"
        with EmbeddingCache(path, "m") as cache:
            cache.put_many({"h": _vectors(1)[0]})
            modes = {
                p.name: stat.S_IMODE(p.stat().st_mode)
                for p in path.parent.iterdir()
                if p.name.startswith("embeddings.sqlite")
            }
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    finally:
        os.umask(old)
    assert "embeddings.sqlite-wal" in modes  # WAL mode is on
    assert set(modes.values()) == {0o600}


def test_an_existing_world_readable_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    EmbeddingCache(path, "m").close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_that_is_not_a_database_is_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not sqlite \x00\xff" * 100)
    with EmbeddingCache(path, "m") as cache:
        assert len(cache) == 0
        cache.put_many({"h": _vectors(1)[0]})
    assert "unreadable" in caplog.text


def test_concurrent_writers_and_readers(tmp_path: Path) -> None:
    """Separate connections (as separate processes have) writing at once: the busy
    timeout serialises them and nothing is lost."""
    path = tmp_path / "c.sqlite"
    EmbeddingCache(path, "m").close()
    errors: list[BaseException] = []
    per_writer, writers = 40, 4

    def write(worker: int) -> None:
        try:
            with EmbeddingCache(path, "m") as cache:
                for i, vector in enumerate(_vectors(per_writer, seed=worker)):
                    cache.put_many({f"w{worker}-{i}": vector})
                    cache.get_many([f"w{(worker + 1) % writers}-{i}"])
        except BaseException as exc:  # surfaced below; a thread cannot fail the test
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with EmbeddingCache(path, "m") as cache:
        assert len(cache) == per_writer * writers
        got = cache.get_many([f"w2-{i}" for i in range(per_writer)])
    assert all(
        np.array_equal(got[f"w2-{i}"], v) for i, v in enumerate(_vectors(per_writer, seed=2))
    )


def test_one_instance_is_thread_safe(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite", "m") as cache:
        threads = [
            threading.Thread(
                target=cache.put_many,
                args=({f"t{w}-{i}": v for i, v in enumerate(_vectors(30, seed=w))},),
            )
            for w in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(cache) == 120


# -- embed_with_cache --------------------------------------------------------------------


class _Counting(Embeddings):
    """FakeEmbeddings that records every text it is asked to embed; optional failure after
    ``fail_after`` calls."""

    def __init__(self, dims: int = 16, fail_after: int | None = None) -> None:
        self.fake = FakeEmbeddings(dims)
        self.seen: list[str] = []
        self.calls = 0
        self.fail_after = fail_after

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("provider crashed")
        self.calls += 1
        self.seen += texts
        return self.fake.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _expected(texts: list[str], dims: int = 16) -> np.ndarray:
    return l2_normalise(np.array(FakeEmbeddings(dims).embed_documents(texts)))


def test_only_unseen_texts_are_embedded_and_each_once(tmp_path: Path) -> None:
    texts = [*TEXTS, TEXTS[0], TEXTS[2]]  # two duplicates
    provider = _Counting()
    embedder = BatchEmbedder(provider, batch_size=4)
    with EmbeddingCache(tmp_path / "c.sqlite", embedder.info.key) as cache:
        first = embed_with_cache(embedder, cache, texts)
        assert sorted(provider.seen) == sorted(TEXTS)
        assert (first.embedded, first.reused, first.failed) == (len(TEXTS), 2, [])
        assert np.allclose(first.vectors, _expected(texts), atol=1e-6)

        provider.seen.clear()
        more = [*texts, "a new chunk"]
        second = embed_with_cache(embedder, cache, more)
    assert provider.seen == ["a new chunk"]
    assert (second.embedded, second.reused) == (1, len(texts))
    assert np.allclose(second.vectors, _expected(more), atol=1e-6)


def test_progress_counts_positions_and_ends_at_total(tmp_path: Path) -> None:
    embedder = BatchEmbedder(_Counting(), batch_size=3)
    seen: list[tuple[int, int]] = []
    with EmbeddingCache(tmp_path / "c.sqlite", embedder.info.key) as cache:
        embed_with_cache(embedder, cache, TEXTS[:2])
        embed_with_cache(embedder, cache, [*TEXTS, TEXTS[5]], lambda d, t: seen.append((d, t)))
    total = len(TEXTS) + 1
    assert seen[0] == (2, total)  # the cached ones first
    assert seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert len(seen) == 1 + 2  # 4 unseen distinct texts in batches of 3


def test_failed_texts_are_zero_rows_and_not_cached(tmp_path: Path) -> None:
    class Refusing(_Counting):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [
                [0.0] * 16 if "☠" in t else v
                for t, v in zip(texts, super().embed_documents(texts), strict=True)
            ]

    embedder = BatchEmbedder(Refusing())
    texts = ["good one", "bad ☠", "good two", "bad ☠"]
    with EmbeddingCache(tmp_path / "c.sqlite", embedder.info.key) as cache:
        outcome = embed_with_cache(embedder, cache, texts)
        assert outcome.failed == [1, 3]
        assert np.all(outcome.vectors[[1, 3]] == 0)
        assert outcome.embedded + outcome.reused + len(outcome.failed) == len(texts)
        assert cache.get_many([text_hash("bad ☠")]) == {}
        assert len(cache) == 2


def test_each_batch_is_committed_before_a_failure(tmp_path: Path) -> None:
    """A run that dies in its third batch keeps the first two (the kill test does this
    with SIGKILL in a real process)."""
    path = tmp_path / "c.sqlite"
    texts = [f"chunk number {i}" for i in range(10)]
    embedder = BatchEmbedder(_Counting(fail_after=2), batch_size=3)
    with EmbeddingCache(path, embedder.info.key) as cache, pytest.raises(EmbeddingError):
        embed_with_cache(embedder, cache, texts)
    with EmbeddingCache(path, embedder.info.key) as reopened:
        got = reopened.get_many([text_hash(t) for t in texts])
    assert set(got) == {text_hash(t) for t in texts[:6]}


def test_all_cached_needs_no_provider(tmp_path: Path) -> None:
    embedder = BatchEmbedder(_Counting())
    with EmbeddingCache(tmp_path / "c.sqlite", embedder.info.key) as cache:
        embed_with_cache(embedder, cache, TEXTS)
        fresh = _Counting(fail_after=0)  # would raise if called
        outcome = embed_with_cache(BatchEmbedder(fresh), cache, TEXTS)
    assert (outcome.embedded, outcome.reused, fresh.calls) == (0, len(TEXTS), 0)
    assert outcome.vectors.shape == (len(TEXTS), 16)


def test_no_texts(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "c.sqlite", "m") as cache:
        outcome = embed_with_cache(BatchEmbedder(_Counting()), cache, [])
    assert (outcome.vectors.shape[0], outcome.embedded, outcome.reused) == (0, 0, 0)


def test_cached_vectors_of_another_size_are_reported(tmp_path: Path) -> None:
    embedder = BatchEmbedder(_Counting(dims=16))
    with EmbeddingCache(tmp_path / "c.sqlite", embedder.info.key) as cache:
        cache.put_many({text_hash("old"): np.ones(8, dtype=np.float32)})
        with pytest.raises(EmbeddingError, match=r"sizes \[8, 16\].*delete the cache"):
            embed_with_cache(embedder, cache, ["old", "new"])
