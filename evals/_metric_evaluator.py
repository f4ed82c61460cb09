"""The shape of a metric: an evaluator class built with a judge, scoring one record as its
metric ``name``. Apart from the registry (``_metrics``) so that the registry imports nothing
the records import back."""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from kbgraph._base.faces import shown_as

from ._judges.base import Judge
from ._records import EvalRecord, MetricResult


@runtime_checkable
@shown_as("kbgraph.evals")
class MetricEvaluator(Protocol):
    """An evaluator class: built with a judge, scoring one record as its metric ``name``."""

    name: ClassVar[str]

    def __init__(self, judge: Judge) -> None: ...

    def evaluate(self, record: EvalRecord) -> MetricResult: ...


__all__ = ["MetricEvaluator"]
