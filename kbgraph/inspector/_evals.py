"""The Eval reports view: the output folders of ``kbgraph eval`` (``summary.json`` and
``results.jsonl`` as :mod:`kbgraph.evals.report` writes them), each metric's score
distribution drawn in the page (SVG, the same ten bins as ``scores.png``), the rows, and a
row's drill-down: question, answer, every claim with its verdict and the passages it was
judged against, and the gold sources against the retrieved ones."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgraph.errors import ConfigError
from kbgraph.evals.evaluators import is_recalled
from kbgraph.evals.records import METRIC_NAMES, GoldSource, Passage
from kbgraph.evals.report import SOURCE_RECALL

BINS = 10
MAX_ROWS = 20_000
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class EvalRef:
    slug: str
    folder: Path


def discover(dirs: Sequence[Path]) -> list[EvalRef]:
    """Each folder that holds ``results.jsonl`` (the folders given, or those one level
    below them), named by its folder name (``-2``, ``-3`` … when names repeat)."""
    found: list[Path] = []
    for folder in dirs:
        if (folder / "results.jsonl").is_file():
            found.append(folder)
        elif folder.is_dir():
            found += sorted(p for p in folder.iterdir() if (p / "results.jsonl").is_file())
    refs: list[EvalRef] = []
    used: set[str] = set()
    for folder in found:
        slug = _SLUG.sub("-", folder.name) or "eval"
        name, n = slug, 1
        while name in used:
            n += 1
            name = f"{slug}-{n}"
        used.add(name)
        refs.append(EvalRef(name, folder))
    return refs


def find(dirs: Sequence[Path], slug: str) -> EvalRef:
    for ref in discover(dirs):
        if ref.slug == slug:
            return ref
    raise ConfigError(f"no eval report named {slug!r} here")


def read_rows(ref: EvalRef) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with (ref.folder / "results.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip() and len(rows) < MAX_ROWS:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    continue  # a truncated last line of a run still writing
    return rows


def read_summary(ref: EvalRef) -> dict[str, Any]:
    try:
        data = json.loads((ref.folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def histogram(scores: Sequence[float], bins: int = BINS) -> list[int]:
    """Counts of ``scores`` in ``bins`` equal bins of [0, 1] (the last one holds 1.0)."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(float(score) * bins)))] += 1
    return counts


def _score(row: Mapping[str, Any], name: str) -> float | None:
    if name == SOURCE_RECALL:
        value = ((row.get("metrics") or {}).get("context_recall") or {}).get("source_recall")
    else:
        metric = (row.get("metrics") or {}).get(name) or {}
        value = metric.get("score") if metric.get("status") == "scored" else None
    return None if value is None else float(value)


def _in_run(rows: Sequence[Mapping[str, Any]], name: str) -> bool:
    """Whether any row carries the metric, scored or not (a run without reference answers
    has no answer correctness; a report written before a metric existed has none)."""
    return any(name in (row.get("metrics") or {}) for row in rows)


def report_view(ref: EvalRef) -> dict[str, Any]:
    """The JSON twin of a report page."""
    rows = read_rows(ref)
    summary = read_summary(ref)
    metrics = []
    for name in (*METRIC_NAMES, SOURCE_RECALL):
        scores = [s for r in rows if (s := _score(r, name)) is not None]
        if not scores and (name == SOURCE_RECALL or not _in_run(rows, name)):
            continue  # not measured by this run (no gold sources, or an older report)
        metrics.append(
            {
                "name": name,
                "mean": (summary.get(name) or {}).get("mean"),
                "n_scored": len(scores),
                "histogram": histogram(scores),
                **{k: v for k, v in (summary.get(name) or {}).items() if k.startswith("n_")},
            }
        )
    return {
        "slug": ref.slug,
        "folder": str(ref.folder),
        "about": {
            k: summary.get(k)
            for k in ("dataset", "judge", "agent", "created", "seconds")
            if summary.get(k) is not None
        },
        "metrics": metrics,
        "rows": [
            {
                "id": r.get("id"),
                "question": r.get("question"),
                "status": r.get("status"),
                **{name: _score(r, name) for name in (*METRIC_NAMES, SOURCE_RECALL)},
            }
            for r in rows
        ],
    }


def _gold(items: Sequence[Mapping[str, Any]], passages: Sequence[Passage]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        gold = GoldSource.from_dict(item)
        options = gold.any_of or (gold,)
        out.append(
            {
                "source": gold.to_dict(),
                "recalled": is_recalled(gold, passages),
                "options": [g.to_dict() for g in options],
            }
        )
    return out


def _hits_gold(p: Passage, gold: Sequence[GoldSource]) -> bool:
    return any(is_recalled(g, [p]) for g in gold)


def row_view(ref: EvalRef, row_id: str) -> dict[str, Any]:
    """One row's drill-down (the JSON twin of a row page)."""
    row = next((r for r in read_rows(ref) if str(r.get("id")) == row_id), None)
    if row is None:
        raise ConfigError(f"no row {row_id!r} in the eval report {ref.slug}")
    cited = row.get("citations") or []
    passages = [Passage.from_any(c, i) for i, c in enumerate(cited, 1)]
    gold = [GoldSource.from_dict(g) for g in row.get("gold_sources") or []]
    metrics = row.get("metrics") or {}
    return {
        "report": ref.slug,
        **{
            k: row.get(k)
            for k in ("id", "question", "status", "error", "reference", "answer", "seconds")
        },
        "metrics": {
            name: {k: v for k, v in m.items() if k in ("status", "score", "reason")}
            for name, m in metrics.items()
        },
        "claims": (metrics.get("faithfulness") or {}).get("claims") or [],
        "reference_claims": (metrics.get("context_recall") or {}).get("reference_claims") or [],
        "relevance": (metrics.get("context_precision") or {}).get("passages") or [],
        "citations": [
            {**c, "gold": _hits_gold(p, gold)} for c, p in zip(cited, passages, strict=True)
        ],
        "gold_sources": _gold(row.get("gold_sources") or [], passages),
    }


__all__ = [
    "BINS",
    "EvalRef",
    "discover",
    "find",
    "histogram",
    "read_rows",
    "read_summary",
    "report_view",
    "row_view",
]
