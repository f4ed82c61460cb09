"""What the answer check costs: CPU seconds per answer of the offline judge (the default of
``RagSettings.answer_check``) on answers of about 50, 100 and 200 words, against the
sources a real search returned.

    python benchmarks/bench_answer_check.py [--judge offline] [--runs 20]

Answers are built from the bundled data set: the reference answers of its questions (true
claims) with every other sentence's number changed (made-up claims), each cut or joined to
the length asked, checked against the top five sources the folder index returns for its
question (the local model; examples/docs copied to a temporary folder). The judge is loaded
and warmed up first, as in a long-running agent; the CPU time is the process's, every thread
included. Target (issue 20): at most ~0.5 s of CPU per answer of up to 200 words.
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbgraph.evals import bundled_dataset_path, check_answer, load_dataset, resolve_judge
from kbgraph.retrieval import KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = (50, 100, 200)


def made_up(text: str) -> str:
    """The text with its first number changed (a claim the sources do not support)."""
    return re.sub(r"\d+", lambda m: str(int(m.group()) + 7), text, count=1)


def answers(references: Sequence[str], words: int) -> list[str]:
    """Answers of about ``words`` words: references joined in turn, every other one with a
    number changed, cut at a sentence end past the length."""
    out = []
    for start in range(len(references)):
        parts: list[str] = []
        i = start
        while sum(len(p.split()) for p in parts) < words:
            ref = references[i % len(references)]
            parts.append(made_up(ref) if len(parts) % 2 else ref)
            i += 1
        out.append(" ".join(parts))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default="offline")
    parser.add_argument("--runs", type=int, default=20, help="answers per length")
    args = parser.parse_args(argv)
    rows = [r for r in load_dataset(bundled_dataset_path()) if r.reference]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        shutil.copytree(
            ROOT / "examples" / "docs", folder, ignore=shutil.ignore_patterns(".kbgraph")
        )
        kb = KnowledgeBase(folder)
        kb.index()
        sources: list[list[dict[str, Any]]] = []
        for row in rows:
            found = kb.search(row.question, top_k=5)
            sources.append(
                [{"n": n, "chunk_id": r.chunk.id, "source": r.chunk.source, "text": r.chunk.text}
                 for n, r in enumerate(found, 1)]
            )  # fmt: skip
        kb.close()
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    print(f"judge {args.judge}, {args.runs} answers per length, a fresh judge per length\n")
    print("| answer words (mean) | claims (mean) | CPU s per answer (median) | p95 | wall ms |")
    print("|---:|---:|---:|---:|---:|")
    references = [r.reference or "" for r in rows]
    for length in LENGTHS:
        # A fresh judge per length, loaded and warmed up on an unrelated text: the judge
        # caches embeddings, and the same sources checked again would cost less.
        judge = resolve_judge(args.judge)
        check_answer("Harbor is written in Python.", [{"n": 1, "text": "Harbor."}], judge=judge)
        texts = answers(references, length)[: args.runs]
        cpu, wall, claims, words = [], [], [], []
        for i, text in enumerate(texts):
            start, tick = time.process_time(), time.perf_counter()
            check = check_answer(text, sources[i % len(sources)], question=rows[i].question,
                                 judge=judge)  # fmt: skip
            cpu.append(time.process_time() - start)
            wall.append((time.perf_counter() - tick) * 1000)
            claims.append(len(check["claims"]))
            words.append(len(text.split()))
        cpu.sort()
        print(
            f"| {statistics.fmean(words):.0f} | {statistics.fmean(claims):.1f} | "
            f"{statistics.median(cpu):.3f} | {cpu[int(0.95 * (len(cpu) - 1))]:.3f} | "
            f"{statistics.median(wall):.0f} |"
        )


if __name__ == "__main__":
    main()
