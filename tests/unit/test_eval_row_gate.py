"""The per-row gate, ``kbgraph eval --min-each METRIC=VALUE``: a mean hides one bad answer
(one changed port in one answer of twenty leaves faithfulness at 0.95), so CI can ask that
no single row score below a minimum. A row without a score counts as below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbgraph.errors import ConfigError
from kbgraph.evals._baseline import (
    REGRESSION_EXIT_CODE,
    compare_summaries,
    format_comparison,
    parse_minimums,
)
from kbgraph.evals._batch import run_evaluation
from kbgraph.evals._cli import eval_group
from kbgraph.evals._records import EvalRow, MetricResult, Passage, RowResult
from kbgraph.evals._report import below_minimum_lines

PORT_SOURCE = "The Harbor API listens on port 8080 by default."
RETRY_SOURCE = "Harbor makes 5 attempts by default."


def _summary(*scores: tuple[str, float | None] | tuple[str, float | None, str]) -> dict[str, Any]:
    per_row = [
        {"id": s[0], "status": s[2] if len(s) > 2 else "ok", "faithfulness": s[1]} for s in scores
    ]
    values = [s[1] for s in scores if s[1] is not None]
    mean = sum(values) / len(values) if values else None
    return {"faithfulness": {"mean": mean}, "per_row": per_row}


def test_rows_below_a_minimum_of_each_row_fail_the_gate_by_name() -> None:
    summary = _summary(("q01", 0.9), ("q07", 0.0), ("q11", 0.312), ("q12", 0.5))
    gate = compare_summaries(summary, None, row_minimums={"faithfulness": 0.5})
    assert not gate.ok
    assert gate.below_minimum == ["faithfulness: 2 rows below 0.500 (q07 0.000, q11 0.312)"]
    assert [(r.row_id, r.score) for r in gate.rows_below] == [("q07", 0.0), ("q11", 0.312)]
    saved = gate.to_dict()
    assert saved["row_minimums"] == {"faithfulness": 0.5} and saved["ok"] is False
    assert saved["rows_below"][0] == {
        "id": "q07",
        "metric": "faithfulness",
        "score": 0.0,
        "minimum": 0.5,
        "row_status": "ok",
    }


def test_every_row_at_its_minimum_passes() -> None:
    gate = compare_summaries(
        _summary(("a", 0.5), ("b", 1.0)), None, row_minimums={"faithfulness": 0.5}
    )
    assert gate.ok and gate.rows_below == [] and gate.below_minimum == []
    assert "every minimum met" in format_comparison(gate)


def test_a_row_without_a_score_counts_as_below_and_says_why() -> None:
    summary = _summary(("ok", 0.9), ("undetermined", None), ("broken", None, "failed"))
    gate = compare_summaries(summary, None, row_minimums={"faithfulness": 0.2})
    assert not gate.ok
    assert gate.below_minimum == [
        "faithfulness: 2 rows below 0.200 (undetermined unscored, broken failed)"
    ]
    # no rows at all: nothing was checked, which is not a pass (as --min's "nothing scored")
    empty = compare_summaries({"per_row": []}, None, row_minimums={"faithfulness": 0.2})
    assert empty.below_minimum == ["faithfulness: no rows scored, minimum 0.200 for each"]


def test_a_handful_of_rows_is_named_and_the_rest_counted() -> None:
    summary = _summary(*((f"q{i:02d}", i / 100) for i in range(8)))
    (line,) = compare_summaries(summary, None, row_minimums={"faithfulness": 0.5}).below_minimum
    assert line == (
        "faithfulness: 8 rows below 0.500 "
        "(q00 0.000, q01 0.010, q02 0.020, q03 0.030, q04 0.040, and 3 more)"
    )


def test_the_mean_and_each_row_are_gated_apart() -> None:
    summary = _summary(*((f"r{i}", 1.0) for i in range(19)), ("port", 0.0))
    assert summary["faithfulness"]["mean"] == pytest.approx(0.95)
    means = compare_summaries(summary, None, minimums={"faithfulness": 0.8})
    assert means.ok
    both = compare_summaries(
        summary, None, minimums={"faithfulness": 0.8}, row_minimums={"faithfulness": 0.5}
    )
    shown = format_comparison(both)
    assert "Minimums: faithfulness >= 0.8" in shown
    assert "Minimums of each row: faithfulness >= 0.5" in shown
    assert "  BELOW MINIMUM faithfulness: 1 row below 0.500 (port 0.000)" in shown.splitlines()


def test_min_each_is_parsed_by_the_min_parser_and_named_in_its_errors() -> None:
    assert parse_minimums(["faithfulness=0.5"], option="--min-each") == {"faithfulness": 0.5}
    for bad in ("faithfulnes=0.5", "faithfulness=2"):
        with pytest.raises(ConfigError, match="--min-each"):
            parse_minimums([bad], option="--min-each")


def test_the_terminal_says_why_a_row_has_no_score() -> None:
    rows = [
        RowResult("broken", "q", "failed", error="the agent raised TimeoutError"),
        RowResult(
            "refusal",
            "q",
            "ok",
            metrics={
                "faithfulness": MetricResult.undetermined(
                    "faithfulness", "the answer makes no claim"
                )
            },
        ),
    ]
    lines = below_minimum_lines(rows, {}, Path("report.md"), row_minimums={"faithfulness": 0.5})
    assert lines[0] == "  broken faithfulness —: the row failed: the agent raised TimeoutError"
    assert lines[1] == "  refusal faithfulness —: the answer makes no claim"
    # --min alone (the mean) names only rows scored below it, as before
    assert below_minimum_lines(rows, {"faithfulness": 0.5}, Path("report.md")) == []


def _data(tmp_path: Path, port_answer: str) -> Path:
    rows = [
        {
            "id": "retries",
            "question": "How many attempts does Harbor make?",
            "answer": "Harbor makes 5 attempts by default [1].",
            "contexts": [RETRY_SOURCE],
        },
        {
            "id": "port",
            "question": "Which port does the Harbor API listen on?",
            "answer": port_answer,
            "contexts": [PORT_SOURCE],
        },
    ]
    path = tmp_path / f"rows-{len(list(tmp_path.iterdir()))}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_one_changed_port_fails_min_each_where_the_mean_passes(tmp_path: Path) -> None:
    """Regression: the gate read means only, so `--min faithfulness=0.4` passed a run in
    which one answer of two states port 8443 against a source's 8080 (scored 0.000)."""
    runner = CliRunner()
    data = _data(tmp_path, "The Harbor API listens on port 8443 [1].")
    args = [str(data), "--embedding", "fake", "--quiet", "--min", "faithfulness=0.4"]
    mean_only = runner.invoke(eval_group, [*args, "--out", str(tmp_path / "mean")])
    assert mean_only.exit_code == 0, mean_only.output

    out = tmp_path / "each"
    each = runner.invoke(eval_group, [*args, "--min-each", "faithfulness=0.5", "--out", str(out)])
    assert each.exit_code == REGRESSION_EXIT_CODE, each.output
    lines = each.output.splitlines()
    assert "  BELOW MINIMUM faithfulness: 1 row below 0.500 (port 0.000)" in lines
    why = next(ln for ln in lines if ln.startswith("  port faithfulness 0.000: "))
    assert "8443" in why, why
    gate = json.loads((out / "summary.json").read_text(encoding="utf-8"))["gate"]
    assert gate["ok"] is False and gate["row_minimums"] == {"faithfulness": 0.5}
    assert [(r["id"], r["score"]) for r in gate["rows_below"]] == [("port", 0.0)]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "- below the minimum: faithfulness: 1 row below 0.500 (port 0.000)" in report
    assert "| port | faithfulness | 0.000 | 0.500 | 8443 " in report


def test_a_reworded_correct_answer_passes_min_each(tmp_path: Path) -> None:
    data = _data(tmp_path, "By default, the Harbor API listens on port 8080 [1].")
    args = [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(eval_group, [*args, "--min-each", "faithfulness=0.5"])
    assert result.exit_code == 0, result.output
    assert "BELOW MINIMUM" not in result.output and "every minimum met" in result.output


def test_a_failed_row_fails_min_each_but_not_min(tmp_path: Path) -> None:
    data = _data(tmp_path, "By default, the Harbor API listens on port 8080 [1].")
    with data.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    args = [str(data), "--embedding", "fake", "--quiet", "--out", str(tmp_path / "o")]
    runner = CliRunner()
    assert runner.invoke(eval_group, [*args, "--min", "faithfulness=0.5"]).exit_code == 0
    each = runner.invoke(eval_group, [*args, "--min-each", "faithfulness=0.5"])
    assert each.exit_code == REGRESSION_EXIT_CODE, each.output
    assert "  BELOW MINIMUM faithfulness: 1 row below 0.500 (line-3 failed)" in each.output
    assert "  line-3 faithfulness —: the row failed: " in each.output


def test_a_bad_min_each_is_a_usage_error(tmp_path: Path) -> None:
    data = _data(tmp_path, "The Harbor API listens on port 8080 [1].")
    result = CliRunner().invoke(
        eval_group, [str(data), "--embedding", "fake", "--min-each", "faithfulness=1.5"]
    )
    assert result.exit_code == 2 and "--min-each 'faithfulness=1.5'" in result.output


def test_run_evaluation_takes_row_minimums(tmp_path: Path) -> None:
    rows = [
        EvalRow(
            id="port",
            question="Which port does the Harbor API listen on?",
            answer="The Harbor API listens on port 8443 [1].",
            contexts=(Passage(1, PORT_SOURCE, "docs/api.md", 1, 1),),
        )
    ]
    outcome = run_evaluation(
        rows, out_dir=tmp_path, embedding="fake", row_minimums={"faithfulness": 0.5}
    )
    assert outcome.gate is not None and not outcome.gate.ok
    assert outcome.summary["gate"]["rows_below"][0]["id"] == "port"
