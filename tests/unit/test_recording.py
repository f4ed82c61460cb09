"""Recorded runs (``RagSettings.record_runs``, ``kbgraph ask --record``): the outermost graph
writes one private JSON record of its final state when the run ends, says so in a custom
stream event, and a record reads back by its id only."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

from kbgraph.agents import build_chat_agent
from kbgraph.agents._ask import ask
from kbgraph.errors import ConfigError
from kbgraph.graphs import RagSettings, build_rag_graph
from kbgraph.graphs.recording import (
    RECORDED_EVENT,
    RUNS_ENV,
    list_runs,
    merged_state,
    read_run,
    run_record,
    runs_dir,
)

QUESTION = "How are failed requests retried?"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry policy\n\nFailed requests are retried with exponential backoff.\n",
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "runs"
    monkeypatch.setenv(RUNS_ENV, str(folder))
    return folder


def _settings(docs: Path, **extra: object) -> RagSettings:
    return RagSettings(knowledge_bases=str(docs), embedding="fake", **extra)  # type: ignore[arg-type]


def test_nothing_is_recorded_unless_asked(docs: Path, runs: Path) -> None:
    build_chat_agent().invoke({"messages": [("user", QUESTION)]}, context=_settings(docs))
    assert list_runs(runs) == []


def test_the_chat_agent_records_one_run_with_its_answer(docs: Path, runs: Path) -> None:
    events = []
    for mode, data in build_chat_agent().stream(
        {"messages": [("user", QUESTION)]},
        context=_settings(docs, record_runs=True, search={"top_k": 3}),
        stream_mode=["custom", "values"],
        subgraphs=False,
    ):
        if mode == "custom":
            events.append(data)
    listed = list_runs(runs)
    assert len(listed) == 1, "the subgraph inside the agent leaves the record to the agent"
    summary = listed[0]
    assert summary["graph"] == "kbgraph_chat_agent" and summary["question"] == QUESTION
    assert summary["grounded"] is True and summary["answer_mode"] == "extractive"
    record = read_run(summary["id"], runs)
    state = record["state"]
    assert [s["node"] for s in state["rag_retrieval_debug"]["steps"]][-1] == "grounding_check"
    assert state["answer"] and state["answer_citations"] and state["rag_citations"]
    assert state["messages"][0] == {"role": "human", "content": QUESTION}
    assert record["settings"]["search"]["top_k"] == 3
    path = runs / f"{summary['id']}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(runs.stat().st_mode) == 0o700
    assert {"event": RECORDED_EVENT, "id": summary["id"], "path": str(path)} in events


def test_the_subgraph_alone_records_when_it_ends(docs: Path, runs: Path) -> None:
    graph = build_rag_graph()
    settings = _settings(docs, record_runs=True)
    graph.invoke({"messages": [("user", QUESTION)], "rag_query": "backoff"}, context=settings)
    graph.invoke({"messages": [("user", "thanks, that's all!")]}, context=settings)
    by_question = {r["question"]: r for r in list_runs(runs)}
    assert set(by_question) == {"backoff", "thanks, that's all!"}  # rag_query, though cleared
    skipped = read_run(by_question["thanks, that's all!"]["id"], runs)["state"]
    assert skipped["rag_should_retrieve"] is False
    assert [s["node"] for s in skipped["rag_retrieval_debug"]["steps"]] == ["decide_retrieve"]


def test_store_passwords_are_masked_in_records(docs: Path) -> None:
    settings = RagSettings(
        knowledge_bases=[{"folder": str(docs), "store": "postgresql://kb:s3cret@db/kb"}]
    )
    record = run_record({"messages": [HumanMessage("q")]}, settings, "g")
    assert "s3cret" not in json.dumps(record)


def test_ask_record_writes_the_run_and_says_where(docs: Path, runs: Path) -> None:
    result = CliRunner().invoke(
        ask, [str(docs), QUESTION, "--record", "--embedding", "fake"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    [run] = list_runs(runs)
    assert f"recorded run {run['id']}: {runs / (run['id'] + '.json')}" in result.stderr
    assert run["id"] not in result.stdout


@pytest.mark.parametrize("run_id", ["../../etc/passwd", "20261126T101500-0a1b2c3", "x", ""])
def test_a_run_reads_back_by_its_id_only(runs: Path, run_id: str) -> None:
    with pytest.raises(ConfigError, match="not a run id"):
        read_run(run_id, runs)


def test_files_that_are_not_records_are_left_out(runs: Path) -> None:
    runs.mkdir()
    (runs / "20261126T101500-0a1b2c3d.json").write_text("{not json", encoding="utf-8")
    (runs / "20261126T101501-0a1b2c3d.json").write_text('{"kind": "other"}', encoding="utf-8")
    (runs / "notes.json").write_text("{}", encoding="utf-8")
    assert list_runs(runs) == []
    with pytest.raises(ConfigError, match="not a recorded kbgraph run"):
        read_run("20261126T101501-0a1b2c3d", runs)


def test_the_runs_folder_is_in_the_cache_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RUNS_ENV, raising=False)
    monkeypatch.setenv("KBGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    assert runs_dir() == tmp_path / "cache" / "runs"
    monkeypatch.setenv(RUNS_ENV, str(tmp_path / "mine"))
    assert runs_dir() == tmp_path / "mine"


def test_merged_state_applies_the_reducers() -> None:
    state = {
        "messages": [HumanMessage("q", id="1")],
        "rag_retrieval_debug": {"steps": [{"node": "decide_retrieve"}], "fallbacks": []},
        "answer": None,
    }
    update = {
        "messages": [AIMessage("a", id="2")],
        "rag_retrieval_debug": {"steps": [{"node": "grounding_check"}], "fallbacks": []},
        "answer": "a",
    }
    merged = merged_state(state, update)
    assert [m.content for m in merged["messages"]] == ["q", "a"]
    assert [s["node"] for s in merged["rag_retrieval_debug"]["steps"]] == [
        "decide_retrieve",
        "grounding_check",
    ]
    assert merged["answer"] == "a" and state["answer"] is None
