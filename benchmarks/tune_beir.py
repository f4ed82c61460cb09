"""How the BEIR run settings were chosen: grids on the *train* split only, never on test.
Prints Markdown tables of train-split figures (and writes them as JSON); not a test.

    python benchmarks/tune_beir.py --work-dir /tmp/beir-tune [--data DIR] [--out FILE]
        [--formats md,txt] [--sizes 500,1000,1500,2000,4000] [--overlaps 0,0.1,0.2]
        [--k1s 0.9,1.2,1.5] [--bs 0.4,0.75,1.0]
        [--vector-formats md] [--vector-sizes 1000,1500,2000,4000]
        [--rrf-weights 0.5,1,2] [--alphas 0.3,0.5,0.7] [--candidates 300] [--peers]
        [--graph-top-ks 50] [--quick]

The command that chose the settings of ``kbgraph.evals._beir`` and its output are in
``benchmarks/README.md``.

What is read: ``corpus.jsonl``, ``queries_all.jsonl`` and ``qrels/train.tsv``. An audit
hook refuses to open ``qrels/test.tsv`` or ``queries.jsonl`` (SciFact's test queries) for
the whole run and the files read are printed at the end, so the grids provably never see a
test query. (In SciFact the 809 train and 300 test query ids are disjoint.)

1. BM25 by document format (``md``: ``# title`` heading, ``txt``: plain title line),
   chunk size and overlap (a fraction of the size): lexical-only indexes, seconds each.
2. BM25 ``k1`` / ``b`` on the best lexical chunking, by building
   ``kbgraph.retrieval._lexical.BM25Index`` over the engine's own chunk texts. The engine
   does not expose these knobs (its generations are built with k1 = 1.5, b = 0.75), so
   this only measures what they would be worth.
3. Per vector chunking (each embeds the corpus, minutes; the embedding cache is shared, so
   texts already embedded at another size are reused): BM25, vector and hybrid by fusion:
   RRF (k = 60) with vector weight ``w`` (BM25 1) and convex fusion with vector weight
   ``alpha`` (BM25 1 − alpha), over ``candidates`` per ranker.
4. ``--peers``: the issue's reference points on train (bm25s with stemming, whole-document
   MiniLM, their plain RRF, as ``bench_beir.py`` runs them), and the choice: the vector
   chunking whose smallest margin over the peers (bm25 − bm25s, vector − MiniLM, best
   hybrid − RRF) is largest, with its best fusion. Without ``--peers``: the best hybrid.
5. The subgraph (``graph`` mode) by its ``top_k`` on the chosen settings, when asked.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import _quick

from kbgraph.evals._beir import (
    BEIR_SEARCH,
    BeirData,
    RunSettings,
    load_beir,
    mean_metrics,
    without_query_id,
)
from kbgraph.evals._beir._run import DOCS_PER_QUERY as DOCS
from kbgraph.evals._beir._run import doc_ranking, graph_mode, index_corpus, search_mode
from kbgraph.retrieval._config import ChunkConfig, SearchConfig
from kbgraph.retrieval._kb import KnowledgeBase
from kbgraph.retrieval._lexical import BM25Index
from kbgraph.retrieval._records import index_text

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
TRAIN_QUERY_FILES = ("queries_all.jsonl",)
TEST_FILES = ("qrels/test.tsv", "queries.jsonl")
Row = dict[str, Any]
QUICK: dict[str, Any] = {  # --quick: one point of every grid, every part
    "formats": ["md"], "sizes": [500], "overlaps": [0.1], "k1s": [1.2], "bs": [0.75],
    "vector_sizes": [500], "rrf_weights": [1.0], "alphas": [0.5], "candidates": [100],
    "graph_top_ks": [10], "peers": True,
}  # fmt: skip


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def guard_test_files(data_dir: Path) -> list[str]:
    """Refuse, for the rest of the process, to open the test qrels or the test queries;
    return the (growing) list of the data set's files that were opened."""
    root = str(data_dir.resolve())
    blocked = {str((data_dir / name).resolve()) for name in TEST_FILES}
    opened: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event != "open" or not args or not isinstance(args[0], str | bytes | os.PathLike):
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if path in blocked:
            raise PermissionError(f"tuning must not read the test split: {path}")
        if path.startswith(root) and path not in opened:
            opened.append(path)

    sys.addaudithook(hook)
    return opened


def metrics(
    kb: KnowledgeBase,
    data: BeirData,
    names: dict[str, str],
    mode: str,
    config: SearchConfig = BEIR_SEARCH,
) -> dict[str, float]:
    rankings, _ = search_mode(kb, data.queries, names, mode, config)  # type: ignore[arg-type]
    return {k: round(v, 4) for k, v in mean_metrics(rankings, data.qrels).items()}


def chunking(size: int, overlap: float) -> ChunkConfig:
    return ChunkConfig(chunk_size=size, overlap=round(size * overlap))


# ---------------------------------------------------------------------------- 1 and 2


def lexical_grid(data: BeirData, work: Path, args: argparse.Namespace) -> list[Row]:
    rows = []
    for fmt in args.formats:
        for size in args.sizes:
            for overlap in args.overlaps:
                cfg = chunking(size, overlap)
                settings = RunSettings(embedding=None, doc_format=fmt, chunking=cfg)
                kb, names, info = index_corpus(data, work / f"lexical-{fmt}", settings)
                try:
                    bm25 = metrics(kb, data, names, "bm25")
                finally:
                    kb.close()
                rows.append(
                    {
                        "format": fmt,
                        "size": size,
                        "overlap": cfg.overlap,
                        "chunks": info.chunks,
                        "bm25": bm25,
                    }
                )
                log(f"bm25 {fmt} {size}/{cfg.overlap}: {bm25['ndcg@10']}")
    return rows


def bm25_parameters(data: BeirData, work: Path, best: Row, args: argparse.Namespace) -> list[Row]:
    """BM25 ``k1`` / ``b`` over the chunk texts of the engine's index of ``best``."""
    settings = RunSettings(
        embedding=None,
        doc_format=best["format"],
        chunking=ChunkConfig(chunk_size=best["size"], overlap=best["overlap"]),
    )
    kb, names, _ = index_corpus(data, work / f"lexical-{best['format']}", settings)
    try:
        reader = kb._open()
        chunks = [reader.chunks.get(i) for i in range(reader.meta.chunk_count)]
    finally:
        kb.close()
    texts, sources = [index_text(c) for c in chunks], [c.source for c in chunks]
    rows = []
    for k1 in args.k1s:
        for b in args.bs:
            index = BM25Index.build(texts, k1=k1, b=b)
            rankings = {}
            for qid, query in data.queries.items():
                rows_, scores = index.top_k(query, BEIR_SEARCH.top_k)
                hits = [(sources[int(r)], float(s)) for r, s in zip(rows_, scores, strict=True)]
                rankings[qid] = doc_ranking(hits, names, qid)
            bm25 = {k: round(v, 4) for k, v in mean_metrics(rankings, data.qrels).items()}
            rows.append({"k1": k1, "b": b, "bm25": bm25})
            log(f"bm25 k1={k1} b={b}: {bm25['ndcg@10']}")
    return rows


# ---------------------------------------------------------------------------- 3 and 4


def fusions(args: argparse.Namespace) -> Iterable[tuple[str, SearchConfig]]:
    for depth in args.candidates:
        base = BEIR_SEARCH.model_copy(update={"candidates_per_ranker": depth})
        suffix = "" if depth == BEIR_SEARCH.candidates_per_ranker else f" c={depth}"
        for w in args.rrf_weights:
            weights = {"vector": w, "bm25": 1.0}
            yield (
                f"rrf w={w:g}{suffix}",
                base.model_copy(update={"fusion": "rrf", "weights": weights}),
            )
        for alpha in args.alphas:
            weights = {"vector": alpha, "bm25": round(1 - alpha, 6)}
            yield (
                f"convex a={alpha:g}{suffix}",
                base.model_copy(update={"fusion": "convex", "weights": weights}),
            )


def cached_queries(kb: KnowledgeBase) -> None:
    """Embed each query once across the grid: tuning measures rankings, not latency."""
    kb._embed_query = functools.cache(kb._embed_query)  # type: ignore[method-assign]


def vector_grid(data: BeirData, work: Path, args: argparse.Namespace) -> list[Row]:
    rows = []
    for fmt in args.vector_formats:
        for size in args.vector_sizes:
            cfg = chunking(size, args.vector_overlap)
            settings = RunSettings(embedding="local", doc_format=fmt, chunking=cfg)
            log(f"indexing {fmt} {size}/{cfg.overlap} with vectors ...")
            start = time.perf_counter()
            kb, names, info = index_corpus(data, work / f"local-{fmt}", settings)
            log(
                f"  {info.chunks} chunks, {info.embedded} embedded in "
                f"{time.perf_counter() - start:.0f} s"
            )
            cached_queries(kb)
            row: Row = {"format": fmt, "size": size, "overlap": cfg.overlap, "chunks": info.chunks}
            try:
                row["bm25"] = metrics(kb, data, names, "bm25")
                row["vector"] = metrics(kb, data, names, "vector")
                row["hybrid"] = {}
                for label, config in fusions(args):
                    row["hybrid"][label] = metrics(kb, data, names, "hybrid", config)
                    log(f"  {label}: {row['hybrid'][label]['ndcg@10']}")
            finally:
                kb.close()
            log(f"  bm25 {row['bm25']['ndcg@10']}, vector {row['vector']['ndcg@10']}")
            rows.append(row)
    return rows


def graph_grid(data: BeirData, work: Path, chosen: Row, args: argparse.Namespace) -> list[Row]:
    cfg = ChunkConfig(chunk_size=chosen["size"], overlap=chosen["overlap"])
    settings = RunSettings(
        embedding="local", doc_format=chosen["format"], chunking=cfg, search=chosen["config"]
    )
    kb, names, _ = index_corpus(data, work / f"local-{chosen['format']}", settings)
    cached_queries(kb)
    rows = []
    try:
        for top_k in args.graph_top_ks:
            run_settings = replace(settings, graph_top_k=top_k)
            rankings, _ = graph_mode(kb, data.name, data.queries, names, run_settings)
            graph = {k: round(v, 4) for k, v in mean_metrics(rankings, data.qrels).items()}
            rows.append({"graph_top_k": top_k, "graph": graph})
            log(f"graph top_k={top_k}: {graph['ndcg@10']}")
    finally:
        kb.close()
    return rows


# ---------------------------------------------------------------------------- report


def cells(m: dict[str, float]) -> str:
    return f"{m['ndcg@10']:.4f} | {m['recall@100']:.4f}"


def print_tables(result: dict[str, Any]) -> None:
    print("### 1. BM25 by document format and chunking (train)\n")
    print("| format | chunk | overlap | chunks | nDCG@10 | R@100 |\n|---|---:|---:|---:|---:|---:|")
    for r in result["lexical"]:
        print(
            f"| {r['format']} | {r['size']} | {r['overlap']} | {r['chunks']} | {cells(r['bm25'])} |"
        )
    if result["bm25_parameters"]:
        print("\n### 2. BM25 k1 / b, not settable in the engine (train)\n")
        print("| k1 | b | nDCG@10 | R@100 |\n|---:|---:|---:|---:|")
        for r in result["bm25_parameters"]:
            print(f"| {r['k1']:g} | {r['b']:g} | {cells(r['bm25'])} |")
    for r in result["vector"]:
        print(
            f"\n### 3. {r['format']}, {r['size']}-char chunks, overlap {r['overlap']} "
            f"({r['chunks']} chunks), train\n"
        )
        print("| ranking | nDCG@10 | R@100 |\n|---|---:|---:|")
        print(f"| bm25 | {cells(r['bm25'])} |\n| vector | {cells(r['vector'])} |")
        for label, m in r["hybrid"].items():
            print(f"| hybrid {label} | {cells(m)} |")
    if result["peers"]:
        print("\n### Peers on train (as bench_beir.py runs them)\n")
        print("| peer | nDCG@10 | R@100 |\n|---|---:|---:|")
        for name, m in result["peers"].items():
            print(f"| {name} | {cells(m)} |")
        print("\n### Choice: nDCG@10 margin over the peers on train, per chunking\n")
        print("| chunking | bm25 − bm25s | vector − MiniLM | best hybrid − RRF | smallest |")
        print("|---|---:|---:|---:|---:|")
        for r in result["vector"]:
            m = margins(r, result["peers"])
            print(
                f"| {r['format']} {r['size']}/{r['overlap']} | {m['bm25']:+.4f} | "
                f"{m['vector']:+.4f} | {m['hybrid']:+.4f} | {min(m.values()):+.4f} |"
            )
    if result.get("chosen"):
        print(f"\nChosen: {json.dumps(result['chosen'])}")
    if result["graph"]:
        print("\n### 4. graph (subgraph, heuristic) by top_k, train\n")
        print("| top_k | nDCG@10 | R@100 |\n|---:|---:|---:|")
        for r in result["graph"]:
            print(f"| {r['graph_top_k']} | {cells(r['graph'])} |")
    print(f"\nFiles read: {', '.join(result['files_read'])}")


def train_peers(data: BeirData, work: Path) -> dict[str, dict[str, float]]:
    """The issue's reference points on *train*: bm25s with stemming, whole-document MiniLM
    and their plain RRF (k = 60), exactly as ``bench_beir.py`` runs them on test."""
    from bench_beir import Bm25s, Model, dense_search, rrf_reference, whole_doc_vectors

    doc_ids = list(data.corpus)
    texts = [f"{d.title} {d.text}".strip() for d in data.corpus.values()]
    bm25 = Bm25s(doc_ids, texts)
    model = Model()
    vectors, _, _ = whole_doc_vectors(model, texts, work / "peers")
    dense = dense_search(doc_ids, vectors, model)
    searches: dict[str, Callable[[str], list[str]]] = {
        "bm25s": lambda q: bm25.search(q, DOCS + 1),
        "minilm": lambda q: dense(q, DOCS + 1),
        "rrf": rrf_reference(bm25, dense),
    }
    peers = {}
    for name, search in searches.items():
        rankings = {
            qid: without_query_id(search(query), qid)[:DOCS] for qid, query in data.queries.items()
        }
        peers[name] = {k: round(v, 4) for k, v in mean_metrics(rankings, data.qrels).items()}
        log(f"peer {name}: {peers[name]['ndcg@10']}")
    return peers


def margins(row: Row, peers: dict[str, dict[str, float]]) -> dict[str, float]:
    """nDCG@10 of each kbgraph mode minus its peer's (hybrid: its best fusion vs RRF)."""
    best = max(m["ndcg@10"] for m in row["hybrid"].values())
    return {
        "bm25": round(row["bm25"]["ndcg@10"] - peers["bm25s"]["ndcg@10"], 4),
        "vector": round(row["vector"]["ndcg@10"] - peers["minilm"]["ndcg@10"], 4),
        "hybrid": round(best - peers["rrf"]["ndcg@10"], 4),
    }


def choose(
    rows: Sequence[Row], peers: dict[str, dict[str, float]] | None, args: argparse.Namespace
) -> Row | None:
    """The chunking whose *smallest* margin over the peers is largest (each mode has to
    match its peer; one index serves all three), then its best fusion; without peers, the
    chunking and fusion of the best hybrid."""
    if not rows:
        return None
    if peers:
        row = max(rows, key=lambda r: min(margins(r, peers).values()))
    else:
        row = max(rows, key=lambda r: max(m["ndcg@10"] for m in r["hybrid"].values()))
    label = max(row["hybrid"], key=lambda k: row["hybrid"][k]["ndcg@10"])
    return {
        **{k: row[k] for k in ("format", "size", "overlap")},
        "fusion": label,
        "config": dict(fusions(args))[label],
    }


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    def listed(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
        return lambda text: [kind(v) for v in text.split(",") if v.strip()]

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--work-dir", type=Path, required=True, help="e.g. /tmp/beir-tune")
    p.add_argument("--out", type=Path, default=None, help="JSON of every figure")
    p.add_argument("--formats", type=listed(str), default=["md", "txt"])
    p.add_argument("--sizes", type=listed(int), default=[500, 750, 1000, 1500, 2000, 4000])
    p.add_argument("--overlaps", type=listed(float), default=[0.1])
    p.add_argument("--k1s", type=listed(float), default=[])
    p.add_argument("--bs", type=listed(float), default=[0.75])
    p.add_argument("--vector-formats", type=listed(str), default=["md"])
    p.add_argument("--vector-sizes", type=listed(int), default=[])
    p.add_argument("--vector-overlap", type=float, default=0.1)
    p.add_argument("--rrf-weights", type=listed(float), default=[0.5, 1.0, 2.0])
    p.add_argument("--alphas", type=listed(float), default=[0.3, 0.4, 0.5, 0.6, 0.7])
    p.add_argument("--candidates", type=listed(int), default=[300])
    p.add_argument("--graph-top-ks", type=listed(int), default=[])
    p.add_argument("--peers", action="store_true", help="bm25s, MiniLM, RRF on train")
    args = _quick.parse(p, argv, **QUICK)
    for fmt in [*args.formats, *args.vector_formats]:
        if fmt not in ("md", "txt"):
            p.error(f"unknown format {fmt!r}; allowed: md, txt")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    opened = guard_test_files(args.data)
    data = load_beir(args.data, "train", query_files=TRAIN_QUERY_FILES)
    log(f"train split: {len(data.queries)} queries, {len(data.corpus)} documents")
    work: Path = args.work_dir
    result: dict[str, Any] = {
        "data": str(args.data),
        "split": "train",
        "queries": len(data.queries),
        "argv": sys.argv[1:],
    }
    result["lexical"] = lexical_grid(data, work, args)
    best_lexical = max(result["lexical"], key=lambda r: r["bm25"]["ndcg@10"], default=None)
    result["bm25_parameters"] = (
        bm25_parameters(data, work, best_lexical, args) if args.k1s and best_lexical else []
    )
    result["vector"] = vector_grid(data, work, args)
    result["peers"] = train_peers(data, work) if args.peers else {}
    chosen = choose(result["vector"], result["peers"], args)
    result["graph"] = graph_grid(data, work, chosen, args) if chosen and args.graph_top_ks else []
    if chosen:
        result["chosen"] = {k: v for k, v in chosen.items() if k != "config"}
    result["files_read"] = list(opened)
    print_tables(result)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
