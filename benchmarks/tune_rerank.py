"""How the subgraph's heuristic Rerank was chosen: each signal it could add to the fused
score, measured on two kinds of data; prints Markdown tables, not a test.

    python benchmarks/tune_rerank.py [--work-dir /tmp/beir-tune] [--data DIR] [--quick]

1. SciFact *train* (809 queries; the test files are refused as in ``tune_beir.py``): the
   subgraph on the BEIR run's settings with ``rerank="none"`` and no rewrites gives each
   query's fused candidates once; every variant then reorders those candidates and is
   scored by nDCG@10 of the document ranking (best chunk per document).
2. The bundled ``evals/data/examples_docs.jsonl`` over a copy of ``examples/docs`` with
   the subgraph's defaults (RRF) and with convex fusion: gold-source recall among the top 5
   candidates (what BuildContext cites) and the reciprocal rank of the first candidate
   that recalls a gold source. Forty questions: a guard against harming a real docs
   folder, too small to tune on.

Variants: a bonus for query terms in the section heading (``section``) or in the file path
(``path``), a bonus for a neighbouring chunk of the same file among the candidates
(``adjacent``), and the same-file discount of the diversity pass (``diversity``), each
added as ``(fused + w·signal) / (1 + w)`` the way ``kbgraph.graphs._nodes.rerank`` does, with its
own ``path_match`` / ``section_match``.

The rule that chose the default: no signal may cost nDCG@10 on SciFact train (809 labelled
queries); among those left, the best on the docs guard. The table and the choice are in
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _quick import parse
from langchain_core.messages import HumanMessage
from tune_beir import DEFAULT_DATA, TRAIN_QUERY_FILES, cached_queries, guard_test_files, log

from kbgraph.evals._beir import RunSettings, load_beir, mean_metrics
from kbgraph.evals._beir._run import doc_ranking, index_corpus
from kbgraph.evals._datasets import load_dataset
from kbgraph.evals._evaluators.sources import gold_source_recall, is_recalled
from kbgraph.evals._records import Passage
from kbgraph.graphs._nodes._text import term_stems
from kbgraph.graphs._nodes.rerank import adjacent, diversify, path_match, section_match
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import Candidate
from kbgraph.graphs._subgraph import build_rag_graph
from kbgraph.retrieval._config import SearchConfig

ROOT = Path(__file__).resolve().parents[1]
Variant = tuple[str, dict[str, float]]
VARIANTS: list[Variant] = [
    ("fused order", {}),
    ("before: section 0.2, adjacent 0.05, diversity 0.15",
     {"section": 0.2, "adjacent": 0.05, "diversity": 0.15}),
    ("section 0.05", {"section": 0.05}),
    ("section 0.2", {"section": 0.2}),
    ("adjacent 0.02", {"adjacent": 0.02}),
    ("adjacent 0.05", {"adjacent": 0.05}),
    ("diversity 0.05", {"diversity": 0.05}),
    ("diversity 0.15", {"diversity": 0.15}),
    ("path 0.05 (chosen)", {"path": 0.05}),
    ("path 0.1", {"path": 0.1}),
    ("path 0.2", {"path": 0.2}),
]  # fmt: skip
QUICK_QUESTIONS = 3  # --quick: of the bundled set
Pool = list[tuple[list[str], list[Candidate]]]  # (queries, fused candidates) per question


def reorder(
    cands: Sequence[Candidate], queries: Sequence[str], w: dict[str, float]
) -> list[Candidate]:
    q = set().union(*(term_stems(x) for x in queries))
    base = []
    for c in cands:
        signals = {
            "section": section_match(q, c),
            "path": path_match(q, c),
            "adjacent": float(any(adjacent(c, o) for o in cands if o is not c)),
        }
        raw = c["score"] + sum(w.get(k, 0.0) * v for k, v in signals.items())
        base.append(raw / (1 + sum(w.get(k, 0.0) for k in signals)))
    order = diversify(cands, base, w.get("diversity", 0.0))
    return [{**cands[i], "score": score} for i, score in order]


def collect(graph: Any, context: RagSettings, questions: Sequence[str]) -> Pool:
    pool: Pool = []
    for n, question in enumerate(questions, 1):
        out = graph.invoke({"messages": [HumanMessage(question)]}, context=context)
        pool.append((out.get("rag_queries") or [question], out.get("rag_candidates") or []))
        if n % 200 == 0:
            log(f"  {n}/{len(questions)}")
    return pool


def scifact(data_dir: Path, work: Path, quick: bool = False) -> Callable[[dict[str, float]], str]:
    guard_test_files(data_dir)
    data = load_beir(data_dir, "train", query_files=TRAIN_QUERY_FILES)
    settings = RunSettings(embedding="fake") if quick else RunSettings()
    log(f"SciFact train: indexing with the BEIR run's settings in {work} ...")
    kb, names, _ = index_corpus(data, work / f"local-{settings.doc_format}", settings)
    cached_queries(kb)
    registry = SearcherRegistry()
    registry.register(kb.folder, "local", kb)
    context = RagSettings(
        knowledge_bases=[{"folder": str(kb.folder), "name": data.name}],
        chat_model=None, auto_index=False, rerank="none", max_rewrites=0,
        search=settings.search.model_copy(update={"top_k": settings.graph_top_k}),
    )  # fmt: skip
    pool = collect(build_rag_graph(registry=registry), context, list(data.queries.values()))
    kb.close()

    def measure(w: dict[str, float]) -> str:
        rankings = {
            qid: doc_ranking([(c["source"], c["score"]) for c in reorder(cands, qs, w)], names, qid)
            for qid, (qs, cands) in zip(data.queries, pool, strict=True)
        }
        return f"{mean_metrics(rankings, data.qrels)['ndcg@10']:.4f}"

    return measure


def _passages(cands: Sequence[Candidate]) -> list[Passage]:
    return [
        Passage(n=i, text=c["text"], source=c["source"], line_start=c["line_start"],
                line_end=c["line_end"], id=c["chunk_id"])
        for i, c in enumerate(cands, 1)
    ]  # fmt: skip


def bundled(fusion: str, quick: bool = False) -> Callable[[dict[str, float]], str]:
    rows = [r for r in load_dataset(ROOT / "evals/data/examples_docs.jsonl") if r.gold_sources]
    rows = rows[:QUICK_QUESTIONS] if quick else rows
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(shutil.copytree(ROOT / "examples/docs", Path(tmp) / "docs"))
        weights = {"vector": 0.5, "bm25": 0.5} if fusion == "convex" else {"vector": 1, "bm25": 1}
        context = RagSettings(
            knowledge_bases=[{"folder": str(docs), "name": "docs"}], rerank="none",
            max_rewrites=0, search=SearchConfig(fusion=fusion, weights=weights),  # type: ignore[arg-type]
            embedding="fake" if quick else "auto",
        )  # fmt: skip
        graph = build_rag_graph(registry=SearcherRegistry())
        pool = collect(graph, context, [r.question for r in rows])

    def measure(w: dict[str, float]) -> str:
        recall = rank = 0.0
        for row, (qs, cands) in zip(rows, pool, strict=True):
            ordered = reorder(cands, qs, w)
            recall += gold_source_recall(row.gold_sources, _passages(ordered[:5]))
            hits = (i for i, c in enumerate(ordered, 1)
                    if any(is_recalled(g, _passages([c])) for g in row.gold_sources))  # fmt: skip
            rank += 1 / next(hits, float("inf"))
        return f"{recall / len(rows):.3f} | {rank / len(rows):.3f}"

    return measure


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "beir-tune")
    args = parse(parser, argv)
    quick = args.quick  # the fake model; the SciFact part: whatever --data holds
    columns = [
        scifact(args.data, args.work_dir, quick),
        bundled("rrf", quick),
        bundled("convex", quick),
    ]
    header = ("variant", "SciFact train nDCG@10", "docs (RRF) recall@5", "MRR",
              "docs (convex) recall@5", "MRR")  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, weights in VARIANTS:
        print(f"| {label} | " + " | ".join(measure(weights) for measure in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
