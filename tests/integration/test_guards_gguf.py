"""A real model's bad decisions are overruled by evidence, and a made-up number in an answer
is flagged by the real offline judge.

The model is the packaged SmolLM2-135M, steered (``tests.support.gguf.steered_smollm2``):
llama.cpp's grammar makes it propose what it was seen proposing to a new user (issue 20) —
"no search needed" for a documented question, a timestamp and a sentence said over and over
as rewrites of "How do I use HTTP/2?", a knowledge base that holds nothing on the question —
while it writes everything else itself. Unsteered, a small model proposes these often, but
which question draws which bad proposal depends on the exact prompt, so a test of the guards
must not wait for it to. About a minute on a loaded 2-core machine."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from kbgraph.agents import build_chat_agent
from kbgraph.graphs import AnswerCheckSettings
from kbgraph.graphs._nodes._base import OVERRULED_EVENT, NodeDeps
from kbgraph.graphs._nodes._rewrite_guard import rewrite_problem
from kbgraph.graphs._nodes.decide_retrieve import decide_retrieve
from kbgraph.graphs._nodes.rewrite_query import rewrite_query
from kbgraph.graphs._nodes.select_scope import select_scope
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._settings import RagSettings
from kbgraph.retrieval import KnowledgeBase
from kbgraph.testing import ScriptedChatModel
from tests.support.gguf import steered_smollm2

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SKIP = {"retrieve": {"const": False}, "reason": {"type": "string", "maxLength": 80}}
JUNK_REWRITES = {
    "standalone_question": {"type": "string", "pattern": "^2023-08-22 14:22:[0-9]{2}$"},
    "keyword_query": {"type": "string", "pattern": "^(The answer to this question is: 4\\. ){8}$"},
}
OTHER_KB = {
    "knowledge_bases": {"type": "array", "items": {"const": "handbook"}, "minItems": 1,
                        "maxItems": 1},
    "paths": {"type": "array", "maxItems": 0},
    "kinds": {"type": "array", "maxItems": 0},
}  # fmt: skip


@pytest.fixture(scope="module")
def kbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kbs")
    harbor = root / "harbor"
    shutil.copytree(ROOT / "examples" / "docs", harbor, ignore=shutil.ignore_patterns(".kbgraph"))
    handbook = root / "handbook"
    handbook.mkdir()
    (handbook / "vacation.md").write_text(
        "# Vacation\n\nEmployees get 25 vacation days per year.\n", encoding="utf-8"
    )
    for folder in (harbor, handbook):  # the probe reads an index as it is: never builds one
        KnowledgeBase(folder, embedding="fake").index()
    return {"harbor": harbor, "handbook": handbook}


def _run(node: Any, question: str, kbs: dict[str, Path], steer: dict[str, Any]) -> Any:
    settings = RagSettings(
        knowledge_bases=[
            {"name": "harbor", "folder": str(kbs["harbor"]), "description": "Harbor gateway docs"},
            {"name": "handbook", "folder": str(kbs["handbook"]), "description": "HR handbook"},
        ],
        embedding="fake",
    )
    events: list[Any] = []
    model = steered_smollm2(steer, n_ctx=2048, max_tokens=256)
    deps = NodeDeps(chat_model=model, registry=SearcherRegistry())
    runtime = Runtime(context=settings, stream_writer=events.append)
    out = node({"messages": [HumanMessage(question)]}, runtime, deps)
    return out, out["rag_retrieval_debug"], events


def test_a_proposed_skip_of_a_documented_question_is_overruled(kbs: dict[str, Path]) -> None:
    out, debug, events = _run(
        decide_retrieve,
        "How is the delay before a retry computed?",
        kbs,
        {"RetrieveDecision": SKIP},
    )
    assert debug["steps"][0]["path"] == "llm"
    assert debug["steps"][0]["data"]["proposal"]["retrieve"] is False
    assert out["rag_should_retrieve"] is True
    (overruled,) = debug["overrulings"]
    assert overruled["evidence"]["hits"][0]["source"] == "src/harbor/retry.py"
    assert [e for e in events if e["event"] == OVERRULED_EVENT] == [
        {"event": OVERRULED_EVENT, **overruled}
    ]


def test_a_proposed_skip_of_a_closing_stands(kbs: dict[str, Path]) -> None:
    out, debug, _ = _run(decide_retrieve, "ok got it, cheers", kbs, {"RetrieveDecision": SKIP})
    assert out["rag_should_retrieve"] is False and debug["overrulings"] == []


def test_junk_rewrites_are_not_searched(kbs: dict[str, Path]) -> None:
    question = "How do I use HTTP/2?"
    out, debug, _ = _run(rewrite_query, question, kbs, {"RewrittenQueries": JUNK_REWRITES})
    assert debug["steps"][0]["path"] == "llm"
    assert out["rag_queries"][0] == question
    # first=False: the heuristic's own keyword query has only the question's words
    assert all(rewrite_problem(q, question, first=False) is None for q in out["rag_queries"])
    (overruled,) = debug["overrulings"]
    dropped = overruled["evidence"]["dropped"]
    assert any(q.startswith("2023-08-22 14:22:") for q in dropped)
    assert any(q.startswith("The answer to this question is") for q in dropped)


def test_a_scope_that_leaves_out_every_probe_hit_is_widened(kbs: dict[str, Path]) -> None:
    out, debug, _ = _run(
        select_scope, "How do I configure the retry policy?", kbs, {"ScopeChoice": OTHER_KB}
    )
    assert debug["steps"][0]["path"] == "llm"
    (overruled,) = debug["overrulings"]
    assert overruled["proposal"]["knowledge_bases"] == ["handbook"]
    assert out["rag_scope"]["knowledge_bases"] == ["harbor", "handbook"]
    assert out["rag_scope"]["widened"] is True


def test_the_offline_judge_flags_a_made_up_number_with_its_claim(kbs: dict[str, Path]) -> None:
    answer = "By default Harbor makes 9 attempts [1]. Retries use exponential backoff [1]."
    # Policy 'flag': the answer is kept and flagged (the default 'repair' would replace it).
    settings = RagSettings(
        knowledge_bases=str(kbs["harbor"]),
        embedding="fake",
        answer_check=AnswerCheckSettings(policy="flag"),
    )
    out = build_chat_agent(chat_model=ScriptedChatModel(default=answer)).invoke(
        {"messages": [HumanMessage("How many attempts does Harbor make by default?")]},
        context=settings,
    )
    check = out["answer_check"]
    assert check["judge"] == "offline" and check["action"] == "flagged"
    made_up = next(c for c in check["claims"] if "9 attempts" in c["text"])
    assert made_up["supported"] is False and made_up["citations"] == [1]
    assert made_up["evidence"] is None
    assert check["score"] is not None and check["score"] < 0.75
