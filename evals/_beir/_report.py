"""A BEIR run as a Markdown table and as JSON files, with the date, the machine and the
command that produced it (figures without them cannot be compared or reproduced)."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._metrics import METRICS
from ._run import BeirRun

COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("ndcg@10", "nDCG@10", "{:.4f}"),
    ("recall@10", "R@10", "{:.4f}"),
    ("recall@100", "R@100", "{:.4f}"),
    ("mrr@10", "MRR@10", "{:.4f}"),
    ("index_s", "index s", "{:.1f}"),
    ("p50_ms", "p50 ms", "{:.1f}"),
    ("p95_ms", "p95 ms", "{:.1f}"),
)


def machine() -> str:
    """``Linux x86_64, 2 CPUs (<model>), Python 3.11.9``."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next(
                (line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")),
                "",
            )
    except OSError:
        model = platform.processor()
    cpus = f"{os.cpu_count()} CPUs" + (f" ({model})" if model else "")
    return f"{platform.system()} {platform.machine()}, {cpus}, Python {platform.python_version()}"


def _cell(values: Mapping[str, Any], key: str, fmt: str) -> str:
    if values.get(key) is None:
        return "—"
    text = fmt.format(values[key])
    kind = values.get("index_kind")
    if key == "index_s" and kind and kind != "full":
        text += f" ({kind})"  # an update or a cached figure is not an index from scratch
    return text


def table(rows: Mapping[str, Mapping[str, Any]], label: str = "mode") -> str:
    """A Markdown table, one row per key of ``rows``; absent cells show ``—``; an
    ``index_s`` whose ``index_kind`` is not ``full`` is labelled with that kind."""
    head = f"| {label} | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    rule = "|---|" + "---:|" * len(COLUMNS)
    lines = [head, rule]
    for name, values in rows.items():
        cells = [_cell(values, key, fmt) for key, _, fmt in COLUMNS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(run: BeirRun, command: str = "") -> str:
    index = run.index
    search = run.settings.search
    chunking = run.settings.chunking
    settings = run.settings
    kind = (
        "from scratch"
        if index.kind == "full"
        else "an incremental update of the work folder's index, not indexing from scratch "
        "(run with --fresh for that)"
    )
    lines = [
        f"## Retrieval on BEIR {run.data} ({run.split} split)",
        "",
        table(run.summary()),
        "",
        f"- {run.queries} queries, {index.documents:,} documents in {index.chunks:,} chunks; "
        f"embedding `{settings.embedding}`",
        f"- indexing {index.index_s:.1f} s, {kind} ({index.embedded:,} chunks embedded, "
        f"{index.reused:,} reused; model loaded before timing); work folder `{index.work_dir}`",
        f"- documents as `{settings.doc_format}` files; chunking: {chunking.strategy}, "
        f"{chunking.chunk_size} characters, overlap {chunking.overlap}; search: top "
        f"{search.top_k} chunks, {search.candidates()} candidates per ranker, fusion "
        f"{search.fusion}{f' (k={search.rrf_k})' if search.fusion == 'rrf' else ''}, weights "
        f"{json.dumps(search.weights, sort_keys=True)}; documents scored by their best chunk"
        + (
            "; a document with the query's id is not counted"
            if settings.ignore_identical_ids
            else ""
        ),
        "- latency per query, query embedding included; `index s` is the one index all modes share",
        f"- {run.started_at}, {machine()}",
    ]
    if run.missing_queries:
        lines.append(
            f"- {run.missing_queries} of the {run.queries} judged queries have no text: not "
            "run, scored 0 (trec_eval -c)"
        )
    if command:
        lines.append(f"- command: `{command}`")
    return "\n".join(lines) + "\n"


def write_results(run: BeirRun, out_dir: Path, command: str = "") -> tuple[Path, Path]:
    """``retrieval-<data>-<split>.json`` (summary, settings, per-query metrics) and ``.md``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"retrieval-{run.data}-{run.split}"
    data: dict[str, Any] = {**run.to_dict(), "machine": machine(), "command": command}
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown(run, command), encoding="utf-8")
    return json_path, md_path


__all__ = ["COLUMNS", "METRICS", "machine", "markdown", "table", "write_results"]
