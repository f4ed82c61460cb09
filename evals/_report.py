"""Outputs of a batch run: ``results.jsonl`` (one row per line, every claim verdict with its
reason and source sentence), ``summary.json`` (per metric ``{mean, n_scored,
n_undetermined, n_failed}`` under the metric's name, per-row scores, and the ``gate``: the
baseline comparison with the rows that got worse, and the minimums), ``report.md`` and
``scores.png`` (the distribution of each metric's scores)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kbgraph._base.escapes import printable
from kbgraph.errors import EvaluationError

from ._metrics import metric_names
from ._records import ClaimVerdict, RowResult
from ._stats import mean

SOURCE_RECALL = "gold_source_recall"
"""Extra summary entry: the deterministic recall of gold sources (``context_recall``
details), for rows that list gold sources."""


@dataclass(frozen=True, slots=True)
class ReportFiles:
    results: Path
    summary: Path
    markdown: Path
    chart: Path | None  # None: matplotlib (the ``eval`` extra) is not installed


def dataset_fingerprint(rows: Iterable[tuple[str, str]]) -> str:
    """A short hash of a data set's ``(id, question)`` rows in order: two summaries with
    the same fingerprint scored the same questions, so their means can be compared."""
    digest = hashlib.sha256()
    for row_id, question in rows:
        digest.update(f"{row_id}\t{question}\n".encode())
    return digest.hexdigest()[:16]


def summarize(results: Sequence[RowResult], **about: Any) -> dict[str, Any]:
    """The ``summary.json`` content; ``about`` (judge, dataset, usage …) is kept as is."""
    summary: dict[str, Any] = {name: _metric_summary(results, name) for name in metric_names()}
    summary["dataset_fingerprint"] = dataset_fingerprint((r.row_id, r.question) for r in results)
    summary[SOURCE_RECALL] = _source_recall_summary(results)
    summary["rows"] = {
        "total": len(results),
        "ok": sum(r.status == "ok" for r in results),
        "failed": sum(r.status == "failed" for r in results),
    }
    summary["per_row"] = [_row_scores(r) for r in results]
    summary["created"] = datetime.now(UTC).isoformat(timespec="seconds")
    summary.update(about)
    return summary


def _metric_summary(results: Sequence[RowResult], name: str) -> dict[str, Any]:
    found = [r.metrics[name] for r in results if name in r.metrics]
    scores = [m.score for m in found if m.status == "scored" and m.score is not None]
    average = mean(scores)
    return {
        "mean": None if average is None else round(average, 4),
        "n_scored": len(scores),
        "n_undetermined": sum(m.status == "undetermined" for m in found),
        "n_failed": sum(m.status == "failed" for m in found),
    }


def _source_recall_summary(results: Sequence[RowResult]) -> dict[str, Any]:
    values = [
        float(m.details["source_recall"])
        for r in results
        if (m := r.metrics.get("context_recall")) is not None and "source_recall" in m.details
    ]
    average = mean(values)
    return {"mean": None if average is None else round(average, 4), "n_scored": len(values)}


def _row_scores(row: RowResult) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row.row_id, "status": row.status}
    for name in metric_names():
        metric = row.metrics.get(name)
        out[name] = None if metric is None or metric.score is None else round(metric.score, 4)
    recall = row.metrics.get("context_recall")
    if recall is not None and "source_recall" in recall.details:
        out[SOURCE_RECALL] = round(float(recall.details["source_recall"]), 4)
    return out


def write_report(
    out_dir: Path, results: Sequence[RowResult], summary: Mapping[str, Any]
) -> ReportFiles:
    """Write the four outputs into ``out_dir`` (created if needed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = out_dir / "scores.png" if can_plot() else None
    files = ReportFiles(
        results=out_dir / "results.jsonl",
        summary=out_dir / "summary.json",
        markdown=out_dir / "report.md",
        chart=chart,
    )
    # In data-set order, replacing the file the run appended to as rows finished: written
    # beside it and renamed, so that the rows are never lost halfway.
    partial = files.results.with_name(files.results.name + ".partial")
    with partial.open("w", encoding="utf-8", newline="\n") as handle:
        for row in results:
            handle.write(json.dumps(row.to_dict(), ensure_ascii=False) + "\n")
    os.replace(partial, files.results)
    files.summary.write_text(
        json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    chart_name = chart.name if chart is not None else None
    files.markdown.write_text(render_markdown(summary, results, chart_name), encoding="utf-8")
    if chart is not None:
        plot_distributions(results, chart)
    return files


def can_plot() -> bool:
    """matplotlib is installed (``pip install 'kbgraph[eval]'``); without it the report has
    no chart."""
    return importlib.util.find_spec("matplotlib") is not None


def render_markdown(
    summary: Mapping[str, Any], results: Sequence[RowResult], chart: str | None = None
) -> str:
    lines = ["# Evaluation report", ""]
    for key in ("dataset", "judge", "agent", "created", "resumed_rows"):
        if summary.get(key):
            lines.append(f"- {key}: {summary[key]}")
    rows = summary["rows"]
    lines += [f"- rows: {rows['total']} ({rows['ok']} ok, {rows['failed']} failed)", ""]
    lines += ["| metric | mean | scored | undetermined | failed |", "|---|---|---|---|---|"]
    for name in (*metric_names(), SOURCE_RECALL):
        s = summary[name]
        lines.append(
            f"| {name} | {_fmt(s['mean'])} | {s['n_scored']} | {s.get('n_undetermined', '')} "
            f"| {s.get('n_failed', '')} |"
        )
    if chart:
        lines += ["", f"![score distributions]({chart})"]
    else:
        lines += ["", "(No score chart: `pip install 'kbgraph[eval]'` adds matplotlib.)"]
    lines += [
        "",
        "## Per row",
        "",
        "| id | status | " + " | ".join(metric_names()) + " |",
        "|---|---|" + "---|" * len(metric_names()),
    ]
    for row in summary["per_row"]:
        cells = " | ".join(_fmt(row.get(name)) for name in metric_names())
        lines.append(f"| {row['id']} | {row['status']} | {cells} |")
    lines += _gate(summary.get("gate"), results)
    lines += _problems(results)
    return "\n".join(lines) + "\n"


def _gate(gate: Mapping[str, Any] | None, results: Sequence[RowResult]) -> list[str]:
    """The gate: each metric's mean against the baseline, the minimums, the verdict, the
    rows that got worse and the rows below a minimum of each row, with why."""
    if not gate:
        return []
    out = ["", "## Gate", ""]
    if gate.get("baseline"):
        out.append(f"Baseline: {gate['baseline']} (tolerance {gate['tolerance']:.3f})")
    if gate.get("minimums"):
        out.append("Minimums: " + ", ".join(f"{k} >= {v:g}" for k, v in gate["minimums"].items()))
    if gate.get("row_minimums"):
        floors = ", ".join(f"{k} >= {v:g}" for k, v in gate["row_minimums"].items())
        out.append(f"Minimums of each row: {floors}")
    out.append("")
    out.append("**" + ("passed" if gate["ok"] else "FAILED") + "**")
    out += [f"- {r}" for r in gate.get("regressions", [])]
    out += [f"- below the minimum: {r}" for r in gate.get("below_minimum", [])]
    changes = gate.get("changes") or {}
    if changes:
        out += ["", "| metric | baseline | now | change |", "|---|---|---|---|"]
        for name, c in changes.items():
            out.append(f"| {name} | {c['baseline']:.3f} | {c['current']:.3f} | {c['delta']:+.3f} |")
    worse = gate.get("worse_rows") or []
    if worse:
        out += ["", f"Rows that got worse ({len(worse)}, worst first):", ""]
        out += ["| id | metric | baseline | now | change |", "|---|---|---|---|---|"]
        for r in worse:
            out.append(
                f"| {r['id']} | {r['metric']} | {r['baseline']:.3f} | {_fmt(r['current'])} "
                f"| {r['delta']:+.3f} |"
            )
    return out + _rows_below_table(gate.get("rows_below") or [], results)


def _rows_below_table(
    below: Sequence[Mapping[str, Any]], results: Sequence[RowResult]
) -> list[str]:
    if not below:
        return []
    by_id = {r.row_id: r for r in results}
    out = ["", f"Rows below a minimum of each row ({len(below)}, worst first):", ""]
    out += ["| id | metric | score | minimum | first reason |", "|---|---|---|---|---|"]
    for r in below:
        result = by_id.get(str(r["id"]))
        why = first_reason(result, r["metric"]) if result is not None else ""
        cell = printable(" ".join(why.split())).replace("|", "\\|")
        out.append(
            f"| {r['id']} | {r['metric']} | {_fmt(r['score'])} | {r['minimum']:.3f} | {cell} |"
        )
    return out


def _problems(results: Sequence[RowResult]) -> list[str]:
    out: list[str] = []
    failed = [r for r in results if r.status == "failed"]
    if failed:
        out += ["", "## Failed rows", ""]
        out += [f"- {r.row_id}: {r.error}" for r in failed]
    weak = []
    for r in results:
        faith = r.metrics.get("faithfulness")
        for verdict in _weak_claims(faith.details if faith else {}):
            weak.append(f"- {r.row_id} [{verdict.verdict}] {verdict.claim} — {verdict.reason}")
    if weak:
        out += ["", "## Claims not supported by their sources", "", *weak]
    undetermined = [
        f"- {r.row_id} {name}: {m.reason}"
        for r in results
        for name, m in r.metrics.items()
        if m.status == "undetermined"
    ]
    if undetermined:
        out += ["", "## Undetermined", "", *undetermined]
    return out


def _weak_claims(details: Mapping[str, Any]) -> list[ClaimVerdict]:
    """The claims of a metric's details that lower its score (a repeat counts: it keeps only
    three quarters)."""
    claims = details.get("claims") or ()
    return [
        c
        for c in claims
        if isinstance(c, ClaimVerdict) and (c.verdict != "supported" or c.cause == "repeated")
    ]


def below_minimum_lines(
    results: Sequence[RowResult],
    minimums: Mapping[str, float],
    report: Path,
    *,
    row_minimums: Mapping[str, float] | None = None,
    rows: int = 5,
    width: int = 160,
) -> list[str]:
    """For a terminal: why each row scored below a ``--min`` or ``--min-each`` (its first
    claim not supported, else the metric's reason; for a row without a score below a
    ``--min-each``, why it has none), a line cut to ``width`` per row, at most ``rows`` of
    them, then where every reason is. A table of 0.000s said nothing of why."""
    below = _rows_below(results, minimums, row_minimums or {})
    out = []
    for result, name in below[:rows]:
        metric = result.metrics.get(name)
        score = "—" if metric is None or metric.score is None else f"{metric.score:.3f}"
        line = printable(
            " ".join(f"{result.row_id} {name} {score}: {first_reason(result, name)}".split())
        )
        out.append("  " + (line if len(line) <= width else line[: width - 1] + "…"))
    if below:
        more = f" ({len(below) - rows} more)" if len(below) > rows else ""
        out.append(f"  every reason{more}: {report} (and results.jsonl)")
    return out


def _rows_below(
    results: Sequence[RowResult],
    minimums: Mapping[str, float],
    row_minimums: Mapping[str, float],
) -> list[tuple[RowResult, str]]:
    """The (row, metric) pairs scored below the higher of the two minimums, and, for a
    ``row_minimums`` metric, those without a score (a row that failed, or the metric
    undetermined; the gold-source recall has no reason of its own to give)."""
    out = []
    for result in results:
        for name in {**minimums, **row_minimums}:
            floor = max(minimums.get(name, 0.0), row_minimums.get(name, 0.0))
            metric = result.metrics.get(name)
            if metric is not None and metric.score is not None:
                if metric.score < floor:
                    out.append((result, name))
            elif name in row_minimums and (metric is not None or result.status == "failed"):
                out.append((result, name))
    return out


def first_reason(result: RowResult, name: str) -> str:
    """Why ``result`` scored low on metric ``name``, in a line: its first claim not
    supported, else the metric's reason, else the row's error (a failed row)."""
    if result.status == "failed":
        return f"the row failed: {result.error}"
    if name == SOURCE_RECALL:
        recall = result.metrics.get("context_recall")
        if recall is None or "source_recall" not in recall.details:
            return "the row lists no gold sources"
        return "some of the row's gold sources were not among the retrieved citations"
    metric = result.metrics.get(name)
    if metric is None:
        return "not scored"
    weak = _weak_claims(metric.details)
    return f'{weak[0].reason} ("{weak[0].claim}")' if weak else metric.reason


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def plot_distributions(results: Sequence[RowResult], path: Path) -> None:
    """One histogram per metric of the scored rows' scores (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise EvaluationError(
            "the score chart needs matplotlib; install it with pip install 'kbgraph[eval]'"
        ) from exc
    names = metric_names()
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        scores = [
            m.score
            for r in results
            if (m := r.metrics.get(name)) is not None and m.score is not None
        ]
        ax.hist(scores, bins=[i / 10 for i in range(11)], color="#3b6ea8", edgecolor="white")
        average = mean(scores)
        subtitle = f"mean {average:.2f}, n={len(scores)}" if average is not None else "no scores"
        ax.set_title(f"{name}\n{subtitle}", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_xlabel("score")
    axes[0][0].set_ylabel("rows")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = [
    "SOURCE_RECALL",
    "ReportFiles",
    "below_minimum_lines",
    "can_plot",
    "dataset_fingerprint",
    "first_reason",
    "plot_distributions",
    "render_markdown",
    "summarize",
    "write_report",
]
