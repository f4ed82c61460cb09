"""Batch runs that never lose a row: a bad row fails alone, each row is appended as it
finishes, a rerun resumes, the row time limit stops the judge, the gates (minimums, a
baseline with the rows that got worse) are saved; and input mistakes are errors, not zeros."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbgraph.errors import ConfigError, DatasetError
from kbgraph.evals import (
    AnswerCorrectnessEvaluator,
    ContextPrecisionEvaluator,
    FaithfulnessEvaluator,
    FunctionAgent,
    OfflineJudge,
)
from kbgraph.evals._baseline import REGRESSION_EXIT_CODE, compare_summaries, parse_minimums
from kbgraph.evals._batch import run_evaluation
from kbgraph.evals._cli import agent_settings, eval_group
from kbgraph.evals._datasets import load_dataset
from kbgraph.evals._deadline import deadline
from kbgraph.evals._evaluators import default_evaluators
from kbgraph.evals._records import EvalRecord, EvalResults, EvalRow, Judgement, Passage, RowResult
from kbgraph.evals._results_log import MANIFEST, ResultsLog
from kbgraph.evals._runner import run_dataset
from kbgraph.testing import FakeEmbeddings, ScriptedJudge

SOURCE = "Harbor makes 5 attempts by default. Webhooks are signed with HMAC-SHA256."


def _rows(n: int) -> list[EvalRow]:
    return [
        EvalRow(
            id=f"r{i}",
            question="How many attempts does Harbor make?",
            reference="Harbor makes 5 attempts.",
            answer=f"Harbor makes {5 if i % 2 else 7} attempts by default [1].",
            contexts=(Passage(1, SOURCE, "docs/retry.md", 1, 2),),
        )
        for i in range(n)
    ]


def _lines(tmp_path: Path, rows: Sequence[dict[str, object] | str]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


def test_a_malformed_row_is_a_failed_row_and_the_batch_goes_on(tmp_path: Path) -> None:
    good = {"id": "ok", "question": "How many?", "answer": "Five [1].", "contexts": [SOURCE]}
    data = _lines(
        tmp_path,
        [good, "{not json", {"id": "typo", "question": "q", "context_docs": ["x"]}],
    )
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_dataset(data)
    rows = load_dataset(data, on_error="row")
    assert [r.id for r in rows] == ["ok", "line-2", "typo"]
    assert "unknown key 'context_docs'" in (rows[2].error or "")
    result = CliRunner().invoke(
        eval_group, [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))
    assert summary["rows"] == {"total": 3, "ok": 1, "failed": 2}
    report = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "- line-2: " in report and "not valid JSON" in report
    assert "2 row(s) failed" in result.output


def test_a_precomputed_row_without_contexts_is_undetermined_not_zero(tmp_path: Path) -> None:
    data = _lines(tmp_path, [{"question": "How many?", "answer": "Five attempts."}])
    (row,) = load_dataset(data)
    (result,) = run_dataset([row], default_evaluators(OfflineJudge(FakeEmbeddings())))
    faith = result.metrics["faithfulness"]
    assert faith.status == "undetermined" and "no contexts" in faith.reason
    assert result.metrics["context_precision"].status == "undetermined"


def test_the_adapter_refuses_contexts_under_an_unknown_key() -> None:
    metric = FaithfulnessEvaluator(ScriptedJudge(default="supported"))
    with pytest.raises(ConfigError, match=r"'context_docs'.*contexts, rag_citations"):
        metric({"question": "q"}, {"answer": "Five.", "context_docs": [SOURCE]})
    missing = metric({"question": "q"}, {"answer": "Five."})
    assert missing["score"] is None
    assert missing["comment"].startswith("undetermined: no contexts were given")
    # An empty list under a known key is an empty retrieval: scored.
    empty = ContextPrecisionEvaluator(ScriptedJudge())({"question": "q"}, {"contexts": []})
    assert empty["comment"] == "undetermined: no context was retrieved"
    langchain = metric({"question": "q"}, {"answer": "Five.", "source_documents": [SOURCE]})
    assert langchain["score"] == 1.0


def test_each_row_is_appended_as_it_finishes(tmp_path: Path) -> None:
    seen: list[int] = []
    log = ResultsLog(tmp_path, {"dataset_fingerprint": "f", "judge": "scripted"})
    log.start(resume=False)

    def append(row: RowResult) -> None:
        log.append(row)
        seen.append(len(log.path.read_text(encoding="utf-8").splitlines()))

    run_dataset(_rows(3), [FaithfulnessEvaluator(ScriptedJudge())], on_result=append)
    assert seen == [1, 2, 3]


def test_resume_keeps_finished_rows_and_refuses_other_rows(tmp_path: Path) -> None:
    about = {"dataset_fingerprint": "f", "judge": "scripted"}
    log = ResultsLog(tmp_path, about)
    log.start(resume=False)
    (first, second) = run_dataset(_rows(2), [FaithfulnessEvaluator(ScriptedJudge())])
    log.append(first)
    log.append(second)
    with log.path.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "r2", "question": "cut short by a ki')  # killed mid-line
    done = ResultsLog(tmp_path, about).start(resume=True)
    assert sorted(done) == ["r0", "r1"]
    assert done["r0"].metrics["faithfulness"].score == first.metrics["faithfulness"].score
    with pytest.raises(DatasetError, match="other rows"):
        ResultsLog(tmp_path, {**about, "dataset_fingerprint": "g"}).start(resume=True)
    assert json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8")) == about


def test_a_resumed_run_reports_what_an_uninterrupted_run_reports(tmp_path: Path) -> None:
    rows = _rows(6)
    options = {"judge": "offline", "embedding": "fake", "concurrency": 2}
    whole = run_evaluation(rows, out_dir=tmp_path / "whole", **options)  # type: ignore[arg-type]
    run_evaluation(rows[:4], out_dir=tmp_path / "cut", **options)  # type: ignore[arg-type]
    # The first run "died" after 4 rows; its manifest is rewritten for the whole data set.
    manifest = tmp_path / "cut" / MANIFEST
    about = json.loads((tmp_path / "whole" / MANIFEST).read_text(encoding="utf-8"))
    manifest.write_text(json.dumps(about), encoding="utf-8")
    resumed = run_evaluation(rows, out_dir=tmp_path / "cut", resume=True, **options)  # type: ignore[arg-type]
    assert resumed.summary["resumed_rows"] == 4
    for key in ("faithfulness", "answer_correctness", "per_row", "rows", "dataset_fingerprint"):
        assert resumed.summary[key] == whole.summary[key], key
    read = [json.loads(line) for line in resumed.files.results.read_text("utf-8").splitlines()]
    assert [r["id"] for r in read] == [r.id for r in rows]


def test_the_row_timeout_bounds_the_judge() -> None:
    class Slow(ScriptedJudge):
        def judge_claims(
            self, claims: Sequence[str], context: str, *, question: str | None = None
        ) -> list[Judgement]:
            time.sleep(6)
            return super().judge_claims(claims, context, question=question)

    started = time.perf_counter()
    (result,) = run_dataset(_rows(1), [FaithfulnessEvaluator(Slow())], row_timeout=0.1)
    assert time.perf_counter() - started < 5  # a bound, not a speed figure: 0.1 s + grace
    assert result.status == "failed"
    assert result.error == "scoring did not finish within the row's 0.1 seconds (--row-timeout)"
    assert result.answer == "Harbor makes 7 attempts by default [1]."


def test_the_offline_judge_stops_itself_at_the_deadline() -> None:
    judge = OfflineJudge(FakeEmbeddings())
    claims = [f"Harbor makes {n} attempts by default." for n in range(400)]
    with deadline(0.0), pytest.raises(TimeoutError, match="within the row's 0 seconds"):
        judge.judge_claims(claims, SOURCE)


def test_minimums_gate_a_run_and_the_baseline_diff_names_the_rows(tmp_path: Path) -> None:
    data = _lines(
        tmp_path,
        [
            {
                "id": r.id,
                "question": r.question,
                "answer": r.answer,
                "contexts": [SOURCE],
                "reference": r.reference,
            }
            for r in _rows(4)
        ],
    )
    runner = CliRunner()
    base = [str(data), "--embedding", "fake", "--quiet"]
    floor = runner.invoke(
        eval_group, [*base, "--out", str(tmp_path / "a"), "--min", "faithfulness=0.99"]
    )
    assert floor.exit_code == REGRESSION_EXIT_CODE, floor.output
    assert "BELOW MINIMUM faithfulness: " in floor.output and " < 0.990" in floor.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text(encoding="utf-8"))
    assert summary["gate"]["ok"] is False and summary["gate"]["minimums"] == {"faithfulness": 0.99}

    better = dict(summary)
    better["per_row"] = [{**row, "faithfulness": 1.0} for row in summary["per_row"]]
    (tmp_path / "better.json").write_text(json.dumps(better), encoding="utf-8")
    diff = runner.invoke(
        eval_group,
        [*base, "--out", str(tmp_path / "b"), "--baseline", str(tmp_path / "better.json")],
    )
    gate = json.loads((tmp_path / "b" / "summary.json").read_text(encoding="utf-8"))["gate"]
    worse = {(r["id"], r["metric"]) for r in gate["worse_rows"]}
    assert ("r0", "faithfulness") in worse and ("r2", "faithfulness") in worse
    report = (tmp_path / "b" / "report.md").read_text(encoding="utf-8")
    assert "## Gate" in report and "| r0 | faithfulness | 1.000 |" in report
    assert diff.exit_code == 0, diff.output  # the means are within the tolerance


def test_minimums_are_parsed_strictly() -> None:
    assert parse_minimums(["faithfulness=0.9", "answer_correctness=0.5"]) == {
        "faithfulness": 0.9,
        "answer_correctness": 0.5,
    }
    for bad in ("faithfulnes=0.9", "faithfulness", "faithfulness=1.5", "faithfulness=x"):
        with pytest.raises(ConfigError, match="--min"):
            parse_minimums([bad])
    assert compare_summaries(
        {"faithfulness": {"mean": 0.5}}, None, minimums={"faithfulness": 0.6}
    ).below_minimum == ["faithfulness: 0.500 < 0.600"]


def test_answer_correctness_against_the_reference() -> None:
    metric = AnswerCorrectnessEvaluator(OfflineJudge(FakeEmbeddings()))
    reference = "Harbor makes 5 attempts by default."

    def score(answer: str) -> float | None:
        return metric.evaluate(EvalRecord("How many?", answer, reference=reference)).score

    right, wrong = (
        score("Harbor makes 5 attempts by default."),
        score("Harbor makes 7 attempts by default."),
    )
    assert right is not None and wrong is not None and right > 0.9 > 0.2 > wrong
    assert metric.evaluate(EvalRecord("q", "Five.")).status == "undetermined"


def test_results_to_pandas() -> None:
    pytest.importorskip("pandas")
    results = run_dataset(_rows(2), default_evaluators(ScriptedJudge(default="supported")))
    assert isinstance(results, EvalResults)
    frame = results.to_pandas()
    assert list(frame["id"]) == ["r0", "r1"]
    assert {"faithfulness", "faithfulness_status", "answer_correctness_reason"} <= set(
        frame.columns
    )


def test_agent_settings_from_options_and_a_file(tmp_path: Path) -> None:
    toml = tmp_path / "rag.toml"
    toml.write_text('rerank = "none"\n[search]\ntop_k = 8\n', encoding="utf-8")
    assert agent_settings(toml, top_k=3, mode="bm25", rerank=None) == {
        "rerank": "none",
        "search": {"top_k": 3, "mode": "bm25"},
    }
    assert agent_settings(None, top_k=None, mode=None, rerank="heuristic") == {
        "rerank": "heuristic"
    }
    owned = tmp_path / "owned.json"
    owned.write_text('{"embedding": "local"}', encoding="utf-8")
    with pytest.raises(ConfigError, match="comes from --kb, --embedding"):
        agent_settings(owned, top_k=None, mode=None, rerank=None)


def test_rows_without_an_answer_over_a_folder_need_an_agent_factory(tmp_path: Path) -> None:
    # evals sits below the ready agents: it is handed the agent, it never imports one.
    row = EvalRow(id="q", question="How many attempts does Harbor make?")
    with pytest.raises(ConfigError, match=r"agent_factory=kbgraph\.agents\.ChatAgent\.prepared"):
        run_evaluation([row], out_dir=tmp_path / "out", folder=tmp_path, embedding="fake")
    built: list[tuple[object, ...]] = []

    def factory(folder: Path, embedding: str, chat_model: str | None, settings: object) -> Any:
        built.append((folder, embedding, chat_model, settings))
        return FunctionAgent(lambda question: "Harbor makes 5 attempts.")

    outcome = run_evaluation(
        [row],
        out_dir=tmp_path / "again",
        folder=tmp_path,
        agent_factory=factory,
        embedding="fake",
        settings={"top_k": 3},
    )
    assert built == [(tmp_path, "fake", None, {"top_k": 3})]
    assert outcome.summary["rows"]["ok"] == 1
