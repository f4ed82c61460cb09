"""RewriteQuery: the original question first, standalone follow-ups, keyword variants, new
words on a retry, the chat model's rewrites when configured."""

from __future__ import annotations

from typing import Any

import pytest

from graphs.nodes.rewrite_query import (
    MAX_QUERIES,
    heuristic_queries,
    is_follow_up,
    rewrite_query,
    standalone,
    unique_queries,
)
from graphs.testing import ScriptedChatModel

from ._rag_fakes import debug_of, deps_for, runtime_for, state_of

CONVERSATION = (
    "How do I configure the retry policy?",
    "Set max_attempts and backoff_ms in harbor.yaml [1]. The retry policy applies to providers.",
)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What about its timeout?", True),
        ("And the default?", True),
        ("how about webhooks", True),
        ("Does that apply to webhooks too?", True),
        ("Why?", True),
        ("How do I rotate API keys without downtime?", False),
        ("Which provider clients share the backoff configuration?", False),
    ],
)
def test_is_follow_up(question: str, expected: bool) -> None:
    assert is_follow_up(question) is expected


def test_standalone_adds_previous_terms() -> None:
    state = state_of(*CONVERSATION, "What about its timeout?")
    full = standalone("What about its timeout?", state["messages"])
    assert full is not None and full.startswith("What about its timeout?")
    added = full.removeprefix("What about its timeout?").split()
    assert added[:3] == ["configure", "retry", "policy"]
    assert "timeout" not in added


def test_standalone_none_without_history_or_for_standalone_questions() -> None:
    assert (
        standalone("What about its timeout?", state_of("What about its timeout?")["messages"])
        is None
    )
    question = "How do I rotate API keys without downtime?"
    assert standalone(question, state_of(*CONVERSATION, question)["messages"]) is None


def test_first_attempt_queries_original_first() -> None:
    state = state_of(*CONVERSATION, "What about its timeout?")
    queries = heuristic_queries("What about its timeout?", state["messages"], 0, [])
    assert queries[0] == "What about its timeout?"
    assert len(queries) == 3
    assert "retry" in queries[1] and "timeout" in queries[1]
    assert queries[2] == "timeout configure retry policy set max_attempts backoff_ms"


def test_keyword_variant_drops_stop_words_and_keeps_unicode() -> None:
    queries = heuristic_queries("Quand est-ce que le café ouvre le matin à Zürich ?", [], 0, [])
    assert queries[0].startswith("Quand")
    assert "café" in queries[-1] and "zürich" in queries[-1]


def test_standalone_question_gives_two_queries() -> None:
    queries = heuristic_queries("How do I rotate API keys without downtime?", [], 0, [])
    assert queries == ["How do I rotate API keys without downtime?", "rotate api keys downtime"]


def test_retry_uses_other_words() -> None:
    question = "How do I rotate API keys without downtime?"
    first = heuristic_queries(question, [], 0, [])
    second = heuristic_queries(question, [], 1, first)
    assert second[0] == question
    assert set(second[1:]).isdisjoint(first[1:])
    assert second[1:] == ["downtime rotate keys"]


@pytest.mark.parametrize(
    ("candidates", "tried", "expected"),
    [
        (["Q?", "q", "Q!", "other"], [], ["Q?", "other"]),
        (["Q?", "a", "b", "c", "d"], [], ["Q?", "a", "b"]),
        (["Q?", "a", "b"], ["a", "Q?"], ["Q?", "b"]),
        (["", "a"], [], ["a"]),
    ],
)
def test_unique_queries(candidates: list[str], tried: list[str], expected: list[str]) -> None:
    assert unique_queries(candidates, tried) == expected
    assert len(unique_queries(candidates, tried)) <= MAX_QUERIES


def _run(state: Any, model: Any = None) -> dict[str, Any]:
    return rewrite_query(state, runtime_for(None), deps_for(model=model))


def test_node_records_queries() -> None:
    out = _run(state_of(*CONVERSATION, "What about its timeout?"))
    assert out["rag_queries"][0] == "What about its timeout?"
    step = debug_of(out)["steps"][0]
    assert step["data"]["queries"] == out["rag_queries"] and step["data"]["follow_up"] is True


def test_node_retry_avoids_queries_of_earlier_attempt() -> None:
    state = state_of("How do I rotate API keys without downtime?")
    first = _run(state)
    later = {**state, "rag_attempt": 1, "rag_retrieval_debug": debug_of(first)}
    second = _run(later)
    assert second["rag_queries"][0] == first["rag_queries"][0]
    assert set(second["rag_queries"][1:]).isdisjoint(first["rag_queries"][1:])


def test_llm_rewrites() -> None:
    model = ScriptedChatModel(
        responses=[
            {
                "standalone_question": "What is the timeout of the retry policy?",
                "keyword_query": "retry policy timeout",
                "paraphrase": "How long does a provider call wait before it fails?",
            }
        ]
    )
    out = _run(state_of(*CONVERSATION, "What about its timeout?"), model)
    assert out["rag_queries"] == [
        "What about its timeout?",
        "What is the timeout of the retry policy?",
        "retry policy timeout",
    ]
    prompt = model.calls[0].messages[-1].content
    assert "user: How do I configure the retry policy?" in prompt
    assert "(first attempt)" in prompt
    assert debug_of(out)["steps"][0]["path"] == "llm"


def test_llm_retry_prompt_has_guidance_and_tried_queries() -> None:
    model = ScriptedChatModel(
        responses=[{"standalone_question": "rotate keys", "keyword_query": "", "paraphrase": ""}]
    )
    state = {
        **state_of("How do I rotate API keys?"),
        "rag_attempt": 1,
        "rag_grounding": {
            "grounded": False,
            "reasons": [],
            "guidance": ["other words: try synonyms"],
        },
        "rag_retrieval_debug": {
            "steps": [
                {
                    "node": "rewrite_query",
                    "data": {"queries": ["How do I rotate API keys?", "rotate api keys"]},
                }
            ],
            "fallbacks": [],
        },
    }
    out = _run(state, model)
    prompt = model.calls[0].messages[-1].content
    assert "other words: try synonyms" in prompt and "rotate api keys" in prompt
    assert out["rag_queries"] == ["How do I rotate API keys?", "rotate keys"]


@pytest.mark.parametrize(
    "responses",
    [["no json here", "nor here"], [TimeoutError()], [{"keyword_query": "missing standalone"}] * 2],
)
def test_llm_failure_falls_back(responses: list[Any]) -> None:
    model = ScriptedChatModel(responses=responses)
    state = state_of(*CONVERSATION, "What about its timeout?")
    out = _run(state, model)
    assert out["rag_queries"] == heuristic_queries(
        "What about its timeout?", state["messages"], 0, []
    )
    debug = debug_of(out)
    assert debug["steps"][0]["path"] == "fallback" and debug["fallbacks"]
