"""State reducers (plain values replace, increments merge) and the context-schema settings
(defaults, validation, dicts and foreign context objects, the KBGRAPH_FOLDER fallback)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError
from kbgraph.graphs._settings import RagSettings, settings_from_context, settings_from_runtime
from kbgraph.graphs._state import (
    debug_update,
    dedupe_candidates,
    merge_candidates,
    reduce_candidates,
    reduce_debug,
)
from kbgraph.retrieval._config import SearchConfig

from ._rag_fakes import candidate, runtime_for


def test_candidates_plain_list_replaces_and_dedupes_keeping_best() -> None:
    old = [candidate("x", score=0.9)]
    new = [candidate("a", score=0.2), candidate("b", score=0.5), candidate("a", score=0.7)]
    out = reduce_candidates(old, new)
    assert [(c["chunk_id"], c["score"]) for c in out] == [("a", 0.7), ("b", 0.5)]


def test_candidates_merge_update_keeps_the_old_ones() -> None:
    old = [candidate("a", score=0.9), candidate("b", score=0.1)]
    out = reduce_candidates(old, merge_candidates([candidate("b", score=0.6), candidate("c")]))
    assert [(c["chunk_id"], c["score"]) for c in out] == [("a", 0.9), ("b", 0.6), ("c", 0.5)]


def test_candidates_same_id_in_two_knowledge_bases_are_two() -> None:
    out = dedupe_candidates([candidate("a", kb="one"), candidate("a", kb="two")])
    assert [c["kb"] for c in out] == ["one", "two"]


def test_candidates_none_clears() -> None:
    assert reduce_candidates([candidate("a")], None) == []


def test_debug_updates_append_and_a_new_run_replaces() -> None:
    first = reduce_debug(None, {"steps": [{"node": "decide_retrieve"}], "fallbacks": []})
    second = reduce_debug(
        first,
        debug_update([{"node": "b"}], [{"node": "b", "attempt": 0, "stage": "json", "error": "e"}]),
    )
    assert [s["node"] for s in second["steps"]] == ["decide_retrieve", "b"]
    assert len(second["fallbacks"]) == 1
    assert reduce_debug(second, {"steps": [{"node": "decide_retrieve", "attempt": 0}]}) == {
        "steps": [{"node": "decide_retrieve", "attempt": 0}],
        "fallbacks": [],
        "overrulings": [],
    }
    assert reduce_debug(second, None) == {"steps": [], "fallbacks": [], "overrulings": []}
    json.dumps(second)  # plain JSON, for checkpoints and Studio


def test_settings_defaults_are_json() -> None:
    settings = RagSettings()
    assert (
        settings.search.top_k == 5 and settings.rerank == "heuristic" and settings.max_rewrites == 1
    )
    assert settings.search.weights == {"vector": 1.0, "bm25": 1.0}
    assert json.loads(json.dumps(settings.to_dict())) == settings.to_dict()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"search": {"top_k": 0}}, "search.top_k=0 is not allowed"),
        ({"top_k": 3}, "did you mean 'search.top_k'"),
        ({"max_rewrites": 6}, "max_rewrites"),
        ({"rerank": "magic"}, "rerank"),
        ({"search": {"mode": "semantic"}}, "search.mode"),
        ({"search": {"weights": {"vector": -1.0}}}, "search.weights"),
        ({"search": {"fusion": "borda"}}, "search.fusion"),
        ({"llm_timeout_seconds": 0}, "llm_timeout_seconds"),
        ({"knowledge_bases": [{"name": "x"}]}, "is not a folder"),
        ({"knowledge_bases": 42}, "a mapping of names to paths"),
        ({"context_budget_tokens": 0}, "context_budget_tokens"),
        ({"llm_timeout_seconds": float("nan")}, "llm_timeout_seconds"),
    ],
)
def test_settings_validation(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RagSettings(**overrides)


def test_settings_from_context_variants() -> None:
    assert settings_from_context(None) == RagSettings()
    same = RagSettings(max_rewrites=2)
    assert settings_from_context(same) is same
    assert settings_from_context({"search": {"top_k": 3}}).search.top_k == 3
    # A mistyped key of a dict context is an error, not a setting silently dropped.
    with pytest.raises(ConfigError, match=r"no setting 'top_k'.*did you mean 'search\.top_k'"):
        settings_from_context({"top_k": 3})

    @dataclass
    class ParentContext:
        max_rewrites: int = 3
        user_id: str = "u1"

    assert settings_from_context(ParentContext()).max_rewrites == 3
    assert settings_from_runtime(runtime_for(None)) == RagSettings()
    assert settings_from_runtime(None) == RagSettings()
    assert settings_from_runtime({"search": {"top_k": 4}}).search.top_k == 4
    six = RagSettings(search=SearchConfig(top_k=6))
    assert settings_from_runtime(runtime_for(six)).search.top_k == 6
    with pytest.raises(ConfigError, match=r"search\.top_k=-1 is not allowed \(at least 1\)"):
        settings_from_context({"search": {"top_k": -1}})


def test_knowledge_base_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = RagSettings(
        knowledge_bases=[
            {"folder": "docs"},
            {"name": "code", "folder": "./src", "description": "d"},
        ]
    )
    kbs = settings.resolved_knowledge_bases()
    assert [(k.name, k.folder, k.description) for k in kbs] == [
        ("docs", str(tmp_path / "docs"), ""),
        ("code", str(tmp_path / "src"), "d"),
    ]
    with pytest.raises(ConfigError, match="two knowledge bases are named 'docs'"):
        RagSettings(
            knowledge_bases=[{"folder": "docs"}, {"folder": "x/docs"}]
        ).resolved_knowledge_bases()


def test_a_knowledge_base_names_its_store_and_its_repr_hides_it(tmp_path: Path) -> None:
    dsn = "postgresql://kb:s3cret@127.0.0.1:5432/docs"
    kbs = RagSettings(
        knowledge_bases=[
            {"name": "db", "folder": str(tmp_path), "store": dsn},
            {"name": "files", "folder": str(tmp_path), "store": " "},
        ]
    ).resolved_knowledge_bases()
    assert [k.store for k in kbs] == [dsn, None]
    assert "s3cret" not in repr(kbs)


def test_knowledge_bases_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("KBGRAPH_FOLDER", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert [k.name for k in RagSettings().resolved_knowledge_bases()] == ["a", "b"]
    monkeypatch.delenv("KBGRAPH_FOLDER")
    assert RagSettings().resolved_knowledge_bases() == []
