"""Issue 41, false "unstated fact" flags: ways a faithful summary writes a source's fact
that the checkable-facts layer called unstated on SummEdits' consistent summaries
(development data), and the one-word swaps of its inconsistent ones it let pass. Each
case is shaped on a SummEdits row; the other way round (the fact changed) stays unstated."""

from __future__ import annotations

import pytest

from kbgraph.evals._judges._facts import unstated_facts

STATED = [
    pytest.param(
        "We remove constant terms from CNN architectures.",
        "We show that bias terms used in most CNNs can be removed.",
        id="acronym-plural-in-source",
    ),
    pytest.param(
        "Organic revenues rose 19% YoY.",
        "Organic revenues in the second quarter were up 19% year-over-year.",
        id="mixed-case-acronym-spelt-with-hyphens",
    ),
    pytest.param(
        "Q2 revenues rose 19%.",
        "Organic revenues in the second quarter were up 19% year-over-year.",
        id="quarter-code",
    ),
    pytest.param(
        "Deliveries for 4Q 2020 are expected to reach 2,400 units.",
        "We expect 2020 fourth quarter unit deliveries of 2,400 units.",
        id="quarter-digit-first",
    ),
    pytest.param(
        "A Chinese mine collapse killed two people.",
        "An open pit mine collapsed in China on Wednesday, killing two people.",
        id="nationality-for-country",
    ),
    pytest.param(
        "The sales forecast for 2021 remaining within $1.7 billion to $1.8 billion.",
        "Our sales forecast for 2021 remains in the range of $1.7 billion to $1.8 billion.",
        id="year-after-for",
    ),
    pytest.param(
        "Phoebe books a ticket from the main station on June 26th departing at 1:34 PM.",
        "Phoebe: so I'm departing from the main station on June 26th at 1:34 PM.",
        id="ordinal-day-before-a-word",
    ),
    pytest.param(
        "Two friends, Steve and Carly, plan to meet for a drink at Kings.",
        "Steve: Drink at Kings this weekend? Carly: Sure, Saturday works.",
        id="a-count-of-the-names-it-lists",
    ),
]


@pytest.mark.parametrize(("claim", "source"), STATED)
def test_a_fact_written_another_way_is_stated(claim: str, source: str) -> None:
    assert unstated_facts(claim, source) == []


UNSTATED = [
    pytest.param(
        "Q3 revenues rose 19%.",
        "Organic revenues in the second quarter were up 19% year-over-year.",
        "Q3",
        id="another-quarter",
    ),
    pytest.param(
        "A Russian mine collapse killed two people.",
        "An open pit mine collapsed in China on Wednesday, killing two people.",
        "Russian",
        id="another-nationality",
    ),
    pytest.param(
        "The sales forecast for 2022 remaining within $1.7 billion to $1.8 billion.",
        "Our sales forecast for 2021 remains in the range of $1.7 billion to $1.8 billion.",
        "2022",
        id="another-year",
    ),
    pytest.param(
        "Phoebe books a ticket from the main station on June 27th departing at 1:34 PM.",
        "Phoebe: so I'm departing from the main station on June 26th at 1:34 PM.",
        "27",
        id="another-day",
    ),
    pytest.param(
        "Three friends, Steve and Carly, plan to meet for a drink at Kings.",
        "Steve: Drink at Kings this weekend? Carly: Sure, Saturday works.",
        "Three friends",
        id="a-count-its-list-does-not-make",
    ),
]


@pytest.mark.parametrize(("claim", "source", "token"), UNSTATED)
def test_the_changed_fact_stays_unstated(claim: str, source: str, token: str) -> None:
    assert [f.token for f in unstated_facts(claim, source)] == [token]


SWAPPED = [
    pytest.param(
        "Consolidated sales are expected to decrease in the second quarter.",
        "We expect our second-quarter consolidated sales to increase in the single digits.",
        "decrease",
        id="increase-decrease",
    ),
    pytest.param(
        "Plant-based milk labels will soon exclude a voluntary nutrient statement.",
        "The labels of plant-based milk alternatives may soon include a voluntary nutrient "
        "statement.",
        "exclude",
        id="include-exclude",
    ),
    pytest.param(
        "The new interface makes the remote harder to use.",
        "The new interface makes the remote easier to use, the designer said.",
        "harder",
        id="easier-harder",
    ),
]


@pytest.mark.parametrize(("claim", "source", "token"), SWAPPED)
def test_an_antonym_swap_is_unstated(claim: str, source: str, token: str) -> None:
    facts = unstated_facts(claim, source)
    assert [(f.kind, f.token) for f in facts] == [("antonym", token)]
    assert "opposite" in facts[0].reason and facts[0].source


KEPT = [
    pytest.param(
        "Sales are expected to increase in the second quarter.",
        "Costs will decrease, and sales are expected to increase in the second quarter.",
        id="the-source-says-both",
    ),
    pytest.param(
        "Sales did not decrease in the second quarter.",
        "Sales increased in the second quarter.",
        id="a-negated-claim",
    ),
    pytest.param(
        "Net revenue decreased in the quarter.",
        "Operating costs increased in the year, and net revenue declined in the quarter.",
        id="a-synonym",
    ),
]


@pytest.mark.parametrize(("claim", "source"), KEPT)
def test_an_opposite_word_elsewhere_is_no_swap(claim: str, source: str) -> None:
    assert [f for f in unstated_facts(claim, source) if f.kind == "antonym"] == []
