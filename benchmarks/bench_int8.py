"""Would an int8 document encoder pay? The packaged model's ONNX export beside its dynamic
int8 quantisation, on one BEIR data set (issue 44: "≥ 2× today's chunks per CPU-second if an
int8 document encoder keeps SciFact nDCG@10 within 0.005").

    python benchmarks/bench_int8.py                      # SciFact test split, ~13 min on 2 cores
    python benchmarks/bench_int8.py --beir DIR --threads 1
    python benchmarks/bench_int8.py --quick --beir DIR   # a tiny BEIR folder: a smoke run

Both encoders are kbgraph's ONNX path (``OnnxEncoder``: the same tokenizer, token batches of
at most ``--batch`` texts, mean pooling, L2 norm) on the same onnxruntime threads; the int8
one is the export ``local#int8`` runs (``retrieval/_embeddings/_onnx_int8.py``: onnxruntime's
dynamic quantisation of the fp32 export, int8 weights per output channel, activations
quantised per batch at run time; deterministic: no calibration data).
Each document is its title and text (cut to the model's 256 word pieces, as an index cuts
a chunk), ranked by cosine alone (dense only, no BM25: the strictest view of a change in
the vectors). It prints the CPU-seconds (user + system of this process, onnxruntime's
threads included) of each encoder over the documents, nDCG@10 of the four pairings of
document and query encoders, and how close the two encoders' document vectors are.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _load_report import commit, load_average, machine, utc_now
from _quick import parse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"

from kbgraph.evals._beir import load_beir, ndcg_at_k  # noqa: E402
from kbgraph.retrieval._embeddings import packaged_model_dir, resolve_embeddings  # noqa: E402
from kbgraph.retrieval._embeddings._onnx import (  # noqa: E402
    MODEL_FILE,
    OnnxEncoder,
    export_dir,
    pipeline_of,
)


def exports() -> dict[str, Path]:
    """The folders of the packaged model's fp32 ONNX export and of its int8 quantisation,
    as ``local`` and ``local#int8`` use them (each made on its first use)."""
    for spec in ("local", "local#int8"):
        resolve_embeddings(spec).embed_query("warm")  # the int8 one quantises the fp32 one
    pipeline = pipeline_of(packaged_model_dir())
    assert pipeline is not None
    return {"fp32": export_dir(pipeline), "int8": export_dir(pipeline.at("int8"))}


def encoder(folder: Path, threads: int) -> OnnxEncoder:
    import onnxruntime
    from tokenizers import Tokenizer

    pipeline = pipeline_of(packaged_model_dir())
    assert pipeline is not None
    loaded = OnnxEncoder._open(pipeline, folder, onnxruntime, Tokenizer, threads)
    if loaded is None:
        raise SystemExit(f"could not open the ONNX model in {folder}")
    return loaded


def timed_encode(model: OnnxEncoder, texts: list[str], batch: int) -> tuple[np.ndarray, float]:
    model.encode(texts[:8], batch)  # warm: the session's first run allocates
    start = time.process_time()
    vectors = model.encode(texts, batch)
    return vectors, time.process_time() - start


def ndcg10(
    doc_ids: list[str], docs: np.ndarray, queries: np.ndarray, qids: list[str], qrels: Any
) -> float:
    scores = queries @ docs.T
    top = np.argsort(-scores, axis=1)[:, :10]
    return statistics.fmean(
        ndcg_at_k([doc_ids[j] for j in top[i]], qrels[q]) for i, q in enumerate(qids)
    )


def measure(args: argparse.Namespace) -> dict[str, Any]:
    data = load_beir(args.beir, args.split)
    doc_ids = list(data.corpus)
    doc_texts = [f"{d.title}\n\n{d.text}".strip() for d in data.corpus.values()]
    qids = list(data.queries)
    query_texts = [data.queries[q] for q in qids]
    folders = exports()
    docs, queries, cpu = {}, {}, {}
    for name, folder in folders.items():
        model = encoder(folder, args.threads)
        docs[name], cpu[name] = timed_encode(model, doc_texts, args.batch)
        queries[name] = model.encode(query_texts, args.batch)
    size = {name: (folder / MODEL_FILE).stat().st_size for name, folder in folders.items()}
    cosine = np.sum(docs["fp32"] * docs["int8"], axis=1)
    return {
        "data": f"{data.name} {data.split}: {len(doc_ids)} documents, {len(qids)} queries",
        "cpu_s": cpu,
        "model_mib": {k: v / (1 << 20) for k, v in size.items()},
        "ndcg10": {
            f"{d}/{q}": ndcg10(doc_ids, docs[d], queries[q], qids, data.qrels)
            for d in folders
            for q in folders
        },
        "cosine": {"min": float(cosine.min()), "median": float(np.median(cosine))},
    }


def report(result: dict[str, Any], args: argparse.Namespace, load_before: str) -> str:
    cpu, n = result["cpu_s"], result["ndcg10"]
    base = n["fp32/fp32"]
    lines = [
        f"`python benchmarks/bench_int8.py {' '.join(sys.argv[1:])}`, commit {commit()}, "
        f"{utc_now()} UTC; {machine()}; load average before {load_before}, after "
        f"{load_average()}; {args.threads} onnxruntime threads, batches of {args.batch}",
        "",
        f"{result['data']}, dense only (cosine), each document cut to the model's input",
        "",
        "| document encoder | model MiB | documents CPU-s | speed-up |",
        "|---|---:|---:|---:|",
    ]
    for name in ("fp32", "int8"):
        lines.append(
            f"| {name} | {result['model_mib'][name]:.1f} | {cpu[name]:.1f} | "
            f"{cpu['fp32'] / cpu[name]:.2f}× |"
        )
    lines += ["", "| documents / queries | nDCG@10 | Δ fp32/fp32 |", "|---|---:|---:|"]
    for pair, value in n.items():
        lines.append(f"| {pair} | {value:.4f} | {value - base:+.4f} |")
    c = result["cosine"]
    lines += ["", f"cosine of the two encoders' document vectors: min {c['min']:.4f}, "
              f"median {c['median']:.4f}"]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--beir", type=Path, default=SCIFACT, help="a BEIR folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    parser.add_argument("--batch", type=int, default=32, help="texts per batch at most")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parse(parser)
    load_before = load_average()
    result = measure(args)
    print(report(result, args, load_before))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
