"""Published benchmark commands in their small mode (``--quick``, issue 43), third part
(see test_bench_commands.py): the BEIR run and the tuning grids, on a tiny generated BEIR
folder. Only that each runs to its report is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration._bench import beir_folder, run_quick

pytestmark = pytest.mark.integration  # the local model, the real scripts


def test_bench_beir_graph_quick(tmp_path: Path) -> None:
    """Every row (LanceDB's too) and the subgraph, three queries: about 25 s of model loads."""
    data = beir_folder(tmp_path / "beir")
    out = run_quick("bench_beir.py", "--data", str(data), "--graph", "--out", str(tmp_path / "out"))
    assert "| kbgraph graph |" in out
    assert "second run over the unchanged corpus" in out


def test_tune_beir_quick(tmp_path: Path) -> None:
    """One point of every grid, peers and the subgraph included; the test files stay closed."""
    data = beir_folder(tmp_path / "beir", splits=("train", "test"))
    out = run_quick("tune_beir.py", "--data", str(data), "--work-dir", str(tmp_path / "work"))
    assert "Chosen:" in out
    assert "test.tsv" not in out.split("Files read:")[1]


def test_tune_rerank_quick(tmp_path: Path) -> None:
    data = beir_folder(tmp_path / "beir", splits=("train", "test"))
    out = run_quick("tune_rerank.py", "--data", str(data), "--work-dir", str(tmp_path / "work"))
    assert "| path 0.05 (chosen) |" in out


def test_bench_int8_quick(tmp_path: Path) -> None:
    """The packaged export and its int8 quantisation on a dozen documents: ~15 s, most of
    it the quantisation."""
    out = run_quick("bench_int8.py", "--beir", str(beir_folder(tmp_path / "beir")))
    assert "| int8 |" in out
    assert "| int8/fp32 |" in out
