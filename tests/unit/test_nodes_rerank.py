"""Rerank: the heuristic (fused score, section match, adjacency, diversity), the listwise
LLM path bounded to the top candidates, and a pluggable cross-encoder-style reranker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kbgraph.errors import ConfigError
from kbgraph.graphs._nodes.rerank import (
    PATH_WEIGHT,
    apply_order,
    heuristic_rerank,
    heuristic_score,
    rerank,
)
from kbgraph.graphs._settings import RagSettings
from kbgraph.graphs._state import Candidate
from kbgraph.testing import ScriptedChatModel

from ._rag_fakes import candidate, debug_of, deps_for, runtime_for, state_of


@pytest.mark.parametrize(
    ("fused", "path", "expected"),
    [
        (1.0, 1.0, 1.0),
        (0.0, 0.0, 0.0),
        (0.5, 0.0, 0.5 / 1.05),
        (0.5, 0.5, (0.5 + 0.025) / 1.05),
    ],
)
def test_heuristic_score(fused: float, path: float, expected: float) -> None:
    assert PATH_WEIGHT == 0.05
    assert heuristic_score(fused, path) == pytest.approx(expected)


def test_a_file_named_like_the_query_is_lifted_but_a_heading_is_not_counted_twice() -> None:
    plain = candidate("a", "notes/x.md", score=0.5, section="Intro")
    titled = candidate("b", "notes/y.md", score=0.48, section="Config > Retry policy")
    pathy = candidate("c", "docs/retry-policy.md", score=0.48)
    out = heuristic_rerank([plain, titled, pathy], ["retry policy"])
    # The heading is indexed with the text, so the rankers saw it; the path they did not.
    assert [c["chunk_id"] for c in out] == ["c", "a", "b"]
    assert out[0]["scores"]["path"] == 1.0 and out[0]["scores"]["fused"] == 0.48
    assert out[2]["scores"]["path"] == 0.0


def test_without_a_path_match_the_fused_order_is_kept() -> None:
    pool = [candidate(f"s{i}", "a.md", (10 * i + 1, 10 * i + 3), score=0.8) for i in range(3)]
    pool.append(candidate("o", "b.md", score=0.8))
    out = heuristic_rerank(pool, ["unrelated words"])
    assert [c["chunk_id"] for c in out] == ["s0", "s1", "s2", "o"]


@pytest.mark.parametrize(
    ("weight", "expected"),
    [(0.0, ["a", "b"]), (0.2, ["b", "a"])],
)
def test_the_section_bonus_is_opt_in(weight: float, expected: list[str]) -> None:
    plain = candidate("a", "notes/x.md", score=0.5, section="Intro")
    titled = candidate("b", "notes/y.md", score=0.48, section="Config > Retry politik (Überblick)")
    out = heuristic_rerank([plain, titled], ["retry politik"], section_weight=weight)
    assert [c["chunk_id"] for c in out] == expected
    titled_out = next(c for c in out if c["chunk_id"] == "b")
    assert titled_out["scores"]["section"] == (1.0 if weight else 0.0)
    assert titled_out["score"] == pytest.approx(heuristic_score(0.48, 0.0, 1.0, weight))


def test_the_section_weight_comes_from_the_settings_and_is_validated() -> None:
    pool = [candidate("a", "x.md", score=0.5, section="Intro"),
            candidate("b", "y.md", score=0.49, section="Retry policy")]  # fmt: skip
    lifted = _run(_state(pool), RagSettings(rerank_section_weight=0.1))
    assert [c["chunk_id"] for c in lifted["rag_candidates"]] == ["b", "a"]
    for bad in (-0.1, 1.5):
        with pytest.raises(ConfigError, match="rerank_section_weight"):
            RagSettings(rerank_section_weight=bad)


def test_diversity_discounts_a_file_already_chosen() -> None:
    same = [
        candidate(f"s{i}", "a.md", (10 * i + 1, 10 * i + 3), score=0.8 - i * 0.01) for i in range(3)
    ]
    other = candidate("o", "b.md", score=0.7)
    out = heuristic_rerank([*same, other], ["unrelated words"], diversity=0.15)
    assert [c["chunk_id"] for c in out] == ["s0", "o", "s1", "s2"]
    s1 = next(c for c in out if c["chunk_id"] == "s1")
    assert s1["scores"]["diversity"] == pytest.approx(0.85)
    s2 = next(c for c in out if c["chunk_id"] == "s2")
    assert s2["scores"]["diversity"] == pytest.approx(0.85**2)


def test_neighbours_are_not_discounted() -> None:
    first = candidate("n1", "a.md", (1, 3), score=0.8)
    neighbour = candidate("n2", "a.md", (4, 6), score=0.7)
    other = candidate("o", "b.md", (1, 3), score=0.69)
    out = heuristic_rerank([first, other, neighbour], ["zzz"], diversity=0.5)
    assert [c["chunk_id"] for c in out] == ["n1", "n2", "o"]
    assert out[1]["scores"]["diversity"] == 1.0


def test_diversity_comes_from_the_settings_and_is_validated() -> None:
    pool = [
        candidate(f"s{i}", "a.md", (10 * i + 1, 10 * i + 3), score=0.8 - i * 0.01) for i in range(2)
    ]
    pool.append(candidate("o", "b.md", score=0.75))
    plain = _run(_state(pool), RagSettings())
    spread = _run(_state(pool), RagSettings(rerank_diversity=0.2))
    assert [c["chunk_id"] for c in plain["rag_candidates"]] == ["s0", "s1", "o"]
    assert [c["chunk_id"] for c in spread["rag_candidates"]] == ["s0", "o", "s1"]
    with pytest.raises(ConfigError, match="rerank_diversity"):
        RagSettings(rerank_diversity=1.0)


def _state(candidates: Sequence[Candidate], queries: list[str] | None = None) -> Any:
    return {**state_of("How do I configure the retry policy?"), "rag_candidates": list(candidates),
            "rag_queries": queries or ["How do I configure the retry policy?"]}  # fmt: skip


def _pool(n: int) -> list[Candidate]:
    return [candidate(f"c{i}", f"f{i}.md", score=1 - i / (2 * n)) for i in range(n)]


def _run(
    state: Any, settings: RagSettings, model: Any = None, reranker: Any = None
) -> dict[str, Any]:
    return rerank(state, runtime_for(settings), deps_for(model=model, reranker=reranker))


def test_mode_none_keeps_fused_order() -> None:
    pool = list(reversed(_pool(4)))
    out = _run(_state(pool), RagSettings(rerank="none"))
    assert out["rag_candidates"] == pool


def test_llm_listwise_is_bounded_and_validated() -> None:
    pool = _pool(8)
    model = ScriptedChatModel(responses=[{"ranking": [3, 99, 1, 3, 0], "reason": "3 is best"}])
    out = _run(_state(pool), RagSettings(rerank="llm", llm_rerank_max=5), model)
    order = [c["chunk_id"] for c in out["rag_candidates"]]
    assert order[:2] == ["c2", "c0"]
    assert order[2:5] == ["c1", "c3", "c4"]  # the rest of the bounded head, heuristic order
    assert order[5:] == ["c5", "c6", "c7"]  # beyond the bound
    scores = [c["score"] for c in out["rag_candidates"]]
    assert scores[0] == 1.0 and scores[1] == 0.75 and max(scores[2:]) < 0.5
    prompt = model.calls[0].messages[-1].content
    assert "5 passages" in prompt and "[5] f4.md" in prompt and "f5.md" not in prompt
    assert debug_of(out)["steps"][0]["path"] == "llm"


def test_apply_order_with_empty_ranking_keeps_order_at_half_score() -> None:
    pool = _pool(3)
    out = apply_order(pool, [])
    assert [c["chunk_id"] for c in out] == ["c0", "c1", "c2"]
    assert [c["score"] for c in out] == [c["score"] * 0.5 for c in pool]


@pytest.mark.parametrize(
    "responses", [["nope", "nope"], [TimeoutError()], [{"ranking": "1,2"}] * 2]
)
def test_llm_failure_falls_back_to_heuristic(responses: list[Any]) -> None:
    pool = _pool(4)
    model = ScriptedChatModel(responses=responses)
    out = _run(_state(pool), RagSettings(rerank="llm"), model)
    assert out["rag_candidates"] == heuristic_rerank(pool, ["How do I configure the retry policy?"])
    debug = debug_of(out)
    assert debug["steps"][0]["path"] == "fallback" and debug["fallbacks"][0]["node"] == "rerank"


def test_llm_mode_without_model_is_heuristic() -> None:
    pool = _pool(3)
    out = _run(_state(pool), RagSettings(rerank="llm"))
    assert debug_of(out)["steps"][0]["path"] == "heuristic"


class LengthReranker:
    """Longer text scores higher; raw logits outside 0..1."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        self.seen.append((query, len(candidates)))
        return [len(c["text"]) - 5.0 for c in candidates]


def test_cross_encoder_plug_in() -> None:
    pool = [
        candidate("short", "a.md", text="ab"),
        candidate("long", "b.md", text="a" * 20, score=0.1),
    ]
    reranker = LengthReranker()
    out = _run(_state(pool), RagSettings(rerank="cross_encoder"), reranker=reranker)
    assert [c["chunk_id"] for c in out["rag_candidates"]] == ["long", "short"]
    assert out["rag_candidates"][0]["scores"]["cross_encoder"] == 15.0
    assert all(0 < c["score"] < 1 for c in out["rag_candidates"])
    assert reranker.seen == [("How do I configure the retry policy?", 2)]


class BrokenReranker:
    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        return [1.0]  # wrong length


@pytest.mark.parametrize("reranker", [None, BrokenReranker()])
def test_cross_encoder_problems_fall_back(reranker: Any) -> None:
    pool = _pool(3)
    out = _run(_state(pool), RagSettings(rerank="cross_encoder"), reranker=reranker)
    assert [c["chunk_id"] for c in out["rag_candidates"]] == ["c0", "c1", "c2"]
    debug = debug_of(out)
    assert debug["steps"][0]["path"] == "fallback"
    assert debug["fallbacks"][0]["stage"] == "reranker"


def test_empty_pool() -> None:
    out = _run(_state([]), RagSettings(rerank="llm"), ScriptedChatModel())
    assert out["rag_candidates"] == []
