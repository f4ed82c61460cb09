"""`kbgraph eval meta --benchmark ragtruth` as a user runs it, on the real held-out folder
(``$KBGRAPH_HELDOUT_DATA`` or ``../shared/data/heldout``) when it is there. The cheapest
judge (the overlap baseline) and 20 answers per task: this checks that the reader, the
sampling and the report work on the real files, not what the figures are."""

from __future__ import annotations

import json
import subprocess

import pytest

from kbgraph.evals._heldout import HELDOUT_ENV, RAGTRUTH_MEAN, default_heldout_dir
from tests.e2e.conftest import offline_env, venv_binary

pytestmark = pytest.mark.e2e


def test_meta_runs_ragtruth_on_the_real_heldout_folder() -> None:
    root = default_heldout_dir()
    if not (root / "ragtruth" / "rows.jsonl").is_file():
        pytest.skip(f"no held-out data at {root} (set ${HELDOUT_ENV} to the folder)")
    command = [str(venv_binary("kbgraph")), "eval", "meta", "--benchmark", "ragtruth"]
    command += ["--limit", "20", "--judge", "overlap", "--quiet", "--json"]
    done = subprocess.run(
        command,
        env=offline_env(**{HELDOUT_ENV: str(root)}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(r["benchmark"], r["split"]) for r in rows] == [
        ("RAGTruth", "QA"),
        ("RAGTruth", "Summary"),
        ("RAGTruth", "Data2txt"),
        ("RAGTruth", RAGTRUTH_MEAN),
    ]
    assert [r["n"] for r in rows] == [20, 20, 20, 60]
    for row in rows:
        figures = [*row["scores"].values(), *row["balanced_accuracy"].values()]
        assert figures and all(0.0 <= v <= 1.0 for v in figures), row
        assert set(row["scores"]) == {
            "overlap-baseline",
            "overlap baseline",
            "novel words baseline",
            "novel numbers+names baseline",
        }
    assert any("HHEM-2.1-Open 74.3" in anchor for anchor in rows[0]["anchors"])
