"""``kbgraph eval ... --min faithfulness=0.8`` as a user runs it, with the packaged model
(issue 41): the gate read the judge's graded score, so an answer with port 8443 against the
source's 8080 passed at 0.96; the score now carries the answer check's verdicts, so the gate
fails on it and passes on a reworded correct answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbgraph.evals._baseline import REGRESSION_EXIT_CODE
from kbgraph.evals._cli import eval_group
from tests.unit.test_eval_facts import SERVER

pytestmark = pytest.mark.integration

QUESTION = "Which port does the server listen on?"


def _gate(tmp_path: Path, answer: str) -> tuple[int, str, dict[str, object]]:
    data = tmp_path / "rows.jsonl"
    row = {"id": "r1", "question": QUESTION, "answer": f"{answer} [1]", "contexts": [SERVER]}
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = [str(data), "--quiet", "--out", str(out), "--min", "faithfulness=0.8"]
    result = CliRunner().invoke(eval_group, args)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return result.exit_code, result.output, summary


def test_the_gate_fails_on_a_changed_port(tmp_path: Path) -> None:
    # The judge's graded support of this answer is 0.94: the gate passed it before.
    code, output, summary = _gate(tmp_path, "By default it listens on port 8443 on all interfaces.")
    assert code == REGRESSION_EXIT_CODE, output
    assert "BELOW MINIMUM faithfulness: " in output and " < 0.800" in output
    assert summary["gate"]["ok"] is False  # type: ignore[index]


def test_the_gate_passes_a_reworded_correct_answer(tmp_path: Path) -> None:
    code, output, summary = _gate(
        tmp_path, "By default, the server listens on port 8080 on every interface."
    )
    assert code == 0, output
    assert summary["gate"]["ok"] is True  # type: ignore[index]


CORRECT = "By default, the server listens on port 8080 on every interface."
CHANGED_PORT = "By default it listens on port 8443 on all interfaces."


def _gate_two(tmp_path: Path, second: str, *gate: str) -> tuple[int, str]:
    data = tmp_path / "two.jsonl"
    rows = [
        {"id": id_, "question": QUESTION, "answer": f"{answer} [1]", "contexts": [SERVER]}
        for id_, answer in (("right", CORRECT), ("second", second))
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = [str(data), "--quiet", "--out", str(tmp_path / "two"), *gate]
    result = CliRunner().invoke(eval_group, args)
    return result.exit_code, result.output


def test_min_each_fails_one_changed_port_of_two_that_the_mean_passes(tmp_path: Path) -> None:
    """The mean of a right answer and a changed port passes --min faithfulness=0.4: only
    --min-each, a minimum of each row, fails the run on the one wrong answer."""
    assert _gate_two(tmp_path, CHANGED_PORT, "--min", "faithfulness=0.4")[0] == 0
    code, output = _gate_two(
        tmp_path, CHANGED_PORT, "--min", "faithfulness=0.4", "--min-each", "faithfulness=0.5"
    )
    assert code == REGRESSION_EXIT_CODE, output
    assert "BELOW MINIMUM faithfulness: 1 row below 0.500 (second " in output
    assert _gate_two(tmp_path, CORRECT, "--min-each", "faithfulness=0.5")[0] == 0
