"""An exact identifier in a question ranks its definition in hybrid search's top 5 (issue 30:
``default_config`` was 11th in hybrid where BM25 had it 2nd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._config import SearchConfig
from kbgraph.retrieval._definitions import named_identifiers

KEYS = "\n".join(f'        "KEY_{i}": None,' for i in range(12))


def _methods(prefix: str) -> str:
    return "\n\n".join(
        f"    def {prefix}_{i}(self) -> dict:\n"
        f'        """Read the config, falling back to the default for key {i}."""\n'
        f'        return self.config.get("KEY_{i}", self.default_config["KEY_{i}"])'
        for i in range(8)
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(
        f'"""The application."""\n\n\nclass App:\n    """An app."""\n\n{_methods("load")}\n\n'
        f"    default_config = {{\n{KEYS}\n    }}\n\n{_methods('read')}\n",
        encoding="utf-8",
    )
    # Short notes that name it: the sentence model (here the bag of words) prefers them.
    for i in range(8):
        (tmp_path / "docs" / f"page{i}.md").write_text(
            f"# Notes {i}\n\nSee default_config for KEY_{i}.\n", encoding="utf-8"
        )
    return tmp_path


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
def test_an_exact_identifier_ranks_its_definition_in_the_hybrid_top_5(
    folder: Path, fusion: str
) -> None:
    kb = KnowledgeBase(folder, embedding="fake")
    kb.index()
    hits = kb.search("default_config", config=SearchConfig(mode="hybrid", fusion=fusion))  # type: ignore[arg-type]
    sections = [h.chunk.section or "" for h in hits]
    assert any(s.startswith("App.default_config") for s in sections), sections
    assert all(set(h.ranks) <= {"vector", "bm25"} for h in hits)
    # A question in words names no identifier: nothing is promoted.
    plain = kb.search("default config", config=SearchConfig(mode="hybrid", fusion=fusion))  # type: ignore[arg-type]
    assert plain


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("default_config", {"defaultconfig"}),
        ("What does Client._redirect_url do?", {"redirecturl"}),
        ("maxRedirects or MAX_REDIRECTS", {"maxredirects"}),
        ("What does error HB-601 mean?", set()),  # a hyphenated code is not an identifier
        ("How do I set the default config?", set()),
    ],
)
def test_the_identifiers_a_question_names(query: str, names: set[str]) -> None:
    assert named_identifiers(query) == names
