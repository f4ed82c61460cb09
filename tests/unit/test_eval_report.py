"""Reports, summary.json, the baseline gate and the `kbgraph eval` command group."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kbgraph._base.commands import DefaultCommandGroup
from kbgraph.evals import metric_names
from kbgraph.evals._baseline import (
    REGRESSION_EXIT_CODE,
    BaselineMismatchError,
    compare_summaries,
    load_summary,
)
from kbgraph.evals._cli import eval_group
from kbgraph.evals._datasets import DatasetError
from kbgraph.evals._records import MetricResult, RowResult
from kbgraph.evals._report import summarize, write_report


def row(row_id: str, faith: float | None, status: str = "ok") -> RowResult:
    metrics: dict[str, MetricResult]
    if status == "failed":
        metrics = {n: MetricResult(n, "failed", None, "boom") for n in metric_names()}
        return RowResult(row_id, "q", "failed", error="boom", metrics=metrics)
    metrics = {
        "faithfulness": (
            MetricResult.scored("faithfulness", faith)
            if faith is not None
            else MetricResult.undetermined("faithfulness", "the answer makes no claims")
        ),
        "context_recall": MetricResult.scored("context_recall", 1.0, source_recall=0.5),
    }
    return RowResult(row_id, "q", "ok", answer="a", metrics=metrics)


def test_summary_has_every_metric_with_counts() -> None:
    summary = summarize([row("a", 1.0), row("b", 0.5), row("c", None), row("d", 0, "failed")])
    assert summary["faithfulness"] == {
        "mean": 0.75,
        "n_scored": 2,
        "n_undetermined": 1,
        "n_failed": 1,
    }
    assert summary["context_recall"] == {
        "mean": 1.0,
        "n_scored": 3,
        "n_undetermined": 0,
        "n_failed": 1,
    }
    assert (
        summary["context_precision"]["n_scored"] == 0
        and summary["context_precision"]["mean"] is None
    )
    assert summary["gold_source_recall"] == {"mean": 0.5, "n_scored": 3}
    assert summary["rows"] == {"total": 4, "ok": 3, "failed": 1}
    assert summary["per_row"][0] == {
        "id": "a",
        "status": "ok",
        "faithfulness": 1.0,
        "context_recall": 1.0,
        "context_precision": None,
        "answer_relevance": None,
        "answer_correctness": None,
        "gold_source_recall": 0.5,
    }


def test_write_report_writes_the_four_files(tmp_path: Path) -> None:
    results = [row("a", 1.0), row("b", None), row("c", 0, "failed")]
    files = write_report(tmp_path / "out", results, summarize(results, judge="scripted"))
    lines = files.results.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "b", "c"]
    assert json.loads(files.summary.read_text(encoding="utf-8"))["faithfulness"]["n_scored"] == 1
    markdown = files.markdown.read_text(encoding="utf-8")
    assert "| faithfulness | 1.000 | 1 | 1 | 1 |" in markdown
    assert "## Failed rows" in markdown and "- c: boom" in markdown
    assert files.chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("current", "ok"),
    [(0.80, True), (0.79, True), (0.77, False)],
)
def test_baseline_tolerance(current: float, ok: bool) -> None:
    before = {"faithfulness": {"mean": 0.80}, "rows": {"failed": 0}}
    now = {"faithfulness": {"mean": current}, "rows": {"failed": 0}}
    assert compare_summaries(now, before, tolerance=0.02).ok is ok


def test_more_failed_rows_is_a_regression() -> None:
    result = compare_summaries({"rows": {"failed": 2}}, {"rows": {"failed": 1}})
    assert result.regressions == ["failed rows: 2 now, 1 before"]


def test_load_summary_explains_bad_files(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"not a kbgraph summary\.json"):
        load_summary(tmp_path / "x.json")
    with pytest.raises(DatasetError, match="does not exist"):
        load_summary(tmp_path / "missing.json")


def _precomputed(tmp_path: Path) -> Path:
    rows = [
        {
            "id": "r1",
            "question": "How many attempts does Harbor make?",
            "answer": "Harbor makes 5 attempts by default [1].",
            "contexts": [
                {
                    "text": "retry.max_attempts defaults to 5 attempts.",
                    "source": "docs/configuration.md",
                    "line_start": 54,
                    "line_end": 54,
                }
            ],
            "reference": "Harbor makes 5 attempts by default.",
            "gold_sources": [{"path": "docs/configuration.md", "line_start": 54, "line_end": 54}],
        },
        {
            "id": "r2",
            "question": "Quelle est la limite ?",
            "answer": "Je ne sais pas. I don't know.",
            "contexts": ["Chaque clé peut faire 600 requêtes par minute."],
        },
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8"
    )
    return path


def test_cli_runs_a_dataset_and_gates_on_a_baseline(tmp_path: Path) -> None:
    data = _precomputed(tmp_path)
    runner = CliRunner()
    args = [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "run1")]
    first = runner.invoke(eval_group, args)
    assert first.exit_code == 0, first.output
    summary_file = tmp_path / "run1" / "summary.json"
    for name in ("results.jsonl", "summary.json", "report.md", "scores.png"):
        assert (tmp_path / "run1" / name).is_file()
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    assert summary["faithfulness"]["n_undetermined"] == 1
    assert "r1" in first.output and "faithfulness" in first.output

    same = runner.invoke(eval_group, ["run", *args, "--baseline", str(summary_file)])
    assert same.exit_code == 0, same.output
    assert "no regression" in same.output

    better = dict(summary, faithfulness={**summary["faithfulness"], "mean": 1.5})
    (tmp_path / "better.json").write_text(json.dumps(better), encoding="utf-8")
    gated = runner.invoke(
        eval_group, [*args, "--baseline", str(tmp_path / "better.json"), "--json"]
    )
    assert gated.exit_code == REGRESSION_EXIT_CODE
    assert json.loads(gated.output)["baseline"]["ok"] is False


def test_cli_reports_an_unreadable_data_set_with_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        eval_group, [str(tmp_path / "missing.jsonl"), "--embedding", "fake", "--quiet"]
    )
    assert result.exit_code == 2
    assert "missing.jsonl does not exist" in result.output


def test_group_routes_subcommands_and_lazy_commands() -> None:
    runner = CliRunner()
    listing = runner.invoke(eval_group, ["--help"]).output
    assert "meta" in listing and "retrieval" in listing
    assert "--judge" in runner.invoke(eval_group, ["meta", "--help"]).output

    @click.command("probe")
    @click.argument("beir_dir")
    def probe(beir_dir: str) -> None:
        click.echo(f"probe on {beir_dir}")

    eval_group.add_command(probe)
    assert isinstance(eval_group, DefaultCommandGroup)
    eval_group.lazy["meta-again"] = ("kbgraph.evals._cli", "meta_command")
    try:
        assert runner.invoke(eval_group, ["probe", "x"]).output == "probe on x\n"
        assert "--judge" in runner.invoke(eval_group, ["meta-again", "--help"]).output
    finally:
        eval_group.commands.pop("probe")
        eval_group.commands.pop("meta-again", None)
        eval_group.lazy.pop("meta-again")


def test_a_baseline_of_other_rows_is_refused_clearly(tmp_path: Path) -> None:
    summary = summarize([row("a", 1.0), row("b", 0.5)], dataset="one.jsonl")
    fewer = summarize([row("a", 1.0)], dataset="two.jsonl")
    with pytest.raises(BaselineMismatchError, match=r"baseline scored 2 rows of one\.jsonl"):
        compare_summaries(fewer, summary)
    renamed = summarize([row("a", 1.0), row("c", 0.5)])
    with pytest.raises(BaselineMismatchError, match="the data set changed"):
        compare_summaries(renamed, summary)
    # A summary from before fingerprints still compares on its row count.
    old = {k: v for k, v in summary.items() if k != "dataset_fingerprint"}
    assert compare_summaries(renamed, old).ok


def test_cli_refuses_a_baseline_of_another_data_set_before_running(tmp_path: Path) -> None:
    data = _precomputed(tmp_path)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(summarize([row("zz", 1.0)])), encoding="utf-8")
    never = str(tmp_path / "never")
    args = [str(data), "--embedding", "fake", "--quiet", "--baseline", str(baseline)]
    gated = CliRunner().invoke(eval_group, [*args, "--out", never])
    assert gated.exit_code == 2
    assert "baseline scored 1 rows" in gated.output
    assert not (tmp_path / "never").exists()


def test_cli_without_kb_for_rows_to_answer_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "questions.jsonl"
    data.write_text('{"question": "Combien de tentatives ?"}\n', encoding="utf-8")
    result = CliRunner().invoke(eval_group, [str(data), "--embedding", "fake", "--quiet"])
    assert result.exit_code == 2
    assert "pass --kb FOLDER" in result.output


def test_results_keep_the_passage_text_and_read_back_as_a_data_set(tmp_path: Path) -> None:
    data = _precomputed(tmp_path)
    out = tmp_path / "run"
    args = ["--embedding", "fake", "--quiet", "--judge", "overlap"]
    first = CliRunner().invoke(eval_group, [str(data), *args, "--out", str(out)])
    assert first.exit_code == 0, first.output
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    written = [json.loads(line) for line in lines]
    assert written[0]["citations"][0]["text"] == "retry.max_attempts defaults to 5 attempts."
    assert written[0]["reference"] == "Harbor makes 5 attempts by default."
    # The results file is itself a data set: a run can be re-scored from it alone.
    again = CliRunner().invoke(
        eval_group, [str(out / "results.jsonl"), *args, "--out", str(tmp_path / "again")]
    )
    assert again.exit_code == 0, again.output
    before = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    after = json.loads((tmp_path / "again" / "summary.json").read_text(encoding="utf-8"))
    for name in metric_names():
        assert after[name] == before[name], name
    assert after["dataset_fingerprint"] == before["dataset_fingerprint"]


def test_a_first_run_below_its_minimum_says_so_and_why(tmp_path: Path) -> None:
    """Regression: with no baseline, a mean below --min was labelled REGRESSION, and the
    table showed the row's score but nothing of why it was low."""
    row = {
        "id": "port",
        "question": "How many attempts does Harbor make?",
        "answer": "Harbor makes 7 attempts by default [1].",
        "contexts": ["Harbor makes 5 attempts by default."],
    }
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    args = [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "run")]
    first = CliRunner().invoke(eval_group, [*args, "--min", "faithfulness=0.8"])
    assert first.exit_code == REGRESSION_EXIT_CODE, first.output
    lines = first.output.splitlines()
    assert "REGRESSION" not in first.output
    assert [ln for ln in lines if "BELOW MINIMUM" in ln] == [
        next(
            ln
            for ln in lines
            if ln.startswith("  BELOW MINIMUM faithfulness: 0.") and ln.endswith(" < 0.800")
        )
    ]
    why = next(ln for ln in lines if ln.startswith("  port faithfulness 0."))
    assert "7" in why and "5" in why and len(why) <= 162, why  # the number mismatch, cut
    assert f"every reason: {tmp_path / 'run' / 'report.md'}" in first.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    gate = summary["gate"]
    assert gate["regressions"] == [] and gate["below_minimum"][0].startswith("faithfulness: ")
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "- below the minimum: faithfulness: " in report


def test_a_drop_against_the_baseline_is_still_a_regression(tmp_path: Path) -> None:
    data = _precomputed(tmp_path)
    args = [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "run1")]
    assert CliRunner().invoke(eval_group, args).exit_code == 0
    summary = json.loads((tmp_path / "run1" / "summary.json").read_text(encoding="utf-8"))
    better = dict(summary, faithfulness={**summary["faithfulness"], "mean": 1.5})
    (tmp_path / "better.json").write_text(json.dumps(better), encoding="utf-8")
    gated = CliRunner().invoke(eval_group, [*args, "--baseline", str(tmp_path / "better.json")])
    assert gated.exit_code == REGRESSION_EXIT_CODE, gated.output
    assert "  REGRESSION faithfulness: " in gated.output and "BELOW MINIMUM" not in gated.output
