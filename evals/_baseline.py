"""The gates of a run, so that CI can fail on it: a metric whose mean dropped by more than
the tolerance against an earlier run's ``summary.json``, more failed rows than before, a
metric whose mean is below its minimum (``--min faithfulness=0.9``), or a row whose score
is below its per-row minimum (``--min-each faithfulness=0.5``: one made-up fact in one
answer of twenty leaves the mean at 0.95). The comparison names the rows that got worse
and the rows below; it is saved in ``summary.json`` (``gate``) and ``report.md``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgraph.errors import BaselineMismatchError, ConfigError, DatasetError

from ._metrics import metric_names
from ._report import SOURCE_RECALL
from ._row_gate import RowBelow, row_minimum_lines, rows_below

DEFAULT_TOLERANCE = 0.02
REGRESSION_EXIT_CODE = 6
"""Exit code of ``kbgraph eval --baseline`` when a regression is found (1 is a crash)."""


def compared() -> tuple[str, ...]:
    """What a baseline gate compares: every registered metric and the gold-source recall."""
    return (*metric_names(), SOURCE_RECALL)


@dataclass(frozen=True, slots=True)
class Change:
    metric: str
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        return self.current - self.baseline


@dataclass(frozen=True, slots=True)
class RowChange:
    """A row whose metric scored lower than in the baseline."""

    row_id: str
    metric: str
    baseline: float
    current: float | None  # None: no score now (failed or undetermined)

    @property
    def delta(self) -> float:
        return (self.current if self.current is not None else 0.0) - self.baseline

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.row_id,
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "delta": round(self.delta, 4),
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """``changes``: each metric's mean before and now; ``worse_rows``: every row whose score
    dropped, worst first; what fails the gate: ``regressions`` against the baseline (a drop
    beyond ``tolerance``, more failed rows) and ``below_minimum`` (a mean below its
    ``--min``, or rows below a ``--min-each``: one line per metric; neither needs a
    baseline). ``rows_below``: every row below a ``row_minimums`` entry, worst first."""

    tolerance: float
    changes: list[Change] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    worse_rows: list[RowChange] = field(default_factory=list)
    minimums: dict[str, float] = field(default_factory=dict)
    baseline: str | None = None  # where the baseline came from
    below_minimum: list[str] = field(default_factory=list)
    row_minimums: dict[str, float] = field(default_factory=dict)
    rows_below: list[RowBelow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.regressions and not self.below_minimum

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "baseline": self.baseline,
            "tolerance": self.tolerance,
            "minimums": dict(self.minimums),
            "row_minimums": dict(self.row_minimums),
            "regressions": list(self.regressions),
            "below_minimum": list(self.below_minimum),
            "changes": {
                c.metric: {"baseline": c.baseline, "current": c.current, "delta": round(c.delta, 4)}
                for c in self.changes
            },
            "worse_rows": [r.to_dict() for r in self.worse_rows],
            "rows_below": [r.to_dict() for r in self.rows_below],
        }


def load_summary(path: str | Path) -> dict[str, Any]:
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(
            f"baseline {file} does not exist; pass the summary.json of an earlier run."
        ) from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"baseline {file} is not valid JSON ({exc.msg}).") from exc
    if not isinstance(data, dict) or not any(k in data for k in metric_names()):
        raise DatasetError(
            f"baseline {file} is not a kbgraph summary.json (no metric among "
            f"{', '.join(metric_names())})."
        )
    return data


def check_comparable(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    """Raise :class:`BaselineMismatchError` unless both summaries scored the same rows:
    the same row count and, when both record it, the same ``dataset_fingerprint``."""
    now = (current.get("rows") or {}).get("total")
    before = (baseline.get("rows") or {}).get("total")
    if now is not None and before is not None and int(now) != int(before):
        raise BaselineMismatchError(
            f"the baseline scored {before} rows of {baseline.get('dataset') or 'its data set'}"
            f", this run {now} rows of {current.get('dataset') or 'its data set'}; a gate "
            "needs the same rows: use the same data set and --limit as the baseline run, or "
            "make a new baseline."
        )
    old_print, new_print = baseline.get("dataset_fingerprint"), current.get("dataset_fingerprint")
    if old_print and new_print and old_print != new_print:
        raise BaselineMismatchError(
            f"the baseline's rows (ids and questions, fingerprint {old_print}) differ from this "
            f"run's ({new_print}): the data set changed since the baseline. Compare runs of "
            "the same data set, or make a new baseline from this run's summary.json."
        )


def compare_summaries(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    metrics: Sequence[str] | None = None,
    minimums: Mapping[str, float] | None = None,
    row_minimums: Mapping[str, float] | None = None,
    source: str | None = None,
) -> Comparison:
    """The gate: changes of every metric both summaries score, where a drop of more than
    ``tolerance`` in a mean, or an increase of failed rows, is a regression; each metric
    of ``minimums`` whose mean is below it (or unscored); and each metric of
    ``row_minimums`` that some row (``per_row``) scores below, or does not score (see
    :class:`RowBelow`). Summaries of different rows are not compared:
    :class:`BaselineMismatchError` (see :func:`check_comparable`). ``baseline`` may be
    ``None`` to check the minimums only; ``metrics`` default: every registered metric and
    the gold-source recall (:func:`compared`)."""
    metrics = compared() if metrics is None else metrics
    changes: list[Change] = []
    regressions: list[str] = []
    worse: list[RowChange] = []
    if baseline is not None:
        check_comparable(current, baseline)
        changes, regressions = _mean_changes(current, baseline, tolerance, metrics)
        failed_before = int((baseline.get("rows") or {}).get("failed", 0))
        failed_now = int((current.get("rows") or {}).get("failed", 0))
        if failed_now > failed_before:
            regressions.append(f"failed rows: {failed_now} now, {failed_before} before")
        worse = worse_rows(current, baseline, metrics)
    row_floors = dict(row_minimums or {})
    below_rows = rows_below(current, row_floors)
    below = _means_below(current, minimums or {}) + row_minimum_lines(
        below_rows, row_floors, bool(current.get("per_row"))
    )
    return Comparison(
        tolerance,
        changes,
        regressions,
        worse,
        dict(minimums or {}),
        source,
        below,
        row_floors,
        below_rows,
    )


def _mean_changes(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    tolerance: float,
    metrics: Sequence[str],
) -> tuple[list[Change], list[str]]:
    """Each metric's mean before and now, and the drops beyond ``tolerance``."""
    changes: list[Change] = []
    regressions: list[str] = []
    for name in metrics:
        old, new = _mean(baseline, name), _mean(current, name)
        if old is None or new is None:
            if old is not None:
                regressions.append(f"{name}: scored {old:.3f} before, nothing scored now")
            continue
        change = Change(name, old, new)
        changes.append(change)
        if change.delta < -tolerance:
            regressions.append(
                f"{name}: {new:.3f} < {old:.3f} - {tolerance:.3f} (dropped {-change.delta:.3f})"
            )
    return changes, regressions


def _means_below(current: Mapping[str, Any], minimums: Mapping[str, float]) -> list[str]:
    below: list[str] = []
    for name, floor in minimums.items():
        value = _mean(current, name)
        if value is None:
            below.append(f"{name}: nothing scored, minimum {floor:.3f}")
        elif value < floor:
            below.append(f"{name}: {value:.3f} < {floor:.3f}")
    return below


def worse_rows(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    metrics: Sequence[str] | None = None,
) -> list[RowChange]:
    """Every row (``per_row``, matched by id) whose score of a metric dropped, or that has
    no score now where it had one, the biggest drops first."""
    metrics = compared() if metrics is None else metrics
    before = {row.get("id"): row for row in baseline.get("per_row") or ()}
    out: list[RowChange] = []
    for row in current.get("per_row") or ():
        old_row = before.get(row.get("id"))
        if old_row is None:
            continue
        for name in metrics:
            old, new = old_row.get(name), row.get(name)
            if not isinstance(old, int | float):
                continue
            new_value = float(new) if isinstance(new, int | float) else None
            if new_value is None or new_value < float(old) - ROW_EPSILON:
                out.append(RowChange(str(row.get("id")), name, float(old), new_value))
    return sorted(out, key=lambda c: (c.delta, c.row_id, c.metric))


ROW_EPSILON = 1e-4
"""A row's score is worse when it dropped by more than this (scores are kept to 4 places)."""


def parse_minimums(specs: Sequence[str], *, option: str = "--min") -> dict[str, float]:
    """``["faithfulness=0.9", ...]`` → ``{"faithfulness": 0.9}``; a name or value that is not
    allowed is a ``ConfigError`` naming what is, and ``option`` (``--min``, ``--min-each``)."""
    out: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name = name.strip()
        if not sep or name not in compared():
            raise ConfigError(
                f"{option} {spec!r}: give METRIC=VALUE with METRIC one of "
                f"{', '.join(compared())}, e.g. {option} faithfulness=0.9"
            )
        try:
            floor = float(value)
        except ValueError:
            floor = math.nan
        if not 0.0 <= floor <= 1.0:
            raise ConfigError(f"{option} {spec!r}: the minimum must be a number from 0 to 1")
        out[name] = floor
    return out


def format_comparison(comparison: Comparison, *, rows: int = 10) -> str:
    """The gate for a terminal: changes, the ``rows`` worst rows, and the verdict."""
    lines = []
    if comparison.changes or comparison.baseline:
        lines.append(f"Compared with baseline (tolerance {comparison.tolerance:.3f}):")
    for c in comparison.changes:
        lines.append(f"  {c.metric}: {c.baseline:.3f} -> {c.current:.3f} ({c.delta:+.3f})")
    if comparison.minimums:
        floors = ", ".join(f"{k} >= {v:g}" for k, v in comparison.minimums.items())
        lines.append(f"Minimums: {floors}")
    if comparison.row_minimums:
        floors = ", ".join(f"{k} >= {v:g}" for k, v in comparison.row_minimums.items())
        lines.append(f"Minimums of each row: {floors}")
    if comparison.worse_rows:
        lines.append(f"  {len(comparison.worse_rows)} row scores got worse; worst first:")
        lines += [f"    {_row_line(r)}" for r in comparison.worse_rows[:rows]]
    against_baseline = comparison.baseline is not None or bool(comparison.changes)
    if comparison.ok:
        lines.append("  no regression" if against_baseline else "  every minimum met")
    lines += [f"  REGRESSION {r}" for r in comparison.regressions]
    lines += [f"  BELOW MINIMUM {r}" for r in comparison.below_minimum]
    return "\n".join(lines)


def _row_line(change: RowChange) -> str:
    now = "—" if change.current is None else f"{change.current:.3f}"
    return f"{change.row_id} {change.metric}: {change.baseline:.3f} -> {now}"


def _mean(summary: Mapping[str, Any], name: str) -> float | None:
    entry = summary.get(name)
    if not isinstance(entry, Mapping):
        return None
    value = entry.get("mean")
    return float(value) if isinstance(value, int | float) else None


__all__ = [
    "DEFAULT_TOLERANCE",
    "REGRESSION_EXIT_CODE",
    "ROW_EPSILON",
    "BaselineMismatchError",
    "Change",
    "Comparison",
    "RowChange",
    "check_comparable",
    "compare_summaries",
    "compared",
    "format_comparison",
    "load_summary",
    "parse_minimums",
    "worse_rows",
]
