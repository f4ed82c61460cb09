"""BM25: tokenizer, Lucene-variant scores against hand computation, storage, masks."""

from __future__ import annotations

import json
import math
import mmap
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbgraph._base.text import BM25_STOP_WORDS as STOPWORDS_EN
from kbgraph._base.text import words
from kbgraph.errors import ConfigError, IndexCorruptError, IndexNotFoundError
from kbgraph.retrieval._lexical import BM25_FILES, BM25Index, tokenize, tokenize_corpus

TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # bm25s' default token pattern

# ---------------------------------------------------------------- tokenizer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The cats are running", ["cat", "run"]),
        ("Connection CONNECTED connecting", ["connect", "connect", "connect"]),
        ("a I x y", []),  # single characters are never terms
        ("the of and to with", []),  # stop words only
        # An identifier gives its parts and its whole (issue 22); v2's parts are too short.
        ("retry_policy v2", ["retri", "polici", "retrypolici", "v2"]),
        ("Café CRÈME", ["café", "crème"]),
        ("東京 大学", ["東京", "大学"]),
        ("naïve–approach ±5", ["naïv", "approach"]),
        ("line one\r\nline two", ["line", "one", "line", "two"]),
        ("ab\udc80cd running", ["ab", "cd", "run"]),  # a lone surrogate is not \w
        ("", []),
    ],
)
def test_tokenize(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_stop_words_are_luceneʼs_english_set() -> None:
    assert len(STOPWORDS_EN) == 33
    assert {"the", "and", "of", "will", "with"} <= STOPWORDS_EN
    # Words bm25s' longer "en_plus" list drops but the "en" list keeps.
    assert not {"about", "above", "he", "she", "we"} & STOPWORDS_EN


def test_stop_words_match_before_stemming() -> None:
    # "its" stems to the stop word "it" but is not itself one: it stays, as in bm25s.
    assert tokenize("it its") == ["it"]


_TRICKY = st.text(
    alphabet=st.sampled_from([*"ab_1 \t\r\n.,;-–±é東\u00a0\u3000\u2028ß'İ", "\ud800"]),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=60), _TRICKY))
def test_fast_word_split_equals_the_regex(text: str) -> None:
    lowered = text.lower()
    assert words(text, min_len=2) == re.findall(TOKEN_PATTERN, lowered)
    assert words(text) == re.findall(r"\w+", lowered)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=40), _TRICKY), max_size=6))
def test_corpus_fast_path_equals_tokenize(texts: list[str]) -> None:
    corpus = tokenize_corpus(texts)
    ends = corpus.doc_lengths.cumsum()
    terms = [
        [corpus.vocab[int(i)] for i in corpus.term_ids[e - n : e]]
        for e, n in zip(ends, corpus.doc_lengths, strict=True)
    ]
    assert terms == [tokenize(t) for t in texts]


# ---------------------------------------------------------------- scores by hand

# After stop words and stemming: d0 = cat sat mat, d1 = cat chase cat, d2 = dog run.
CORPUS = ["The cat sat on the mat", "Cats chase the cat", "Dogs run"]
N = 3
AVGDL = (3 + 3 + 2) / 3
K1, B = 1.5, 0.75


def _by_hand(tf: int, dl: int, df: int) -> float:
    """One term's Lucene BM25 contribution, written out from the formula."""
    idf = math.log(1 + (N - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + K1 * (1 - B + B * dl / AVGDL))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # cat: df 2; d0 tf 1, d1 tf 2, both of length 3.
        ("cat", [_by_hand(1, 3, 2), _by_hand(2, 3, 2), 0.0]),
        # ln(1 + 1.5/2.5) · 1/(1 + 1.5·(0.25 + 0.75·9/8)) = ln 1.6 / 2.640625
        ("the CATS", [math.log(1.6) / 2.640625, 2 * math.log(1.6) / 3.640625, 0.0]),
        # dog and run: df 1, d2 of length 2; idf = ln(1 + 2.5/1.5) = ln(8/3).
        ("dogs running", [0.0, 0.0, 2 * math.log(8 / 3) / (1 + 1.5 * (0.25 + 0.75 * 2 / AVGDL))]),
        # A repeated query term counts twice (Lucene BooleanQuery, bm25s).
        ("mat mats", [2 * _by_hand(1, 3, 1), 0.0, 0.0]),
        ("zebra", [0.0, 0.0, 0.0]),
    ],
)
def test_scores_match_hand_computation(query: str, expected: list[float]) -> None:
    index = BM25Index.build(CORPUS)
    scores = index.scores(query)
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, expected, rtol=1e-6)


def test_k1_and_b_are_used() -> None:
    index = BM25Index.build(CORPUS, k1=1.2, b=0.0)
    # b = 0: no length normalisation, tf / (tf + k1).
    idf = math.log(1 + 1.5 / 2.5)
    np.testing.assert_allclose(index.scores("cat")[:2], [idf / 2.2, idf * 2 / 3.2], rtol=1e-6)


@pytest.mark.parametrize(("k1", "b"), [(-0.1, 0.75), (1.5, 1.5), (1.5, -0.1)])
def test_bad_parameters_are_refused(k1: float, b: float) -> None:
    with pytest.raises(ConfigError, match=r"k1=1\.5, b=0\.75"):
        BM25Index.build(CORPUS, k1=k1, b=b)


# ---------------------------------------------------------------- top-k

DOCS = [
    "retry policy for the http client",  # 0
    "the retry policy retries three times",  # 1
    "logging configuration",  # 2
    "retry policy for the http client",  # 3: same text as 0, so the same score
    "retry",  # 4
    "café au lait, 東京",  # 5
]


def test_top_k_orders_by_score_then_doc_number() -> None:
    index = BM25Index.build(DOCS)
    idx, scores = index.top_k("retry policy", 10)
    assert idx.dtype == np.int64 and scores.dtype == np.float32
    full = index.scores("retry policy")
    expected = sorted(np.flatnonzero(full > 0), key=lambda d: (-full[d], d))
    assert idx.tolist() == expected
    assert idx.tolist().index(0) + 1 == idx.tolist().index(3)  # tie: lower number first
    assert 2 not in idx  # score 0 is never returned
    np.testing.assert_array_equal(scores, full[idx])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_mask_applies_before_ranking(k: int) -> None:
    index = BM25Index.build(DOCS)
    best = int(index.top_k("retry policy", 1)[0][0])
    mask = np.ones(len(DOCS), dtype=bool)
    mask[best] = False
    idx, _ = index.top_k("retry policy", k, mask=mask)
    assert best not in idx
    assert len(idx) == k  # k allowed matches exist, so k come back


def test_mask_leaving_fewer_matches_than_k() -> None:
    index = BM25Index.build(DOCS)
    mask = np.zeros(len(DOCS), dtype=bool)
    mask[[2, 4]] = True  # 2 does not match
    idx, _ = index.top_k("retry", 5, mask=mask)
    assert idx.tolist() == [4]


def test_mask_of_wrong_shape_is_refused() -> None:
    index = BM25Index.build(DOCS)
    with pytest.raises(ConfigError, match="one True/False per indexed row"):
        index.top_k("retry", 3, mask=np.ones(3, dtype=bool))


@pytest.mark.parametrize("query", ["", "   ", "the of and", "zebra unicorn", "x"])
def test_queries_without_matches_return_nothing(query: str) -> None:
    idx, scores = BM25Index.build(DOCS).top_k(query, 5)
    assert idx.shape == (0,) and scores.shape == (0,)
    assert idx.dtype == np.int64 and scores.dtype == np.float32


@pytest.mark.parametrize(("query", "doc"), [("CAFÉ", 5), ("東京", 5)])
def test_non_ascii_terms_match(query: str, doc: int) -> None:
    assert BM25Index.build(DOCS).top_k(query, 3)[0].tolist() == [doc]


def test_k_zero_and_negative() -> None:
    index = BM25Index.build(DOCS)
    assert len(index.top_k("retry", 0)[0]) == 0
    with pytest.raises(ConfigError, match="k must be 0 or more"):
        index.top_k("retry", -1)


def test_empty_corpus_and_empty_documents() -> None:
    empty = BM25Index.build([])
    assert len(empty) == 0 and len(empty.top_k("retry", 3)[0]) == 0
    blank = BM25Index.build(["", "the of", "retry"])
    assert len(blank) == 3
    assert blank.top_k("retry", 3)[0].tolist() == [2]


# ---------------------------------------------------------------- storage


def _is_memory_mapped(array: np.ndarray) -> bool:
    base: object = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None)
    return False


def test_save_load_round_trip_uses_memory_maps(tmp_path: Path) -> None:
    built = BM25Index.build(DOCS, k1=1.2, b=0.6)
    built.save(tmp_path / "gen")
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == sorted(BM25_FILES)
    loaded = BM25Index.load(tmp_path / "gen")
    assert (loaded.k1, loaded.b, len(loaded)) == (1.2, 0.6, len(DOCS))
    for array in (loaded.columns.data, loaded.columns.indices, loaded.columns.indptr):
        assert _is_memory_mapped(array) and not array.flags.writeable
    for query in ["retry policy", "café", "logging", "zebra"]:
        np.testing.assert_array_equal(loaded.scores(query), built.scores(query))
        for got, want in zip(loaded.top_k(query, 3), built.top_k(query, 3), strict=True):
            np.testing.assert_array_equal(got, want)


def test_empty_index_round_trip(tmp_path: Path) -> None:
    BM25Index.build([]).save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    assert len(loaded) == 0 and len(loaded.top_k("x y", 2)[0]) == 0


def test_missing_index_is_reported(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError, match=r"bm25\.json is missing"):
        BM25Index.load(tmp_path)


def _corrupt_array(directory: Path) -> None:
    np.save(directory / "bm25.indptr.npy", np.zeros(2, dtype=np.int64))


def _corrupt_dtype(directory: Path) -> None:
    np.save(directory / "bm25.data.npy", np.zeros(3, dtype=np.float64))


def _corrupt_meta(directory: Path) -> None:
    (directory / "bm25.json").write_text("{not json", "utf-8")


def _other_format(directory: Path) -> None:
    meta = json.loads((directory / "bm25.json").read_text("utf-8"))
    meta["format"] = 99
    (directory / "bm25.json").write_text(json.dumps(meta), "utf-8")


def _truncated(directory: Path) -> None:
    path = directory / "bm25.indices.npy"
    path.write_bytes(path.read_bytes()[:-4])


def _missing_array(directory: Path) -> None:
    (directory / "bm25.data.npy").unlink()


@pytest.mark.parametrize(
    "damage",
    [_corrupt_array, _corrupt_dtype, _corrupt_meta, _other_format, _truncated, _missing_array],
)
def test_damaged_index_is_reported(tmp_path: Path, damage: object) -> None:
    BM25Index.build(DOCS).save(tmp_path)
    damage(tmp_path)  # type: ignore[operator]
    with pytest.raises(IndexCorruptError, match="rebuild the index"):
        BM25Index.load(tmp_path)
