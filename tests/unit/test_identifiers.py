"""The identifier-aware analyser: each identifier style gives its parts and its whole, on
both sides of a search, in any script; plain prose is analysed as before; an index of the
previous analyser keeps being searched with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph._base.text import BM25_STOP_WORDS, stems, words
from kbgraph.retrieval._lexical import (
    GLUED_PART_WEIGHT,
    IDENTIFIERS_1_ID,
    LEGACY_TOKENIZER_ID,
    TOKENIZER_ID,
    BM25Index,
    analyse,
    analyse_weighted,
    split_compound,
    tokenize,
    tokenize_corpus,
)


@pytest.mark.parametrize(
    ("identifier", "parts", "wholes"),
    [
        ("DEFAULT_TIMEOUT_CONFIG", ["default", "timeout", "config"], ["defaulttimeoutconfig"]),
        ("snake_case_name", ["snake", "case", "name"], ["snakecasename"]),
        ("maxRedirects", ["max", "redirects"], ["maxredirects"]),
        ("PascalCase", ["pascal", "case"], ["pascalcase"]),
        ("HTTPServer", ["http", "server"], ["httpserver"]),
        ("getHTTPResponseCode", ["get", "http", "response", "code"], ["gethttpresponsecode"]),
        ("URLs", ["urls"], []),  # a plural acronym stays one word
        ("max-redirects", ["max", "redirects"], ["maxredirects"]),
        ("httpx._config.Timeout", ["httpx", "config", "timeout"], ["httpx.config.timeout"]),
        (
            "Client._redirect_url",
            ["client", "redirect", "url"],
            ["redirecturl", "client.redirecturl"],
        ),
        ("std::io::Read", ["std", "io", "read"], ["std.io.read"]),
        ("__init__", ["init"], []),
        ("sha256", ["sha", "256"], ["sha256"]),
        ("x86_64", ["x", "86", "64"], ["x8664"]),
        ("3.14", ["3", "14"], ["3.14"]),
        ("2024", ["2024"], []),
        ("ÜberKlasse", ["über", "klasse"], ["überklasse"]),
        ("naïveBayes", ["naïve", "bayes"], ["naïvebayes"]),
        ("größeDatei_ändern", ["größe", "datei", "ändern"], ["größedateiändern"]),
        ("東京タワー", ["東京タワー"], []),  # no case: never split
        ("timeout", ["timeout"], []),
        ("Timeout", ["timeout"], []),
    ],
)
def test_identifier_styles_give_parts_and_wholes(
    identifier: str, parts: list[str], wholes: list[str]
) -> None:
    assert split_compound(identifier) == (tuple(parts), tuple(wholes))


def test_every_spelling_of_one_identifier_shares_its_whole_term() -> None:
    spellings = ["max_redirects", "maxRedirects", "MaxRedirects", "MAX_REDIRECTS", "max-redirects"]
    wholes = {tokenize(s)[-1] for s in spellings}
    assert wholes == set(tokenize("maxredirects"))  # a query written without separators too


def test_words_of_a_question_match_the_parts_of_an_identifier() -> None:
    code = set(tokenize("DEFAULT_TIMEOUT_CONFIG = Timeout(timeout=5.0)"))
    assert set(tokenize("What is the default timeout?")) - {"what"} <= code
    assert "redirect" in set(tokenize("DEFAULT_MAX_REDIRECTS = 20"))


def test_prose_is_analysed_as_bm25s_does() -> None:
    text = "The cats were running quickly; café CRÈME, 東京 大学 and résumés."
    expected = stems([w for w in words(text, min_len=2) if w not in BM25_STOP_WORDS])
    assert tokenize(text) == expected == tokenize(text, LEGACY_TOKENIZER_ID)


def test_whole_forms_do_not_lengthen_a_document() -> None:
    terms, length = analyse("DEFAULT_TIMEOUT_CONFIG is_set e.g.")
    assert terms == [
        "default", "timeout", "config", "defaulttimeoutconfig", "set", "isset", "e.g",
    ]  # fmt: skip
    # default, timeout, config; set ("is" is a stop word); e.g (its parts are too short)
    assert length == 5
    corpus = tokenize_corpus(["DEFAULT_TIMEOUT_CONFIG is_set e.g.", "plain words"])
    assert corpus.doc_lengths.tolist() == [7, 2] and corpus.norm_lengths.tolist() == [5, 2]


def test_corpus_and_query_analysis_agree() -> None:
    texts = ["class HTTPServer:\n    max_redirects = 20", "See `Client.send()` in httpx._client."]
    corpus = tokenize_corpus(texts)
    flat = [corpus.vocab[t] for t in corpus.term_ids]
    assert flat == tokenize(texts[0]) + tokenize(texts[1])


def test_an_exact_identifier_query_ranks_its_definition_first() -> None:
    docs = [
        "def follow_redirects(request):\n    return request",
        "Redirects are followed when follow is set; a redirect follows another.",
        "client.follow_redirects(request) if follow else None  # follow redirects",
        "Section: Client.follow_redirects\n\ndef follow_redirects(self, request):\n    ...",
    ]
    index = BM25Index.build(docs)
    best, _ = index.top_k("Client.follow_redirects", 2)
    assert best.tolist()[0] == 3
    best, _ = index.top_k("followRedirects", 4)
    assert set(best.tolist()[:3]) == {0, 2, 3}


def test_an_index_of_the_previous_analyser_is_searched_with_it(tmp_path: Path) -> None:
    docs = ["DEFAULT_TIMEOUT_CONFIG = 5", "a timeout of five seconds"]
    BM25Index.build(docs, tokenizer=LEGACY_TOKENIZER_ID).save(tmp_path)
    assert json.loads((tmp_path / "bm25.json").read_text())["tokenizer"] == LEGACY_TOKENIZER_ID
    old = BM25Index.load(tmp_path)
    assert old.tokenizer == LEGACY_TOKENIZER_ID
    assert old.top_k("timeout", 2)[0].tolist() == [1]  # the old terms, the old answers
    BM25Index.build(docs).save(tmp_path)
    new = BM25Index.load(tmp_path)
    assert new.tokenizer == TOKENIZER_ID
    assert sorted(new.top_k("timeout", 2)[0].tolist()) == [0, 1]


# Issue 30: "Is it retryable?" ranked code naming RetryableError above the row saying it.
RETRYABLE_DOCS = ["raise RetryableError", "HB-601 is retryable"]


def test_a_part_glued_into_an_identifier_weighs_below_the_word() -> None:
    terms, weights, _ = analyse_weighted("RetryableError HB-601 os.environ retryable")
    counted = dict(zip(terms, weights, strict=True))
    assert counted == {
        "retryabl": 1.0,  # the plain word, last (a dict keeps the last value)
        "error": GLUED_PART_WEIGHT,
        "retryableerror": 1.0,
        "hb": 1.0,  # plain pieces of a hyphenated word or a dotted path are words
        "601": 1.0,
        "hb601": 1.0,
        "os": 1.0,
        "environ": 1.0,
        "os.environ": 1.0,
    }
    assert weights[0] == GLUED_PART_WEIGHT  # RetryableError's retryable
    index = BM25Index.build(RETRYABLE_DOCS)
    assert index.top_k("Is it retryable?", 2)[0].tolist() == [1, 0]
    corpus = tokenize_corpus(RETRYABLE_DOCS)
    assert corpus.weights is not None and corpus.weights.tolist() == [
        w for text in RETRYABLE_DOCS for w in analyse_weighted(text)[1]
    ]


def test_an_index_of_the_unweighted_analyser_keeps_its_ranking(tmp_path: Path) -> None:
    BM25Index.build(RETRYABLE_DOCS, tokenizer=IDENTIFIERS_1_ID).save(tmp_path)
    old = BM25Index.load(tmp_path)
    assert old.tokenizer == IDENTIFIERS_1_ID
    # The shorter document wins when every term counts 1, as it did before.
    assert old.top_k("Is it retryable?", 2)[0].tolist() == [0, 1]
    assert analyse_weighted("RetryableError", IDENTIFIERS_1_ID)[1] == [1.0, 1.0, 1.0]
    assert old.same_as(BM25Index.build(RETRYABLE_DOCS, tokenizer=IDENTIFIERS_1_ID))
