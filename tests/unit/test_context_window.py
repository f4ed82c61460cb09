"""Prompts cut down to a chat model's declared context window: the generic search over
units, the numbered sources (answer, GroundingCheck), the passages (Rerank) and the LLM
judge's context. The scripted model counts words as tokens (``profile`` sets its window)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from kbgraph._base.context_window import (
    JSON_RESERVE_TOKENS,
    byte_bound,
    first_lines,
    input_token_limit,
    largest_fitting,
)
from kbgraph.agents._chat import answer_prompt, compose_answer
from kbgraph.errors import JudgeError
from kbgraph.evals._judges.llm import LLMJudge
from kbgraph.graphs._nodes._fit_sources import fit_sources
from kbgraph.graphs._nodes._llm import prompt_messages
from kbgraph.graphs._nodes.build_context import block_of_citation, render_blocks
from kbgraph.graphs._nodes.grounding_check import grounding_check
from kbgraph.graphs._nodes.rerank import rerank
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import Citation
from kbgraph.testing import ScriptedChatModel

from ._rag_fakes import candidate, debug_of, deps_for, runtime_for, state_of


def windowed(limit: int | None, responses: list[Any] | None = None) -> ScriptedChatModel:
    profile = None if limit is None else {"max_input_tokens": limit}
    return ScriptedChatModel(responses=responses or [], default="ok", profile=profile)


def words_prompt(k: int) -> list[BaseMessage]:
    return [SystemMessage("system prompt"), HumanMessage(" ".join(["word"] * (10 * k)))]


def citation(n: int, text: str, source: str = "docs/a.md", start: int = 1) -> Citation:
    return {
        "n": n, "chunk_id": f"c{n}", "source": source, "kb": "docs", "line_start": start,
        "line_end": start + text.count("\n"), "score": 1.0 / n, "text": text,
        "section": None, "page": None,
    }  # fmt: skip


CITATIONS = [
    citation(1, "Harbor retries failed calls.\nSet max_attempts in harbor.yaml.", start=3),
    citation(2, "Überall: the café opens at 8.\nCRLF lines end here.", "notes/café.md"),
    citation(3, "Tokens expire after one hour.\nRefresh them daily.", "auth.md", start=10),
]
CONTEXT = render_blocks([block_of_citation(c) for c in CITATIONS])


# -- the generic search ---------------------------------------------------------------


def test_a_model_without_a_window_gets_everything() -> None:
    fit = largest_fitting(windowed(None), words_prompt, 50)
    assert fit is not None and fit.kept == 50 and not fit.trimmed and fit.limit is None


def test_a_prompt_under_the_byte_bound_is_not_counted() -> None:
    fit = largest_fitting(windowed(10_000), words_prompt, 3)
    assert fit is not None and fit.kept == 3 and fit.prompt_tokens is None
    assert byte_bound(words_prompt(3)) <= 10_000


@pytest.mark.parametrize("limit", [6, 20, 57, 64, 150, 404])
def test_the_largest_fitting_prompt_is_found(limit: int) -> None:
    model = windowed(limit)
    fit = largest_fitting(model, words_prompt, 40)
    counts = [model.get_num_tokens_from_messages(words_prompt(k)) for k in range(41)]
    best = max((k for k in range(41) if counts[k] <= limit), default=None)
    if best is None:
        assert fit is None
    else:
        assert fit is not None and fit.kept == best and fit.messages == words_prompt(best)
        assert fit.trimmed is (best < 40)


def test_reserve_leaves_room() -> None:
    model = windowed(100)
    plain = largest_fitting(model, words_prompt, 40)
    reserved = largest_fitting(model, words_prompt, 40, reserve=40)
    assert plain is not None and reserved is not None
    assert reserved.kept < plain.kept and reserved.limit == 60


def test_input_token_limit_reads_the_profile() -> None:
    assert input_token_limit(windowed(None)) is None
    assert input_token_limit(windowed(512)) == 512


def test_first_lines_marks_the_cut() -> None:
    assert first_lines("a\nb\nc", 5) == "a\nb\nc"
    cut = first_lines("a\r\nb\nc", 1)
    assert cut.startswith("a\r\n[… the rest was cut")


# -- numbered sources -------------------------------------------------------------------


def _build(context: str) -> list[BaseMessage]:
    return [SystemMessage(f"Answer from these.\n{context}"), HumanMessage("question?")]


def _tokens(context: str) -> int:
    return windowed(None).get_num_tokens_from_messages(_build(context))


def test_sources_that_fit_are_sent_as_they_are() -> None:
    fit = fit_sources(windowed(10_000), CONTEXT, CITATIONS, _build)
    assert fit is not None and not fit.trimmed and fit.context == CONTEXT
    assert fit.shown == [1, 2, 3]


def test_the_last_sources_go_first_and_numbers_stay() -> None:
    two = render_blocks([block_of_citation(c) for c in CITATIONS[:2]])
    fit = fit_sources(windowed(_tokens(two)), CONTEXT, CITATIONS, _build)
    assert fit is not None and fit.trimmed
    assert fit.shown == [1, 2] and fit.cut is None and fit.context == two
    assert "[2] Source: notes/café.md" in fit.context and "[3]" not in fit.context
    assert "sources 1-2 of 3 shown in full" in fit.describe()


def test_a_source_too_long_alone_is_cut_to_its_first_lines() -> None:
    long = citation(1, "\n".join(f"line {i} of a long source" for i in range(40)), start=5)
    context = render_blocks([block_of_citation(long)])
    fit = fit_sources(windowed(_tokens(context) // 2), context, [long], _build)
    assert fit is not None and fit.shown == [] and fit.cut is not None
    number, last_line = fit.cut
    assert number == 1 and 5 < last_line < 44
    assert f"[1] Source: docs/a.md, lines 5-{last_line}," in fit.context
    assert f"line {last_line - 5} of a long source" in fit.context
    assert f"line {last_line - 4} of" not in fit.context


def test_nothing_fits_when_the_prompt_alone_is_too_long() -> None:
    assert fit_sources(windowed(3), CONTEXT, CITATIONS, _build) is None
    fit = fit_sources(windowed(_tokens("") + 1), CONTEXT, CITATIONS, _build)
    assert fit is not None and fit.empty


def _answer_state() -> dict[str, Any]:
    return {
        "messages": [HumanMessage("How do I configure retries?")],
        "rag_should_retrieve": True, "rag_grounded": True,
        "rag_context": CONTEXT, "rag_citations": CITATIONS, "rag_queries": ["retries"],
    }  # fmt: skip


def test_the_answer_is_generated_from_the_sources_that_fit() -> None:
    full, _ = answer_prompt(_answer_state(), windowed(None))  # type: ignore[arg-type]
    model = windowed(windowed(None).get_num_tokens_from_messages(full) - 5, ["Set it [1]."])
    reply = compose_answer(_answer_state(), RagSettings(), model)  # type: ignore[arg-type]
    assert reply.mode == "llm" and reply.text == "Set it [1]."
    assert reply.trimmed is not None and "sources 1-2 of 3 shown" in reply.trimmed
    sent = "\n".join(m.text for m in model.calls[0].messages)
    assert "[2] Source: notes/café.md" in sent and "[3] Source" not in sent


def test_an_answer_whose_sources_cannot_fit_falls_back_to_quotes() -> None:
    model = windowed(12, ["never sent"])
    reply = compose_answer(_answer_state(), RagSettings(), model)  # type: ignore[arg-type]
    assert reply.mode == "fallback" and reply.text.startswith("Extractive answer")
    assert reply.error is not None and reply.error.startswith("ContextLengthError")
    assert model.calls == []


# -- nodes -----------------------------------------------------------------------------


def _grounding_state() -> Any:
    return state_of(
        "How do I configure retries?",
        rag_context=CONTEXT,
        rag_citations=CITATIONS,
        rag_candidates=[candidate("c1")],
        rag_attempt=0,
    )


def _settings(tmp_path: Path, **overrides: Any) -> Any:
    return runtime_for(
        RagSettings(knowledge_bases=[{"name": "docs", "folder": str(tmp_path)}], **overrides)
    )


def test_grounding_check_sends_the_sources_that_fit(tmp_path: Path) -> None:
    verdict = {"grounded": True, "reason": "source 1 says so", "missing": ""}
    full = prompt_messages(
        "grounding_check", question="How do I configure retries?", context=CONTEXT
    )
    limit = windowed(None).get_num_tokens_from_messages(list(full)) + JSON_RESERVE_TOKENS - 5
    model = windowed(limit, [verdict])
    out = grounding_check(_grounding_state(), _settings(tmp_path), deps_for(model=model))
    step = debug_of(out)["steps"][0]
    assert step["path"] == "llm" and "context_trimmed" in step["data"]
    assert "[3] Source" not in model.calls[0].messages[-1].text


def test_grounding_check_without_room_keeps_its_heuristic(tmp_path: Path) -> None:
    model = windowed(JSON_RESERVE_TOKENS + 40, ["never sent"])
    out = grounding_check(_grounding_state(), _settings(tmp_path), deps_for(model=model))
    debug = debug_of(out)
    assert debug["steps"][0]["path"] == "fallback" and model.calls == []
    assert [f["stage"] for f in debug["fallbacks"]] == ["context"]


def test_llm_rerank_shows_the_passages_that_fit(tmp_path: Path) -> None:
    pool = [candidate(f"c{i}", text=f"passage {i} " + "filler " * 60) for i in range(8)]
    model = windowed(400, [{"ranking": [2, 1], "reason": "2 first"}])
    state = state_of("retry policy", rag_candidates=pool, rag_queries=["retry policy"])
    out = rerank(state, _settings(tmp_path, rerank="llm"), deps_for(model=model))
    step = debug_of(out)["steps"][0]
    shown = int(step["data"]["context_trimmed"].split(" of ")[0])
    assert 2 <= shown < 8 and step["path"] == "llm"
    assert f"{shown} passages:" in model.calls[0].messages[-1].text
    assert [c["chunk_id"] for c in out["rag_candidates"][:2]] == ["c1", "c0"]
    assert len(out["rag_candidates"]) == 8


# -- the LLM judge ---------------------------------------------------------------------


def test_the_judge_cuts_its_context_to_the_window() -> None:
    context = "\n".join(f"Fact {i}: the harbor opens at {i}." for i in range(200))
    model = windowed(600, [{"verdicts": [{"claim": 1, "verdict": "supported"}]}])
    (judgement,) = LLMJudge(model).judge_claims(["The harbor opens at 3."], context)
    assert judgement.verdict == "supported"
    sent = model.calls[0].messages[-1].text
    assert "Fact 3:" in sent and "Fact 199:" not in sent and "was cut to fit" in sent


def test_the_judge_says_when_even_the_question_does_not_fit() -> None:
    with pytest.raises(JudgeError, match="context window"):
        LLMJudge(windowed(5)).judge_claims(["A claim."], "Some context.")
