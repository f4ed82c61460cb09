"""Claim splitting: sentences, citations, list items, refusals, non-ASCII and CRLF text."""

from __future__ import annotations

import pytest

from evals.claims import citation_numbers, is_refusal, split_claims, strip_markers
from evals.records import Claim


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "Harbor makes 5 attempts [1]. The base delay is 200 ms [2].",
            [Claim("Harbor makes 5 attempts.", (1,)), Claim("The base delay is 200 ms.", (2,))],
        ),
        (
            "Retries stop after 5 attempts. [1]",
            [Claim("Retries stop after 5 attempts.", (1,))],
        ),
        (
            "The defaults come from harbor.yaml [1, 3].",
            [Claim("The defaults come from harbor.yaml.", (1, 3))],
        ),
        (
            "Tokens expire after 15 minutes [1-3].",
            [Claim("Tokens expire after 15 minutes.", (1, 2, 3))],
        ),
        (
            "Read [the guide](https://x.test) for 1.6 s delays.",
            [Claim("Read [the guide](https://x.test) for 1.6 s delays.", ())],
        ),
        (
            "Les messages d'erreur restent en anglais [2]. "
            "日本語ロケールは 2.4.0 で追加されました [3]。",
            [
                Claim("Les messages d'erreur restent en anglais.", (2,)),
                Claim("日本語ロケールは 2.4.0 で追加されました。", (3,)),
            ],
        ),
        (
            "Harbor retries 5 times [1].\r\nIt waits 200 ms first [2].\r\n",
            [Claim("Harbor retries 5 times.", (1,)), Claim("It waits 200 ms first.", (2,))],
        ),
    ],
)
def test_sentences_become_claims_with_their_citations(answer: str, expected: list[Claim]) -> None:
    assert split_claims(answer) == expected


def test_list_items_carry_their_intro_and_its_citation() -> None:
    answer = "Harbor retries these status codes [1]:\n- 408 and 429\n- 503 [2]"
    assert split_claims(answer) == [
        Claim("Harbor retries these status codes: 408 and 429", (1,)),
        Claim("Harbor retries these status codes: 503", (2,)),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know from the available documents.",
        "I could not find an answer to this in docs.\n\nWhy:\n- the best match scored 0.12",
        "The sources do not mention an SLA.",
        "",
        "Sure! Hope this helps.",
        "Do you like Harbor?",
    ],
)
def test_refusals_fillers_and_questions_make_no_claims(answer: str) -> None:
    assert split_claims(answer) == []


def test_a_refusal_with_a_cited_claim_keeps_the_claim() -> None:
    answer = "I don't know the SLA. The rate limit is 600 requests per minute [2]."
    assert split_claims(answer) == [Claim("The rate limit is 600 requests per minute.", (2,))]


def test_did_you_know_questions_state_their_claim() -> None:
    assert split_claims("Did you know that Harbor signs webhooks?") == [
        Claim("Harbor signs webhooks", ())
    ]
    assert split_claims("Do you know who wrote Harbor?") == []


def test_extractive_answers_drop_the_header_and_source_locations() -> None:
    answer = (
        "Extractive answer (no chat model configured): these lines are quoted from the "
        "best-matching sources, not written by a language model.\n\n"
        "- By default up to 5 attempts in total. [1] (docs/faq.txt:13-16)\n"
        "- Retries use full jitter. [2] (docs/configuration.md:62-65)"
    )
    assert split_claims(answer) == [
        Claim("By default up to 5 attempts in total.", (1,)),
        Claim("Retries use full jitter.", (2,)),
    ]


def test_headings_and_code_fences_are_not_claims() -> None:
    answer = "## Retry policy\n```yaml\nretry:\n  max_attempts: 3\n```\nSet it in harbor.yaml [1]."
    claims = split_claims(answer)
    assert Claim("Set it in harbor.yaml.", (1,)) in claims
    assert all(c.text != "Retry policy" for c in claims)
    assert all("```" not in c.text for c in claims)


def test_a_fragment_answer_is_one_claim() -> None:
    assert split_claims("Delhi") == [Claim("Delhi", ())]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("[1]", (1,)),
        ("[2][1] [2]", (2, 1)),
        ("[1, 3-4]", (1, 3, 4)),
        ("[4-2]", ()),
        ("a[1](x)", ()),
    ],
)
def test_citation_numbers(text: str, numbers: tuple[int, ...]) -> None:
    assert citation_numbers(text) == numbers


def test_strip_markers_leaves_clean_text() -> None:
    assert strip_markers("Five attempts [1] , then stop [2].") == "Five attempts, then stop."
    assert is_refusal("Unable to determine that from the context.")


def test_a_colon_inside_a_list_item_introduces_nothing() -> None:
    answer = (
        "- Les messages restent en anglais. Voici la confirmation : [1] (docs/i18n.md:26-27)\n"
        "- Harbor remembers it for 24 hours. [2] (docs/glossary.html)"
    )
    assert split_claims(answer) == [
        Claim("Les messages restent en anglais.", ()),
        Claim("Voici la confirmation:", (1,)),
        Claim("Harbor remembers it for 24 hours.", (2,)),
    ]


def test_hard_wrapped_paragraphs_are_joined() -> None:
    answer = (
        "Harbor waits for that long, but never longer\nthan backoff_cap_ms [1].\nSecond one [2]."
    )
    assert split_claims(answer) == [
        Claim("Harbor waits for that long, but never longer than backoff_cap_ms.", (1,)),
        Claim("Second one.", (2,)),
    ]
