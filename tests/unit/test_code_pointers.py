"""The file paths that docs/ARCHITECTURE.md and the docstrings of the layers send readers to
exist and hold what they are said to hold (issue 43: three pointed at
``_postgres/_snapshot.py`` for the ranking code now in ``_ranking.py``). A path is a
backquoted ``name/…/file.py``, read from the repository top or from one of the layer
folders; ``path`` (``name``, ``Class.name``) says the file defines those names. ``_x`` is
the page's placeholder."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASES = (ROOT, *(ROOT / f for f in ("retrieval", "graphs", "evals", "prompts", "kbgraph")))
POINTER = re.compile(r"``?([A-Za-z_][\w./-]*/[\w.-]+\.py)``?")
NAMED = re.compile(r"`([\w./-]+\.py)` \(([^)]*)\)")


def _file(pointer: str) -> Path | None:
    return next((b / pointer for b in BASES if (b / pointer).is_file()), None)


def _missing(text: str) -> list[str]:
    found = {p for p in POINTER.findall(text) if "_x" not in p}
    return sorted(p for p in found if _file(p) is None)


def _undefined(text: str) -> list[tuple[str, str]]:
    """(path, name) for each name a ``path`` (``name``, …) pointer says the file defines
    and it does not (``def name`` / ``class name``)."""
    wrong = []
    for pointer, names in NAMED.findall(text):
        path = _file(pointer)
        source = path.read_text(encoding="utf-8") if path else ""
        for name in re.findall(r"`([\w.]+)`", names):
            last = name.rpartition(".")[2]
            if not re.search(rf"^\s*(async def|def|class) {last}\b", source, re.M):
                wrong.append((pointer, name))
    return wrong


def test_the_architecture_page_points_at_real_files() -> None:
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert _missing(page) == []
    # where a new ranker's store parts go: the files that define each store's ranking
    parts = page.partition("also needs a part in each store:")[2].partition(". ")[0]
    assert "_folder/_query.py" in parts
    assert _undefined(parts) == []


def test_the_ranker_docstrings_point_at_real_files() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "retrieval").rglob("*.py"))]
    assert _missing("\n".join(texts)) == []


def test_a_stale_pointer_is_found() -> None:
    assert _missing("see `_postgres/_old.py` and `_postgres/_ranking.py`") == ["_postgres/_old.py"]
    text = "`_postgres/_snapshot.py` (`top`, `exact`) and `_postgres/_ranking.py` (`exact`)"
    assert _undefined(text) == [
        ("_postgres/_snapshot.py", "top"),
        ("_postgres/_snapshot.py", "exact"),
    ]


def test_the_rankers_name_the_stores_ranking_parts() -> None:
    # "plus a part in each store": the files that hold a store's ``top`` and ``exact``.
    for module in ("_rankers/__init__.py", "_rankers/_registry.py"):
        text = (ROOT / "retrieval" / module).read_text(encoding="utf-8")
        for pointer in re.findall(r"``(_\w+/_\w+\.py)``", text):
            assert _undefined(f"`{pointer}` (`top`, `exact`)") == [], module
