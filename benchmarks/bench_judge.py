"""CPU and wall time of the faithfulness metric with the offline judge, per 100 rows, and the
AUROC of its score against the rows' labels; prints a Markdown table, not a test.

    python benchmarks/bench_judge.py [FILE.jsonl ...] [--limit 200] [--threads 1]

Each FILE is labelled JSON lines ``{"context", "answer", "grounded"}`` (for example the sets
``judge_dev_sets.py`` writes); without one, HaluEval ``qa_one_turn`` and BEGIN's wow test
from ``../shared/data/evals``. Per file: a fresh judge (the packaged model, loaded and warmed
before the clock starts), then what ``kbgraph eval meta`` does for a row — embed ahead in
batches, then the metric's own score — over the first ``--limit`` rows.

CPU time is ``time.process_time()`` (every thread of the process), which other load on a
shared machine inflates far less than wall time; ``--threads`` is the CPU threads of the
judge's model (``OfflineJudge(model_threads=...)``: onnxruntime's pool, or torch's; 0 leaves
the runtime's default).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kbgraph.evals import _benchmarks as bench
from kbgraph.evals.evaluators.faithfulness import FaithfulnessEvaluator
from kbgraph.evals.judges import OfflineJudge
from kbgraph.evals.meta import _prefetch
from kbgraph.evals.records import EvalRecord, Passage
from kbgraph.evals.stats import auroc


def rows_of(args: argparse.Namespace) -> list[tuple[str, list[bench.Labelled]]]:
    if args.files:
        out = []
        for path in args.files:
            rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
            items = [bench.Labelled(None, r["context"], r["answer"], r["grounded"]) for r in rows]
            out.append((path.stem, items[: args.limit]))
        return out
    root = bench.default_data_dir()
    return [
        ("HaluEval qa_one_turn", bench.halueval(root, "qa_one_turn")[: args.limit]),
        ("BEGIN wow test", bench.begin(root, bench.BEGIN_TEST)[: args.limit]),
    ]


def measure(
    items: list[bench.Labelled], threads: int | None
) -> tuple[float, float, int, float | None]:
    """CPU seconds, wall seconds, claims judged, and the AUROC of the metric's score (an
    unscored row counts 0; None when the rows hold one label only)."""
    judge = OfflineJudge("local", model_threads=threads)
    judge.vectors(["Load and warm the model before the clock starts."])
    metric = FaithfulnessEvaluator(judge)
    cpu, wall = time.process_time(), time.perf_counter()
    _prefetch(judge, [(item.answer, item.context, item.question) for item in items])
    claims = 0
    grounded: list[float] = []
    ungrounded: list[float] = []
    for item in items:
        record = EvalRecord(item.question or "", item.answer, (Passage(1, item.context),))
        result = metric.evaluate(record)
        claims += len(result.details.get("claims", ()))
        (grounded if item.grounded else ungrounded).append(result.score or 0.0)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    area = auroc(grounded, ungrounded) if grounded and ungrounded else None
    return cpu, wall, claims, area


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    threads = args.threads or None
    print(
        f"| rows | n | claims | AUROC | CPU s / 100 rows | wall s / 100 rows | threads: "
        f"{args.threads} |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, items in rows_of(args):
        cpu, wall, claims, area = measure(items, threads)
        per = 100 / max(1, len(items))
        shown = "—" if area is None else f"{area:.4f}"
        print(
            f"| {name} | {len(items)} | {claims} | {shown} | {cpu * per:.1f} | {wall * per:.1f} | |"
        )


if __name__ == "__main__":
    main()
