"""The per-row gate (``kbgraph eval --min-each faithfulness=0.5``): every row must score
at least its minimum. A mean hides one bad answer — one made-up port in one answer of
twenty leaves faithfulness at 0.95 — and a CI gate on answer quality has to fail on it.
:func:`kbgraph.evals._baseline.compare_summaries` checks it beside the other gates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RowBelow:
    """A row whose metric scored below its per-row minimum (``--min-each``), or has no score
    of it (``score`` None: the row failed, or the metric was undetermined). An unscored row
    counts as below, as ``--min`` counts a metric that scored nothing: a gate that passed
    the rows it could not score would pass a run whose every answer failed."""

    row_id: str
    metric: str
    score: float | None
    minimum: float
    row_status: str = "ok"  # the row's status in ``per_row``: "failed" says why unscored

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.row_id,
            "metric": self.metric,
            "score": self.score,
            "minimum": self.minimum,
            "row_status": self.row_status,
        }

    @property
    def shown(self) -> str:
        """``q07 0.000``; ``q07 failed`` or ``q07 unscored`` for a row without a score."""
        if self.score is not None:
            return f"{self.row_id} {self.score:.3f}"
        return f"{self.row_id} {'failed' if self.row_status == 'failed' else 'unscored'}"


def rows_below(current: Mapping[str, Any], row_minimums: Mapping[str, float]) -> list[RowBelow]:
    """Every row of ``per_row`` whose score of a metric of ``row_minimums`` is below it or
    missing (:class:`RowBelow`), worst first (unscored rows first), else in data-set order."""
    out: list[RowBelow] = []
    for row in current.get("per_row") or ():
        for name, floor in row_minimums.items():
            value = row.get(name)
            score = float(value) if isinstance(value, int | float) else None
            if score is None or score < floor:
                status = str(row.get("status") or "ok")
                out.append(RowBelow(str(row.get("id")), name, score, floor, status))
    return sorted(out, key=lambda r: -1.0 if r.score is None else r.score)


SHOWN_ROW_IDS = 5
"""Rows named in a ``--min-each`` line of the gate; the rest are counted ("and N more")."""


def row_minimum_lines(
    below: Sequence[RowBelow], row_minimums: Mapping[str, float], any_rows: bool
) -> list[str]:
    """One line per metric: ``faithfulness: 2 rows below 0.500 (q07 0.000, q11 0.312)``."""
    lines: list[str] = []
    for name, floor in row_minimums.items():
        if not any_rows:
            lines.append(f"{name}: no rows scored, minimum {floor:.3f} for each")
            continue
        mine = [r for r in below if r.metric == name]
        if not mine:
            continue
        shown = ", ".join(r.shown for r in mine[:SHOWN_ROW_IDS])
        more = len(mine) - SHOWN_ROW_IDS
        shown += f", and {more} more" if more > 0 else ""
        noun = "row" if len(mine) == 1 else "rows"
        lines.append(f"{name}: {len(mine)} {noun} below {floor:.3f} ({shown})")
    return lines


__all__ = ["SHOWN_ROW_IDS", "RowBelow", "row_minimum_lines", "rows_below"]
