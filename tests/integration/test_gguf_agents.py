"""Every LLM path of kbgraph with a real model: SmolLM2-135M-Instruct, in process
(``gguf:``) and served by llama.cpp's own OpenAI-compatible HTTP server on 127.0.0.1
(``openai_compatible:``).

A 135M model decides, ranks and answers poorly and often writes JSON that does not parse.
What is checked is behaviour: no crash; every node that could use the model either did
(``llm`` / ``llm-json``) or recorded why not in ``rag_retrieval_debug``; every ``[N]`` of
the answer resolved or reported; sources trimmed rather than overflowing a small window;
the judge's verdicts or its clear error. Replies are short and the documents tiny, so the
module takes about a minute on a loaded 2-core machine (embeddings are the fake ones: this
module is about the chat model)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from kbgraph.agents import build_chat_agent
from kbgraph.errors import JudgeError
from kbgraph.evals._judges.llm import LLMJudge
from kbgraph.graphs._models import resolve_chat_model
from kbgraph.graphs._nodes._base import NodeDeps
from kbgraph.graphs._nodes.decide_retrieve import decide_retrieve
from kbgraph.graphs._nodes.grounding_check import GroundingVerdict
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._settings import RagSettings
from tests.e2e.conftest import make_docs
from tests.support.gguf import LlamaServer, smollm2_path, smollm2_spec

pytestmark = pytest.mark.integration
QUESTION = "How do I change the number of retries?"
LLM_NODES = ("select_scope", "rewrite_query", "rerank", "grounding_check")
# The longest a run may take: generous for a loaded machine, but a hang fails.
RUN_SECONDS = 240


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_docs(tmp_path_factory.mktemp("gguf-docs"))


@pytest.fixture
def registry() -> Iterator[SearcherRegistry]:
    reg = SearcherRegistry()
    yield reg
    reg.close_all()


def _settings(docs: Path, chat_model: str, **overrides: Any) -> RagSettings:
    values: dict[str, Any] = {
        "knowledge_bases": [{"name": "docs", "folder": str(docs), "description": "client docs"}],
        "embedding": "fake",
        "chat_model": chat_model,
        "rerank": "llm",
        "search": {"top_k": 2},
        "context_budget_tokens": 300,
        "max_rewrites": 0,
        # Asked although the model runs in this process (the default does not ask it):
        # these tests have every node meet the real model.
        "grounding_model": True,
        **overrides,
    }
    return RagSettings(**values)


def _run_agent(settings: RagSettings, registry: SearcherRegistry) -> dict[str, Any]:
    """The chat agent on QUESTION. Whatever the model proposes, a documented question is
    searched (a proposed skip is overruled), so every other node meets the model."""
    agent = build_chat_agent(registry=registry)
    started = time.monotonic()
    out: dict[str, Any] = agent.invoke({"messages": [("user", QUESTION)]}, context=settings)
    assert time.monotonic() - started < RUN_SECONDS
    assert out["rag_should_retrieve"] is True
    for overruled in out["rag_retrieval_debug"]["overrulings"]:
        assert overruled["reason"] and overruled["evidence"] is not None
    return out


def _assert_behaves(out: dict[str, Any], nodes: tuple[str, ...] = LLM_NODES) -> None:
    debug = out["rag_retrieval_debug"]
    steps = {step["node"]: step for step in debug["steps"]}
    failed = {f["node"] for f in debug["fallbacks"]}
    for node in nodes:
        path = steps[node]["path"]
        assert path in ("llm", "llm-json") or (path == "fallback" and node in failed), steps[node]
    for fallback in debug["fallbacks"]:
        assert fallback["error"].strip()
        assert fallback["stage"] in ("structured", "json", "context", "skipped")
    assert out["rag_citations"], "the fake-embedding search finds retry.md"
    if out["answer_mode"] == "llm":
        assert out["answer"].strip() and not out["answer"].startswith("Extractive answer")
        check = out["answer_check"]  # what the model wrote is checked against its sources
        assert check["judge"] == "offline" and check["error"] is None
        for claim in check["claims"]:
            assert claim["supported"] is (claim["evidence"] is not None)
    else:  # grounding said no, the model failed, or its answer could not be shown (policy
        # "repair": it loops, is cut off or cites nothing): the reason is on record
        assert out["answer_mode"] in ("not_grounded", "fallback"), out["answer_mode"]
        attempts = (out.get("answer_check") or {}).get("attempts") or []
        assert out["answer_mode"] == "not_grounded" or out["answer_error"] or attempts
        assert all(a["problems"] for a in attempts[:1])
    n_sources = len(out["rag_citations"])
    for c in out["answer_citations"]:
        assert 1 <= c["n"] <= n_sources and out["answer"][c["start"] : c["end"]] == c["marker"]
    for u in out["answer_unresolved"]:
        assert u["reason"] and out["answer"][u["start"] : u["end"]] == u["marker"]


def test_chat_agent_end_to_end_in_process(docs: Path, registry: SearcherRegistry) -> None:
    out = _run_agent(_settings(docs, smollm2_spec(n_ctx=2048, max_tokens=64)), registry)
    _assert_behaves(out)
    assert out["answer_trimmed"] is None


def test_decide_retrieve_asks_the_model(docs: Path) -> None:
    settings = _settings(docs, smollm2_spec(n_ctx=2048, max_tokens=64))
    state: Any = {"messages": [HumanMessage(QUESTION)]}
    out = decide_retrieve(state, _runtime(settings), NodeDeps())
    (step,) = out["rag_retrieval_debug"]["steps"]
    assert step["path"] in ("llm", "llm-json") or out["rag_retrieval_debug"]["fallbacks"]
    assert isinstance(out["rag_should_retrieve"], bool)


def test_a_small_window_trims_the_sources_instead_of_failing(
    docs: Path, registry: SearcherRegistry
) -> None:
    # Long sources and a 512-token window: the answer and GroundingCheck get what fits.
    long_docs = docs.parent / "gguf-long"
    long_docs.mkdir(exist_ok=True)
    lines = [
        f"Retry note {i}: set max_attempts in client.toml to retry {i} times." for i in range(60)
    ]
    (long_docs / "retries.md").write_text("# Retries\n\n" + "\n".join(lines) + "\n", "utf-8")
    settings = _settings(
        long_docs, smollm2_spec(n_ctx=512, max_tokens=48), rerank="heuristic",
        context_budget_tokens=1500, search={"top_k": 3},
    )  # fmt: skip
    out = _run_agent(settings, registry)
    grounding = next(
        s for s in out["rag_retrieval_debug"]["steps"] if s["node"] == "grounding_check"
    )
    skipped = [f for f in out["rag_retrieval_debug"]["fallbacks"] if f["stage"] == "skipped"]
    assert "context_trimmed" in grounding["data"] or skipped, grounding
    assert "ContextLengthError" not in str(out["rag_retrieval_debug"]["fallbacks"])
    if out["answer_mode"] == "llm":
        assert out["answer_trimmed"] and "shown" in out["answer_trimmed"]
    assert "exceeds the available context" not in str(out.get("answer_error"))


def test_llm_judge_with_the_real_model() -> None:
    judge = LLMJudge(smollm2_spec(n_ctx=2048, max_tokens=96), max_retries=0)
    context = "[1] retry.md\nSet max_attempts in client.toml to change the number of retries."
    try:
        verdicts = judge.judge_claims(
            ["max_attempts sets the number of retries.", "Retries are unlimited."], context
        )
    except JudgeError as exc:  # the model wrote no valid JSON twice: said clearly
        assert "gave no valid ClaimVerdictsOut" in str(exc)
    else:
        assert len(verdicts) == 2
        assert {v.verdict for v in verdicts} <= {"supported", "not_supported", "contradicted"}
    relevance = _or_error(lambda: judge.judge_answer(QUESTION, "Set max_attempts."))
    assert relevance is None or 0.0 <= relevance.score <= 1.0
    assert judge.usage.input_tokens > 0 and judge.usage.output_tokens > 0
    assert judge.name == "llm:SmolLM2-135M-Instruct.Q4_1.gguf"


def test_openai_compatible_path_against_llama_cpps_server(
    docs: Path, registry: SearcherRegistry
) -> None:
    """The agent through ``openai_compatible:`` against a real OpenAI-compatible server
    (llama.cpp's, on loopback) rather than a patched client. Over 30 s (~55 s): the server
    process loads SmolLM2 and answers every structured node and the answer over HTTP."""
    with LlamaServer(smollm2_path()) as server:
        spec = f"openai_compatible:smollm2@{server.base_url}"
        out = _run_agent(_settings(docs, spec, rerank="heuristic"), registry)
        _assert_behaves(out, tuple(n for n in LLM_NODES if n != "rerank"))
        # The replies came over HTTP (no outage: the server answered every call) ...
        assert not any(f.get("outage") for f in out["rag_retrieval_debug"]["fallbacks"])
        # ... and langchain-openai's structured output reaches llama.cpp's JSON-schema mode.
        model = resolve_chat_model(spec)
        assert model is not None
        prompt = "Do these sources answer 'Is Paris in France?' Sources: Paris is in France."
        try:
            verdict = model.with_structured_output(GroundingVerdict).invoke(prompt)
        except Exception as exc:  # the JSON did not close within the reply length
            assert "length limit was reached" in str(exc)
        else:
            assert isinstance(verdict, GroundingVerdict)


def _or_error(call: Any) -> Any:
    try:
        return call()
    except JudgeError:
        return None


def _runtime(settings: RagSettings) -> Any:
    from langgraph.runtime import Runtime

    return Runtime(context=settings, stream_writer=lambda _: None)
