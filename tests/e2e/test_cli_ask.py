"""``kbgraph ask`` as a user runs it: the installed console script in a real subprocess, on
a temporary folder (and on a copy of ``examples/docs`` with the real local model)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kbgraph.retrieval._segments import normalize_newlines
from tests.support.gguf import smollm2_spec

from .conftest import REPO, offline_env, venv_binary

pytestmark = pytest.mark.e2e


def kbgraph_ask(folder: Path, question: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_binary("kbgraph")), "ask", str(folder), question, *args],
        capture_output=True,
        text=True,
        env=offline_env(),
        timeout=600,
    )


def ask_json(folder: Path, question: str, *args: str) -> dict[str, Any]:
    proc = kbgraph_ask(folder, question, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)  # stdout is JSON and nothing else
    return data


def file_lines(folder: Path, source: str, start: int, end: int) -> str:
    text = normalize_newlines((folder / source).read_bytes().decode("utf-8"))
    return "\n".join(text.split("\n")[start - 1 : end])


def assert_citations_point_at_their_text(folder: Path, data: dict[str, Any]) -> None:
    assert data["rag_citations"]
    for c in data["rag_citations"]:
        assert set(c) == {"n", "source", "line_start", "line_end", "chunk_id", "score", "text"}
        assert c["text"] in file_lines(folder, c["source"], c["line_start"], c["line_end"])


def test_ask_json_on_a_folder(docs_folder: Path) -> None:
    proc = kbgraph_ask(docs_folder, "How do I change the number of retries?", "--json",
                       "--embedding", "fake")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["rag_grounded"] is True
    assert data["rag_citations"][0]["source"] == "retry.md"
    assert_citations_point_at_their_text(docs_folder, data)
    assert data["answer"].startswith("Extractive answer")
    assert data["answer_citations"]
    assert "indexed docs" in proc.stderr or "indexing" in proc.stderr


def test_ask_off_topic_is_not_grounded_with_guidance(docs_folder: Path) -> None:
    data = ask_json(docs_folder, "What is the boiling point of tungsten?", "--embedding", "fake")
    assert data["rag_grounded"] is False
    assert data["rag_grounding"]["guidance"]
    assert "tungsten" in data["answer"]


def test_ask_small_talk_skips_retrieval(docs_folder: Path) -> None:
    data = ask_json(docs_folder, "hello!", "--embedding", "fake")
    assert data["rag_should_retrieve"] is False
    assert data["rag_citations"] == []
    assert data["rag_queries"] == []


def test_ask_human_output_and_trace(docs_folder: Path) -> None:
    proc = kbgraph_ask(docs_folder, "When do refresh tokens expire?", "--trace",
                       "--embedding", "fake")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "1. decide_retrieve [attempt 0" in proc.stdout
    assert "Sources:\n  [1] auth/tokens.md, lines" in proc.stdout
    assert "Grounded: yes" in proc.stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [(["--embedding", "bogus:"], 2), (["--top-k", "0"], 2)],
)
def test_ask_failures_exit_non_zero_with_a_reason(
    docs_folder: Path, args: list[str], code: int
) -> None:
    proc = kbgraph_ask(docs_folder, "retries?", *args)
    assert proc.returncode == code
    assert proc.stdout == ""
    assert proc.stderr.strip()


def test_ask_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    proc = kbgraph_ask(tmp_path / "missing", "retries?")
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr


@pytest.fixture(scope="module")
def example_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of examples/docs, so that the repository's folder stays unindexed."""
    target = tmp_path_factory.mktemp("examples") / "docs"
    shutil.copytree(REPO / "examples" / "docs", target, ignore=shutil.ignore_patterns(".kbgraph"))
    return target


def test_done_when_examples_docs_with_the_local_model(example_docs: Path) -> None:
    data = ask_json(example_docs, "How do I configure the retry policy?", "--embedding", "local")
    assert data["rag_grounded"] is True
    assert_citations_point_at_their_text(example_docs, data)
    assert any("retry" in c["text"].lower() for c in data["rag_citations"][:2])
    off_topic = ask_json(example_docs, "Who won the 1998 football world cup?")
    assert off_topic["rag_grounded"] is False
    assert off_topic["rag_grounding"]["guidance"]
    assert ask_json(example_docs, "thanks!")["rag_should_retrieve"] is False


def test_a_named_file_keeps_its_scope_with_the_local_model(example_docs: Path) -> None:
    data = ask_json(
        example_docs, "What does docs/configuration.md say about the retry policy?",
        "--embedding", "local",
    )  # fmt: skip
    assert data["rag_grounded"] is True and data["rag_attempt"] == 0
    assert {c["source"] for c in data["rag_citations"]} == {"docs/configuration.md"}
    assert_citations_point_at_their_text(example_docs, data)


def test_done_when_follow_up_through_history(example_docs: Path, tmp_path: Path) -> None:
    # Done when (issue 3): a follow-up that only makes sense with the previous turn
    # retrieves the right file after RewriteQuery. Issue 30: identifier parts weigh below
    # words, so retry.py (RetryableError, DEFAULT_STATUS_CODES) no longer ranks first.
    first = kbgraph_ask(example_docs, "What does error HB-601 mean?", "--json",
                        "--embedding", "local")  # fmt: skip
    assert first.returncode == 0, first.stderr
    turn = tmp_path / "turn1.json"
    turn.write_text(first.stdout, encoding="utf-8")
    data = ask_json(example_docs, "Is it retryable?", "--history", str(turn),
                    "--embedding", "local")  # fmt: skip
    assert data["rag_queries"][0] == "Is it retryable?"
    assert any("601" in q for q in data["rag_queries"][1:]), data["rag_queries"]
    top = data["rag_citations"][0]
    assert top["source"] == "data/error_codes.csv" and "HB-601" in top["text"]
    assert data["rag_grounded"] is True
    assert_citations_point_at_their_text(example_docs, data)
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"] * 2


def test_ask_with_a_local_gguf_model_generates_the_answer_offline(docs_folder: Path) -> None:
    """`kbgraph ask ... --chat-model gguf:PATH --json`: SmolLM2-135M run in the CLI's own
    process, no server, no network (the environment is offline, and only loopback is used).
    Over 30 s on a busy machine: the process loads SmolLM2 and the local embedding model and
    generates the answer on the CPU."""
    spec = smollm2_spec(n_ctx=2048, max_tokens=48)
    data = ask_json(docs_folder, "How do I change the number of retries?",
                    "--embedding", "fake", "--chat-model", spec)  # fmt: skip
    assert data["answer_error"] is None
    if data["answer_mode"] == "fallback":  # written, but not shown (policy "repair"): it
        # loops, is cut off at max_tokens or cites nothing; the model's text is on record
        (first, *_) = data["answer_check"]["attempts"]
        assert first["text"].strip() and first["problems"]
    else:
        assert data["answer_mode"] == "llm"
        assert data["answer"].strip() and not data["answer"].startswith("Extractive answer")
    for marker in data["answer_unresolved"]:
        assert marker["reason"]
    steps = data["rag_retrieval_debug"]["steps"]
    assert steps[0]["node"] == "decide_retrieve"
    assert steps[0]["path"] in ("llm", "llm-json") or data["rag_retrieval_debug"]["fallbacks"]
