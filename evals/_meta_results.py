"""What a meta-evaluation run reports, and its tables: :class:`MetaResult` per benchmark
split, :func:`macro` averages, :func:`format_table`. Re-exported by ``kbgraph.evals._meta``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

BASELINE = "overlap baseline"
NOVEL_WORDS = "novel words baseline"
NOVEL_FACTS = "novel numbers+names baseline"
LENGTH_GROUPS = 4
"""Answer-length quartiles for the AUROC within length groups."""
THRESHOLD = 0.5
"""A judge's own line: a faithfulness score at or above it counts as faithful."""
Measure = Literal["pairwise accuracy", "AUROC"]


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
    heldout: bool = False
    """A held-out test set: the three fields below are filled, and it has its own table."""
    balanced_accuracy: dict[str, float] = field(default_factory=dict)
    """Per judge, at its own threshold (``THRESHOLD``)."""
    within_length: dict[str, float] = field(default_factory=dict)
    """Per judge and baseline: the AUROC within answer-length quartiles (absent when no
    quartile holds both labels)."""
    anchors: tuple[str, ...] = ()
    """Published figures of other checkers on (nearly) the same data."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "benchmark": self.benchmark,
            "split": self.split,
            "measure": self.measure,
            "n": self.n,
            "scores": {k: round(v, 4) for k, v in self.scores.items()},
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
            "cpu_per_100": {k: round(v, 2) for k, v in self.cpu_per_100.items()},
        }
        if self.heldout:
            out["balanced_accuracy"] = {k: round(v, 4) for k, v in self.balanced_accuracy.items()}
            out["auroc_within_length_groups"] = {
                k: round(v, 4) for k, v in self.within_length.items()
            }
            out["anchors"] = list(self.anchors)
        return out


def macro(
    benchmark: str, split: str, parts: Sequence[MetaResult], anchors: tuple[str, ...] = ()
) -> MetaResult:
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
        heldout=parts[0].heldout,
        balanced_accuracy=_mean_of(p.balanced_accuracy for p in parts),
        within_length=_mean_of(p.within_length for p in parts),
        anchors=anchors,
    )


def _mean_of(figures: Iterable[dict[str, float]]) -> dict[str, float]:
    """Per name, the mean over the parts, for the names every part has."""
    parts = list(figures)
    if not parts:
        return {}
    names = [n for n in parts[0] if all(n in p for p in parts)]
    return {n: sum(p[n] for p in parts) / len(parts) for n in names}


def format_table(results: Sequence[MetaResult]) -> str:
    """One Markdown table: a row per benchmark split, a column per judge and the baseline,
    then each judge's seconds for the split and its CPU seconds per 100 answers (prefetch
    included). The held-out test sets follow in a second table (``_heldout_table``)."""
    plain = [r for r in results if not r.heldout]
    held = [r for r in results if r.heldout]
    tables = ([_plain_table(plain)] if plain else []) + ([_heldout_table(held)] if held else [])
    return "\n\n".join(tables)


def _plain_table(results: Sequence[MetaResult]) -> str:
    names = _judge_names(results)
    head = ["benchmark", "split", "measure", "n", *names, BASELINE]
    head += [f"{n} seconds" for n in names]
    head += [f"{n} CPU s/100" for n in names]
    lines = _head(head)
    for r in results:
        cells = [r.benchmark, r.split, r.measure, str(r.n)]
        cells += [_cell(r.scores.get(n), r.scores[BASELINE]) for n in names]
        cells.append(f"{r.scores[BASELINE]:.3f}")
        cells += _costs(r, names)
        lines.append(_row(cells))
    return "\n".join(lines)


def _heldout_table(results: Sequence[MetaResult]) -> str:
    """Per judge: AUROC (its gain over the overlap baseline in parentheses), balanced
    accuracy at 0.5 and AUROC within answer-length quartiles; per floor: AUROC and AUROC
    within length quartiles; then the published anchors and the judges' costs."""
    names = _judge_names(results)
    floors = [BASELINE, NOVEL_WORDS, NOVEL_FACTS]
    head = ["benchmark", "split", "n"]
    for n in names:
        head += [f"{n} AUROC", f"{n} bal. acc. @{THRESHOLD}", f"{n} AUROC in length groups"]
    for n in floors:
        head += [f"{n} AUROC", f"{n} in length groups"]
    head.append("published (bal. acc., %)")
    head += [f"{n} seconds" for n in names] + [f"{n} CPU s/100" for n in names]
    lines = _head(head)
    for r in results:
        cells = [r.benchmark, r.split, str(r.n)]
        for n in names:
            cells.append(_cell(r.scores.get(n), r.scores[BASELINE]))
            cells += [_num(r.balanced_accuracy.get(n)), _num(r.within_length.get(n))]
        for n in floors:
            cells += [_num(r.scores.get(n)), _num(r.within_length.get(n))]
        cells.append("; ".join(r.anchors) or "—")
        lines.append(_row(cells + _costs(r, names)))
    return "\n".join(lines)


def _judge_names(results: Sequence[MetaResult]) -> list[str]:
    floors = {BASELINE, NOVEL_WORDS, NOVEL_FACTS}
    return [n for n in dict.fromkeys(k for r in results for k in r.scores) if n not in floors]


def _head(head: list[str]) -> list[str]:
    return [_row(head), "|" + "---|" * len(head)]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _costs(r: MetaResult, names: list[str]) -> list[str]:
    cells = [f"{r.seconds[n]:.1f}" if n in r.seconds else "—" for n in names]
    return cells + [f"{r.cpu_per_100[n]:.1f}" if n in r.cpu_per_100 else "—" for n in names]


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _cell(value: float | None, baseline: float) -> str:
    if value is None:
        return "—"
    return f"{value:.3f} ({value - baseline:+.3f})"


__all__ = [
    "BASELINE",
    "LENGTH_GROUPS",
    "NOVEL_FACTS",
    "NOVEL_WORDS",
    "THRESHOLD",
    "Measure",
    "MetaResult",
    "format_table",
    "macro",
]
