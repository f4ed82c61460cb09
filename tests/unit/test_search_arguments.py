"""KnowledgeBase.search and rank validate every argument the same way in every mode, and
refuse conflicting ones, with a ConfigError that names the argument."""

from __future__ import annotations

import math

import pytest

from kbgraph.errors import ConfigError
from kbgraph.retrieval import KnowledgeBase, SearchConfig, SearchFilters

MODES = ["vector", "bm25", "hybrid"]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    folder = tmp_path_factory.mktemp("docs")
    for i in range(30):
        (folder / f"d{i}.md").write_text(f"# Doc {i}\n\nretry backoff token {i}\n")
    kb = KnowledgeBase(folder, embedding="fake")
    kb.index()
    return kb


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("top_k", [-1, 0, 1001, 10**9, True, 2.5])
def test_top_k_out_of_bounds_is_refused_in_every_mode(
    kb: KnowledgeBase, mode: str, top_k: object
) -> None:
    with pytest.raises(ConfigError, match="top_k"):
        kb.search("retry", top_k=top_k, mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_top_k_is_obeyed_in_every_mode(kb: KnowledgeBase, mode: str) -> None:
    assert len(kb.search("retry backoff", top_k=3, mode=mode)) == 3  # type: ignore[arg-type]
    config = SearchConfig(top_k=4)
    assert len(kb.search("retry backoff", mode=mode, config=config)) == 4  # type: ignore[arg-type]


def test_conflicting_top_k_and_config_are_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(ConfigError, match=r"conflicts with config\.top_k"):
        kb.search("retry", top_k=3, config=SearchConfig(top_k=7))
    with pytest.raises(ConfigError, match=r"conflicts with config\.mode"):
        kb.search("retry", mode="bm25", config=SearchConfig(mode="vector"))
    # The same value twice, or a config that leaves the value unset, is no conflict.
    assert len(kb.search("retry backoff", top_k=7, config=SearchConfig(top_k=7))) == 7
    assert len(kb.search("retry backoff", top_k=2, config=SearchConfig(mode="bm25"))) == 2


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
@pytest.mark.parametrize("mode", MODES)
def test_an_empty_query_is_refused(kb: KnowledgeBase, query: str, mode: str) -> None:
    with pytest.raises(ConfigError, match="query is empty"):
        kb.search(query, mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_threshold_that_is_not_a_number_is_refused(kb: KnowledgeBase, value: float) -> None:
    with pytest.raises(ConfigError, match="score_threshold"):
        SearchConfig(score_threshold=value)
    with pytest.raises(ConfigError, match="finite"):
        SearchConfig(weights={"vector": value, "bm25": 1.0})


def test_unknown_mode_and_wrong_argument_types_are_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(ConfigError, match="mode"):
        kb.search("retry", mode="semantic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="filters"):
        kb.search("retry", filters={"paths": ["x"]})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="config"):
        kb.search("retry", config={"top_k": 3})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="query must be a string"):
        kb.search(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [0, -3, 10**9, True])
def test_rank_limits_are_refused_like_search(kb: KnowledgeBase, limit: object) -> None:
    with pytest.raises(ConfigError, match="limit"):
        kb.rank("retry", "bm25", limit=limit)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="query is empty"):
        kb.rank(" ", "vector", limit=3)
    with pytest.raises(ConfigError, match="ranker"):
        kb.rank("retry", "dense", limit=3)  # type: ignore[arg-type]
    assert len(kb.rank("retry", "bm25", limit=3, filters=SearchFilters(paths=("d1*",)))) <= 3


@pytest.mark.parametrize(
    ("model", "values", "setting"),
    [
        ("SearchConfig", {"top_k": True}, "top_k=True"),
        ("SearchConfig", {"rrf_k": False}, "rrf_k=False"),
        ("SearchConfig", {"candidates_per_ranker": True}, "candidates_per_ranker=True"),
        ("SearchConfig", {"score_threshold": True}, "score_threshold=True"),
        ("SearchConfig", {"weights": {"vector": True, "bm25": 1.0}}, "weights="),
        ("ChunkConfig", {"chunk_size": True}, "chunk_size=True"),
        ("ScanConfig", {"max_file_bytes": True}, "max_file_bytes=True"),
        ("RagSettings", {"search": {"top_k": True}}, "search.top_k=True"),
        ("RagSettings", {"chunking": {"overlap": False}}, "chunking.overlap=False"),
        ("RagSettings", {"max_rewrites": True}, "max_rewrites=True"),
        ("RagSettings", {"context_budget_tokens": True}, "context_budget_tokens=True"),
        ("RagSettings", {"llm_rerank_max": True}, "llm_rerank_max=True"),
        ("RagSettings", {"llm_timeout_seconds": True}, "llm_timeout_seconds=True"),
        ("RagSettings", {"grounding_min_coverage": True}, "grounding_min_coverage=True"),
        ("RagSettings", {"grounding_min_vector_score": False}, "grounding_min_vector_score"),
        ("RagSettings", {"rerank_section_weight": True}, "rerank_section_weight=True"),
    ],
)
def test_a_bool_is_not_a_number_in_any_settings_model(
    model: str, values: dict[str, object], setting: str
) -> None:
    """Regression (issue 20): pydantic's lax mode took ``search={"top_k": True}`` as 1 (and
    True as 1.0 for a float), so a typo'd flag silently became a setting."""
    from kbgraph.graphs import RagSettings
    from kbgraph.retrieval import ChunkConfig, ScanConfig

    cls = {"SearchConfig": SearchConfig, "ChunkConfig": ChunkConfig, "ScanConfig": ScanConfig}
    with pytest.raises(ConfigError, match="a number, not True or False") as caught:
        {**cls, "RagSettings": RagSettings}[model].model_validate(values)
    assert setting in str(caught.value)


def test_bool_settings_and_numbers_are_still_taken() -> None:
    from kbgraph.graphs import RagSettings
    from kbgraph.retrieval import ChunkConfig

    settings = RagSettings(live=True, search={"top_k": 3, "weights": {"vector": 0.7}})
    assert settings.live and settings.search.top_k == 3
    assert ChunkConfig(by_kind=False, chunk_size=100).chunk_size == 100
    assert SearchConfig(score_threshold=1).score_threshold == 1.0  # an int for a float
