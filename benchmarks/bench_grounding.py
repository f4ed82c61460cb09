"""Does GroundingCheck say "not grounded" when the documents do not answer? Every question
runs through the chat agent without a chat model (``kbgraph ask``'s path: the heuristic
verdict), and the share of answerable and of unanswerable questions called grounded is
printed, with the unanswerable ones still called grounded.

    python benchmarks/bench_grounding.py                          # examples/docs
    python benchmarks/bench_grounding.py --kb ../shared/data/corpora/httpx-docs \\
        --answerable benchmarks/questions/httpx_facts.jsonl \\
        --unanswerable benchmarks/questions/httpx_unanswerable.jsonl
    python benchmarks/bench_grounding.py --quick                  # 2 + 2 questions, fake model

Answerable: the rows of ``--answerable`` (default: the bundled Harbor set) that have a
reference or gold sources; a row with neither counts as unanswerable, beside every row of
``--unanswerable`` (default: benchmarks/questions/examples_docs_unanswerable.jsonl:
questions written for this benchmark, whose topic no file of examples/docs mentions,
checked with grep). They were written by the engineer who wrote the rule they measure:
most name a product or protocol (Kafka, TLS, gRPC), the case the rule catches; the
lowercase ones ("the maximum request body size") it does not. The folder is copied to a
temporary directory and indexed there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _quick import parse

from kbgraph.agents._ask import run_ask
from kbgraph.evals import bundled_dataset_path, load_dataset

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "questions"


def questions(answerable: Path | None, unanswerable: Path) -> list[tuple[str, bool]]:
    rows = load_dataset(answerable or bundled_dataset_path())
    out = [(r.question, bool(r.reference or r.gold_sources)) for r in rows]
    lines = unanswerable.read_text("utf-8").splitlines()
    return out + [(json.loads(line)["question"], False) for line in lines if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=Path, default=ROOT / "examples" / "docs")
    parser.add_argument("--answerable", type=Path, default=None)
    parser.add_argument(
        "--unanswerable", type=Path, default=QUESTIONS / "examples_docs_unanswerable.jsonl"
    )
    parser.add_argument("--embedding", default="local")
    parser.add_argument("--limit", type=int, default=0, help="at most this many of each kind")
    args = parse(parser, embedding="fake", limit=2)
    asked = questions(args.answerable, args.unanswerable)
    if args.limit:
        asked = [q for q in asked if q[1]][: args.limit] + [q for q in asked if not q[1]][
            : args.limit
        ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / args.kb.name
        shutil.copytree(args.kb, folder, ignore=shutil.ignore_patterns(".kbgraph"))
        subprocess.run(
            [sys.executable, "-m", "kbgraph", "index", str(folder), "--embedding", args.embedding],
            check=True,
            capture_output=True,
        )
        verdicts = [
            (q, ok, bool(run_ask(folder, q, embedding=args.embedding).get("rag_grounded")))
            for q, ok in asked
        ]
    report(verdicts, args.kb)


def report(verdicts: list[tuple[str, bool, bool]], kb: Path) -> None:
    good = [v for v in verdicts if v[1]]
    bad = [v for v in verdicts if not v[1]]
    print(f"folder: {kb}")
    print(f"answerable called grounded:   {sum(v[2] for v in good)}/{len(good)}")
    print(f"unanswerable called grounded: {sum(v[2] for v in bad)}/{len(bad)}")
    for question, _, grounded in bad:
        if grounded:
            print(f"  still grounded: {question}")
    for question, _, grounded in good:
        if not grounded:
            print(f"  answerable, not grounded: {question}")


if __name__ == "__main__":
    main()
