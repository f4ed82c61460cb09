"""Compare a run's ``summary.json`` with an earlier one, so that CI can fail on a
regression: a metric whose mean dropped by more than the tolerance, or more failed rows
than before."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgraph.errors import BaselineMismatchError, DatasetError

from .records import METRIC_NAMES
from .report import SOURCE_RECALL

DEFAULT_TOLERANCE = 0.02
REGRESSION_EXIT_CODE = 6
"""Exit code of ``kbgraph eval --baseline`` when a regression is found (1 is a crash)."""

COMPARED: tuple[str, ...] = (*METRIC_NAMES, SOURCE_RECALL)


@dataclass(frozen=True, slots=True)
class Change:
    metric: str
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        return self.current - self.baseline


@dataclass(frozen=True, slots=True)
class Comparison:
    tolerance: float
    changes: list[Change] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.regressions

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "tolerance": self.tolerance,
            "regressions": list(self.regressions),
            "changes": {
                c.metric: {"baseline": c.baseline, "current": c.current, "delta": round(c.delta, 4)}
                for c in self.changes
            },
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
    if not isinstance(data, dict) or not any(k in data for k in METRIC_NAMES):
        raise DatasetError(
            f"baseline {file} is not a kbgraph summary.json (no metric among "
            f"{', '.join(METRIC_NAMES)})."
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
    baseline: Mapping[str, Any],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    metrics: Sequence[str] = COMPARED,
) -> Comparison:
    """Changes of every metric both summaries score; a drop of more than ``tolerance`` in
    a mean, or an increase of failed rows, is a regression. Summaries of different rows
    are not compared: :class:`BaselineMismatchError` (see :func:`check_comparable`)."""
    check_comparable(current, baseline)
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
    failed_before = int((baseline.get("rows") or {}).get("failed", 0))
    failed_now = int((current.get("rows") or {}).get("failed", 0))
    if failed_now > failed_before:
        regressions.append(f"failed rows: {failed_now} now, {failed_before} before")
    return Comparison(tolerance, changes, regressions)


def format_comparison(comparison: Comparison) -> str:
    lines = [f"Compared with baseline (tolerance {comparison.tolerance:.3f}):"]
    for c in comparison.changes:
        lines.append(f"  {c.metric}: {c.baseline:.3f} -> {c.current:.3f} ({c.delta:+.3f})")
    if comparison.ok:
        lines.append("  no regression")
    else:
        lines += [f"  REGRESSION {r}" for r in comparison.regressions]
    return "\n".join(lines)


def _mean(summary: Mapping[str, Any], name: str) -> float | None:
    entry = summary.get(name)
    if not isinstance(entry, Mapping):
        return None
    value = entry.get("mean")
    return float(value) if isinstance(value, int | float) else None


__all__ = [
    "COMPARED",
    "DEFAULT_TOLERANCE",
    "REGRESSION_EXIT_CODE",
    "BaselineMismatchError",
    "Change",
    "Comparison",
    "check_comparable",
    "compare_summaries",
    "format_comparison",
    "load_summary",
]
