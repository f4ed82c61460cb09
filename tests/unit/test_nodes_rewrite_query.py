"""RewriteQuery: the original question first, standalone follow-ups, keyword variants, new
words on a retry, the chat model's rewrites when configured."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from kbgraph.graphs._nodes.rewrite_query import (
    MAX_QUERIES,
    heuristic_queries,
    is_follow_up,
    plan_queries,
    rewrite_query,
    standalone,
    unique_queries,
)
from kbgraph.graphs._turns import mark_answer
from kbgraph.prompts import load_prompt, render_prompt
from kbgraph.testing import ScriptedChatModel

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
        ("How do I rotate them?", True),
        ("How do I change that?", True),
        ("Is that configurable?", True),
        ("And what's the default?", True),
        ("How do I add one?", True),
        ("Does the old one keep working?", True),
        ("Is one key enough for two services?", False),
        ("How do I rotate API keys without downtime?", False),
        ("Which provider clients share the backoff configuration?", False),
        # few topic words do not make a follow-up: this one is complete on its own
        ("What is the webhook timeout?", False),
        ("Why does Harbor retry 429?", False),
        # "that" as a conjunction or a relative pronoun, and "it" pointing at nothing
        ("How do I verify that a webhook is signed?", False),
        ("What are the keys that expire?", False),
        ("Is it possible to disable retries?", False),
        ("Wie lange dauert die Zustellung?", False),
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
    assert queries[2] == "timeout configure retry policy"


def test_keyword_variant_drops_stop_words_and_keeps_unicode() -> None:
    queries = heuristic_queries("Quand est-ce que le café ouvre le matin à Zürich ?", [], 0, [])
    assert queries[0].startswith("Quand")
    assert "café" in queries[-1] and "zürich" in queries[-1]


def test_standalone_question_gives_two_queries() -> None:
    queries = heuristic_queries("How do I rotate API keys without downtime?", [], 0, [])
    assert queries == ["How do I rotate API keys without downtime?", "rotate api keys downtime"]


def test_standalone_never_takes_words_of_the_reply() -> None:
    # The extractive header and canned replies used to leak in as "frequent words".
    header = load_prompt("agent_extractive_header").strip()
    for reply in (
        f"{header}\n\n- Harbor retries webhooks 7 times [1] (docs/api/webhooks.md:40)",
        render_prompt("agent_not_grounded", knowledge_bases="docs", reasons="- r",
                      guidance="- g"),
        load_prompt("agent_already_answered"),
    ):  # fmt: skip
        state = state_of("How often are Harbor webhooks retried?", reply, "How do I rotate them?")
        full = standalone("How do I rotate them?", state["messages"])
        assert full == "How do I rotate them? often harbor webhooks retried"


def _marked(text: str, section: str | None, source: str = "docs/authentication.md") -> Any:
    citation = {"kb": "docs", "source": source, "section": section}
    state = {"rag_should_retrieve": True, "rag_grounded": True, "rag_citations": [citation]}
    return mark_answer(AIMessage(text), state, "extractive")


@pytest.mark.parametrize(
    ("section", "source", "added"),
    [
        # the deepest heading; "rotating" is not added to a question that says "rotate"
        ("Authentication > Rotating a key", "docs/authentication.md", "key"),
        ("Authentication > Key expiry", "docs/authentication.md", "key expiry"),
        (None, "docs/api-keys_guide.md", "api keys guide"),
    ],
)
def test_standalone_adds_the_section_or_file_the_answer_cited(
    section: str | None, source: str, added: str
) -> None:
    messages = [
        HumanMessage("How do clients authenticate?"),
        _marked("With API keys [1].", section, source),
        HumanMessage("How do I rotate them?"),
    ]
    full = standalone("How do I rotate them?", messages)
    assert full == f"How do I rotate them? clients authenticate {added}"


def test_follow_up_of_a_follow_up_keeps_the_first_topic() -> None:
    state = state_of(
        "How do clients authenticate?", "With API keys [1].",
        "How do I rotate them?", "Run harbor keys rotate [1].",
        "And how long does the old one keep working?",
    )  # fmt: skip
    full = standalone("And how long does the old one keep working?", state["messages"])
    assert full is not None and "rotate" in full and "authenticate" in full


def test_a_standalone_question_is_completed_only_on_a_retry() -> None:
    # "What is the webhook timeout?" after a retry-policy question is about webhooks: the
    # first attempt searches it as asked; only if that finds nothing grounded does the
    # retry add the previous topic.
    state = state_of(*CONVERSATION, "What is the webhook timeout?")
    first = plan_queries("What is the webhook timeout?", state["messages"], 0)
    assert first.completed is None and first.standalone == "What is the webhook timeout?"
    assert all("retry" not in q for q in first.queries)
    retry = plan_queries("What is the webhook timeout?", state["messages"], 1, first.queries)
    assert retry.completed == "the question alone was not grounded"
    assert retry.queries[1] == "What is the webhook timeout? configure retry policy"


def test_retry_searches_the_missing_words() -> None:
    question = "How do I rotate API keys without downtime?"
    first = heuristic_queries(question, [], 0, [])
    plan = plan_queries(question, [], 1, first, missing=["downtime"])
    assert plan.queries == [question, "downtime", "downtime rotate keys"]


def test_nothing_new_to_search_on_a_retry() -> None:
    question = "What is the capital of France?"
    first = heuristic_queries(question, [], 0, [])
    assert first == [question, "capital france"]
    assert plan_queries(question, [], 1, first, missing=["capital", "france"]).queries == [question]


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
        # the same words in another order, case or inflection are the same search
        (["Q?", "keys rotate api", "rotate API key"], ["rotate api keys"], ["Q?"]),
        (["Q?", "b a", "a b", "c"], [], ["Q?", "b a", "c"]),
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
    # the question and its standalone form come first, whatever the model writes
    assert out["rag_queries"] == [
        "What about its timeout?",
        "What about its timeout? configure retry policy",
        "What is the timeout of the retry policy?",
    ]
    assert out["rag_rewrites"] == ["What is the timeout of the retry policy?"]
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
