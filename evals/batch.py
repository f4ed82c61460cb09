"""One evaluation run, end to end: agent and judge from specs, rows answered and scored,
the four report files written. The CLI is a thin layer over :func:`run_evaluation`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .evaluators import default_evaluators
from .judges import Judge, resolve_judge
from .records import EvalRow, RowResult
from .report import ReportFiles, summarize, write_report
from .runner import Agent, run_dataset


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    results: list[RowResult]
    summary: dict[str, Any]
    files: ReportFiles


def run_evaluation(
    rows: Sequence[EvalRow],
    *,
    out_dir: Path,
    folder: Path | None = None,
    agent: Agent | None = None,
    judge: Judge | str = "offline",
    embedding: str = "local",
    chat_model: str | None = None,
    concurrency: int = 4,
    row_timeout: float | None = None,
    progress: bool = False,
    dataset: str = "",
) -> EvaluationOutcome:
    """Answer every row that needs it (``agent``, else the chat agent over ``folder``),
    score all four metrics with ``judge`` and write the reports into ``out_dir``."""
    started = time.perf_counter()
    if agent is None and folder is not None:
        from .agent import ChatAgent

        chat = ChatAgent(folder, embedding=embedding, chat_model=chat_model)
        chat.prepare()
        agent = chat
    resolved = resolve_judge(judge, embeddings=embedding)
    results = run_dataset(
        rows,
        default_evaluators(resolved),
        agent,
        concurrency=concurrency,
        row_timeout=row_timeout,
        progress=progress,
    )
    summary = summarize(
        results,
        dataset=dataset,
        judge=resolved.name,
        agent=_describe_agent(folder, embedding, chat_model, agent),
        usage=resolved.usage.to_dict(),
        seconds=round(time.perf_counter() - started, 1),
    )
    files = write_report(out_dir, results, summary)
    return EvaluationOutcome(results, summary, files)


def _describe_agent(
    folder: Path | None, embedding: str, chat_model: str | None, agent: Agent | None
) -> str:
    if folder is not None:
        model = chat_model or "none (extractive answers)"
        return f"chat agent over {folder} (embedding {embedding}, chat model {model})"
    return type(agent).__name__ if agent is not None else "pre-computed answers"


__all__ = ["EvaluationOutcome", "run_evaluation"]
