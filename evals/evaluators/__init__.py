"""The RAG metrics. Each evaluator is a small class with ``evaluate(record) ->
MetricResult`` and, called as ``evaluator(inputs, outputs, reference_outputs)``, the
LangSmith / openevals evaluator shape ``{"key", "score", "comment"}``."""

from __future__ import annotations

from .._metrics import metric_classes, register_metric
from ..judges.base import Judge
from ._adapter import LangSmithAdapter, passages_from, record_from_langsmith, to_langsmith
from .answer_correctness import AnswerCorrectnessEvaluator
from .answer_relevance import AnswerRelevanceEvaluator
from .context_precision import ContextPrecisionEvaluator
from .context_recall import ContextRecallEvaluator
from .faithfulness import FaithfulnessEvaluator
from .sources import gold_source_recall, is_recalled, lines_overlap, same_path

Evaluator = (
    FaithfulnessEvaluator
    | ContextRecallEvaluator
    | ContextPrecisionEvaluator
    | AnswerRelevanceEvaluator
    | AnswerCorrectnessEvaluator
)


# The built-in metrics, in report order; register_metric adds one after them.
for _cls in (
    FaithfulnessEvaluator,
    ContextRecallEvaluator,
    ContextPrecisionEvaluator,
    AnswerRelevanceEvaluator,
    AnswerCorrectnessEvaluator,
):
    register_metric(_cls)


def default_evaluators(judge: Judge) -> list[Evaluator]:
    """Every registered metric over one judge, in report order."""
    return [cls(judge) for cls in metric_classes()]


__all__ = [
    "AnswerCorrectnessEvaluator",
    "AnswerRelevanceEvaluator",
    "ContextPrecisionEvaluator",
    "ContextRecallEvaluator",
    "Evaluator",
    "FaithfulnessEvaluator",
    "LangSmithAdapter",
    "default_evaluators",
    "gold_source_recall",
    "is_recalled",
    "lines_overlap",
    "passages_from",
    "record_from_langsmith",
    "same_path",
    "to_langsmith",
]
