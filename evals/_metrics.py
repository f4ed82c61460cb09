"""The metric registry: the evaluator classes, each carrying its metric's ``name``. A batch
run scores every registered metric (``default_evaluators``), and its report, summary,
baseline gate and CLI table list them: registering one class is all a new metric takes.
The registry holds plain classes and imports nothing of the evals (``records`` reads the
names): the shape a class must have is :class:`~._metric_evaluator.MetricEvaluator`."""

from __future__ import annotations

from typing import Any, TypeVar

from kbgraph._base.registry import Registry
from kbgraph.errors import ConfigError

_E = TypeVar("_E", bound=type[Any])
_CLASSES: Registry[type[Any]] = Registry("metric")


def register_metric(cls: _E, *, replace: bool = False) -> _E:
    """Add an evaluator class (usable as a decorator); its ``name`` becomes a metric of
    every batch run and its report. A name already taken is refused unless ``replace``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(
            f"{getattr(cls, '__name__', cls)!r} needs a class attribute `name` (the metric's "
            "name, a Python identifier) to be registered as a metric"
        )
    if not callable(getattr(cls, "evaluate", None)):
        raise ConfigError(f"{cls.__name__} needs an evaluate(record) method to be a metric")
    _CLASSES.add(name, cls, replace=replace)
    return cls


def unregister_metric(name: str) -> None:
    """Remove the metric ``name`` (a test's cleanup)."""
    _CLASSES.remove(name)


def metric_classes() -> tuple[type[Any], ...]:
    """The evaluator classes, in report order (the built-in five first)."""
    return _CLASSES.values()


def metric_names() -> tuple[str, ...]:
    """The metrics' names, in report order."""
    return _CLASSES.names()


__all__ = [
    "metric_classes",
    "metric_names",
    "register_metric",
    "unregister_metric",
]
