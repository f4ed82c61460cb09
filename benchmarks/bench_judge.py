"""CPU and wall time of the faithfulness metric with the offline judge, per 100 rows, and the
AUROC of its score against the rows' labels; and the judge on the contrast set. Prints
Markdown tables, not a test.

    python benchmarks/bench_judge.py [FILE.jsonl ...] [--limit 200] [--threads 1] [--no-contrast]
    python benchmarks/bench_judge.py FILE.jsonl --quick   # 4 rows, 4 contrast pairs: smoke run

The contrast set (``evals/data/judge_contrast.jsonl``, written for this repository) is
pairs of answers to one context that differ by one number, one negation or one entity (the
consistent one a paraphrase, not a copy): per kind, the share of pairs whose consistent
answer scores higher (pairwise accuracy), and the share of answers whose verdict is right
(every claim of the consistent one supported; a claim of the other one not supported): the
verdicts the answer check gives, checkable facts checked (``judges._facts``); the scores
and the rows' AUROC are the metric's score, which carries those verdicts (issue 41).

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

from _quick import parse

from kbgraph.evals import _benchmarks as bench
from kbgraph.evals import bundled_dataset_path
from kbgraph.evals._evaluators.faithfulness import FaithfulnessEvaluator
from kbgraph.evals._judges import OfflineJudge
from kbgraph.evals._meta import _prefetch
from kbgraph.evals._records import EvalRecord, Passage
from kbgraph.evals._stats import auroc

QUICK_ROWS = 4  # --quick: rows of each file, pairs of the contrast set


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
    metric = FaithfulnessEvaluator(judge)  # as kbgraph eval meta runs it: facts checked
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


def contrast(threads: int | None, limit: int | None = None) -> None:
    """The contrast set's table (see the module docstring), of its first ``limit`` pairs."""
    judge = OfflineJudge("local", model_threads=threads)
    metric = FaithfulnessEvaluator(judge)
    path = bundled_dataset_path("judge_contrast.jsonl")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line][:limit]
    kinds: dict[str, list[tuple[bool, bool, bool]]] = {}
    for row in rows:
        judged = [
            metric.evaluate(EvalRecord("", row[key], (Passage(1, row["context"]),)))
            for key in ("consistent", "inconsistent")
        ]
        good, bad = (r.score or 0.0 for r in judged)
        right = judged[0].details.get("supported_share") == 1.0
        caught = judged[1].details.get("supported_share", 1.0) < 1.0
        kinds.setdefault(row["kind"], []).append((good > bad, right, caught))
    print("| contrast pairs | n | pairwise accuracy | consistent supported | inconsistent caught |")
    print("|---|---|---|---|---|")
    everything = [v for found in kinds.values() for v in found]
    for kind, found in [*kinds.items(), ("all", everything)]:
        share = [sum(v[i] for v in found) / len(found) for i in range(3)]
        print(f"| {kind} | {len(found)} | {share[0]:.3f} | {share[1]:.3f} | {share[2]:.3f} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-contrast", action="store_true", help="skip the contrast set")
    args = parse(parser, limit=QUICK_ROWS)
    threads = args.threads or None
    if not args.no_contrast:
        contrast(threads, QUICK_ROWS if args.quick else None)
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
