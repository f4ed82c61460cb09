"""The one registry behind rankers, file kinds and metrics (kbgraph/_base/registry.py):
the three refuse a taken name and an unknown removal with the same words, each naming
what is registered, and keep registration order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kbgraph._base.registry import Registry
from kbgraph.errors import ConfigError
from kbgraph.evals import unregister_metric
from kbgraph.retrieval import unregister_loader, unregister_ranker


def test_a_taken_name_is_refused_unless_replaced_and_order_is_kept() -> None:
    registry: Registry[str] = Registry("ranker", {"vector": "v", "bm25": "b"})
    registry.add("bm25", "b")  # the same entry again changes nothing
    with pytest.raises(ConfigError, match="a ranker named 'bm25' is registered already"):
        registry.add("bm25", "other")
    registry.add("bm25", "other", replace=True)
    registry.add("title", "t")
    assert registry.names() == ("vector", "bm25", "title")
    assert registry.values() == ("v", "other", "t") and registry["bm25"] == "other"


def test_removing_an_unknown_name_says_what_is_registered() -> None:
    registry: Registry[int] = Registry("metric", {"faithfulness": 1})
    with pytest.raises(ConfigError, match=r"registered: faithfulness$"):
        registry.remove("recall")
    assert registry.remove("faithfulness") == 1 and registry.listing() == "none"


@pytest.mark.parametrize(
    ("remove", "what"),
    [
        (unregister_ranker, "ranker"),
        (unregister_loader, "file kind"),
        (unregister_metric, "metric"),
    ],
)
def test_each_registry_refuses_an_unknown_name_in_the_same_words(
    remove: Callable[[str], None], what: str
) -> None:
    with pytest.raises(ConfigError, match=rf"^no {what} named 'nope' is registered; registered: "):
        remove("nope")
