"""Published benchmark commands, each run in a small mode (``--quick``) in a subprocess on
tiny inputs, so that none can break unseen (issue 43): the figures are not checked, only
that the command runs to its report. Split over test_bench_commands*.py so that the two
pytest workers share them; this file: the PostgreSQL and vector-math ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration._bench import beir_folder, run_quick

pytestmark = pytest.mark.integration  # a real PostgreSQL server, the real script


def test_bench_pg_quality_lexical_quick(tmp_path: Path) -> None:
    """Failed with ``query parameter missing: chunks`` in its EXPLAIN helper; one server
    start, a few seconds."""
    out = run_quick(
        "bench_pg_quality.py", str(beir_folder(tmp_path / "beir")), "--section", "lexical"
    )
    assert "EXPLAIN ANALYZE" in out
    assert "| folder index |" in out


def test_bench_scale_quick() -> None:
    """Failed in its ann section (the reader stub lacked ``check_vector_rows``'s ``bind``);
    2,000 rows, every section, one server start."""
    out = run_quick("bench_scale.py")
    assert "| folder, HNSW (usearch) |" in out
    assert "Plan of one query at ef_search 40" in out


def test_bench_ann_libraries_quick() -> None:
    assert "| usearch (f16) |" in run_quick("bench_ann_libraries.py")


def test_bench_engine_quick(tmp_path: Path) -> None:
    """Every section; the build section loads the local model (a few seconds)."""
    out = run_quick("bench_engine.py", "--data", str(beir_folder(tmp_path / "beir")))
    assert "nDCG@10 (test qrels)" in out
    assert "index(), s, vs bare encode" in out


def test_bench_search_latency_quick(tmp_path: Path) -> None:
    out = run_quick("bench_search_latency.py", "--data", str(beir_folder(tmp_path / "beir")))
    assert "open + first bm25 search ms" in out


def test_bench_mapped_leases_quick(tmp_path: Path) -> None:
    out = run_quick("bench_mapped_leases.py", "--data", str(beir_folder(tmp_path / "beir")))
    assert "hybrid p50 leased/no lease" in out and "writer's wait" in out


def test_bench_read_checks_quick() -> None:
    docs = Path(__file__).resolve().parents[2] / "examples" / "docs"
    out = run_quick("bench_read_checks.py", "--folder", str(docs))
    assert "| bm25 |" in out and "One check (`MappedFiles.changed`)" in out


def test_soak_quick() -> None:
    out = run_quick("soak.py")
    assert "torn reads: 0" in out


def test_bench_cost_quick(tmp_path: Path) -> None:
    """Both stores, one server start, three queries: about 20 s."""
    out = run_quick("bench_cost.py", str(beir_folder(tmp_path / "beir")))
    assert "| PostgreSQL | hybrid |" in out


def test_bench_load_quick() -> None:
    """Every section, langgraph dev's too (it failed: the served guard refused the
    benchmark's folder, no KBGRAPH_ALLOWED_FOLDERS) and ``kbgraph mcp --http --workers
    2``'s (its quick form: about 15 s of the run); 1 s a row, about 45 s."""
    out = run_quick("bench_load.py")
    assert "open loop (saturation" in out
    assert "results from another tenant: 0 of" in out
    assert "### `kbgraph mcp --http --workers 2`, open loop (saturation" in out
    assert "CPU per search and cores busy (2 worker processes" in out
    assert "first error" not in out
