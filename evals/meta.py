"""Meta-evaluation: how well do the judges agree with people?

On the human-labelled sets in ``../shared/data/evals`` (see ``kbgraph.evals._benchmarks``):

- WikiEval — pairwise accuracy: does the judge score ``answer`` above
  ``ungrounded_answer`` (faithfulness)? Also ``answer`` above ``poor_answer`` (answer
  relevance). WikiEval's third pair (``context_v1`` above ``context_v2``, the share of
  relevant sentences in a context) measures no metric of ours and is left out.
- HaluEval QA — AUROC of right against hallucinated answers, the knowledge as context.
- BEGIN — AUROC of "Fully attributable" against "Not fully attributable" responses.
- SummEdits, when the user points ``summedits`` at its files (not shipped) — AUROC of
  consistent against inconsistent summaries per domain, and their macro average.

Every figure is computed in the same run for each judge and for the plain content-word-
overlap baseline (``judges.overlap.content_overlap``). An answer's faithfulness score is
the faithfulness metric's own score (the mean support score of its claims), what a user
gets; 0 when it makes no claim.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

from tqdm import tqdm

from . import _benchmarks as bench
from .claims import split_claims
from .evaluators.faithfulness import FaithfulnessEvaluator
from .judges.base import Judge
from .judges.overlap import content_overlap
from .records import EvalRecord, Passage
from .stats import auroc, pairwise_accuracy

T = TypeVar("T")
BASELINE = "overlap baseline"
Measure = Literal["pairwise accuracy", "AUROC"]
Kind = Literal["faithfulness", "answer_relevance"]


@dataclass(frozen=True, slots=True)
class MetaResult:
    benchmark: str
    split: str
    measure: Measure
    n: int
    scores: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_per_100: dict[str, float] = field(default_factory=dict)
    """CPU seconds of the process (``time.process_time``, every thread) per 100 judged
    answers: less sensitive than ``seconds`` to other load on a shared machine."""

    def to_dict(self) -> dict[str, object]:
        return {
            "benchmark": self.benchmark,
            "split": self.split,
            "measure": self.measure,
            "n": self.n,
            "scores": {k: round(v, 4) for k, v in self.scores.items()},
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
            "cpu_per_100": {k: round(v, 2) for k, v in self.cpu_per_100.items()},
        }


def faithfulness_score(judge: Judge, question: str | None, context: str, answer: str) -> float:
    """The faithfulness metric's score of the answer against the context as one source; 0
    without claims (nothing in the answer can be attributed)."""
    record = EvalRecord(question or "", answer, (Passage(1, context),))
    # The score is the judge's graded support; the checkable-facts layer decides verdicts
    # only, so it is not run for a score.
    result = FaithfulnessEvaluator(judge, check_facts=False).evaluate(record)
    return 0.0 if result.score is None else result.score


Benchmark = Literal["wikieval", "halueval", "begin"]
BENCHMARKS: tuple[Benchmark, ...] = ("wikieval", "halueval", "begin")


def run_meta(
    judges: Sequence[Judge],
    *,
    data_dir: Path | None = None,
    limit: int | None = None,
    workers: int = 1,
    progress: bool = False,
    benchmarks: Collection[Benchmark] = BENCHMARKS,
    summedits: Path | None = None,
) -> list[MetaResult]:
    """The chosen benchmarks for every judge and the baseline, and SummEdits from the folder
    ``summedits`` when given. ``limit`` caps the items per split (sampled evenly, labels
    kept); ``workers`` threads call each judge (for LLMs)."""
    root = data_dir or bench.default_data_dir()
    runner = _Runner(judges, workers, progress)
    results: list[MetaResult] = []
    if "wikieval" in benchmarks:
        results.append(
            runner.pairs(
                "WikiEval",
                "faithfulness: answer > ungrounded_answer",
                bench.wikieval_pairs(root, "faithfulness")[:limit],
                "faithfulness",
            )
        )
    if "halueval" in benchmarks:
        for split, label in (("qa_one_turn", "held out"), ("qa_multi_turn", "dev")):
            items = bench.sample(bench.halueval(root, split), limit)
            results.append(runner.labelled("HaluEval QA", f"{split} ({label})", items))
    if "begin" in benchmarks:
        test = bench.sample(bench.begin(root, bench.BEGIN_TEST), limit)
        results.append(runner.labelled("BEGIN", "wow test (held out)", test))
        dev = bench.sample(bench.begin(root, bench.BEGIN_DEV), limit)
        results.append(runner.labelled("BEGIN", "dev: cmu-dog, topicalchat, wow", dev))
    if summedits is not None:
        domains = [
            runner.labelled("SummEdits", domain, bench.sample(items, limit))
            for domain, items in bench.summedits(summedits).items()
        ]
        results += [*domains, macro("SummEdits", f"macro over {len(domains)} domains", domains)]
    if "wikieval" in benchmarks:
        results.append(
            runner.pairs(
                "WikiEval",
                "answer relevance: answer > poor_answer",
                bench.wikieval_pairs(root, "answer_relevance")[:limit],
                "answer_relevance",
            )
        )
    return results


def macro(benchmark: str, split: str, parts: Sequence[MetaResult]) -> MetaResult:
    """The unweighted mean of ``parts``' figures (each judge's seconds summed, its CPU per
    100 answers averaged over all of them)."""
    names = [n for n in parts[0].scores if all(n in p.scores for p in parts)]
    return MetaResult(
        benchmark,
        split,
        parts[0].measure,
        sum(p.n for p in parts),
        {n: sum(p.scores[n] for p in parts) / len(parts) for n in names},
        {n: sum(p.seconds.get(n, 0.0) for p in parts) for n in parts[0].seconds},
        {
            n: sum(p.cpu_per_100.get(n, 0.0) * p.n for p in parts) / sum(p.n for p in parts)
            for n in parts[0].cpu_per_100
        },
    )


class _Runner:
    def __init__(self, judges: Sequence[Judge], workers: int, progress: bool) -> None:
        self.judges = list(judges)
        self.workers = max(1, workers)
        self.progress = progress

    def labelled(self, benchmark: str, split: str, items: list[bench.Labelled]) -> MetaResult:
        positives = [i for i, item in enumerate(items) if item.grounded]
        negatives = [i for i, item in enumerate(items) if not item.grounded]
        scores: dict[str, float] = {}
        seconds: dict[str, float] = {}
        cpu: dict[str, float] = {}
        base = [content_overlap(item.answer, item.context) for item in items]
        scores[BASELINE] = auroc([base[i] for i in positives], [base[i] for i in negatives])
        for judge in self.judges:
            # The clock starts before the prefetch: embedding ahead is part of the work.
            started, started_cpu = time.perf_counter(), time.process_time()
            _prefetch(judge, [(item.answer, item.context, item.question) for item in items])
            values = self._map(
                judge, partial(_labelled_score, judge), items, f"{benchmark} {split}"
            )
            seconds[judge.name] = time.perf_counter() - started
            cpu[judge.name] = _per_100(time.process_time() - started_cpu, len(items))
            scores[judge.name] = auroc(
                [values[i] for i in positives], [values[i] for i in negatives]
            )
        return MetaResult(benchmark, split, "AUROC", len(items), scores, seconds, cpu)

    def pairs(self, benchmark: str, split: str, pairs: list[bench.Pair], kind: Kind) -> MetaResult:
        scores = {
            BASELINE: pairwise_accuracy(
                [(_baseline(kind, p, p.better), _baseline(kind, p, p.worse)) for p in pairs]
            )
        }
        seconds: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for judge in self.judges:
            started, started_cpu = time.perf_counter(), time.process_time()
            jobs = [(p, text) for p in pairs for text in (p.better, p.worse)]
            # Only what the split's metric embeds: claims against contexts for
            # faithfulness, questions and answers for relevance (each was paying for both).
            if kind == "faithfulness":
                _prefetch(judge, [(text, p.context, p.question) for p, text in jobs])
            else:
                _prefetch(judge, [], [p.question for p in pairs] + [text for _, text in jobs])
            values = self._map(
                judge, partial(_pair_score, judge, kind), jobs, f"{benchmark} {kind}"
            )
            seconds[judge.name] = time.perf_counter() - started
            cpu[judge.name] = _per_100(time.process_time() - started_cpu, len(jobs))
            scores[judge.name] = pairwise_accuracy(
                list(zip(values[::2], values[1::2], strict=True))
            )
        return MetaResult(benchmark, split, "pairwise accuracy", len(pairs), scores, seconds, cpu)

    def _map(
        self, judge: Judge, fn: Callable[[T], float], items: Sequence[T], label: str
    ) -> list[float]:
        bar = tqdm(
            total=len(items),
            desc=f"{judge.name}: {label}",
            file=sys.stderr,
            disable=not self.progress,
            leave=False,
        )
        with bar, ThreadPoolExecutor(max_workers=self.workers) as pool:
            out = []
            for value in pool.map(fn, items):
                out.append(value)
                bar.update(1)
        return out


def _per_100(cpu_seconds: float, answers: int) -> float:
    return 100 * cpu_seconds / answers if answers else 0.0


def _labelled_score(judge: Judge, item: bench.Labelled) -> float:
    return faithfulness_score(judge, item.question, item.context, item.answer)


def _pair_score(judge: Judge, kind: Kind, job: tuple[bench.Pair, str]) -> float:
    pair, text = job
    if kind == "faithfulness":
        return faithfulness_score(judge, pair.question, pair.context, text)
    return judge.judge_answer(pair.question, text).score


def _baseline(kind: Kind, pair: bench.Pair, text: str) -> float:
    if kind == "faithfulness":
        return content_overlap(text, pair.context)
    # Relevance: the share of the question's content words the text contains.
    return content_overlap(pair.question, text)


def _prefetch(
    judge: Judge, items: list[tuple[str, str, str | None]], texts: Sequence[str] = ()
) -> None:
    warm = getattr(judge, "prefetch", None)
    if warm is None:
        return
    claims = [([c.text for c in split_claims(a)], ctx, q) for a, ctx, q in items]
    warm(claims=[c for c in claims if c[1]], texts=texts)


def format_table(results: Sequence[MetaResult]) -> str:
    """One Markdown table: a row per benchmark split, a column per judge and the baseline,
    then each judge's seconds for the split and its CPU seconds per 100 answers (prefetch
    included)."""
    names = [n for n in dict.fromkeys(k for r in results for k in r.scores) if n != BASELINE]
    head = ["benchmark", "split", "measure", "n", *names, BASELINE]
    head += [f"{n} seconds" for n in names]
    head += [f"{n} CPU s/100" for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r.benchmark, r.split, r.measure, str(r.n)]
        cells += [_cell(r.scores.get(n), r.scores[BASELINE]) for n in names]
        cells.append(f"{r.scores[BASELINE]:.3f}")
        cells += [f"{r.seconds[n]:.1f}" if n in r.seconds else "—" for n in names]
        cells += [f"{r.cpu_per_100[n]:.1f}" if n in r.cpu_per_100 else "—" for n in names]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: float | None, baseline: float) -> str:
    if value is None:
        return "—"
    return f"{value:.3f} ({value - baseline:+.3f})"


__all__ = [
    "BASELINE",
    "BENCHMARKS",
    "Benchmark",
    "MetaResult",
    "faithfulness_score",
    "format_table",
    "macro",
    "run_meta",
]
