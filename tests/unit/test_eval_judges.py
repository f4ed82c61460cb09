"""Judges: the offline judge on fake embeddings, the LLM judge on a scripted chat model,
the overlap baseline, and judge specs."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from kbgraph.evals._judges import (
    JudgeError,
    LLMJudge,
    OfflineJudge,
    OverlapJudge,
    content_overlap,
    resolve_judge,
)
from kbgraph.evals._judges._context import SPAN_MARGIN, SPAN_WORDS, span
from kbgraph.evals._judges._evidence import clauses
from kbgraph.evals._text import content_words
from kbgraph.retrieval._embeddings import LocalEmbeddings
from kbgraph.testing import FakeEmbeddings, ScriptedChatModel

CONTEXT = (
    "Harbor retries calls to downstream providers. `max_attempts` counts the first call, so "
    "the default of 5 means one call and up to four retries.\r\n"
    "Other 4xx responses are never retried, because repeating the same request cannot "
    "succeed. Les messages d'erreur de l'API restent en anglais."
)


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge(FakeEmbeddings())


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        ("The default of 5 means one call and up to four retries.", "supported"),
        ("Les messages d'erreur de l'API restent en anglais.", "supported"),
        ("The default of 7 means one call and up to six retries.", "contradicted"),
        (
            "Other 4xx responses are retried, because repeating the request can succeed.",
            "contradicted",
        ),
        ("Harbor stores orders in MongoDB clusters on Kubernetes.", "not_supported"),
    ],
)
def test_offline_verdicts(judge: OfflineJudge, claim: str, verdict: str) -> None:
    (judged,) = judge.judge_claims([claim], CONTEXT)
    assert judged.verdict == verdict, judged.reason
    assert 0.0 <= judged.score <= 1.0


CODE_CONTEXT = (
    "A ``Retry-After`` value sent by the provider replaces the computed delay but is never\n"
    "allowed to exceed ``backoff_cap_ms``.\n"
    '"""\n'
    "for attempt in range(1, policy.max_attempts + 1):\n"
    "    if attempt == policy.max_attempts or not policy.should_retry(err.status):\n"
    "        raise\n"
    "    delay = policy.delay_ms(attempt)\n"
    "    Le délai n'est jamais négatif.\n"
)


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        # Quoted lines: the splitter capitalises, drops code quotes, adds a full stop.
        ("Delay = policy.delay_ms(attempt)", "supported"),
        ("Le délai n'est jamais négatif.", "supported"),
        # Not a quote: the negation of the source is dropped, so it still contradicts.
        ("A Retry-After value is allowed to exceed backoff_cap_ms.", "contradicted"),
    ],
)
def test_offline_a_quoted_line_is_not_contradicted_by_its_neighbours(
    judge: OfflineJudge, claim: str, verdict: str
) -> None:
    (judged,) = judge.judge_claims([claim], CODE_CONTEXT)
    assert judged.verdict == verdict, judged.reason


def test_offline_scores_rank_supported_above_unsupported(judge: OfflineJudge) -> None:
    good, partial, bad = judge.judge_claims(
        [
            "The default of 5 means one call and up to four retries.",
            "The default of 5 means one call and a pager alert for operators.",
            "Harbor stores orders in MongoDB clusters on Kubernetes.",
        ],
        CONTEXT,
    )
    assert good.score > partial.score > bad.score


def test_offline_fragment_answers_use_the_question(judge: OfflineJudge) -> None:
    (judged,) = judge.judge_claims(["5"], CONTEXT, question="What is the default of max_attempts?")
    assert judged.verdict == "supported"


def test_offline_empty_context(judge: OfflineJudge) -> None:
    assert judge.judge_claims(["Anything at all."], "  ")[0].verdict == "not_supported"
    assert judge.judge_claims([], CONTEXT) == []


def test_offline_passage_relevance(judge: OfflineJudge) -> None:
    passages = ["The default of 5 means one call and up to four retries.", "Orders have items."]
    with_reference = judge.judge_passages(
        "How many attempts?",
        passages,
        reference="The default of 5 means one call and four retries.",
    )
    assert [r.relevant for r in with_reference] == [True, False]
    by_question = judge.judge_passages("What does the default of max_attempts mean?", passages)
    assert by_question[0].score > by_question[1].score


def test_offline_answer_relevance_prefers_on_topic_answers(judge: OfflineJudge) -> None:
    question = "How many retries does Harbor make by default?"
    on_topic = judge.judge_answer(question, "Harbor makes up to four retries by default.")
    off_topic = judge.judge_answer(question, "Orders are listed newest first.")
    assert on_topic.score > off_topic.score
    assert judge.usage.calls == 0


def test_offline_prefetch_fills_the_cache_in_batches() -> None:
    calls: list[int] = []

    class Counting(FakeEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            calls.append(len(texts))
            return super().embed_documents(texts)

    judge = OfflineJudge(Counting())
    judge.prefetch(claims=[(["The default is 5."], CONTEXT, None)], texts=["a question"])
    before = len(calls)
    judge.judge_claims(["The default is 5."], CONTEXT)
    assert len(calls) == before == 1


def _verdicts(*items: tuple[int, str]) -> dict[str, object]:
    return {"verdicts": [{"claim": n, "verdict": v, "reason": "because"} for n, v in items]}


def test_llm_judge_structured_output_and_token_usage() -> None:
    reply = AIMessage(
        content='{"verdicts": [{"claim": 1, "verdict": "supported", "reason": "stated"}, '
        '{"claim": 2, "verdict": "contradicted", "reason": "says 5"}]}',
        usage_metadata={"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
    )
    model = ScriptedChatModel(responses=[reply])
    judge = LLMJudge(model)
    judged = judge.judge_claims(["Five attempts.", "Seven attempts."], CONTEXT, question="q")
    assert [j.verdict for j in judged] == ["supported", "contradicted"]
    assert [j.score for j in judged] == [1.0, 0.0]
    assert judge.usage.to_dict() == {
        "input_tokens": 120,
        "output_tokens": 30,
        "total_tokens": 150,
        "calls": 1,
    }
    (call,) = model.calls
    assert call.structured == "ClaimVerdictsOut"
    assert "1. Five attempts." in call.messages[-1].text and CONTEXT in call.messages[-1].text


def test_llm_judge_falls_back_to_json_and_fills_missing_verdicts() -> None:
    model = ScriptedChatModel(
        responses=[
            "Sure! Here you go.",
            "```json\n" + str(_verdicts((1, "supported"))).replace("'", '"') + "\n```",
        ]
    )
    judge = LLMJudge(model)
    judged = judge.judge_claims(["a", "b"], CONTEXT)
    assert [j.verdict for j in judged] == ["supported", "not_supported"]
    assert judged[1].reason == "the judge gave no verdict"
    assert model.calls[1].structured is None
    assert "Reply with one JSON object" in model.calls[1].messages[-1].text


def test_llm_judge_retries_then_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    model = ScriptedChatModel(responses=[TimeoutError, TimeoutError, _verdicts((1, "supported"))])
    judge = LLMJudge(model, max_retries=2, sleep=slept.append)
    # A timeout ends an attempt (the JSON call would wait out another one); the third
    # attempt's structured call works, after backing off twice.
    assert judge.judge_claims(["a"], CONTEXT)[0].verdict == "supported"
    assert slept == [1.0, 2.0] and len(model.calls) == 3
    broken = LLMJudge(
        ScriptedChatModel(default="not json at all"), max_retries=1, sleep=slept.append
    )
    with pytest.raises(JudgeError, match="gave no valid ClaimVerdictsOut after 2 attempts"):
        broken.judge_claims(["a"], CONTEXT)


def test_llm_judge_passages_and_answers() -> None:
    model = ScriptedChatModel(
        responses=[
            {"passages": [{"passage": 2, "relevant": True, "reason": "has it"}]},
            {"addresses": "partly", "reason": "half of it"},
        ]
    )
    judge = LLMJudge(model)
    relevance = judge.judge_passages("q", ["p1", "p2"], reference="r")
    assert [r.relevant for r in relevance] == [False, True]
    answer = judge.judge_answer("q", "a")
    assert (answer.score, answer.relevant) == (0.5, True)
    assert answer.reason == "partly: half of it"


def test_llm_judge_forces_temperature_zero() -> None:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="gpt-4o-mini", temperature=0.7, api_key="sk-test")  # type: ignore[arg-type]
    judge = LLMJudge(model)
    assert judge._model.temperature == 0  # type: ignore[attr-defined]
    assert judge.name == "llm:gpt-4o-mini"


def test_overlap_baseline() -> None:
    assert content_overlap("Harbor retries calls", CONTEXT) == 1.0
    assert content_overlap("the of and", CONTEXT) == 0.0
    assert OverlapJudge().judge_claims(["MongoDB clusters"], CONTEXT)[0].verdict == "not_supported"


def test_resolve_judge_specs() -> None:
    assert isinstance(resolve_judge("offline", embeddings=FakeEmbeddings()), OfflineJudge)
    assert isinstance(resolve_judge("overlap"), OverlapJudge)
    assert resolve_judge("fake").name.startswith("llm:")
    with pytest.raises(JudgeError, match="names no chat model"):
        resolve_judge("none")


def test_offline_passage_relevance_weighs_distinctive_question_words(judge: OfflineJudge) -> None:
    passages = [
        "Harbor is an order service. Harbor runs in containers.",
        "Harbor guarantees 99.9% uptime in its SLA for the hosted service.",
        "Harbor listens on port 8080.",
    ]
    relevance = judge.judge_passages(
        "What uptime does the hosted Harbor service guarantee?", passages
    )
    assert [r.relevant for r in relevance] == [False, True, False]


def test_offline_answer_relevance_keeps_the_fact_beside_a_hedge(judge: OfflineJudge) -> None:
    question = "How many attempts does Harbor make?"
    hedged = judge.judge_answer(question, "I am not sure, but Harbor makes 5 attempts in total.")
    refusal = judge.judge_answer(question, "I am not sure. The documents do not say.")
    plain = judge.judge_answer(question, "Harbor makes 5 attempts in total.")
    assert refusal.score == 0.0 and "declines" in refusal.reason
    assert 0.0 < hedged.score < plain.score
    assert "evasive 50%" in hedged.reason


# Summaries fuse source sentences and derive numbers; neither is a contradiction.
FUSION_CASES = [
    # A lower-cased, tokenised source: one negation must not contradict other sentences.
    (
        "( cnn ) -- the council did not approve the budget on friday .\r\n"
        "the council approved the budget on monday after a long debate .",
        "the council approved the budget on monday .",
        "supported",
    ),
    (
        "The council did not approve the plan in May. The mayor approved a revised plan in "
        "June after the elections.",
        "The council did not approve the plan in May, but the mayor approved a revised plan "
        "in June.",
        "supported",
    ),
    (
        "Rescuers found 8 survivors on Monday and 4 more on Tuesday near the river.",
        "Rescuers found 12 survivors near the river.",
        "supported",
    ),
    (
        "Les secouristes ont trouvé 8 survivants lundi et 4 autres mardi près du fleuve.",
        "Les secouristes ont trouvé 12 survivants près du fleuve.",
        "supported",
    ),
    (
        "Chelsea scored 4 goals against Arsenal on Saturday. Arsenal scored 1 goal in reply.",
        "Chelsea beat Arsenal by 3 goals on Saturday.",
        "not contradicted",
    ),
    # A number the source lacks, about something else than the source's numbers.
    (
        "The company, founded in 1998, employs 250 people in Lyon.",
        "The company employs 250 people in Lyon and in 12 other cities.",
        "not contradicted",
    ),
    # Real contradictions stay contradictions.
    (
        "The company, founded in 1998, employs 250 people in Lyon.",
        "The company employs 300 people in Lyon.",
        "contradicted",
    ),
    (
        "( cnn ) -- the council met on friday .\r\nthe council did not approve the budget .",
        "the council approved the budget .",
        "contradicted",
    ),
    # Another date for the same event, whatever order day and month come in (a year beside a
    # month counts the same thing as another year beside a month).
    (
        "Benedict XVI (born 16 April 1927) was pope from 19 April 2005 until his resignation "
        "on 28 February 2013.",
        "Benedict XVI served as pope until his resignation on January 28, 2010.",
        "contradicted",
    ),
    (
        "Benedict XVI (born 16 April 1927) was pope from 19 April 2005 until his resignation "
        "on 28 February 2013.",
        "Benedict XVI was pope until his resignation on February 28, 2013.",
        "supported",
    ),
    # "may" is a verb here, not a month: 2 hearings may follow, not a date.
    (
        "The court said 3 more hearings may follow in 2024.",
        "The court said more hearings may follow.",
        "not contradicted",
    ),
]


@pytest.mark.parametrize(("context", "claim", "expected"), FUSION_CASES)
def test_offline_fused_sentences_and_derived_numbers_are_not_contradicted(
    judge: OfflineJudge, context: str, claim: str, expected: str
) -> None:
    (judged,) = judge.judge_claims([claim], context)
    if expected == "not contradicted":
        assert judged.verdict != "contradicted", judged.reason
    else:
        assert judged.verdict == expected, judged.reason


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        (
            "The council approved the budget on Monday, and the mayor resigned on Friday.",
            ["The council approved the budget on Monday", "the mayor resigned on Friday."],
        ),
        ("Harbor retries 408, 429, and 503.", ["Harbor retries 408, 429, and 503."]),
        (
            "Le conseil a voté le budget; le maire a démissionné vendredi.",
            ["Le conseil a voté le budget", "le maire a démissionné vendredi."],
        ),
    ],
)
def test_compound_claims_are_aligned_clause_by_clause(claim: str, expected: list[str]) -> None:
    assert clauses(claim) == expected


def test_the_judge_caps_the_threads_of_a_model_it_loads_and_leaves_objects_alone() -> None:
    pytest.importorskip("sentence_transformers")
    # The model is loaded on first use: resolving the spec costs nothing.
    loaded = OfflineJudge("local", model_threads=1)._embeddings
    assert isinstance(loaded, LocalEmbeddings) and loaded.threads == 1
    unset = OfflineJudge("local", model_threads=None)._embeddings
    assert isinstance(unset, LocalEmbeddings) and unset.threads is None
    mine = LocalEmbeddings()
    OfflineJudge(mine, model_threads=1)
    assert mine.threads is None


def test_a_claims_span_keeps_the_clause_that_holds_its_words() -> None:
    sentence = (
        "Pope Benedict XVI (Latin: Benedictus PP. XVI; Italian: Benedetto XVI; German: Benedikt "
        "XVI; born Joseph Aloisius Ratzinger; 16 April 1927 - 31 December 2022) was the head of "
        "the Catholic Church and sovereign of the Vatican City State from 19 April 2005 until "
        "his resignation on 28 February 2013."
    )
    wanted = frozenset(content_words("resignation February 2013"))
    got = span(sentence, wanted, SPAN_WORDS)
    assert got.endswith("until his resignation on 28 February 2013.")
    # The words the claim shares, 12 words of margin before them, and nothing of the names.
    assert "Latin" not in got and len(got.split()) == 5 + 2 * SPAN_MARGIN < SPAN_WORDS
    # A sentence within the limit is kept whole.
    assert span("short sentence here", wanted, SPAN_WORDS) == "short sentence here"
