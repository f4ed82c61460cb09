"""The Eval reports view: the output folders of ``kbgraph eval`` (``summary.json`` and
``results.jsonl`` as :mod:`kbgraph.evals._report` writes them), each metric's score
distribution drawn in the page (SVG, the same ten bins as ``scores.png``), the rows, and a
row's drill-down: question, answer, every claim with its verdict and the passages it was
judged against, and the gold sources against the retrieved ones.

A report is a folder of files anyone may have edited: a line of ``results.jsonl`` that is
not a JSON object is counted (``bad_rows``) and left out, a field of the wrong type reads
as missing, a row the drill-down cannot show is a ``ConfigError`` naming it, and a file
that is not a regular one (a FIFO) is never opened for reading."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgraph._base.camel import snake_keys
from kbgraph.errors import ConfigError
from kbgraph.evals import GoldSource, Passage, metric_names
from kbgraph.evals._internal import SOURCE_RECALL, is_recalled
from kbgraph.retrieval._internal import open_regular_file, read_regular_file

from ._runs import well_formed

BINS = 10
MAX_ROWS = 20_000
MAX_SUMMARY_BYTES = 16 * 1024 * 1024
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


def report_list(dirs: Sequence[Path]) -> list[dict[str, Any]]:
    """The reports of ``dirs`` (:func:`discover`): ``{slug, folder, created, rows}``."""
    out = []
    for ref in discover(dirs):
        summary = read_summary(ref)
        rows = mapping(summary.get("rows")).get("total")
        created = summary.get("created")
        out.append(
            {
                "slug": ref.slug,
                "folder": str(ref.folder),
                "created": created if isinstance(created, str) else None,
                "rows": rows if isinstance(rows, int) else None,
            }
        )
    return out


def find(dirs: Sequence[Path], slug: str) -> EvalRef:
    for ref in discover(dirs):
        if ref.slug == slug:
            return ref
    raise ConfigError(f"no eval report named {slug!r} here")


def read_rows(ref: EvalRef) -> list[dict[str, Any]]:
    """The rows of a report (its first :data:`MAX_ROWS` JSON objects)."""
    return _read_rows(ref)[0]


def _read_rows(ref: EvalRef) -> tuple[list[dict[str, Any]], int]:
    """The rows, and the count of lines that are JSON but not an object (``[1, 2]``)."""
    rows: list[dict[str, Any]] = []
    bad = 0
    try:
        handle = open_regular_file(ref.folder / "results.jsonl")
    except OSError as exc:
        raise ConfigError(f"the eval report {ref.slug} cannot be read: {exc}") from exc
    with handle:
        for raw in handle:
            if not raw.strip() or len(rows) >= MAX_ROWS:
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                continue  # a truncated last line of a run still writing
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad += 1
    # A report written before 0.2 spells its citations and gold sources camelCase.
    return snake_keys(rows, f"the eval report {ref.slug}", stacklevel=2), bad


def read_summary(ref: EvalRef) -> dict[str, Any]:
    try:
        data = json.loads(read_regular_file(ref.folder / "summary.json", MAX_SUMMARY_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field of the wrong type
    reads as missing)."""
    return value if isinstance(value, Mapping) else {}


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def histogram(scores: Sequence[float], bins: int = BINS) -> list[int]:
    """Counts of ``scores`` in ``bins`` equal bins of [0, 1] (the last one holds 1.0)."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(float(score) * bins)))] += 1
    return counts


def _score(row: Mapping[str, Any], name: str) -> float | None:
    metrics = mapping(row.get("metrics"))
    if name == SOURCE_RECALL:
        return _finite(mapping(metrics.get("context_recall")).get("source_recall"))
    metric = mapping(metrics.get(name))
    return _finite(metric.get("score")) if metric.get("status") == "scored" else None


def _in_run(rows: Sequence[Mapping[str, Any]], name: str) -> bool:
    """Whether any row carries the metric, scored or not (a run without reference answers
    has no answer correctness; a report written before a metric existed has none)."""
    return any(name in mapping(row.get("metrics")) for row in rows)


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict | list) else str(value)


def report_view(ref: EvalRef) -> dict[str, Any]:
    """The JSON twin of a report page."""
    rows, bad = _read_rows(ref)
    summary = read_summary(ref)
    metrics = []
    for name in (*metric_names(), SOURCE_RECALL):
        scores = [s for r in rows if (s := _score(r, name)) is not None]
        if not scores and (name == SOURCE_RECALL or not _in_run(rows, name)):
            continue  # not measured by this run (no gold sources, or an older report)
        counts = mapping(summary.get(name))
        metrics.append(
            {
                "name": name,
                "mean": _finite(counts.get("mean")),
                "n_scored": len(scores),
                "histogram": histogram(scores),
                **{k: _finite(v) for k, v in counts.items() if k.startswith("n_")},
            }
        )
    return {
        "slug": ref.slug,
        "folder": str(ref.folder),
        "about": {
            k: _text(summary.get(k))
            for k in ("dataset", "judge", "agent", "created", "seconds")
            if _text(summary.get(k)) is not None
        },
        "metrics": metrics,
        "bad_rows": bad,
        "rows": [
            {
                "id": _text(r.get("id")),
                "question": _text(r.get("question")),
                "status": _text(r.get("status")),
                **{name: _score(r, name) for name in (*metric_names(), SOURCE_RECALL)},
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
    """One row's drill-down (the JSON twin of a row page); ``ConfigError`` for a row that
    is not there or not of the shape the report writer writes."""
    row = next((r for r in read_rows(ref) if _text(r.get("id")) == row_id), None)
    if row is None:
        raise ConfigError(f"no row {row_id!r} in the eval report {ref.slug}")
    return well_formed(f"row {row_id!r} of the eval report {ref.slug}", lambda: _row_view(ref, row))


def _row_view(ref: EvalRef, row: Mapping[str, Any]) -> dict[str, Any]:
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
    "mapping",
    "read_rows",
    "read_summary",
    "report_list",
    "report_view",
    "row_view",
]
