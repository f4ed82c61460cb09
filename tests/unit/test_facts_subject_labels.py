"""Issue 41, fifth round: the subject check a few words from the fact, and the word before
a number that names it ("port 8080"). The cases are a review helper's, run against the
first version of the round: each stated case was flagged or contradicted there, each
unstated one let pass (main, where marked, let it pass too)."""

from __future__ import annotations

import pytest

from kbgraph.evals import OfflineJudge
from kbgraph.evals._judges._facts import unstated_facts
from kbgraph.testing import FakeEmbeddings


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge(FakeEmbeddings())


STATED = [
    # A list or range shares its label.
    ("Step 4 requires admin rights.", "Steps 3 and 4 require admin rights; the rest do not."),
    ("Port 443 is open on the load balancer.", "The load balancer keeps ports 80 and 443 open."),
    ("Gate 12 and gate 14 are closed.", "Gates 12 and 14 are closed until Monday; use gate 16."),
    (
        "The launch moved to phase 3.",
        "The launch moved from phase 2 to 3 because QA found blockers.",
    ),
    # A claim joining two sentences' numbers.
    (
        "The web UI runs on port 3000 and the API on port 8000.",
        "The web UI runs on port 3000. The API is served on 8000 behind the same proxy.",
    ),
    (
        "The app uses port 8080 for HTTP and port 8443 for HTTPS.",
        "The app uses port 8080 for HTTP. HTTPS traffic goes to 8443.",
    ),
    # A label before "number", and a unit after the number that is its own.
    ("The database listens on port 5432.", "The database server uses port number 5432."),
    ("The landing page is 40% faster.", "The redesign made the landing page 40% faster."),
    ("Low-power mode turns on at 20% battery.", "Low-power mode turns on at battery level 20%."),
    # Another name for the same subject, a few words away.
    (
        "The mobile app now officially supports 12 languages.",
        "We rebuilt our mobile app this year. The rebuilt app now officially supports 12 "
        "languages.",
    ),
    (
        "The payments API handles about 400 requests per second.",
        "The payments API was moved to Go in 2023. The rewritten API now handles about 400 "
        "requests per second.",
    ),
    (
        "The electric bus fleet will reach 200 vehicles by 2026.",
        "The city is expanding its electric bus fleet. The zero-emission fleet will reach 200 "
        "vehicles by 2026.",
    ),
    # A labelled number that is not what its clause is about, and one the sentence says
    # something of in another way (the second review's cases).
    (
        "Version 2 removed the legacy endpoints.",
        "Version 1 introduced the legacy endpoints; they were removed in version 2.",
    ),
    (
        "The evening train to Leeds leaves from platform 6.",
        "The morning train to Leeds leaves from platform 2 and the evening train from platform 6.",
    ),
    (
        "The HTTP API listens on port 8080 and metrics are served on port 9102.",
        "The HTTP API listens on port 8080 and Prometheus metrics are served on port 9102.",
    ),
    # Two subjects sharing one predicate.
    (
        "The staging server listens on port 8080.",
        "The staging server and the production server both listen on port 8080.",
    ),
    ("The night shift has 8 people.", "The night shift and the day shift each have 8 people."),
]


@pytest.mark.parametrize(("claim", "source"), STATED)
def test_what_the_review_found_stated_is_supported(
    judge: OfflineJudge, claim: str, source: str
) -> None:
    assert unstated_facts(claim, source) == []
    (judged,) = judge.judge_claims([claim], source)
    assert judged.verdict != "contradicted", judged.reason


UNSTATED = [
    # A capitalised subject is checked where the sentence names it too (main caught these).
    (
        "The Pro plan costs $20 per month.",
        "The basic plan costs $20 per month and the Pro plan $35.",
    ),
    (
        "The Enterprise tier allows 100 requests per minute.",
        "The free tier allows 100 requests per minute; the Enterprise tier allows 1,000.",
    ),
    (
        "Night shifts have 5 nurses.",
        "On weekdays, day shifts have 5 nurses and night shifts have 3.",
    ),
    # A parenthesis is no clause break (main caught this).
    (
        "The night shift has 8 people.",
        "The day shift (8 people) starts at 7 am; the night shift (5 people) starts at 9 pm.",
    ),
    # A few words away (main let these pass).
    (
        "Staging servers keep logs for 7 days.",
        "By default, production servers keep logs for 7 days; staging servers keep them for 2.",
    ),
    (
        "The junior developers meet every Tuesday at 10 am.",
        "The senior developers meet every Tuesday at 10 am; the junior developers meet on "
        "Thursdays at 3 pm.",
    ),
    (
        "The community edition supports up to 10 users.",
        "The team edition supports up to 10 users, whereas the community edition supports 3.",
    ),
]


@pytest.mark.parametrize(("claim", "source"), UNSTATED)
def test_what_the_review_found_said_of_another_subject_is_flagged(claim: str, source: str) -> None:
    (fact,) = unstated_facts(claim, source)
    assert "is said of" in fact.reason


@pytest.mark.parametrize(
    ("claim", "source", "clash"),
    [
        # A labelled number is never a sum of two others (1 + 3, 8080 - 80, 2 + 3).
        (
            "Step 4 runs the test suite.",
            "Step 1: install the dependencies. Step 2: configure the database. Step 3: run "
            "the test suite.",
            "step 4 ≠ step",
        ),
        (
            "The app listens on port 8000.",
            "Nginx listens on port 80 and proxies requests to the app on port 8080.",
            "port 8000 ≠ port",
        ),
        (
            "Version 5 added dark mode.",
            "Dark mode arrived in version 3 of the app; version 2 added offline sync.",
            "version 5 ≠ version",
        ),
    ],
)
def test_a_labelled_number_is_not_derived(
    judge: OfflineJudge, claim: str, source: str, clash: str
) -> None:
    (judged,) = judge.judge_claims([claim], source)
    assert judged.verdict == "contradicted" and clash in judged.reason
    assert [f.token for f in unstated_facts(claim, source)]


@pytest.mark.parametrize(
    ("claim", "source", "said"),
    [
        # The numbered thing is the subject, and the sentence says the claim of another one
        # (main caught these only where it read the verb as the number's unit: "5 delet").
        (
            "Step 5 deletes the old index.",
            "Step 4 deletes the old index and step 5 rebuilds it.",
            "step 5 is said of something else: the source says 'Step 4 deletes the old "
            "index', of step 4",
        ),
        (
            "Step 2 creates the service account.",
            "Step 1 creates the service account; step 2 grants it the editor role.",
            "of step 1",
        ),
        ("Step 3 logs you in.", "In step 3 you install the CLI, and step 4 logs you in.", "step 4"),
    ],
)
def test_a_numbered_step_the_source_says_something_else_of_is_flagged(
    claim: str, source: str, said: str
) -> None:
    (fact,) = unstated_facts(claim, source)
    assert said in fact.reason


@pytest.mark.parametrize(
    "claim", ["Step 4 deletes the old index.", "Step 5 rebuilds the old index."]
)
def test_the_right_step_is_stated(claim: str) -> None:
    assert unstated_facts(claim, "Step 4 deletes the old index and step 5 rebuilds it.") == []
