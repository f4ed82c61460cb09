"""GroundingCheck: term coverage and a similarity floor (or the chat model's verdict),
reasons and guidance, and the bounded decision to retry with a wider scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, cast

import pytest

from kbgraph.graphs._nodes._text import asked_names, unmentioned
from kbgraph.graphs._nodes.grounding_check import (
    STEPS_PER_ATTEMPT,
    best_vector_score,
    grounding_check,
    heuristic_verdict,
    route_after_grounding,
)
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import RagScope, RagState
from kbgraph.testing import ScriptedChatModel

from ._rag_fakes import candidate, debug_of, deps_for, runtime_for, state_of

CONTEXT = (
    "Set max_attempts in harbor.yaml to configure the retry policy. "
    "Policies apply to every provider."
)


@pytest.mark.parametrize(
    ("question", "vector", "grounded"),
    [
        ("How do I configure the retry policy?", 0.6, True),
        ("How do I configure the retry policies?", None, True),  # stems: policies ~ policy
        ("How do I configure the retry policy?", 0.1, False),  # below the similarity floor
        ("What is the capital of France?", 0.9, False),  # no coverage
        ("How do I configure the Paris metro?", None, False),  # 1 of 3 terms
    ],
)
def test_heuristic_verdict(question: str, vector: float | None, grounded: bool) -> None:
    verdict, reasons, missing = heuristic_verdict(question, CONTEXT, vector, RagSettings())
    assert verdict is grounded
    assert "question terms occur in the sources" in reasons[0]
    assert ("best vector similarity" in reasons[-1]) is (vector is not None)
    if "France" in question:
        assert missing == ["capital", "france"]


def test_floor_can_be_switched_off() -> None:
    settings = RagSettings(grounding_min_vector_score=None)
    assert heuristic_verdict("configure retry policy", CONTEXT, 0.0, settings)[0]


def test_best_vector_score_only_counts_context_chunks() -> None:
    cands = [
        # Retrieve's fusion keeps a chunk's best vector similarity under "similarity".
        candidate("a", scores={"q0:vector": 0.4, "q1:vector": 0.7, "similarity": 0.7}),
        candidate("b", scores={"q0:vector": 0.9, "similarity": 0.9}),
        candidate("c", scores={"q0:bm25": 3.0}),
    ]
    assert best_vector_score(cands, {"a", "c"}) == 0.7
    assert best_vector_score(cands, {"c"}) is None


def _state(question: str, context: str = CONTEXT, **keys: Any) -> Any:
    cands = keys.pop("candidates", [candidate("a", scores={"q0:vector": 0.6, "similarity": 0.6})])
    citations = keys.pop(
        "citations", [{"n": 1, "chunk_id": "a", "text": context}] if context else []
    )
    return {
        **state_of(question),
        "rag_context": context,
        "rag_citations": citations,
        "rag_candidates": cands,
        "rag_attempt": 0,
        **keys,
    }


def _settings(tmp_path: Path, **overrides: Any) -> RagSettings:
    return RagSettings(knowledge_bases=[{"name": "docs", "folder": str(tmp_path)}], **overrides)


def _run(state: Any, settings: RagSettings, model: Any = None) -> dict[str, Any]:
    return grounding_check(state, runtime_for(settings), deps_for(model=model))


def test_grounded_ends(tmp_path: Path) -> None:
    out = _run(_state("How do I configure the retry policy?"), _settings(tmp_path))
    assert out["rag_grounded"] is True and out["rag_grounding"]["guidance"] == []
    assert out["rag_next"] == "end" and route_after_grounding(cast(RagState, out)) == "__end__"
    assert "rag_attempt" not in out


def test_not_grounded_retries_with_wider_scope(tmp_path: Path) -> None:
    narrowed: RagScope = {
        "knowledge_bases": ["docs"],
        "paths": ["src/**"],
        "kinds": [],
        "widened": False,
        "reason": "",
    }
    out = _run(_state("What is the capital of France?", rag_scope=narrowed), _settings(tmp_path))
    assert out["rag_grounded"] is False
    guidance = out["rag_grounding"]["guidance"]
    assert guidance[0].startswith("wider scope")
    assert guidance[1].startswith("other words") and "capital, france" in guidance[1]
    assert guidance[2].startswith("add documents") and str(tmp_path) in guidance[2]
    assert (
        out["rag_next"] == "retry" and route_after_grounding(cast(RagState, out)) == "rewrite_query"
    )
    assert out["rag_attempt"] == 1
    assert out["rag_scope"]["widened"] is True and out["rag_scope"]["paths"] == []
    assert debug_of(out)["steps"][0]["data"]["retry"] is True


@pytest.mark.parametrize(
    ("attempt", "max_rewrites", "remaining", "retry"),
    [
        (0, 1, None, True),
        (1, 1, None, False),
        (0, 0, None, False),
        (2, 3, 100, True),
        (0, 1, STEPS_PER_ATTEMPT + 1, False),  # not enough steps left for a whole attempt
        (0, 1, STEPS_PER_ATTEMPT + 2, True),
    ],
)
def test_retry_is_bounded(
    tmp_path: Path, attempt: int, max_rewrites: int, remaining: int | None, retry: bool
) -> None:
    state = _state("capital of France", rag_attempt=attempt)
    if remaining is not None:
        state["remaining_steps"] = remaining
    out = _run(state, _settings(tmp_path, max_rewrites=max_rewrites))
    assert out["rag_grounded"] is False
    assert (out["rag_next"] == "retry") is retry
    assert out.get("rag_attempt", attempt) == attempt + int(retry)


def test_no_sources(tmp_path: Path) -> None:
    model = ScriptedChatModel()  # must not be asked: nothing to judge
    out = _run(
        _state("How do I configure the retry policy?", context="", candidates=[]),
        _settings(tmp_path),
        model,
    )
    assert out["rag_grounded"] is False
    assert out["rag_grounding"]["reasons"] == ["no sources were found for the question"]
    assert model.calls == []


def test_no_knowledge_base_gives_add_documents_and_no_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KBGRAPH_FOLDER", raising=False)
    out = _run(_state("anything at all", context="", candidates=[]), RagSettings())
    assert out["rag_next"] == "end"
    assert out["rag_grounding"]["guidance"][0].startswith(
        "add documents: configure knowledge_bases"
    )


def test_failed_searches_do_not_retry(tmp_path: Path) -> None:
    debug = {
        "steps": [{"node": "retrieve", "data": {"errors": {"docs": ["IndexNotFoundError: none"]}}}],
        "fallbacks": [],
    }
    state = _state("retry policy", context="", candidates=[], rag_retrieval_debug=debug)
    out = _run(state, _settings(tmp_path))
    assert out["rag_next"] == "end"
    assert out["rag_grounding"]["guidance"][0].startswith("fix the knowledge base errors first")


def test_llm_verdict_counts(tmp_path: Path) -> None:
    model = ScriptedChatModel(
        responses=[
            {
                "grounded": False,
                "reason": "mentions retries, not their limit",
                "missing": "the retry limit",
            }
        ]
    )
    out = _run(_state("How do I configure the retry policy?"), _settings(tmp_path), model)
    assert out["rag_grounded"] is False
    # said as the model's reason: a small model's "reason" is often a claim of its own
    assert out["rag_grounding"]["reasons"][0] == "chat model: mentions retries, not their limit"
    assert "the retry limit" in out["rag_grounding"]["guidance"][0]
    assert "Sources:\n" + CONTEXT in model.calls[0].messages[-1].content
    assert debug_of(out)["steps"][0]["path"] == "llm"


@pytest.mark.parametrize("junk", ["1.0.0", "...", "{}", " ", "a 1"])
def test_a_reason_without_words_is_not_shown_as_one(tmp_path: Path, junk: str) -> None:
    # A small model's reason "1.0.0" was printed as `Grounded: yes (1.0.0; ...)`: the
    # verdict is the model's, the reason is said to be its verdict.
    model = ScriptedChatModel(responses=[{"grounded": False, "reason": junk, "missing": junk}])
    out = _run(_state("How do I configure the retry policy?"), _settings(tmp_path), model)
    assert out["rag_grounded"] is False
    reasons = out["rag_grounding"]["reasons"]
    assert reasons[0] == "chat model verdict" and junk.strip() not in reasons[1:]
    assert all(junk not in g for g in out["rag_grounding"]["guidance"] if junk.strip())


@pytest.mark.parametrize(
    "responses", [["?", "?"], [TimeoutError("judge too slow")], [ValueError("refused")] * 2]
)
def test_llm_failure_falls_back(tmp_path: Path, responses: list[Any]) -> None:
    model = ScriptedChatModel(responses=responses)
    out = _run(_state("How do I configure the retry policy?"), _settings(tmp_path), model)
    assert out["rag_grounded"] is True  # the heuristic's verdict
    debug = debug_of(out)
    assert debug["steps"][0]["path"] == "fallback"
    assert {f["node"] for f in debug["fallbacks"]} == {"grounding_check"}


def test_coverage_ignores_the_context_headers(tmp_path: Path) -> None:
    context = "[1] Source: docs/authentication.md, lines 1-3, score: 0.90\nKeys rotate monthly."
    state = _state(
        "What does authentication.md say about the capital of France?",
        context=context,
        citations=[{"n": 1, "chunk_id": "a", "text": "Keys rotate monthly."}],
    )
    out = _run(state, _settings(tmp_path))
    assert out["rag_grounded"] is False
    assert out["rag_grounding"]["reasons"][0].startswith("0 of 4 question terms")


RETRY_TIMEOUT = "The retry policy gives every provider call a timeout of 10 seconds."
WEBHOOK_TIMEOUT = "A webhook endpoint has 10 seconds (timeout) to answer."
FOLLOW_UP = "What about its timeout?"
STANDALONE = "What about its timeout? configure retry policy"


@pytest.mark.parametrize(
    ("context", "grounded"),
    [
        (RETRY_TIMEOUT + " Configure it in harbor.yaml.", True),
        (WEBHOOK_TIMEOUT, False),  # the question's own word, but the wrong topic
        (CONTEXT, False),  # the topic, but not what was asked about it
    ],
)
def test_follow_up_is_checked_against_its_standalone_form(context: str, grounded: bool) -> None:
    verdict, reasons, _ = heuristic_verdict(
        FOLLOW_UP, context, None, RagSettings(), standalone=STANDALONE
    )
    assert verdict is grounded
    assert "terms of the standalone question" in reasons[1]
    # The raw question alone would pass the wrong topic: the defect this guards against.
    assert heuristic_verdict(FOLLOW_UP, WEBHOOK_TIMEOUT, None, RagSettings())[0] is True


def test_node_reads_the_standalone_question(tmp_path: Path) -> None:
    state = _state(FOLLOW_UP, context=WEBHOOK_TIMEOUT, rag_standalone=STANDALONE)
    out = _run(state, _settings(tmp_path))
    assert out["rag_grounded"] is False
    assert debug_of(out)["steps"][0]["data"]["missing"] == ["configure", "retry", "policy"]


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("What does docs/configuration.md say about the retry policy?",
         ["docs", "configuration", "md"]),
        ("Which retry policy settings are in the YAML file?", ["yaml", "file"]),
    ],
)  # fmt: skip
def test_words_that_named_the_scope_are_not_looked_for(
    tmp_path: Path, question: str, terms: list[str]
) -> None:
    scope: RagScope = {
        "knowledge_bases": ["docs"], "paths": ["docs/configuration.md"], "kinds": [],
        "widened": False, "reason": "", "terms": terms,
    }  # fmt: skip
    text = "Change max_attempts to tune the retry policy."
    out = _run(_state(question, text, rag_scope=scope), _settings(tmp_path))
    assert out["rag_grounded"] is True
    assert out["rag_next"] == "end", "the named scope is kept, not thrown away by a retry"
    without = _run(_state(question, text, rag_scope={**scope, "terms": []}), _settings(tmp_path))
    assert without["rag_grounded"] is False


def test_a_widened_retry_keeps_the_scope_words(tmp_path: Path) -> None:
    scope: RagScope = {
        "knowledge_bases": ["docs"], "paths": ["docs/configuration.md"], "kinds": [],
        "widened": False, "reason": "", "terms": ["configuration", "md"],
    }  # fmt: skip
    out = _run(
        _state("configuration.md on the capital of France", rag_scope=scope), _settings(tmp_path)
    )
    assert out["rag_next"] == "retry"
    assert out["rag_scope"]["paths"] == [] and out["rag_scope"]["terms"] == ["configuration", "md"]
    assert debug_of(out)["steps"][0]["data"]["retry_reason"] == "the scope can be widened"


def test_no_retry_when_nothing_new_is_left(tmp_path: Path) -> None:
    question = "What is the capital of France?"
    debug = {
        "steps": [{"node": "rewrite_query", "data": {"queries": [question, "france capital"]}}],
        "fallbacks": [],
    }
    out = _run(_state(question, rag_retrieval_debug=debug), _settings(tmp_path, max_rewrites=3))
    assert out["rag_next"] == "end" and "rag_attempt" not in out
    data = debug_of(out)["steps"][0]["data"]
    assert data["retry"] is False and data["retry_reason"].startswith("nothing new to search")


def test_a_looping_reason_is_overruled_and_a_long_one_cut(tmp_path: Path) -> None:
    # A small model's 2,000-character reason (issue 30): when it loops the verdict is not
    # taken (the heuristic's stands, the overruling recorded); otherwise it is cut.
    loop = {"grounded": False, "reason": "The sources do not say it. " * 80, "missing": "x " * 500}
    model = ScriptedChatModel(responses=[loop])
    out = _run(_state("How do I configure the retry policy?"), _settings(tmp_path), model)
    assert out["rag_grounded"] is True  # the heuristic's verdict
    (overruled,) = debug_of(out)["overrulings"]
    assert overruled["reason"].startswith("the chat model's verdict is not taken: its reason ")
    assert len(overruled["proposal"]["reason"]) <= 121
    words = " ".join(f"word{i}" for i in range(400))
    model = ScriptedChatModel(responses=[{"grounded": False, "reason": words, "missing": words}])
    out = _run(_state("How do I configure the retry policy?"), _settings(tmp_path), model)
    assert out["rag_grounded"] is False
    assert len(out["rag_grounding"]["reasons"][0]) == len("chat model: ") + 300
    assert all(len(g) < 600 for g in out["rag_grounding"]["guidance"])


@pytest.mark.parametrize(
    ("question", "missing"),
    [
        ("Comment configurer la politique de réessai ?", ["politique", "réessai"]),
        (
            "Wie ändere ich die Anzahl der Wiederholungen?",
            ["ändere", "die", "anzahl", "wiederholungen"],
        ),
        ("¿Cómo cambio el número de reintentos?", ["cambio", "número", "reintentos"]),
    ],
)
def test_missing_terms_of_a_question_in_another_language(
    tmp_path: Path, question: str, missing: list[str]
) -> None:
    # issue 30: its stop words ("comment", "la", "wie") were listed as missing terms.
    out = _run(_state(question), _settings(tmp_path))
    assert debug_of(out)["steps"][0]["data"]["missing"] == missing


class _InProcess(ScriptedChatModel):
    """A scripted model that says it computes in this process, as a ``gguf:`` model does."""

    runs_in_process: ClassVar[bool] = True


@pytest.mark.parametrize(
    ("model_cls", "choice", "asked"),
    [
        (_InProcess, None, False),  # a gguf model: its verdict cost ~10 CPU-s and timed out
        (_InProcess, True, True),
        (ScriptedChatModel, None, True),  # a model served elsewhere is asked
        (ScriptedChatModel, False, False),
    ],
)
def test_the_model_is_asked_for_its_verdict_as_grounding_model_says(
    tmp_path: Path, model_cls: type[ScriptedChatModel], choice: bool | None, asked: bool
) -> None:
    model = model_cls(responses=[{"grounded": False, "reason": "it lacks the limit"}])
    settings = _settings(tmp_path, grounding_model=choice)
    out = _run(_state("How do I configure the retry policy?"), settings, model)
    assert len(model.calls) == int(asked)
    assert out["rag_grounded"] is (not asked)  # the heuristic verdict is "grounded" here
    step = debug_of(out)["steps"][0]
    assert step["path"] == ("llm" if asked else "heuristic")
    assert step["data"].get("model_asked", True) is asked


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("How do I enable TLS on the Harbor API port?", ["TLS", "Harbor", "API"]),
        ("Which GraphQL endpoint lists orders on S3 or gRPC?", ["GraphQL", "S3", "gRPC"]),
        ("Does Harbor publish to Kafka? Which topic?", ["Harbor", "Kafka"]),  # not "Which"
        ("How do I configure the retry policy?", []),  # a sentence's first word is no name
        ("Is it OK to retry?", []),
        ("Les messages d'erreur de l'API sont-ils traduits ?", ["API"]),
    ],
)
def test_the_names_a_question_writes(question: str, names: list[str]) -> None:
    assert asked_names(question) == names


def test_a_name_is_mentioned_by_its_stem_or_a_longer_form() -> None:
    text = "Connect to postgresql://db. Harbor's queues retry."
    assert unmentioned(["Postgres", "Harbor", "Queue", "Kafka", "TLS"], text) == ["Kafka", "TLS"]


@pytest.mark.parametrize("model_says_grounded", [False, True])
def test_a_question_naming_what_no_source_mentions_is_not_grounded(
    tmp_path: Path, model_says_grounded: bool
) -> None:
    # A new user's "Which Kafka topic does Harbor publish order events to?" was answered
    # with unrelated quotes, "Grounded: yes (4 of 6 question terms ...)": the knowledge
    # base has no Kafka, and lent "topic", "events", "Harbor" to the coverage.
    context = "Harbor publishes order events as webhooks; each topic is an event type."
    cands = [candidate("a", text=context, scores={"q0:vector": 0.5, "similarity": 0.5})]
    model = (
        ScriptedChatModel(responses=[{"grounded": True, "reason": "events are described"}])
        if model_says_grounded
        else None
    )
    question = "Which Kafka topic does Harbor publish order events to?"
    out = _run(_state(question, context, candidates=cands), _settings(tmp_path), model)
    assert out["rag_grounded"] is False
    assert (
        "the question names Kafka, which no retrieved source mentions"
        in (out["rag_grounding"]["reasons"])
    )
    assert "kafka" in out["rag_grounding"]["guidance"][0].lower()
    # The same question about a name the sources write stays grounded.
    named = context.replace("webhooks", "Kafka messages")
    cands = [candidate("a", text=named, scores={"q0:vector": 0.5, "similarity": 0.5})]
    out = _run(_state(question, named, candidates=cands), _settings(tmp_path))
    assert out["rag_grounded"] is True


def test_a_word_that_merely_begins_like_a_name_does_not_mention_it() -> None:
    text = "See the quickstart to open a client."
    assert unmentioned(["QUIC", "OpenTelemetry", "Quickstarts"], text) == ["QUIC", "OpenTelemetry"]
