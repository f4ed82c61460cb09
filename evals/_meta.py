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

The held-out test sets (``../shared/data/heldout``, read by ``_heldout``; only when named:
``ragtruth``, ``lfqa``, ``attributionbench``, ``faithbench``, ``summac``) — RAGTruth per task
and the mean task AUROC, LFQA-Verification's answer sentences, AttributionBench per subset,
FaithBench's summaries, SummaC per subset and its macro — report more per judge:
the balanced accuracy at the judge's own threshold (a score of 0.5 or more = faithful), the
AUROC within answer-length quartiles (``stats.auroc_within_groups``: answer length alone
separates RAGTruth QA at 0.725), two more floors (``_novelty``) and the published figures
of other checkers (``_heldout.ANCHORS``). They are test sets: report, never tune.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar, get_args

from tqdm import tqdm

from . import _benchmarks as bench
from . import _heldout as test_sets
from ._claims import split_claims
from ._evaluators.faithfulness import FaithfulnessEvaluator
from ._judges.base import Judge
from ._judges.overlap import content_overlap
from ._meta_results import (
    BASELINE,
    LENGTH_GROUPS,
    NOVEL_FACTS,
    NOVEL_WORDS,
    THRESHOLD,
    MetaResult,
    format_table,
    macro,
)
from ._novelty import novel_fact_count, novel_word_share
from ._records import EvalRecord, Passage
from ._stats import auroc, auroc_within_groups, balanced_accuracy, pairwise_accuracy

T = TypeVar("T")
Kind = Literal["faithfulness", "answer_relevance"]


def faithfulness_score(judge: Judge, question: str | None, context: str, answer: str) -> float:
    """The faithfulness metric's score of the answer against the context as one source; 0
    without claims (nothing in the answer can be attributed)."""
    record = EvalRecord(question or "", answer, (Passage(1, context),))
    # The score people gate on: the verdicts of the checkable-facts layer are in it.
    result = FaithfulnessEvaluator(judge).evaluate(record)
    return 0.0 if result.score is None else result.score


Benchmark = Literal[
    "wikieval", "halueval", "begin", "ragtruth", "lfqa", "attributionbench", "faithbench", "summac"
]
BENCHMARKS: tuple[Benchmark, ...] = ("wikieval", "halueval", "begin")
"""What runs when none is named: the held-out test sets only run when asked for."""
HELDOUT_BENCHMARKS: tuple[Benchmark, ...] = (
    "ragtruth", "lfqa", "attributionbench", "faithbench", "summac"
)  # fmt: skip
ALL_BENCHMARKS: tuple[Benchmark, ...] = get_args(Benchmark)


def run_meta(
    judges: Sequence[Judge],
    *,
    data_dir: Path | None = None,
    limit: int | None = None,
    workers: int = 1,
    progress: bool = False,
    benchmarks: Collection[Benchmark] = BENCHMARKS,
    summedits: Path | None = None,
    heldout_dir: Path | None = None,
) -> list[MetaResult]:
    """The chosen benchmarks for every judge and the baseline, and SummEdits from the folder
    ``summedits`` when given. ``limit`` caps the items per split (sampled evenly, labels
    kept); ``workers`` threads call each judge (for LLMs). The held-out sets are read from
    ``heldout_dir`` (default ``_heldout.default_heldout_dir()``)."""
    root = data_dir or bench.default_data_dir()
    held = _HeldOut.read(heldout_dir or test_sets.default_heldout_dir(), benchmarks)
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
    return results + held.run(runner, limit)


@dataclass(frozen=True, slots=True)
class _HeldOut:
    """The held-out sets asked for, read before anything runs: a missing file fails the
    command at once, not after an hour of other benchmarks."""

    ragtruth: dict[str, list[bench.Labelled]]
    lfqa: list[bench.Labelled] | None
    attributionbench: dict[str, list[bench.Labelled]]
    faithbench: list[bench.Labelled] | None
    summac: dict[str, list[bench.Labelled]]

    @classmethod
    def read(cls, root: Path, benchmarks: Collection[Benchmark]) -> _HeldOut:
        return cls(
            test_sets.ragtruth(root) if "ragtruth" in benchmarks else {},
            test_sets.lfqa(root) if "lfqa" in benchmarks else None,
            test_sets.attributionbench(root) if "attributionbench" in benchmarks else {},
            test_sets.faithbench(root) if "faithbench" in benchmarks else None,
            test_sets.summac(root) if "summac" in benchmarks else {},
        )

    def run(self, runner: _Runner, limit: int | None) -> list[MetaResult]:
        results = [
            runner.heldout("RAGTruth", task, bench.sample(items, limit))
            for task, items in self.ragtruth.items()
        ]
        if results:
            mean = test_sets.RAGTRUTH_MEAN
            results.append(macro("RAGTruth", mean, results, test_sets.anchors("RAGTruth", mean)))
        if self.lfqa is not None:
            items = bench.sample(self.lfqa, limit)
            results.append(runner.heldout("LFQA-Verification", test_sets.LFQA_SPLIT, items))
        results += [
            runner.heldout("AttributionBench", subset, bench.sample(items, limit))
            for subset, items in self.attributionbench.items()
        ]
        if self.faithbench is not None:
            items = bench.sample(self.faithbench, limit)
            results.append(runner.heldout("FaithBench", test_sets.FAITHBENCH_SPLIT, items))
        subsets = [
            runner.heldout("SummaC", subset, bench.sample(items, limit))
            for subset, items in self.summac.items()
        ]
        if subsets:
            results += [*subsets, macro("SummaC", test_sets.SUMMAC_MACRO, subsets)]
        return results


class _Runner:
    def __init__(self, judges: Sequence[Judge], workers: int, progress: bool) -> None:
        self.judges = list(judges)
        self.workers = max(1, workers)
        self.progress = progress

    def labelled(self, benchmark: str, split: str, items: list[bench.Labelled]) -> MetaResult:
        labels = [item.grounded for item in items]
        base = [content_overlap(item.answer, item.context) for item in items]
        scores = {BASELINE: _auroc_of(base, labels)}
        seconds: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for judge in self.judges:
            values, seconds[judge.name], cpu[judge.name] = self._scored(
                judge, items, f"{benchmark} {split}"
            )
            scores[judge.name] = _auroc_of(values, labels)
        return MetaResult(benchmark, split, "AUROC", len(items), scores, seconds, cpu)

    def heldout(self, benchmark: str, split: str, items: list[bench.Labelled]) -> MetaResult:
        """A held-out split: AUROC for the judges and the three floors, and also the
        judges' balanced accuracy at ``THRESHOLD`` and everyone's AUROC within answer-length
        quartiles."""
        labels = [item.grounded for item in items]
        lengths = [len(item.answer.split()) for item in items]
        # The floors rank faithful answers first: less novelty, higher score.
        values: dict[str, list[float]] = {
            BASELINE: [content_overlap(i.answer, i.context) for i in items],
            NOVEL_WORDS: [-novel_word_share(i.answer, i.context) for i in items],
            NOVEL_FACTS: [-float(novel_fact_count(i.answer, i.context)) for i in items],
        }
        seconds: dict[str, float] = {}
        cpu: dict[str, float] = {}
        balanced: dict[str, float] = {}
        for judge in self.judges:
            values[judge.name], seconds[judge.name], cpu[judge.name] = self._scored(
                judge, items, f"{benchmark} {split}"
            )
            balanced[judge.name] = balanced_accuracy(values[judge.name], labels, THRESHOLD)
        scores = {name: _auroc_of(v, labels) for name, v in values.items()}
        within = {
            name: figure
            for name, v in values.items()
            if (figure := auroc_within_groups(v, labels, lengths, LENGTH_GROUPS)) is not None
        }
        return MetaResult(
            benchmark, split, "AUROC", len(items), scores, seconds, cpu,
            heldout=True, balanced_accuracy=balanced, within_length=within,
            anchors=test_sets.anchors(benchmark, split),
        )  # fmt: skip

    def _scored(
        self, judge: Judge, items: list[bench.Labelled], label: str
    ) -> tuple[list[float], float, float]:
        """The judge's faithfulness score of every item, its wall seconds and its CPU
        seconds per 100 items."""
        # The clock starts before the prefetch: embedding ahead is part of the work.
        started, started_cpu = time.perf_counter(), time.process_time()
        _prefetch(judge, [(item.answer, item.context, item.question) for item in items])
        values = self._map(judge, partial(_labelled_score, judge), items, label)
        seconds = time.perf_counter() - started
        return values, seconds, _per_100(time.process_time() - started_cpu, len(items))

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


def _auroc_of(values: Sequence[float], labels: Sequence[bool]) -> float:
    return auroc(
        [v for v, good in zip(values, labels, strict=True) if good],
        [v for v, good in zip(values, labels, strict=True) if not good],
    )


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


__all__ = [
    "ALL_BENCHMARKS",
    "BASELINE",
    "BENCHMARKS",
    "HELDOUT_BENCHMARKS",
    "LENGTH_GROUPS",
    "NOVEL_FACTS",
    "NOVEL_WORDS",
    "THRESHOLD",
    "Benchmark",
    "MetaResult",
    "faithfulness_score",
    "format_table",
    "macro",
    "run_meta",
]
