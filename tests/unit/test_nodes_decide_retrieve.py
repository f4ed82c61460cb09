"""DecideRetrieve: small talk and already-answered questions skip retrieval; everything
else retrieves; the chat model decides when configured and failures fall back."""

from __future__ import annotations

from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from kbgraph.graphs._nodes.decide_retrieve import (
    answered_already,
    decide_retrieve,
    is_small_talk,
    route_after_decide,
    small_talk_kind,
)
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import RagState
from kbgraph.graphs._turns import mark_answer
from kbgraph.testing import ScriptedChatModel, refusal_message

from ._rag_fakes import deps_for, runtime_for, state_of


@pytest.mark.parametrize(
    "text",
    [
        "hi",
        "Hello!",
        "hey there",
        "thanks",
        "Thank you so much!",
        "thx",
        "good morning",
        "how are you?",
        "ok, bye",
        "cheers",
        "Merci beaucoup !",
        "¡Hola!",
        "danke",
        "Gracias",
    ],
)
def test_small_talk(text: str) -> None:
    assert is_small_talk(text)


@pytest.mark.parametrize(
    "text",
    [
        "How do I configure the retry policy?",
        "hi, how do I rotate an API key?",
        "thanks! what is the default timeout?",
        "What does error E42 mean?",
        "Wie konfiguriere ich die Wiederholungsrichtlinie?",
        "",
    ],
)
def test_not_small_talk(text: str) -> None:
    assert not is_small_talk(text)


def _run(state: Any, model: Any = None, settings: RagSettings | None = None) -> dict[str, Any]:
    return decide_retrieve(state, runtime_for(settings), deps_for(model=model))


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (("How do I configure retries?",), True),
        (("hello!",), False),
        (("How do I configure retries?", "Set max_attempts [1].", "thanks!"), False),
        (("How do I configure retries?", "Set max_attempts [1].", "Can you repeat that?"), False),
        (
            ("How do I configure retries?", "Set max_attempts [1].", "Summarize your last answer"),
            False,
        ),
        (  # an unmarked reply is not known to be grounded: search again
            ("How do I configure retries?", "Set max_attempts [1].", "how do I configure retries"),
            True,
        ),
        (("How do I configure retries?", "Set max_attempts [1].", "And the timeout?"), True),
    ],
)
def test_heuristic_decisions(turns: tuple[str, ...], expected: bool) -> None:
    out = _run(state_of(*turns))
    assert out["rag_should_retrieve"] is expected
    step = out["rag_retrieval_debug"]["steps"][0]
    assert step["node"] == "decide_retrieve" and step["path"] == "heuristic"
    assert step["data"]["decision"] == ("retrieve" if expected else "skip")
    assert route_after_decide(cast(RagState, out)) == ("select_scope" if expected else "__end__")


def _conversation(grounded: bool | None, repeat: str) -> list[Any]:
    reply = AIMessage("I could not find an answer to this in docs." if grounded is False else
                      "Set max_attempts [1].")  # fmt: skip
    if grounded is not None:
        reply = mark_answer(
            reply, {"rag_should_retrieve": True, "rag_grounded": grounded, "rag_citations": []}
        )
    return [HumanMessage("How do I configure retries?"), reply, HumanMessage(repeat)]


@pytest.mark.parametrize(
    ("grounded", "repeat", "skips"),
    [
        (True, "How do I configure retries?", True),
        (True, "configure RETRIES, how?", True),  # same words, other order
        (False, "How do I configure retries?", False),  # never answered: search again
        (None, "How do I configure retries?", False),  # unmarked: not known to be answered
        (True, "How do I configure timeouts?", False),
        (False, "Can you repeat that?", True),  # about the reply itself, whatever it said
    ],
)
def test_repeated_question_skips_only_after_a_grounded_answer(
    grounded: bool | None, repeat: str, skips: bool
) -> None:
    out = _run({"messages": _conversation(grounded, repeat)})
    assert out["rag_should_retrieve"] is not skips


def test_a_tool_call_step_between_question_and_reply_is_skipped() -> None:
    marked = mark_answer(
        AIMessage("Set max_attempts [1]."),
        {"rag_should_retrieve": True, "rag_grounded": True, "rag_citations": []},
    )
    messages = [
        HumanMessage("How do I configure retries?"),
        AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
        marked,
        HumanMessage("How do I configure retries?"),
    ]
    assert answered_already("How do I configure retries?", messages) is not None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("thanks, that was helpful!", "thanks"),
        ("Merci beaucoup", "thanks"),
        ("bye!", "goodbye"),
        ("thanks, bye", "goodbye"),
        ("see you later", "goodbye"),
        ("hello!", "greeting"),
        ("good morning", "greeting"),
    ],
)
def test_small_talk_kind(text: str, kind: str) -> None:
    assert is_small_talk(text)
    assert small_talk_kind(text) == kind


def test_repeat_request_without_previous_answer_is_not_answered() -> None:
    state = state_of("Can you repeat that?")
    assert answered_already("Can you repeat that?", state["messages"]) is None


def test_explicit_query_always_retrieves_even_as_small_talk() -> None:
    model = ScriptedChatModel()  # would raise if called
    out = _run(state_of("hi", rag_query="hello"), model=model)
    assert out["rag_should_retrieve"] is True
    assert model.calls == []


def test_no_question_skips() -> None:
    out = _run({"messages": []})
    assert out["rag_should_retrieve"] is False
    assert "no question" in out["rag_grounding"]["reasons"][0]


def test_resets_every_rag_key() -> None:
    out = _run(state_of("hello"))
    assert out["rag_candidates"] == [] and out["rag_citations"] == []
    assert out["rag_context"] == "" and out["rag_queries"] == []
    assert out["rag_attempt"] == 0 and out["rag_grounded"] is False
    assert out["rag_grounding"]["reasons"] == ["retrieval skipped: small talk needs no documents"]
    # a plain dict replaces the previous turn's debug record
    assert set(out["rag_retrieval_debug"]) == {"steps", "fallbacks", "overrulings"}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"retrieve": False, "reason": "greeting"}, False),
        ({"retrieve": True, "reason": "needs docs"}, True),
    ],
)
def test_llm_decides(reply: dict[str, Any], expected: bool) -> None:
    model = ScriptedChatModel(responses=[reply])
    # the heuristic would retrieve / skip the other way round for these texts
    text = "How do I configure retries?" if not expected else "hello"
    out = _run(state_of(text), model=model)
    assert out["rag_should_retrieve"] is expected
    assert out["rag_retrieval_debug"]["steps"][0]["path"] == "llm"
    # with no knowledge base to probe, a proposed skip stands (and says so)
    assert out["rag_retrieval_debug"]["steps"][0]["data"]["reason"].startswith(reply["reason"])
    assert f"Question: {text}" in model.calls[0].messages[-1].content


def test_llm_json_fallback_after_structured_failure() -> None:
    model = ScriptedChatModel(
        responses=[
            "I think you should search.",
            'Sure: ```json\n{"retrieve": false, "reason": "r"}\n```',
        ]
    )
    out = _run(state_of("How do I configure retries?"), model=model)
    assert out["rag_should_retrieve"] is False
    step = out["rag_retrieval_debug"]["steps"][0]
    assert step["path"] == "llm-json"
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert [f["stage"] for f in fallbacks] == ["structured"]
    assert "JSON" in model.calls[1].messages[-1].content


@pytest.mark.parametrize(
    ("responses", "stages"),
    [
        (["garbage", "still garbage"], ["structured", "json"]),
        ([{"retrieve": "maybe?"}, {"reason": "no verdict"}], ["structured", "json"]),
        ([refusal_message(), refusal_message()], ["structured", "json"]),
        ([TimeoutError("slow model")], ["structured"]),  # no second wait after a timeout
        ([RuntimeError("boom"), ConnectionError("down")], ["structured", "json"]),
    ],
)
def test_llm_failures_fall_back_to_heuristic(responses: list[Any], stages: list[str]) -> None:
    model = ScriptedChatModel(responses=responses)
    out = _run(state_of("hello there"), model=model)
    assert out["rag_should_retrieve"] is False  # the heuristic's verdict for small talk
    assert out["rag_retrieval_debug"]["steps"][0]["path"] == "fallback"
    fallbacks = out["rag_retrieval_debug"]["fallbacks"]
    assert [f["stage"] for f in fallbacks] == stages
    assert all(f["node"] == "decide_retrieve" and f["error"] for f in fallbacks)
    assert model.remaining == 0


def test_chat_model_from_settings_spec() -> None:
    # "fake" answers every call with plain prose: both LLM stages fail, heuristic decides.
    out = _run(state_of("How do I configure retries?"), settings=RagSettings(chat_model="fake"))
    assert out["rag_should_retrieve"] is True
    assert out["rag_retrieval_debug"]["steps"][0]["path"] == "fallback"


def test_a_looping_reason_is_overruled() -> None:
    # issue 30: a 2,000-character reason that loops is no evidence; the heuristic decides.
    reply = {"retrieve": False, "reason": "This is a greeting and needs no search. " * 50}
    out = _run(state_of("How do I configure retries?"), model=ScriptedChatModel(responses=[reply]))
    assert out["rag_should_retrieve"] is True
    debug = out["rag_retrieval_debug"]
    (overruled,) = debug["overrulings"]
    assert overruled["reason"].startswith("the chat model's decision is not taken: its reason")
    assert debug["steps"][0]["data"]["reason"] == "the question may be answered by the documents"
    long = " ".join(f"word{i}" for i in range(400))
    out = _run(
        state_of("hello"), model=ScriptedChatModel(responses=[{"retrieve": True, "reason": long}])
    )
    assert len(out["rag_retrieval_debug"]["steps"][0]["data"]["reason"]) == 300
