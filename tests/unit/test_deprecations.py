"""Deprecated names (issue 43): a name 0.1 exported that left its face still answers, with
a warning that says what to use; kbgraph's own code never uses one (pyproject's
filterwarnings makes a DeprecationWarning attributed to a kbgraph module an error)."""

from __future__ import annotations

import warnings

import pytest

import kbgraph.evals


def test_metric_names_of_0_1_warns_and_reads_the_registry() -> None:
    with pytest.warns(DeprecationWarning, match=r"kbgraph\.evals\.metric_names\(\) instead"):
        value = kbgraph.evals.METRIC_NAMES
    assert value == kbgraph.evals.metric_names()
    assert "faithfulness" in value


def test_a_name_the_face_never_had_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NO_SUCH_NAME'"):
        kbgraph.evals.NO_SUCH_NAME  # noqa: B018


def test_a_deprecation_warning_from_kbgraph_code_fails_the_test() -> None:
    # As a stand-in's warning (stacklevel=2) reads when kbgraph's own module imports an old
    # name: attributed to that module.
    with pytest.raises(DeprecationWarning):
        warnings.warn_explicit(
            "old name", DeprecationWarning, "_ask.py", 30, module="kbgraph.agents._ask"
        )


def test_a_deprecation_warning_from_user_code_only_warns() -> None:
    with pytest.warns(DeprecationWarning):
        warnings.warn_explicit("old name", DeprecationWarning, "app.py", 1, module="app")
