"""Hostile or careless eval data sets: a byte that is not UTF-8 fails its row (naming the
line), not the run; a huge row is cut to the judge's input bounds, and its result says so,
instead of taking gigabytes and minutes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.evals._bounds import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS
from tests.faults.conftest import ROOT

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]
SOURCE = {"text": "The retry policy waits five seconds.", "source": "retry.md"}


def _eval(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``kbgraph eval`` as a real process (the offline judge, no agent: pre-computed rows)."""
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "kbgraph", "eval", str(data), "--quiet", "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=280,
    )


def _row(n: int, **more: object) -> bytes:
    row = {"id": f"r{n}", "question": "How long does a retry wait?", "answer": "Five seconds [1]."}
    row.update({"contexts": [SOURCE]}, **more)
    return json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n"


def test_a_byte_that_is_not_utf8_fails_its_row_naming_the_line(tmp_path: Path) -> None:
    """Regression (issue 35, hole 8): one 0xff byte ended the run with a bare
    UnicodeDecodeError (exit 1, no row run, no file named)."""
    data = tmp_path / "set.jsonl"
    bad = _row(2).replace(b"How long", b"How \xff long")
    data.write_bytes(_row(1) + bad + _row(3))
    run = _eval(data, tmp_path / "out")
    assert run.returncode == 0, run.stderr
    assert "UnicodeDecodeError" not in run.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["rows"] == {"total": 3, "ok": 2, "failed": 1}
    results = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    failed = next(r for r in results if r["status"] == "failed")
    assert failed["id"] == "line-2"
    assert f"{data}:2" in failed["error"] and "UTF-8" in failed["error"], failed["error"]


def test_a_huge_row_is_cut_to_the_judge_bounds(tmp_path: Path) -> None:
    """Regression (issue 35, hole 8): a 10 MB row took 2.3 GB and 72 s (answer and
    context: 1.7 GB, 5 min) without --row-timeout: the judge got every input whole. Each
    is now cut to its bound by default, and the row's result says what was cut (the
    time and memory are a benchmark's to measure, not a test's)."""
    words = "The retry policy waits five seconds between attempts, then doubles. "
    answer = words * (1_000_000 // len(words)) + "[1]"
    context = {"text": words * (1_000_000 // len(words)), "source": "retry.md"}
    data = tmp_path / "big.jsonl"
    data.write_bytes(_row(1, answer=answer, contexts=[context]))
    run = _eval(data, tmp_path / "out")
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8"))
    assert result["status"] == "ok", result["error"]
    notes = " ".join(result["notes"])
    assert "the answer cut from" in notes and "passage 1 cut from" in notes, notes
    assert len(result["answer"]) == MAX_ANSWER_CHARS
    assert len(result["citations"][0]["text"]) == MAX_PASSAGE_CHARS
