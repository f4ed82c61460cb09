"""Errors as data (issue 31): the Retrieve node records a failure as ``{where, type,
message}`` and ``kbgraph ask`` turns it back into its class by looking the type up in the
``KbgraphError`` tree, so the exit code is the one of the error that happened, whatever
its message holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbgraph.agents._ask import raise_on_retrieval_failure
from kbgraph.errors import (
    ConfigError,
    ErrorRecord,
    IndexNotFoundError,
    InvalidSettingError,
    KbgraphError,
    ModelMismatchError,
    error_from_record,
    error_record,
    error_text,
    error_types,
)
from kbgraph.exit_codes import EXIT_CODES
from kbgraph.graphs.nodes.retrieve import retrieve

from ._rag_fakes import deps_for, fake_kb, registry_with, runtime_for, settings_for, state_of

TRICKY = "index built with fake:a: ConfigError: use --embedding fake:a\nor rebuild: it"


def _exit_code(exc: KbgraphError) -> int:
    return next((code for kind, code in EXIT_CODES.items() if isinstance(exc, kind)), 1)


def _failed_search(folder: Path, failure: Exception) -> dict[str, Any]:
    """The Retrieve node's output over a knowledge base whose every search raises
    ``failure``."""
    searcher = fake_kb(folder)
    searcher.fail_rank = failure
    settings = settings_for(folder)
    state = {**state_of("How do retries work?"), "rag_queries": ["How do retries work?"]}
    return retrieve(state, runtime_for(settings, []), deps_for(registry_with({folder: searcher})))  # type: ignore[arg-type]


def _raised(out: dict[str, Any]) -> KbgraphError:
    with pytest.raises(KbgraphError) as caught:
        raise_on_retrieval_failure(out)
    return caught.value


def test_a_recorded_error_is_data_and_maps_back_to_its_class(tmp_path: Path) -> None:
    out = _failed_search(tmp_path / "docs", ModelMismatchError(TRICKY))
    # JSON as it is (a checkpoint, Studio, a recorded run), not text to be parsed.
    data = json.loads(json.dumps(out["rag_retrieval_debug"]))["steps"][0]["data"]
    assert data["errors"] == {
        "docs": [{"where": "", "type": "ModelMismatchError", "message": TRICKY}]
    }
    error = _raised(out)
    assert type(error) is ModelMismatchError and _exit_code(error) == 7
    assert str(error) == f"searching docs failed: {TRICKY}"


def test_another_librarys_error_of_a_kbgraph_name_is_not_taken_for_ours(tmp_path: Path) -> None:
    class IndexNotFoundError(OSError):  # a store's own error, named as one of kbgraph's
        pass

    out = _failed_search(tmp_path / "docs", IndexNotFoundError("disk went away"))
    error = _raised(out)
    assert type(error) is KbgraphError and _exit_code(error) == 1
    assert "IndexNotFoundError: disk went away" in str(error)


def test_an_error_class_that_needs_more_than_a_message_maps_to_its_base(tmp_path: Path) -> None:
    failure = InvalidSettingError(
        "search.top_k must be at least 1", setting="search.top_k", value=0, rule=">= 1"
    )
    error = _raised(_failed_search(tmp_path / "docs", failure))
    assert type(error) is ConfigError and _exit_code(error) == 2
    assert str(error) == "searching docs failed: search.top_k must be at least 1"


def test_a_kbgraph_error_defined_elsewhere_is_found_in_the_tree(tmp_path: Path) -> None:
    class StoreOffline(KbgraphError):  # no "Error" at the end, not in kbgraph.errors
        pass

    error = _raised(_failed_search(tmp_path / "docs", StoreOffline("the store is offline")))
    assert type(error) is StoreOffline


@pytest.mark.parametrize("kind", [kind for _, kind in sorted(error_types().items())])
def test_every_class_of_the_tree_survives_a_json_round_trip(kind: type[KbgraphError]) -> None:
    try:
        exc = kind(TRICKY)
    except Exception:  # InvalidSettingError, SkipFile: built from more than a message
        pytest.skip(f"{kind.__name__} needs more than a message")
    record: ErrorRecord = json.loads(json.dumps(error_record(exc, "docs/q0/bm25")))
    back = error_from_record(record)
    assert type(back) is kind and str(back) == TRICKY
    assert error_text(record) == f"docs/q0/bm25: {kind.__name__}: {TRICKY}"


def test_errors_outside_the_tree_and_old_text_records_give_the_base() -> None:
    for record in (
        error_record(OSError("no such file")),
        error_record(ValueError("ModelMismatchError: not really")),
        "docs/q0/bm25: IndexNotFoundError: a run recorded before errors were data",
    ):
        back = error_from_record(record, "searching docs failed: ")
        assert type(back) is KbgraphError
        assert str(back) == f"searching docs failed: {error_text(record)}"
    assert error_record(OSError("x"))["type"] == "OSError"
    assert error_types()["IndexNotFoundError"] is IndexNotFoundError
