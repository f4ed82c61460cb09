"""Claim splitting: sentences, citations, list items, refusals, non-ASCII and CRLF text."""

from __future__ import annotations

import pytest

from kbgraph.evals._claims import citation_numbers, is_refusal, split_claims, strip_markers
from kbgraph.evals._records import Claim


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


def test_a_colon_inside_a_list_item_introduces_nothing_and_its_marker_covers_the_item() -> None:
    answer = (
        "- Les messages restent en anglais. Voici la confirmation : [1] (docs/i18n.md:26-27)\n"
        "- Harbor remembers it for 24 hours. [2] (docs/glossary.html)"
    )
    assert split_claims(answer) == [
        Claim("Les messages restent en anglais.", (1,)),
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


def test_unpunctuated_line_breaks_end_claims_and_whole_sentence_items_stand_alone() -> None:
    # A summary written one sentence a line: each line is a claim, not one fused claim.
    answer = "Le maire a ouvert le pont lundi\nThe council rejected the plan\r\nIt met again"
    assert [c.text for c in split_claims(answer)] == [
        "Le maire a ouvert le pont lundi",
        "The council rejected the plan",
        "It met again",
    ]
    listed = "Key points:\n- The council rejected the plan.\n- The mayor resigned on Monday."
    assert [c.text for c in split_claims(listed)] == [
        "The council rejected the plan.",
        "The mayor resigned on Monday.",
    ]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("I am not sure, but Harbor makes 5 attempts.", [Claim("Harbor makes 5 attempts.")]),
        (
            "Unfortunately the documents do not say. However, Harbor makes 5 attempts by default.",
            [Claim("Harbor makes 5 attempts by default.")],
        ),
        (
            "The sources do not say how many, but Harbor retries 408, 429 and 503 [1].",
            [Claim("Harbor retries 408, 429 and 503.", (1,))],
        ),
        (
            "I'm not sure (the context does not mention it) — Harbor probably waits 9 s.",
            [Claim("Harbor probably waits 9 s.")],
        ),
        (
            "Je ne suis pas sûr, mais Harbor fait 5 tentatives.",
            [Claim("Harbor fait 5 tentatives.")],
        ),
        ("I'm not sure whether Harbor retries 404.", []),
        ("Unfortunately, the documents do not say.", []),
        ("I could not find that in the docs. I am sorry.", []),
        ("There is no information about an SLA.", []),
        # A fact about the documents' subject that merely contains "no information".
        (
            "No information about the card is stored [2].",
            [Claim("No information about the card is stored.", (2,))],
        ),
        (
            "The documents do not specify it, and the key is not retried.",
            [Claim("The key is not retried.")],
        ),
    ],
)
def test_hedges_are_cut_and_the_fact_beside_them_is_a_claim(
    answer: str, expected: list[Claim]
) -> None:
    assert split_claims(answer) == expected


def test_a_refusal_after_a_claim_does_not_hide_it() -> None:
    answer = "I could not find the exact SLA.\r\nHarbor answers 429 above 600 requests [1]."
    assert split_claims(answer) == [Claim("Harbor answers 429 above 600 requests.", (1,))]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "- Harbor retries 429. It waits 200 ms first. [2]\n- Webhooks retry 7 times [3].",
            [
                Claim("Harbor retries 429.", (2,)),
                Claim("It waits 200 ms first.", (2,)),
                Claim("Webhooks retry 7 times.", (3,)),
            ],
        ),
        (
            "Harbor retries 429 [1]. It waits first. Then it gives up [2]. Nothing else.",
            [
                Claim("Harbor retries 429.", (1,)),
                Claim("It waits first.", (2,)),
                Claim("Then it gives up.", (2,)),
                Claim("Nothing else.", ()),
            ],
        ),
        (
            # A marker never reaches into another paragraph.
            "Harbor retries 429.\n\nIt waits 200 ms [2].",
            [Claim("Harbor retries 429.", ()), Claim("It waits 200 ms.", (2,))],
        ),
    ],
)
def test_a_trailing_marker_covers_its_paragraph_or_item(answer: str, expected: list[Claim]) -> None:
    assert split_claims(answer) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "Harbor retries 429 responses [1], and webhooks are retried 7 times [2].",
            [
                Claim("Harbor retries 429 responses", (1,)),
                Claim("Webhooks are retried 7 times.", (2,)),
            ],
        ),
        (
            "Les clés expirent après 15 minutes [1] ; les webhooks sont signés [3].",
            [
                Claim("Les clés expirent après 15 minutes", (1,)),
                Claim("Les webhooks sont signés.", (3,)),
            ],
        ),
        # No clause break, or no source of its own after the marker: one claim.
        ("Harbor retries 429 [1] and 503 [2].", [Claim("Harbor retries 429 and 503.", (1, 2))]),
        (
            "Harbor retries 429 [1], and webhooks are retried 7 times.",
            [Claim("Harbor retries 429, and webhooks are retried 7 times.", (1,))],
        ),
    ],
)
def test_a_sentence_is_split_at_a_marker_boundary(answer: str, expected: list[Claim]) -> None:
    assert split_claims(answer) == expected


def test_the_items_under_a_why_label_are_not_claims() -> None:
    answer = (
        "I could not find an answer to this in docs.\n\nWhy:\n- the best match scored 0.12\n"
        "\nWhat to try:\n- ask about retries\n\nHarbor itself retries 429 [1]."
    )
    assert split_claims(answer) == [Claim("Harbor itself retries 429.", (1,))]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            "Here is a summary of the passage:\r\nThe council rejected the plan on Monday.",
            [Claim("The council rejected the plan on Monday.")],
        ),
        (
            "Here is a brief summary of the article: the council rejected the plan.",
            [Claim("The council rejected the plan.")],
        ),
        (
            "The article discusses how the council rejected the plan.",
            [Claim("The council rejected the plan.")],
        ),
        (
            "According to the text, the council rejected the plan [1].",
            [Claim("The council rejected the plan.", (1,))],
        ),
        (
            "The council rejected the plan, the report says.",
            [Claim("The council rejected the plan.")],
        ),
        (
            "In summary, the plan failed. It also notes that the mayor resigned.",
            [Claim("The plan failed."), Claim("The mayor resigned.")],
        ),
        (
            "L'article explique que le conseil a rejeté le plan.",
            [Claim("Le conseil a rejeté le plan.")],
        ),
        (
            "Der Artikel beschreibt, dass der Rat den Plan ablehnte.",
            [Claim("Der Rat den Plan ablehnte.")],
        ),
        (
            "Here is a summary of the article:\r\n- The council met.\r\n- The plan failed.",
            [Claim("The council met."), Claim("The plan failed.")],
        ),
        # Content that only looks like a frame stays whole.
        (
            "The report was published on Monday. The minister said that taxes rose.",
            [
                Claim("The report was published on Monday."),
                Claim("The minister said that taxes rose."),
            ],
        ),
        ("Here is a summary of the passage:", []),
    ],
)
def test_meta_framing_is_cut_from_claims(answer: str, expected: list[Claim]) -> None:
    assert split_claims(answer) == expected
