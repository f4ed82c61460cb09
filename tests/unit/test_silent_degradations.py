"""Silent degradations a trial with a real model found (issue 20, part 4), each now said
out loud: an index of another embedding model is not searched BM25-only as if nothing were
wrong; an empty or missing knowledge base is not "try synonyms"; an empty question is
refused; "anything" is no closing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import HumanMessage, ToolMessage

from kbgraph.agents import build_chat_agent
from kbgraph.cli import main
from kbgraph.graphs import build_rag_graph
from kbgraph.graphs.nodes._closings import ClosingDetector, default_detector
from kbgraph.graphs.settings import RagSettings
from kbgraph.graphs.tool import rag_search, tool_runtime
from kbgraph.retrieval import KnowledgeBase

QUESTION = "How many times does Harbor retry a failed call?"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder indexed with the fake model (384 dimensions)."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "retry.md").write_text(
        "# Retries\n\nHarbor retries a failed call 4 times with exponential backoff.\n",
        encoding="utf-8",
    )
    (folder / "größe.md").write_bytes("# Größe\r\n\r\nDie Größe in Megabyte.\r\n".encode())
    KnowledgeBase(folder, embedding="fake").index()
    return folder


def _tool(settings: RagSettings, query: str = "how many retries") -> ToolMessage:
    call = {"query": query, "runtime": tool_runtime(settings)}
    message = rag_search.invoke(
        {"type": "tool_call", "id": "c1", "name": "rag_search", "args": call}
    )
    assert isinstance(message, ToolMessage)
    return message


def test_another_embedding_model_is_an_error_not_a_bm25_only_success(indexed: Path) -> None:
    settings = RagSettings(knowledge_bases=[{"name": "docs", "folder": str(indexed)}],
                           embedding="fake:32")  # fmt: skip
    out = build_rag_graph().invoke({"messages": [HumanMessage(QUESTION)]}, context=settings)
    assert out["rag_grounded"] is False and out["rag_citations"] == []
    (reason,) = out["rag_grounding"]["reasons"]
    assert "ModelMismatchError" in reason and "fake:bow-384" in reason and "fake:bow-32" in reason
    (guidance,) = out["rag_grounding"]["guidance"]
    assert "rebuild_on_model_change" in guidance and "synonyms" not in guidance

    message = _tool(settings)
    assert message.status == "error" and "fake:bow-32" in str(message.content)

    agent = build_chat_agent().invoke({"messages": [HumanMessage(QUESTION)]}, context=settings)
    assert agent["answer_mode"] == "not_grounded" and "fake:bow-384" in agent["answer"]


def test_kbgraph_ask_with_another_model_exits_7(indexed: Path) -> None:
    result = CliRunner().invoke(main, ["ask", str(indexed), QUESTION, "--embedding", "fake:32"])
    assert result.exit_code == 7, result.output
    assert "fake:bow-384" in result.stderr and "Traceback" not in result.output


def test_an_empty_folder_says_it_has_no_documents(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    settings = RagSettings(knowledge_bases=[{"name": "notes", "folder": str(empty)}],
                           embedding="fake")  # fmt: skip
    out = build_rag_graph().invoke({"messages": [HumanMessage(QUESTION)]}, context=settings)
    assert out["rag_grounding"]["reasons"] == ["notes holds no documents"]
    assert out["rag_grounding"]["guidance"] == [
        f"add documents: notes holds no documents yet; add files to {empty}"
    ]
    steps = [s["node"] for s in out["rag_retrieval_debug"]["steps"]]
    assert steps.count("retrieve") == 1  # no retry: another query would find nothing too
    message = _tool(settings)
    assert message.status == "error" and "holds no documents" in str(message.content)
    result = CliRunner().invoke(main, ["ask", str(empty), QUESTION, "--embedding", "fake"])
    assert result.exit_code == 0 and "holds no documents" in result.stdout
    assert "synonyms" not in result.stdout


def test_a_missing_folder_is_an_error_without_the_try_synonyms_hint(tmp_path: Path) -> None:
    settings = RagSettings(knowledge_bases=[{"name": "gone", "folder": str(tmp_path / "gone")}],
                           embedding="fake")  # fmt: skip
    out: dict[str, Any] = build_rag_graph().invoke(
        {"messages": [HumanMessage(QUESTION)]}, context=settings
    )
    guidance = out["rag_grounding"]["guidance"]
    assert len(guidance) == 1 and guidance[0].startswith("fix the knowledge base errors first")
    assert out["rag_grounding"]["reasons"][0].startswith("searching gone failed")
    assert "synonyms" not in " ".join(guidance)


@pytest.mark.parametrize("question", ["", "   ", "\n"])
def test_ask_refuses_an_empty_question_like_search(indexed: Path, question: str) -> None:
    result = CliRunner().invoke(main, ["ask", str(indexed), question, "--embedding", "fake"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "kbgraph ask: the question is empty; pass the question to answer from FOLDER"
    )


@pytest.mark.parametrize(
    "detector", [default_detector(), ClosingDetector(None)], ids=["model", "cue"]
)
@pytest.mark.parametrize("word", ["anything", "more", "timeout", "everything"])
def test_a_single_word_that_is_no_closing_word_is_looked_up(
    detector: ClosingDetector, word: str
) -> None:
    assert detector.is_closing(word) is False


@pytest.mark.parametrize("word", ["thanks", "nevermind", "nope", "ok", "bye"])
def test_a_single_closing_word_is_a_closing(word: str) -> None:
    assert default_detector().is_closing(word) is True


def test_a_fallback_answer_says_the_chat_model_failed_not_that_none_is_configured(
    indexed: Path,
) -> None:
    from kbgraph.testing import ScriptedChatModel

    model = ScriptedChatModel(responses=[ValueError("bad reply")] * 20)
    settings = RagSettings(knowledge_bases=str(indexed), embedding="fake")
    out = build_chat_agent(chat_model=model).invoke(
        {"messages": [HumanMessage(QUESTION)]}, context=settings
    )
    assert out["answer_mode"] == "fallback"
    assert out["answer"].startswith("Extractive answer (the chat model failed: ValueError):")
