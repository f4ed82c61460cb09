"""How the BEIR run settings were chosen: grids on the *train* split only (``qrels/train.tsv``,
``queries_all.jsonl``), never on test. Prints nDCG@10 per setting; not a test.

    python benchmarks/tune_beir.py [--data DIR] [--work-dir DIR] [--chunk-sizes 500,1000,1500]
                                   [--vector-chunk-sizes 1000] [--alphas 0.5,0.6,0.7,0.8]

1. Chunk size for BM25 (lexical-only indexes: seconds each).
2. Chunk size for vector search (each size embeds the corpus again: minutes each).
3. Fusion on the chunking of ``evals.beir.BEIR_CHUNKING``: RRF (k = 60, equal weights, the
   engine's default) against convex fusion with vector weight ``alpha`` (BM25 1 − alpha).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from evals.beir import BEIR_CHUNKING, BEIR_SEARCH, RunSettings, run_beir
from evals.beir._folder import default_work_dir
from retrieval.config import ChunkConfig, SearchConfig

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


def ndcg(data: Path, work: Path, modes: Sequence[str], settings: RunSettings) -> dict[str, float]:
    run = run_beir(data, modes, split="train", settings=settings, work_dir=work)
    return {mode: values["ndcg@10"] for mode, values in run.summary().items()}


def chunking(size: int) -> ChunkConfig:
    return ChunkConfig(chunk_size=size, overlap=size // 10)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--chunk-sizes", type=ints, default=[500, 1000, 1500, 2000])
    parser.add_argument("--vector-chunk-sizes", type=ints, default=[])
    parser.add_argument("--alphas", type=floats, default=[0.5, 0.6, 0.7, 0.8])
    args = parser.parse_args(argv)
    work = args.work_dir or default_work_dir(args.data).with_name("tune")

    print("## BM25 nDCG@10 by chunk size (train)\n")
    for size in args.chunk_sizes:
        settings = RunSettings(embedding=None, chunking=chunking(size))
        print(f"- {size} chars: {ndcg(args.data, work / f'bm25-{size}', ['bm25'], settings)}")
    if args.vector_chunk_sizes:
        print("\n## vector nDCG@10 by chunk size (train)\n")
    for size in args.vector_chunk_sizes:
        settings = RunSettings(chunking=chunking(size))
        print(f"- {size} chars: {ndcg(args.data, work / f'local-{size}', ['vector'], settings)}")

    print(f"\n## hybrid nDCG@10 by fusion (train, {BEIR_CHUNKING.chunk_size}-char chunks)\n")
    base = RunSettings(chunking=BEIR_CHUNKING)
    fused = work / "fusion"
    rrf = SearchConfig(**{**BEIR_SEARCH.model_dump(), "fusion": "rrf", "weights": {}})
    print(f"- rrf k=60: {ndcg(args.data, fused, ['hybrid'], replace(base, search=rrf))}")
    for alpha in args.alphas:
        weights = {"vector": alpha, "bm25": round(1 - alpha, 6)}
        convex = BEIR_SEARCH.model_copy(update={"fusion": "convex", "weights": weights})
        result = ndcg(args.data, fused, ["hybrid"], replace(base, search=convex))
        print(f"- convex alpha={alpha}: {result}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
