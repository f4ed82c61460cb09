"""Sentence splitting for claims and sources: lower-cased, tokenised and glued text,
abbreviations, non-ASCII and CRLF."""

from __future__ import annotations

import pytest

from kbgraph.evals._text import split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Lower-cased, tokenised news text (as summarisation data sets ship it).
        (
            "( cnn ) -- the council met on monday . the council did not approve the budget . "
            "the vote was 5-2 .",
            [
                "( cnn ) -- the council met on monday .",
                "the council did not approve the budget .",
                "the vote was 5-2 .",
            ],
        ),
        (
            "le maire a parlé lundi . les élus ont voté contre .\r\nla séance a été levée .",
            ["le maire a parlé lundi .", "les élus ont voté contre .", "la séance a été levée ."],
        ),
        (
            "the plan failed. officials blamed the weather! nobody was hurt? no.",
            ["the plan failed.", "officials blamed the weather!", "nobody was hurt?", "no."],
        ),
        # Abbreviations and initials end no sentence, whatever follows them.
        (
            "It costs approx. five dollars, e.g. in the u.s. market. mr. smith agreed.",
            ["It costs approx. five dollars, e.g. in the u.s. market.", "mr. smith agreed."],
        ),
        (
            "Version 1.6 reads harbor.yaml. Then it starts.",
            ["Version 1.6 reads harbor.yaml.", "Then it starts."],
        ),
    ],
)
def test_sentences_end_whatever_the_case_of_the_next_word(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_a_lower_cased_source_is_not_one_long_sentence() -> None:
    source = " ".join(f"the team won game {n} on day {n} ." for n in range(1, 120))
    sentences = split_sentences(source)
    assert len(sentences) == 119
    assert max(len(s.split()) for s in sentences) == 9


@pytest.mark.parametrize(
    ("text", "glued", "expected"),
    [
        (
            "He was ousted amid claims of misuse of funds.In the filing, the board said so.",
            True,
            ["He was ousted amid claims of misuse of funds.", "In the filing, the board said so."],
        ),
        (
            "Le conseil a voté.Après la séance, le maire est parti.",
            True,
            ["Le conseil a voté.", "Après la séance, le maire est parti."],
        ),
        # Answers keep dotted names whole.
        (
            "Use pathlib.Path objects to build paths.",
            False,
            ["Use pathlib.Path objects to build paths."],
        ),
    ],
)
def test_sources_split_where_a_full_stop_glues_two_sentences(
    text: str, glued: bool, expected: list[str]
) -> None:
    assert split_sentences(text, glued=glued) == expected
