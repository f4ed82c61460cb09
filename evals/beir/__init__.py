"""Retrieval quality on BEIR-format data sets, measured through the real engine.

    from kbgraph.evals.beir import run_beir
    run = run_beir("../shared/data/beir/scifact", ["bm25", "hybrid"])
    print(run.summary()["hybrid"]["ndcg@10"])

``retrieval_command`` is the click command ``kbgraph eval retrieval``.
"""

from __future__ import annotations

from ._command import retrieval_command
from ._load import BeirData, Document, load_beir
from ._metrics import (
    METRICS,
    dcg,
    max_pool,
    mean_metrics,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    query_metrics,
    recall_at_k,
    without_query_id,
)
from ._report import markdown, table, write_results
from ._run import (
    BEIR_CHUNKING,
    BEIR_DOC_FORMAT,
    BEIR_SEARCH,
    FUSION_WEIGHTS,
    BeirRun,
    IndexInfo,
    Mode,
    ModeResult,
    RunSettings,
    modes,
    run_beir,
    run_data,
    search_settings,
)

__all__ = [
    "BEIR_CHUNKING",
    "BEIR_DOC_FORMAT",
    "BEIR_SEARCH",
    "FUSION_WEIGHTS",
    "METRICS",
    "BeirData",
    "BeirRun",
    "Document",
    "IndexInfo",
    "Mode",
    "ModeResult",
    "RunSettings",
    "dcg",
    "load_beir",
    "markdown",
    "max_pool",
    "mean_metrics",
    "modes",
    "mrr_at_k",
    "ndcg_at_k",
    "percentile",
    "query_metrics",
    "recall_at_k",
    "retrieval_command",
    "run_beir",
    "run_data",
    "search_settings",
    "table",
    "without_query_id",
    "write_results",
]
