"""The faithfulness score with the answer check's verdicts in it, on SummEdits (development
data): AUROC of the score, false "unstated fact" flags on consistent summaries, and CPU per
answer check. Prints Markdown, not a test.

    python benchmarks/bench_verdict.py [--summedits ../shared/data/train/summedits]
        [--per-label 200] [--seed 13] [--dump FILE.jsonl] [--dev-domains] [--verifier DIR]

The sample: ``--per-label`` consistent and as many inconsistent summaries, drawn with
``random.Random(seed)`` from every domain present (the issue 41 sample: 200 + 200, seed
13). ``--dev-domains`` keeps, of that same sample, only the rows of the domains the trained
verifier did not learn from (``SUMMEDITS_VERIFIER_TRAIN``), so a figure with and one
without the verifier are both on rows it never saw; ``--verifier DIR`` judges with the
weights in ``DIR`` (``make verifier`` writes ``evals/_judges/verifier``).

Per row: the metric's score (``FaithfulnessEvaluator(OfflineJudge("local"))``, facts
checked), the graded score (``supported_share``'s neighbour ``graded`` in the details),
whether a claim carries an unstated fact; CPU is ``time.process_time()`` per row.
``--dump`` writes each row's flags (token, reason) for reading what was flagged.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from kbgraph.evals import _benchmarks as bench
from kbgraph.evals._evaluators.faithfulness import FaithfulnessEvaluator
from kbgraph.evals._judges import OfflineJudge
from kbgraph.evals._judges._verifier import Verifier
from kbgraph.evals._records import EvalRecord, Passage
from kbgraph.evals._stats import auroc

DEFAULT = bench.default_data_dir().parent / "train" / "summedits"


Tagged = tuple[str, bench.Labelled]


def sample_tagged(folder: Path, per_label: int, seed: int) -> list[Tagged]:
    """``per_label`` consistent and ``per_label`` inconsistent summaries, seeded, each with
    its domain. The draw depends on the rows' order and count only, so it is the sample of
    :func:`sample_summedits` whatever the tags."""
    rows = [(d, item) for d, items in bench.summedits(folder).items() for item in items]
    rng = random.Random(seed)
    good = [r for r in rows if r[1].grounded]
    bad = [r for r in rows if not r[1].grounded]
    return rng.sample(good, per_label) + rng.sample(bad, per_label)


def sample_summedits(folder: Path, per_label: int, seed: int) -> list[bench.Labelled]:
    """``per_label`` consistent and ``per_label`` inconsistent summaries, seeded."""
    return [item for _, item in sample_tagged(folder, per_label, seed)]


def dev_only(rows: list[Tagged]) -> list[bench.Labelled]:
    """The rows outside the verifier's training domains."""
    return [item for d, item in rows if d not in bench.SUMMEDITS_VERIFIER_TRAIN]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summedits", type=Path, default=DEFAULT)
    parser.add_argument("--per-label", type=int, default=200)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--dev-domains", action="store_true")
    parser.add_argument("--verifier", type=Path)
    args = parser.parse_args()
    tagged = sample_tagged(args.summedits, args.per_label, args.seed)
    items = dev_only(tagged) if args.dev_domains else [item for _, item in tagged]
    verifier = Verifier(args.verifier) if args.verifier else None
    judge = OfflineJudge("local", model_threads=1, verifier=verifier)
    judge.vectors(["Load and warm the model before the clock starts."])
    metric = FaithfulnessEvaluator(judge)
    scores: dict[bool, list[float]] = {True: [], False: []}
    graded: dict[bool, list[float]] = {True: [], False: []}
    flagged = {True: 0, False: 0}
    cpu: list[float] = []
    dump = []
    for item in items:
        start = time.process_time()
        result = metric.evaluate(EvalRecord("", item.answer, (Passage(1, item.context),)))
        cpu.append(time.process_time() - start)
        claims = result.details.get("claims", [])
        flags = [(c.claim, c.reason) for c in claims if c.cause == "unstated_fact"]
        scores[item.grounded].append(result.score or 0.0)
        graded[item.grounded].append(result.details.get("graded", result.score or 0.0))
        flagged[item.grounded] += bool(flags)
        dump.append(
            {
                "grounded": item.grounded,
                "answer": item.answer,
                "flags": flags,
                "claims": [(c.score, c.cause, c.verdict) for c in claims],
            }
        )
    if args.dump:
        args.dump.write_text("\n".join(json.dumps(d) for d in dump) + "\n", "utf-8")
    good, bad = len(scores[True]), len(scores[False])
    where = "dev domains" if args.dev_domains else "all domains"
    print(f"| SummEdits (seed {args.seed}, {where}, {good} + {bad}; {judge.name}) | value |")
    print("|---|---|")
    print(f"| AUROC of the score | {auroc(scores[True], scores[False]):.3f} |")
    print(f"| AUROC of the graded support | {auroc(graded[True], graded[False]):.3f} |")
    print(f"| consistent summaries flagged (false flags) | {flagged[True]}/{good} |")
    print(f"| inconsistent summaries flagged | {flagged[False]}/{bad} |")
    print(f"| CPU s per answer check, median | {statistics.median(cpu):.3f} |")


if __name__ == "__main__":
    main()
