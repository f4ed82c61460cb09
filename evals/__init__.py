"""kbgraph's evaluators: faithfulness, context recall, context precision, answer
relevance and answer correctness over LLM or offline judges, batch runs with reports and
gates (a baseline, minimums), and a meta-evaluation of the judges against human labels::

    from kbgraph.evals import FaithfulnessEvaluator, OfflineJudge, EvalRecord
    judge = OfflineJudge("local")
    result = FaithfulnessEvaluator(judge).evaluate(
        EvalRecord(question="...", answer="... [1]", passages=passages_from(citations))
    )
"""

from __future__ import annotations

from kbgraph._layers import imported_as_kbgraph

# Loaded as the top-level 'retrieval' & co. (a second copy): refuse, loudly, and before
# any submodule loads, so that a refused import leaves no 'retrieval.*' module behind.
imported_as_kbgraph(__name__)


from ._answer_check import AnswerCheck, ClaimCheck, check_answer
from ._baseline import Comparison, compare_summaries, load_summary
from ._claims import split_claims
from ._datasets import DatasetError, bundled_dataset_path, load_dataset
from ._decompose import Decomposition, decompose
from ._evaluators import (
    AnswerCorrectnessEvaluator,
    AnswerRelevanceEvaluator,
    ContextPrecisionEvaluator,
    ContextRecallEvaluator,
    Evaluator,
    FaithfulnessEvaluator,
    default_evaluators,
    passages_from,
)
from ._judges import (
    ClaimDecomposer,
    Judge,
    JudgeError,
    LLMJudge,
    OfflineJudge,
    OverlapJudge,
    resolve_judge,
)
from ._metric_evaluator import MetricEvaluator
from ._metrics import metric_names, register_metric, unregister_metric
from ._records import (
    AgentOutput,
    Claim,
    ClaimVerdict,
    EvalRecord,
    EvalResults,
    EvalRow,
    GoldSource,
    Judgement,
    MetricResult,
    Passage,
    Relevance,
    RowResult,
    TokenUsage,
    Verdict,
)
from ._report import summarize, write_report
from ._runner import Agent, FunctionAgent, arun_dataset, run_dataset
from ._stats import auroc, average_precision, pairwise_accuracy

__all__ = [
    "Agent",
    "AgentOutput",
    "AnswerCheck",
    "AnswerCorrectnessEvaluator",
    "AnswerRelevanceEvaluator",
    "Claim",
    "ClaimCheck",
    "ClaimDecomposer",
    "ClaimVerdict",
    "Comparison",
    "ContextPrecisionEvaluator",
    "ContextRecallEvaluator",
    "DatasetError",
    "Decomposition",
    "EvalRecord",
    "EvalResults",
    "EvalRow",
    "Evaluator",
    "FaithfulnessEvaluator",
    "FunctionAgent",
    "GoldSource",
    "Judge",
    "JudgeError",
    "Judgement",
    "LLMJudge",
    "MetricEvaluator",
    "MetricResult",
    "OfflineJudge",
    "OverlapJudge",
    "Passage",
    "Relevance",
    "RowResult",
    "TokenUsage",
    "Verdict",
    "arun_dataset",
    "auroc",
    "average_precision",
    "bundled_dataset_path",
    "check_answer",
    "compare_summaries",
    "decompose",
    "default_evaluators",
    "load_dataset",
    "load_summary",
    "metric_names",
    "pairwise_accuracy",
    "passages_from",
    "register_metric",
    "resolve_judge",
    "run_dataset",
    "split_claims",
    "summarize",
    "unregister_metric",
    "write_report",
]


def __getattr__(name: str) -> object:
    """0.1's ``METRIC_NAMES`` (a closed tuple, now the metric registry): still answered,
    as the registry's names of the moment, with a warning until it goes (PEP 562)."""
    if name == "METRIC_NAMES":
        import warnings

        warnings.warn(
            "kbgraph.evals.METRIC_NAMES is deprecated since kbgraph 0.2 (removed in 0.3): "
            "the metrics are a registry now; call kbgraph.evals.metric_names() instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return metric_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
