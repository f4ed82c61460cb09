"""Code questions over a pinned source tree: does a question about code find the lines that
answer it?

The tree is the ``requests`` package at a pinned version, fetched from PyPI as its wheel
(``pip download --no-deps``; a wheel is a zip of the package's source) into a work folder,
so that anyone can rebuild exactly this corpus offline once the wheel is cached. kbgraph
indexes the package's ``.py`` files with the settings a user gets (``KnowledgeBase(folder)``:
by-kind chunking, the local model) and answers every question of
``benchmarks/questions/requests_code.jsonl`` in each mode; bm25s (stemmed, English stop
words, the Lucene BM25 of the BEIR rows) ranks the same chunks, as kbgraph's BM25 sees
them (``index_text``: the symbol path, then the code).

The 38 questions were written from the source before any tuning: behaviour asked in
plain words ("How many retries does the HTTP adapter make by default?"), and a few exact
identifiers (``merge_setting``). Each has one gold line range (or ``any_of`` several
places that answer it). A chunk is relevant when its line range overlaps a gold range of
its file. Printed per mode: hit@1/5/10 (the share of questions with a relevant chunk in
the top k) and nDCG@10 (binary relevance of each chunk; the ideal ranking puts every
relevant chunk of the index first).

    python benchmarks/bench_code.py                    # bm25, vector, hybrid, bm25s
    python benchmarks/bench_code.py --embedding none   # lexical rows only, no model
    python benchmarks/bench_code.py --work-dir DIR --quick   # 3 questions, fake model, the
        # wheel already in DIR/wheel: a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _quick import parse

from kbgraph.evals._beir._report import machine
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._records import Chunk, index_text

PACKAGE = "requests"
VERSION = "2.32.3"
QUESTIONS = Path(__file__).parent / "questions" / "requests_code.jsonl"
DEPTH = 10
QUICK_QUESTIONS = 3
Range = tuple[str, int, int]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fetch_source(work: Path, download: bool = True) -> Path:
    """The package's ``.py`` files, extracted from its pinned wheel (downloaded once)."""
    wheels = work / "wheel"
    found = sorted(wheels.glob(f"{PACKAGE}-{VERSION}-*.whl"))
    if not found and not download:
        raise SystemExit(f"--quick downloads nothing: no {PACKAGE}-{VERSION} wheel in {wheels}")
    if not found:
        log(f"pip download {PACKAGE}=={VERSION} ...")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", f"{PACKAGE}=={VERSION}", "-d", str(wheels)],
            check=True,
        )  # fmt: skip
        found = sorted(wheels.glob(f"{PACKAGE}-{VERSION}-*.whl"))
    src = work / "src"
    with zipfile.ZipFile(found[0]) as wheel:
        for name in wheel.namelist():
            if name.startswith(f"{PACKAGE}/") and name.endswith(".py"):
                target = src / name
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(wheel.read(name))
    return src


def load_questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def alternatives(question: dict[str, Any]) -> list[Range]:
    """Every place that answers the question (its one gold source, or its ``any_of``)."""
    out: list[Range] = []
    for gold in question["gold_sources"]:
        for place in gold.get("any_of", [gold]):
            out.append((place["path"], place["line_start"], place["line_end"]))
    return out


def relevant(chunk: Chunk, gold: Sequence[Range]) -> bool:
    return any(
        chunk.source == path and chunk.line_start <= end and start <= chunk.line_end
        for path, start, end in gold
    )


def scores(ranked: Sequence[Chunk], gold: Sequence[Range], n_relevant: int) -> dict[str, float]:
    """hit@1/5/10 and nDCG@10 (binary gains, ideal = every relevant chunk first)."""
    flags = [relevant(c, gold) for c in ranked[:DEPTH]]
    first = next((i + 1 for i, f in enumerate(flags) if f), None)
    dcg = sum(1 / math.log2(i + 2) for i, f in enumerate(flags) if f)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(n_relevant, DEPTH)))
    out = {f"hit@{k}": float(first is not None and first <= k) for k in (1, 5, 10)}
    out["ndcg@10"] = dcg / ideal if ideal else 0.0
    return out


class Bm25s:
    """bm25s over kbgraph's chunks, as in ``bench_beir.py``."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        import bm25s
        import Stemmer

        self.bm25s, self.stemmer, self.chunks = bm25s, Stemmer.Stemmer("english"), chunks
        texts = [index_text(c) for c in chunks]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()  # method "lucene", k1 = 1.5, b = 0.75
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str) -> list[Chunk]:
        tokens = self.bm25s.tokenize(
            [query], stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        if not tokens.vocab:
            return []
        k = min(DEPTH, len(self.chunks))
        docs, found = self.retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [self.chunks[int(d)] for d, s in zip(docs[0], found[0], strict=True) if s > 0]


def all_chunks(kb: KnowledgeBase) -> list[Chunk]:
    reader = kb._open()
    return [reader.chunks.get(i) for i in range(reader.meta.chunk_count)]


def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    src = fetch_source(work, download=not args.quick)
    questions = load_questions(args.questions)[: QUICK_QUESTIONS if args.quick else None]
    kb = KnowledgeBase(src, embedding=None if args.embedding == "none" else args.embedding)
    start = time.perf_counter()
    kb.index()
    index_s = time.perf_counter() - start
    chunks = all_chunks(kb)
    log(f"{len(chunks)} chunks of {len({c.source for c in chunks})} files in {index_s:.1f} s")
    modes = ["bm25"] if args.embedding == "none" else ["bm25", "vector", "hybrid"]
    peer = Bm25s(chunks)
    per_mode: dict[str, list[dict[str, float]]] = {m: [] for m in [*modes, "bm25s"]}
    details = []
    for q in questions:
        gold = alternatives(q)
        n_relevant = sum(relevant(c, gold) for c in chunks)
        ranked = {
            m: [r.chunk for r in kb.search(q["question"], top_k=DEPTH, mode=m)] for m in modes
        }
        ranked["bm25s"] = peer.search(q["question"])
        row = {m: scores(r, gold, n_relevant) for m, r in ranked.items()}
        for m, s in row.items():
            per_mode[m].append(s)
        details.append({"id": q["id"], "question": q["question"], "scores": row,
                        "top": {m: [f"{c.source}:{c.line_start}-{c.line_end} § {c.section}"
                                    for c in r[:3]] for m, r in ranked.items()}})  # fmt: skip
    kb.close()
    return {
        "package": f"{PACKAGE}=={VERSION}",
        "questions": len(questions),
        "chunks": len(chunks),
        "index_s": round(index_s, 2),
        "modes": {m: mean(rows) for m, rows in per_mode.items()},
        "details": details,
    }


def table(result: dict[str, Any]) -> str:
    lines = ["| mode | hit@1 | hit@5 | hit@10 | nDCG@10 |", "|---|---:|---:|---:|---:|"]
    for mode, s in result["modes"].items():
        name = "bm25s (same chunks)" if mode == "bm25s" else f"kbgraph {mode}"
        cells = " | ".join(f"{s[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "ndcg@10"))
        lines.append(f"| {name} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedding", default="local", help="embedding spec, or none")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a temp folder")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON result here")
    args = parse(parser, embedding="fake")
    with tempfile.TemporaryDirectory(prefix="bench-code-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        result = run(args, work)
    result.update(
        {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine(),
            "command": " ".join(sys.argv),
        }
    )
    print(table(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), "utf-8")


if __name__ == "__main__":
    main()
